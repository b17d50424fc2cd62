"""Engines that run the corpus-wide stage out of core: the keyed corpus stage (lexical
methods) and the vector stage (embedding methods)."""

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
