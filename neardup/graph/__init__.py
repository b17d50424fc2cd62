"""Scored edges -> clusters: connected components, Leiden/Louvain, agglomerative clustering,
oversized-cluster flags; faiss similarity graphs over embeddings. Duplicate types of pairs
are in :mod:`neardup.methods.pair_types`."""

from neardup.graph.agglomerative import agglomerative_labels
from neardup.graph.cluster import (
    Clustering,
    canonical_labels,
    cluster_pairs,
    connected_components,
)
from neardup.graph.community import community_labels
from neardup.graph.edges import Pairs
from neardup.graph.similarity import chunk_similarity_pairs, similarity_pairs

__all__ = [
    "Clustering",
    "Pairs",
    "agglomerative_labels",
    "canonical_labels",
    "chunk_similarity_pairs",
    "cluster_pairs",
    "community_labels",
    "connected_components",
    "similarity_pairs",
]
