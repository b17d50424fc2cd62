"""Training de-duplication models: data, losses, one trainer, validation.

The model kinds (``biencoder``, ``cross_encoder``, ``retsim_trainer``) plug into one
trainer (:mod:`neardup.train.trainer`, on transformers' ``Trainer``) with their losses
from :mod:`neardup.train.losses`; see docs/training.md. Training needs the ``neural`` and
``train`` extras (torch, sentence-transformers, accelerate, pytorch-metric-learning); the
data helpers and the validation ARI need only numpy and scikit-learn.
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
