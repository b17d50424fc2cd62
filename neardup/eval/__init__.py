"""Evaluation: metrics, labeled corpora and the tune-on-validation / report-on-test protocol
(the data generators live in :mod:`neardup.datasets`)."""

from neardup.eval.evaluate import evaluate, recall_at_k
from neardup.eval.labeled import LabeledCorpus, load_labeled
from neardup.eval.metrics import adjusted_rand_index, cluster_metrics, pairwise_scores
from neardup.eval.tuning import TuningResult, load_tuning, tune

__all__ = [
    "LabeledCorpus",
    "TuningResult",
    "adjusted_rand_index",
    "cluster_metrics",
    "evaluate",
    "load_labeled",
    "load_tuning",
    "pairwise_scores",
    "recall_at_k",
    "tune",
]
