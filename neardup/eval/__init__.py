"""Evaluation of near-duplicate clusterings against gold labels."""

from neardup.eval.metrics import adjusted_rand_index, cluster_metrics, pairwise_scores

__all__ = ["adjusted_rand_index", "cluster_metrics", "pairwise_scores"]
