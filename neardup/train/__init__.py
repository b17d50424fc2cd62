"""Training de-duplication models: data, trainers, validation.

Trainers need the ``neural`` extra (torch, sentence-transformers); the data helpers need
only numpy and scikit-learn.
"""

from neardup.train.data import (
    TrainingPairs,
    cluster_batches,
    default_benchmark_dir,
    load_training_corpus,
    make_pairs,
    mine_hard_negatives,
)
from neardup.train.validate import ValidationScore, embedding_ari, pairs_ari, whole_days

__all__ = [
    "TrainingPairs",
    "ValidationScore",
    "cluster_batches",
    "default_benchmark_dir",
    "embedding_ari",
    "load_training_corpus",
    "make_pairs",
    "mine_hard_negatives",
    "pairs_ari",
    "whole_days",
]
