"""Engines that run the corpus-wide stage out of core: the keyed corpus stage (lexical
methods) and the vector stage (embedding methods).

The package is steps, storage and executors:

- steps, functions of their inputs that every executor runs: :mod:`~neardup.engine.sketching`
  (a batch), :mod:`~neardup.engine.statistics`, :mod:`~neardup.engine.buckets` and
  :mod:`~neardup.engine.link` (a key partition -> verified edges),
  :mod:`~neardup.engine.overlap` (the pair-count exchange), :mod:`~neardup.engine.retrieval`,
  :mod:`~neardup.engine.components` (forests -> components, the stage's output);
- storage: :mod:`~neardup.engine.rows` (the ``RowSource`` protocol),
  :mod:`~neardup.engine.stores` (spills and the sketch step's rows on disk),
  :mod:`~neardup.engine.workdir` (resumable stages), :mod:`~neardup.engine.budget`;
- executors: :mod:`~neardup.engine.local` (the keyed stage on this machine),
  :mod:`~neardup.engine.vectors` (the vector stage), :mod:`neardup.engine.ray`; and
  :mod:`~neardup.engine.support`, which says which runs a method.
"""

from neardup.engine.budget import default_memory_limit, parse_memory
from neardup.engine.components import CorpusStageOutput
from neardup.engine.link import link_key_rows
from neardup.engine.local import CorpusStageConfig, run_corpus_stage, supports_corpus_stage
from neardup.engine.unionfind import UnionFind
from neardup.engine.vectors import run_vector_stage, supports_vector_stage
from neardup.engine.workdir import WorkDirError

__all__ = [
    "CorpusStageConfig",
    "CorpusStageOutput",
    "UnionFind",
    "WorkDirError",
    "default_memory_limit",
    "link_key_rows",
    "parse_memory",
    "run_corpus_stage",
    "run_vector_stage",
    "supports_corpus_stage",
    "supports_vector_stage",
]
