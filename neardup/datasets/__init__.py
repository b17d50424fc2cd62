"""Data generators, in the manner of ``sklearn.datasets``: labelled near-duplicate
benchmarks built from clean dated stories (:func:`make_benchmark`), sets whose copies come
from third-party augmenters (:func:`make_independent_set`) or from translated man pages
(:func:`make_multilingual_set`), a large Reuters-derived corpus for scale runs
(:func:`make_scale_corpus`), and the seeded noise they are built with
(:mod:`neardup.datasets.noise`)."""

from neardup.datasets.benchmark import make_benchmark
from neardup.datasets.benchmark_stats import benchmark_stats
from neardup.datasets.independent import make_independent_set, make_multilingual_set, write_set
from neardup.datasets.scale import make_scale_corpus
from neardup.datasets.stories import assign_splits, find_story_groups, prepare_stories

__all__ = [
    "assign_splits",
    "benchmark_stats",
    "find_story_groups",
    "make_benchmark",
    "make_independent_set",
    "make_multilingual_set",
    "make_scale_corpus",
    "prepare_stories",
    "write_set",
]
