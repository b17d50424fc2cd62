"""Engines that run the corpus-wide stage: the keyed, out-of-core corpus stage."""

from neardup.engine.corpus import (
    CorpusStageConfig,
    CorpusStageOutput,
    default_memory_limit,
    link_key_rows,
    parse_memory,
    run_corpus_stage,
    supports_corpus_stage,
)
from neardup.engine.unionfind import UnionFind
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
    "supports_corpus_stage",
]
