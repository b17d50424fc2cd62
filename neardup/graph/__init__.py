"""Scored edges -> clusters: connected components, Leiden/Louvain, oversized-cluster flags."""

from neardup.graph.cluster import (
    Clustering,
    canonical_labels,
    cluster_pairs,
    connected_components,
)
from neardup.graph.community import community_labels
from neardup.graph.edges import Pairs

__all__ = [
    "Clustering",
    "Pairs",
    "canonical_labels",
    "cluster_pairs",
    "community_labels",
    "connected_components",
]
