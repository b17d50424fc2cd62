"""Validation ARI during training: threshold sweeps over precomputed scores.

Trainers call these once per epoch on the *validation* split (never test): embeddings
(or pair scores) of the validation documents -> edges above each threshold -> connected
components -> ARI against the true clusters (scikit-learn's ``adjusted_rand_score``); the
best threshold and its ARI are reported, which is exactly how the final model is later
tuned (``neardup tune``). :class:`neardup.train.trainer.AriEvaluator` calls them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sklearn.metrics import adjusted_rand_score

from neardup.eval.labeled import LabeledCorpus
from neardup.graph import Pairs
from neardup.graph.cluster import connected_components

__all__ = ["ValidationScore", "embedding_ari", "pairs_ari", "whole_days"]

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
        curve[float(t)] = float(adjusted_rand_score(clusters, connected_components(sub, n)))
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


def whole_days(
    corpus: LabeledCorpus, docs: int, *, seed: int | None = None, at_least: bool = False
) -> np.ndarray:
    """Sorted positions of whole days of ``corpus``: a validation subset small enough to
    score every epoch.

    Duplicates of news appear within days, so whole days keep each day's clusters and
    hard negatives together, as a real corpus has them; a random sample of documents
    would leave mostly singletons. Days are visited earliest first (``seed=None``) or in
    a seeded random order. Each day is taken if it still fits in ``docs`` documents, or,
    with ``at_least``, days are taken until there are at least ``docs``. Without dates,
    whole clusters stand in for days; if no day fits, whole clusters are tried, and then
    the smallest group is cut. All positions when the corpus has at most ``docs``.
    """
    n = len(corpus)
    if n <= docs:
        return np.arange(n)
    clusters = np.asarray(corpus.clusters).astype(str)
    groupings = [clusters]
    if corpus.dates is not None and not np.all(np.isnat(corpus.dates)):
        groupings.insert(0, corpus.dates.astype("datetime64[D]").astype(str))  # NaT: "NaT"
    for groups in groupings:
        names, codes = np.unique(groups, return_inverse=True)
        sizes = np.bincount(codes, minlength=len(names))
        order = (np.arange(len(names)) if seed is None
                 else np.random.default_rng(seed).permutation(len(names)))
        chosen = np.zeros(len(names), bool)
        total = 0
        for g in order.tolist():
            if at_least or total + sizes[g] <= docs:
                chosen[g] = True
                total += int(sizes[g])
                if at_least and total >= docs:
                    break
        if total >= 2:
            return np.flatnonzero(chosen[codes])
    return np.flatnonzero(codes == int(np.argmin(sizes)))[:docs]
