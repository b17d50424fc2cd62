"""Hierarchical agglomerative clustering (HAC) of the sparse pair graph.

Connected components of the pair graph are single-linkage clusters: one false-positive
edge merges two groups of copies. Average or complete linkage needs a pair to be close
to the *whole* of a cluster, not to one member. Silcock et al. (2022), "Noise-Robust
De-Duplication at Scale" (appendix A.1, table A1), report that HAC of bi-encoder
similarities raises accuracy on NEWS-COPY a little, at a cost that grows with the
square of the cluster size, hence its use "for moderately-sized de-duplication problems".
neardup's figures: docs/method-comparison.md.

The graph is sparse: a pair that was not scored (below the search threshold) is taken
to be at the maximum cosine distance, 1. The distance of a scored pair is ``1 - score``.
With ``distance_threshold < 1``, clusters at that height never join documents without a
chain of edges of distance ``<= distance_threshold`` between them (the linkage distance
of two clusters is at least their closest pair's distance, for single, average and
complete linkage alike). So HAC runs separately on each connected component of those
close edges, with scipy (``scipy.cluster.hierarchy.linkage`` on the component's condensed
distance matrix, then ``fcluster`` with ``criterion="distance"``); every edge inside the
component, close or not, enters the averages and maxima. Single linkage needs no HAC at
all: its clusters are exactly those components.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from neardup.errors import check_choice, check_float, check_int
from neardup.graph.edges import Pairs
from neardup.graph.labels import (
    as_python,
    canonical_labels,
    check_graph_input,
    component_labels,
)

__all__ = ["agglomerative_labels"]

LINKAGES = ("average", "single", "complete")


def agglomerative_labels(
    pairs: Pairs,
    n_docs: int,
    *,
    linkage: str = "average",
    distance_threshold: float = 0.2,
    max_component: int = 20_000,
) -> np.ndarray:
    """Cluster documents by hierarchical agglomerative clustering of the pair graph.

    Parameters
    ----------
    pairs : Pairs
        Scored document pairs, positions in ``[0, n_docs)``, scores = similarities in
        [0, 1] (e.g. cosine from :func:`neardup.graph.similarity_pairs`; scores outside
        are clipped). Unlike the other clusterings, weak pairs matter here: they pull the
        average linkage of two clusters down, so keep pairs below the merge threshold
        too (search at a lower threshold than ``1 - distance_threshold``). Pairs not
        given are at distance 1. Order, direction, self-pairs and repeats do not matter
        (repeats keep their highest score).
    n_docs : int
        Number of documents in the corpus (>= 0); documents without edges are singletons.
    linkage : {"average", "single", "complete"}, default "average"
        Distance between two clusters: mean (recommended; UPGMA), minimum (same clusters
        as connected components of the close edges) or maximum (every pair must be
        close, so a missing pair keeps two clusters apart) of the distances between
        their members.
    distance_threshold : float, default 0.2
        Clusters are merged while their linkage distance is ``<= distance_threshold``
        (cosine distance, ``1 - score``), in [0, 1). 0.2 merges pairs of cosine >= 0.8;
        set it to ``1 - `` the similarity threshold tuned for connected components (e.g.
        0.08 for Silcock et al.'s 0.92) and tune from there.
    max_component : int, default 20_000
        Largest component (documents joined by edges of distance ``<= distance_threshold``)
        clustered by average or complete linkage (>= 1). HAC of a component of m
        documents needs ~8 * m**2 bytes (3.2 GB at 20,000: the condensed float64 distance
        matrix and scipy's working copy) and O(m**2) time (~15 s at 20,000). Larger
        components keep their single-linkage clusters (the component itself) and a
        ``UserWarning`` names how many did; such components are usually templates or
        boilerplate (see ``max_cluster_size`` of :func:`neardup.graph.cluster_pairs`).
        Ignored by ``"single"``, which needs no matrix.

    Returns
    -------
    ndarray of int64, shape (n_docs,)
        Canonical cluster label of every document (see
        :func:`neardup.graph.canonical_labels`). Deterministic: the same pairs, in any
        order, give the same labels.

    Examples
    --------
    Two triangles of close documents joined by one close edge (3-4): single linkage
    chains them, average linkage keeps them apart.

    >>> import numpy as np
    >>> from neardup.graph import Pairs
    >>> edges = [(0, 1), (0, 2), (1, 2), (3, 4), (3, 5), (4, 5), (2, 3)]
    >>> pairs = Pairs(*np.array(edges).T, np.full(len(edges), 0.9))
    >>> agglomerative_labels(pairs, 7, linkage="single").tolist()
    [0, 0, 0, 0, 0, 0, 1]
    >>> agglomerative_labels(pairs, 7).tolist()
    [0, 0, 0, 1, 1, 1, 2]
    """
    caller = "agglomerative_labels"
    n_docs = check_graph_input(caller, pairs, n_docs)
    check_choice(caller, "linkage", linkage, LINKAGES)
    threshold = check_float(
        caller, "distance_threshold", as_python(distance_threshold), low=0.0, high=1.0
    )
    if threshold >= 1.0:
        raise ValueError(
            f"{caller}: parameter 'distance_threshold' must be a number in [0, 1); got "
            f"{distance_threshold!r}. At 1, every pair not scored (distance 1) could "
            "merge: the whole corpus would be one cluster."
        )
    max_component = check_int(
        caller,
        "max_component",
        as_python(max_component),
        low=1,
        hint="Memory grows as 8 * max_component**2 bytes.",
    )
    if len(pairs) and not np.isfinite(pairs.score).all():
        bad = pairs.score[~np.isfinite(pairs.score)][0]
        raise ValueError(
            f"{caller}: parameter 'pairs' must have finite scores; got score "
            f"{float(bad)!r}. Drop those pairs first."
        )
    return _agglomerative_labels(pairs, n_docs, linkage, threshold, max_component)


# --------------------------------------------------------------------------- internals


def _agglomerative_labels(
    pairs: Pairs, n_docs: int, linkage: str, threshold: float, max_component: int
) -> np.ndarray:
    """Canonical HAC labels, int64 (n_docs,); inputs trusted."""
    # Deduplicated and sorted: the matrices handed to scipy do not depend on how the
    # caller ordered or oriented the pairs.
    pairs = pairs.canonical()
    distance = 1.0 - np.clip(pairs.score.astype(np.float64), 0.0, 1.0)
    comp = component_labels(pairs.select(distance <= threshold), n_docs)
    if linkage == "single" or n_docs == 0:
        return comp
    n_comp = int(comp.max()) + 1
    comp_size = np.bincount(comp, minlength=n_comp)
    # Components of one or two documents are already final: two documents joined by a
    # close edge merge under any linkage.
    big = np.flatnonzero(comp_size >= 3)
    oversized = big[comp_size[big] > max_component]
    big = big[comp_size[big] <= max_component]
    if oversized.size:
        warnings.warn(
            f"agglomerative_labels: {oversized.size} component(s) larger than "
            f"max_component={max_component} (largest: {int(comp_size[oversized].max())} "
            f"documents) kept their single-linkage clusters instead of {linkage} linkage. "
            "Raise max_component (memory grows as 8 * size**2 bytes) or lower "
            "distance_threshold.",
            UserWarning,
            stacklevel=3,
        )
    if big.size == 0:
        return comp

    # Edges inside one component, grouped by component; documents numbered locally
    # 0..size-1 in position order.
    inside = comp[pairs.left] == comp[pairs.right]
    left, right, distance = pairs.left[inside], pairs.right[inside], distance[inside]
    node_order = np.argsort(comp, kind="stable")
    node_start = np.zeros(n_comp + 1, dtype=np.int64)
    np.cumsum(comp_size, out=node_start[1:])
    local = np.empty(n_docs, dtype=np.int64)
    local[node_order] = np.arange(n_docs, dtype=np.int64) - node_start[comp[node_order]]
    edge_comp = comp[left]
    edge_order = np.argsort(edge_comp, kind="stable")
    edge_start = np.zeros(n_comp + 1, dtype=np.int64)
    np.cumsum(np.bincount(edge_comp, minlength=n_comp), out=edge_start[1:])
    # left < right and local numbering keeps position order, so local i < local j.
    edge_i, edge_j = local[left][edge_order], local[right][edge_order]
    distance = distance[edge_order]

    # Small components keep their component id (< n_comp); clusters found inside the
    # clustered components get fresh ids from n_comp upwards.
    out = comp.copy()
    next_id = n_comp
    for c in big.tolist():
        n0, n1 = node_start[c], node_start[c + 1]
        e0, e1 = edge_start[c], edge_start[c + 1]
        flat = _hac_component(
            int(n1 - n0), edge_i[e0:e1], edge_j[e0:e1], distance[e0:e1], linkage, threshold
        )
        out[node_order[n0:n1]] = next_id + flat
        next_id += int(flat.max()) + 1
    return canonical_labels(out)


def _hac_component(
    m: int, i: np.ndarray, j: np.ndarray, distance: np.ndarray, linkage: str, threshold: float
) -> np.ndarray:
    """Flat HAC clusters 0..C-1, int64 (m,), of one component's m documents.

    ``i < j`` are local document numbers of the component's edges and ``distance`` their
    distances; every other pair is at distance 1.
    """
    from scipy.cluster.hierarchy import fcluster
    from scipy.cluster.hierarchy import linkage as scipy_linkage

    condensed = np.ones(m * (m - 1) // 2, dtype=np.float64)
    # Row-major upper triangle without the diagonal: pair (i, j) sits after the
    # (m-1) + (m-2) + ... + (m-i) pairs of rows 0..i-1.
    condensed[m * i - i * (i + 1) // 2 + (j - i - 1)] = distance
    tree = scipy_linkage(condensed, method=linkage)
    labels: Any = fcluster(tree, t=threshold, criterion="distance")
    return canonical_labels(labels)
