"""Pair scores of a run: their histogram, and what other thresholds would have given.

A run keeps only the pairs at or above its threshold, so a stricter threshold ``t`` can be
replayed exactly from its pairs: keep the edges scoring at least ``t`` (pairs kept apart by
the time window stay apart) and cluster them as the run did: connected components (scipy's
compiled ``connected_components`` over a sparse adjacency matrix, one call per threshold),
or for a run clustered by community detection (``--cluster leiden``/``louvain``, rerank's
default) the same detection with the run's resolution and seed
(:func:`neardup.graph.cluster_pairs`), so the row for the run's own threshold shows the
run's clusters. A looser threshold needs the pairs the run dropped, i.e. a new run; the
sweep stops at the run's own threshold. HAC merges by its own distance threshold, not
the pairs': its runs are swept by components.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["components_at", "score_histogram", "score_threshold", "threshold_sweep"]

_SIMHASH_BITS = 64


def score_threshold(method: str, params: dict[str, Any]) -> float | None:
    """The run's threshold on the pair-score scale, or None when the method has none.

    simhash's threshold is a Hamming distance in bits and its score ``1 - hamming / 64``,
    so its threshold maps to ``1 - threshold / 64``.
    """
    threshold = (params.get("method") or {}).get("threshold")
    if threshold is None or isinstance(threshold, bool):
        return None
    try:
        threshold = float(threshold)
    except (TypeError, ValueError):
        return None
    if method == "simhash":
        return 1.0 - threshold / _SIMHASH_BITS
    return threshold


def score_histogram(scores: np.ndarray, threshold: float | None, bins: int = 40) -> dict[str, Any]:
    """Counts of pair scores in ``bins`` equal-width bins over their range (and the
    threshold, so it falls inside the plot).

    Returns
    -------
    dict
        ``edges`` (bins + 1 floats), ``counts`` (bins ints), ``threshold``.
    """
    scores = np.asarray(scores, dtype=np.float64)
    scores = scores[np.isfinite(scores)]
    if scores.size == 0:
        return {"edges": [], "counts": [], "threshold": threshold}
    lo, hi = float(scores.min()), float(scores.max())
    if threshold is not None:
        lo, hi = min(lo, threshold), max(hi, threshold)
    if hi - lo < 1e-6:
        lo, hi = lo - 0.005, hi + 0.005
    counts, edges = np.histogram(scores, bins=bins, range=(lo, hi))
    return {
        "edges": [round(float(e), 5) for e in edges],
        "counts": counts.astype(int).tolist(),
        "threshold": threshold,
    }


def components_at(
    left: np.ndarray, right: np.ndarray, n_docs: int
) -> tuple[int, int, int]:
    """(clusters, duplicate clusters, largest cluster) of the graph on ``n_docs`` nodes
    with edges ``left[i] -- right[i]``."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    if n_docs == 0:
        return 0, 0, 0
    ones = np.ones(left.shape[0], dtype=np.int8)
    graph = sp.coo_matrix((ones, (left, right)), shape=(n_docs, n_docs)).tocsr()
    n_components, labels = connected_components(graph, directed=False)
    sizes = np.bincount(labels, minlength=n_components)
    return int(n_components), int((sizes > 1).sum()), int(sizes.max())


def _communities_at(left: np.ndarray, right: np.ndarray, scores: np.ndarray, n_docs: int,
                    clustering: dict[str, Any]) -> tuple[int, int, int]:
    """As :func:`components_at`, for the run's community detection over these edges."""
    from neardup.graph import Pairs, cluster_pairs

    if n_docs == 0:
        return 0, 0, 0
    labels = cluster_pairs(Pairs(left, right, scores), n_docs, method=clustering["algorithm"],
                           resolution=clustering.get("resolution", 1.0),
                           seed=clustering.get("seed", 0)).labels
    sizes = np.bincount(labels)
    return int(sizes.size), int((sizes > 1).sum()), int(sizes.max())


def threshold_sweep(
    left: np.ndarray,
    right: np.ndarray,
    scores: np.ndarray,
    n_docs: int,
    threshold: float | None,
    steps: int = 6,
    clustering: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Clusters and duplicates at the run's threshold and ``steps - 1`` stricter ones.

    Parameters
    ----------
    left, right : ndarray of int64, shape (n_edges,)
        The run's edges (pairs outside the time window excluded).
    scores : ndarray of float, shape (n_edges,)
    n_docs : int
    threshold : float or None
        The run's threshold on the score scale (:func:`score_threshold`); None starts at
        the lowest score.
    steps : int, default 6
    clustering : dict or None
        The run's clustering parameters (``ClusterConfig`` fields: ``algorithm``,
        ``resolution``, ``seed``); None or any algorithm but "leiden"/"louvain": connected
        components.

    Returns
    -------
    list of dict
        One per threshold, ascending: ``threshold``, ``clusters``, ``duplicates``
        (documents a de-duplication would remove), ``duplicate_clusters``, ``largest``,
        ``edges``.
    """
    scores = np.asarray(scores, dtype=np.float64)
    finite = np.isfinite(scores)
    if not finite.any():
        return []
    lo = float(scores[finite].min()) if threshold is None else float(threshold)
    hi = float(scores[finite].max())
    grid = np.unique(np.round(np.linspace(lo, max(lo, hi), steps), 4))
    if threshold is not None:
        grid = np.unique(np.concatenate([[round(float(threshold), 4)], grid]))
    communities = (clustering or {}).get("algorithm") in ("leiden", "louvain")
    rows = []
    for t in grid.tolist():
        keep = finite & (scores >= t - 1e-6)
        if communities:
            clusters, duplicate_clusters, largest = _communities_at(
                left[keep], right[keep], scores[keep], n_docs, clustering)
        else:
            clusters, duplicate_clusters, largest = components_at(left[keep], right[keep], n_docs)
        rows.append({
            "threshold": t, "clusters": clusters, "duplicates": n_docs - clusters,
            "duplicate_clusters": duplicate_clusters, "largest": largest,
            "edges": int(keep.sum()),
        })  # fmt: skip
    return rows
