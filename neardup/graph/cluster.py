"""Scored pairs -> clusters: connected components, canonical labels, oversized clusters.

Linking every scored pair and taking connected components is single-linkage clustering
(Silcock et al. 2022, "Noise-Robust De-Duplication at Scale", section 4). It is exact and
fast, but one false-positive edge merges two unrelated groups; :func:`cluster_pairs`
therefore also offers Leiden/Louvain community detection (:mod:`neardup.graph.community`),
which cuts such weak bridges, and flags clusters too large to be duplicates (templates,
boilerplate) as *oversized*.

Every function here returns one label per document: documents without edges are
singletons, and no document is ever dropped. Labels are *canonical*: cluster ids are
``0..n_clusters-1`` numbered by the first document (in input order) of each cluster, so
results do not depend on pair order or on how a graph library numbers its output.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from neardup.errors import check_choice, check_int
from neardup.graph.edges import Pairs
from neardup.graph.keep import choose_representatives  # re-exported: the keep rule lives there
from neardup.graph.labels import (
    as_python,
    canonical_labels,
    check_graph_input,
    component_labels,
)

__all__ = [
    "Clustering",
    "canonical_labels",
    "choose_representatives",
    "cluster_pairs",
    "connected_components",
]

METHODS = ("components", "leiden", "louvain", "hac")
OVERSIZED_MODES = ("flag", "split")


@dataclass(frozen=True)
class Clustering:
    """One cluster label per document.

    Attributes
    ----------
    labels : ndarray of int64, shape (n_docs,)
        Canonical cluster id of each document: ids are ``0..n_clusters-1``, numbered by
        the first document (in input order) of each cluster. Documents without edges
        are singletons.
    sizes : ndarray of int64, shape (n_docs,)
        Size of each document's cluster (1 for singletons).
    oversized : ndarray of bool, shape (n_docs,)
        True when the document belongs (or, with ``oversized="split"``, belonged) to a
        cluster larger than ``max_cluster_size``: usually templates or boilerplate
        rather than true near-duplicates. All False when ``max_cluster_size`` is None.
    groups : ndarray of int64, shape (n_docs,), or None
        The labels before oversized clusters were split (``oversized="split"``), so the
        split-up templates can still be reported as groups; None means equal to
        ``labels``.
    """

    labels: np.ndarray
    sizes: np.ndarray
    oversized: np.ndarray
    groups: np.ndarray | None = None

    @property
    def n_docs(self) -> int:
        """Number of documents (length of every array)."""
        return int(self.labels.shape[0])

    @property
    def n_clusters(self) -> int:
        """Number of clusters, singletons included."""
        return int(self.labels.max()) + 1 if self.labels.size else 0


def connected_components(pairs: Pairs, n_docs: int) -> np.ndarray:
    """Single-linkage clusters: the connected components of the pair graph.

    Parameters
    ----------
    pairs : Pairs
        Scored document pairs (positions in ``[0, n_docs)``); scores are ignored, so
        threshold first (``pairs.above(t)``). Order, direction, self-pairs and repeats do
        not matter.
    n_docs : int
        Number of documents in the corpus (>= 0). Documents without edges become
        singletons.

    Returns
    -------
    ndarray of int64, shape (n_docs,)
        Canonical component label of every document (see :func:`canonical_labels`).
    """
    n_docs = check_graph_input("connected_components", pairs, n_docs)
    return component_labels(pairs, n_docs)


def cluster_pairs(
    pairs: Pairs,
    n_docs: int,
    *,
    method: str = "components",
    max_cluster_size: int | None = None,
    oversized: str = "flag",
    resolution: float = 1.0,
    seed: int = 0,
    weighted: bool = True,
    linkage: str = "average",
    distance_threshold: float = 0.2,
) -> Clustering:
    """Cluster documents from scored pairs, then flag or split oversized clusters.

    Parameters
    ----------
    pairs : Pairs
        Scored document pairs, positions in ``[0, n_docs)``. Threshold them first; every
        pair given is an edge. Order, direction, self-pairs and repeats do not matter
        (repeats keep their highest score).
    n_docs : int
        Number of documents in the corpus (>= 0); documents without edges are singletons.
    method : {"components", "leiden", "louvain"}, default "components"
        ``"components"``: connected components (single linkage); exact and fastest, but
        one false-positive edge merges two groups. ``"leiden"`` (recommended when pairs
        are noisy) or ``"louvain"``: community detection run inside each component,
        which cuts weak bridges between dense groups. See
        :func:`neardup.graph.community_labels`.
    max_cluster_size : int or None, default None
        Clusters with more than this many documents are *oversized* (>= 1; None
        disables the check). Huge clusters are usually templates or boilerplate, not
        duplicates; a value of a few hundred to a few thousand suits news-like corpora.
    oversized : {"flag", "split"}, default "flag"
        ``"flag"`` keeps oversized clusters and marks their documents; ``"split"`` makes
        every member of an oversized cluster a singleton (still marked oversized), so
        none of them is removed as a duplicate.
    resolution : float, default 1.0
        Community-detection resolution (>= 0), ignored by ``"components"``. Higher gives
        more, smaller clusters; 1.0 is classic modularity; 0 returns the components.
    seed : int, default 0
        Seed for community detection (0 <= seed < 2**31). Same input and seed, same output.
    weighted : bool, default True
        Use pair scores as edge weights in community detection (scores must then be
        finite and >= 0). Ignored by ``"components"``.
    linkage : {"average", "single", "complete"}, default "average"
        ``"hac"`` only: the agglomerative linkage (see
        :func:`neardup.graph.agglomerative.agglomerative_labels`).
    distance_threshold : float, default 0.2
        ``"hac"`` only: merge while the linkage distance (1 - score; missing edges count
        as 1) is at most this. Silcock et al. found average-linkage HAC slightly better
        than community detection on bi-encoder edges, at a higher cost.

    Returns
    -------
    Clustering
        ``labels``, ``sizes`` and ``oversized``, each of shape (n_docs,).
    """
    caller = "cluster_pairs"
    n_docs = check_graph_input(caller, pairs, n_docs)
    check_choice(caller, "method", method, METHODS)
    check_choice(caller, "oversized", oversized, OVERSIZED_MODES)
    if max_cluster_size is not None:
        max_cluster_size = check_int(
            caller,
            "max_cluster_size",
            as_python(max_cluster_size),
            low=1,
            hint="Pass None to keep clusters of any size.",
        )

    if method == "components":
        labels = component_labels(pairs, n_docs)
    elif method == "hac":
        from neardup.graph.agglomerative import agglomerative_labels

        labels = agglomerative_labels(
            pairs, n_docs, linkage=linkage, distance_threshold=distance_threshold
        )
    else:
        from neardup.graph.community import check_community_params, detect_communities

        resolution, seed = check_community_params(caller, pairs, resolution, seed, weighted)
        # Methods link identical documents sparsely (a chain or a star, to stay linear);
        # community detection would cut such thin paths. Contract each group joined by
        # score-1 edges into one node first, detect on the contracted graph, expand.
        group, n_groups, contracted = _contract_identical(pairs, n_docs)
        group_labels = detect_communities(
            contracted, n_groups, algorithm=method, resolution=resolution, seed=seed,
            weighted=weighted,
        )
        labels = canonical_labels(group_labels[group])

    return flag_oversized(labels, max_cluster_size, oversized)


def flag_oversized(labels: np.ndarray, max_cluster_size: int | None,
                   oversized: str = "flag") -> Clustering:
    """The :class:`Clustering` of canonical ``labels``: sizes, and clusters above
    ``max_cluster_size`` flagged (``"flag"``) or also split into singletons
    (``"split"``). Parameters are those of :func:`cluster_pairs`, already checked."""
    sizes = _cluster_sizes(labels)
    groups = labels
    if max_cluster_size is None:
        flagged = np.zeros(labels.shape[0], dtype=bool)
    else:
        flagged = sizes > max_cluster_size
        if oversized == "split" and flagged.any():
            # Give each flagged document a fresh id past the existing ones, then renumber.
            labels = labels.copy()
            labels[flagged] = labels.max() + 1 + np.arange(int(flagged.sum()), dtype=np.int64)
            labels = canonical_labels(labels)
            sizes = _cluster_sizes(labels)
    return Clustering(labels=labels, sizes=sizes, oversized=flagged, groups=groups)


# --------------------------------------------------------------------------- internals


def _contract_identical(pairs: Pairs, n_docs: int) -> tuple[np.ndarray, int, Pairs]:
    """Merge documents joined by score >= 1 edges into one node each.

    Returns the node of every document (int64, shape (n_docs,)), the number of nodes, and
    the remaining edges between nodes (self-loops dropped, repeats keep the best score).
    """
    identical = pairs.select(pairs.score >= 1.0)
    if len(identical) == 0:
        return np.arange(n_docs, dtype=np.int64), n_docs, pairs
    group = component_labels(identical, n_docs)
    n_groups = int(group.max()) + 1 if n_docs else 0
    contracted = Pairs(group[pairs.left], group[pairs.right], pairs.score).canonical()
    return group, n_groups, contracted


def _cluster_sizes(labels: np.ndarray) -> np.ndarray:
    """Size of each document's cluster, int64 (n_docs,), for canonical ``labels``."""
    if labels.size == 0:
        return np.empty(0, dtype=np.int64)
    return np.bincount(labels).astype(np.int64, copy=False)[labels]
