"""Leiden/Louvain community detection (neardup/graph/community.py)."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from neardup.eval import adjusted_rand_index
from neardup.graph import Pairs, cluster_pairs, community_labels, connected_components

ALGORITHMS = ["leiden", "louvain"]


def cliques(groups, score=0.9, bridges=(), bridge_score=0.3):
    """Pairs for a clique on each group of positions plus weak bridge edges."""
    edges = [e for g in groups for e in itertools.combinations(g, 2)]
    left = [a for a, _ in edges] + [a for a, _ in bridges]
    right = [b for _, b in edges] + [b for _, b in bridges]
    score = [score] * len(edges) + [bridge_score] * len(bridges)
    return Pairs(np.array(left), np.array(right), np.array(score))


def two_bridged_cliques():
    return cliques([range(6), range(6, 12)], bridges=[(5, 6)])


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_weak_bridge_between_cliques_is_cut(algorithm):
    pairs = two_bridged_cliques()
    assert connected_components(pairs, 14).tolist() == [0] * 12 + [1, 2]
    expected = [0] * 6 + [1] * 6 + [2, 3]
    assert community_labels(pairs, 14, algorithm=algorithm).tolist() == expected
    assert community_labels(pairs, 14, algorithm=algorithm, weighted=False).tolist() == expected
    result = cluster_pairs(pairs, 14, method=algorithm)
    assert result.labels.tolist() == expected
    assert result.n_clusters == 4
    assert cluster_pairs(pairs, 14).n_clusters == 3  # components keep the bridge


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_planted_clusters_recovered_across_many_components(algorithm):
    # 30 cliques of 4..7 documents; pairs of cliques joined by one weak bridge.
    rng = np.random.default_rng(1)
    sizes = rng.integers(4, 8, 30)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    groups = [range(starts[i], starts[i + 1]) for i in range(30)]
    bridges = [(starts[i], starts[i + 1]) for i in range(0, 30, 2)]
    n_docs = int(starts[-1]) + 5  # plus five isolated documents
    truth = np.concatenate([np.repeat(np.arange(30), sizes), 30 + np.arange(5)])
    pairs = cliques(groups, bridges=bridges)
    labels = community_labels(pairs, n_docs, algorithm=algorithm, seed=7)
    assert labels.shape == (n_docs,)
    assert adjusted_rand_index(truth, labels) == 1.0
    assert adjusted_rand_index(truth, connected_components(pairs, n_docs)) < 1.0


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_same_seed_same_result_and_pair_order_irrelevant(algorithm):
    rng = np.random.default_rng(5)
    n_docs = 80
    left, right = rng.integers(0, n_docs, 200), rng.integers(0, n_docs, 200)
    score = rng.uniform(0.3, 1.0, 200)
    pairs = Pairs(left, right, score)
    first = community_labels(pairs, n_docs, algorithm=algorithm, seed=11)
    assert community_labels(pairs, n_docs, algorithm=algorithm, seed=11).tolist() == (
        first.tolist()
    )
    order = rng.permutation(200)
    shuffled = Pairs(right[order], left[order], score[order])
    assert community_labels(shuffled, n_docs, algorithm=algorithm, seed=11).tolist() == (
        first.tolist()
    )
    assert first.dtype == np.int64 and first.shape == (n_docs,)


def test_louvain_restores_global_random_state():
    random.seed(123)
    expected = random.random()
    random.seed(123)
    community_labels(two_bridged_cliques(), 14, algorithm="louvain")
    assert random.random() == expected


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_small_components_and_isolated_docs_kept(algorithm):
    # a pair, a triangle, an isolated document
    pairs = Pairs(np.array([0, 2, 3, 2]), np.array([1, 3, 4, 4]), np.array([0.2, 1, 1, 1]))
    assert community_labels(pairs, 6, algorithm=algorithm).tolist() == [0, 0, 1, 1, 1, 2]
    # only pairs and singletons: no community detection needed at all
    pairs = Pairs(np.array([4, 0]), np.array([1, 3]), np.array([0.5, 0.5]))
    assert community_labels(pairs, 5, algorithm=algorithm).tolist() == [0, 1, 2, 0, 1]
    assert community_labels(Pairs.empty(), 3, algorithm=algorithm).tolist() == [0, 1, 2]
    assert community_labels(Pairs.empty(), 0, algorithm=algorithm).shape == (0,)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_resolution_zero_keeps_components_and_high_resolution_splits_more(algorithm):
    pairs = two_bridged_cliques()
    components = connected_components(pairs, 14)
    at_zero = community_labels(pairs, 14, algorithm=algorithm, resolution=0.0)
    assert at_zero.tolist() == components.tolist()
    coarse = community_labels(pairs, 14, algorithm=algorithm, resolution=1.0).max()
    fine = community_labels(pairs, 14, algorithm=algorithm, resolution=5.0).max()
    assert fine >= coarse


def test_rejects_bad_parameters():
    pairs = two_bridged_cliques()
    with pytest.raises(
        ValueError,
        match="community_labels: parameter 'algorithm' must be one of 'leiden', 'louvain'; "
        "got 'girvan'",
    ):
        community_labels(pairs, 14, algorithm="girvan")
    with pytest.raises(ValueError, match="parameter 'resolution' must be a number >= 0.0"):
        community_labels(pairs, 14, resolution=float("nan"))
    with pytest.raises(ValueError, match=r"'seed' must be an integer in \[0, 2147483647\]"):
        community_labels(pairs, 14, seed=2**31)
    with pytest.raises(ValueError, match="parameter 'weighted' must be True or False"):
        community_labels(pairs, 14, weighted="yes")
    with pytest.raises(ValueError, match=r"parameter 'pairs' must hold document positions"):
        community_labels(pairs, 11)


def test_invalid_scores_rejected_only_when_weighted():
    pairs = Pairs(np.array([0, 1, 0]), np.array([1, 2, 2]), np.array([0.5, np.nan, 0.5]))
    with pytest.raises(ValueError, match="parameter 'pairs' must have finite scores >= 0"):
        community_labels(pairs, 3)
    negative = Pairs(np.array([0, 1, 0]), np.array([1, 2, 2]), np.array([0.5, -0.1, 0.5]))
    with pytest.raises(ValueError, match="got score -0.1"):
        community_labels(negative, 3, algorithm="louvain")
    assert community_labels(pairs, 3, weighted=False).tolist() == [0, 0, 0]
