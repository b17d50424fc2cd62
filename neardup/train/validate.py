"""Validation ARI during training: threshold sweeps over precomputed scores.

Trainers call these once per epoch on the *validation* split (never test): embeddings
(or pair scores) of the validation documents -> edges above each threshold -> connected
components -> ARI against the true clusters; the best threshold and its ARI are reported,
which is exactly how the final model is later tuned (``neardup tune``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from neardup.eval.metrics import adjusted_rand_index
from neardup.graph import Pairs
from neardup.graph.cluster import connected_components

__all__ = ["ValidationScore", "embedding_ari", "pairs_ari"]

#: Default cosine / probability thresholds swept each epoch.
DEFAULT_THRESHOLDS = tuple(np.round(np.arange(0.50, 0.995, 0.01), 2).tolist())


@dataclass(frozen=True)
class ValidationScore:
    """Best ARI over a threshold sweep, with the threshold that gave it."""

    ari: float
    threshold: float
    curve: dict[float, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"ari": self.ari, "threshold": self.threshold}


def pairs_ari(
    pairs: Pairs,
    clusters: np.ndarray,
    *,
    thresholds: tuple[float, ...] | list[float] = DEFAULT_THRESHOLDS,
) -> ValidationScore:
    """Best ARI of connected components over edges with score >= each threshold."""
    n = len(clusters)
    curve: dict[float, float] = {}
    for t in thresholds:
        keep = pairs.score >= t
        sub = Pairs(pairs.left[keep], pairs.right[keep], pairs.score[keep])
        curve[float(t)] = adjusted_rand_index(clusters, connected_components(sub, n))
    best = max(curve, key=lambda t: (curve[t], -t))
    return ValidationScore(ari=curve[best], threshold=best, curve=curve)


def embedding_ari(
    embeddings: np.ndarray,
    clusters: np.ndarray,
    *,
    thresholds: tuple[float, ...] | list[float] = DEFAULT_THRESHOLDS,
) -> ValidationScore:
    """Best ARI of cosine-threshold connected components over unit-norm embeddings."""
    from neardup.graph.similarity import similarity_pairs

    pairs = similarity_pairs(
        np.ascontiguousarray(embeddings, np.float32), threshold=min(thresholds), progress=False
    )
    return pairs_ari(pairs, clusters, thresholds=thresholds)
