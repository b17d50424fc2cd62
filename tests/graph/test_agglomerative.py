"""Hierarchical agglomerative clustering of the pair graph (neardup/graph/agglomerative.py)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform

from neardup.graph import Pairs, canonical_labels, connected_components
from neardup.graph.agglomerative import agglomerative_labels

LINKAGES = ["average", "single", "complete"]


def make_pairs(edges, scores):
    left, right = zip(*edges)
    return Pairs(np.array(left), np.array(right), np.array(scores, dtype=np.float32))


def cliques(groups, score=0.9, bridges=(), bridge_score=0.85):
    edges = [e for g in groups for e in itertools.combinations(g, 2)]
    scores = [score] * len(edges) + [bridge_score] * len(bridges)
    return make_pairs(edges + list(bridges), scores)


def random_graph(n_docs, n_edges, seed, low=0.5):
    """Sparse random pairs with distinct random scores in [low, 1)."""
    rng = np.random.default_rng(seed)
    left = rng.integers(0, n_docs, n_edges)
    right = rng.integers(0, n_docs, n_edges)
    return Pairs(left, right, rng.uniform(low, 1.0, n_edges)).canonical()


def dense_reference(pairs, n_docs, method, threshold):
    """HAC of the whole corpus at once on the full distance matrix, missing pairs at 1."""
    dist = np.ones((n_docs, n_docs))
    d = 1.0 - np.clip(pairs.score.astype(np.float64), 0, 1)
    dist[pairs.left, pairs.right] = d
    dist[pairs.right, pairs.left] = d
    np.fill_diagonal(dist, 0.0)
    tree = linkage(squareform(dist, checks=False), method=method)
    return canonical_labels(fcluster(tree, t=threshold, criterion="distance"))


def close_components(pairs, n_docs, threshold):
    close = (1.0 - pairs.score.astype(np.float64)) <= threshold
    return connected_components(pairs.select(close), n_docs)


# ------------------------------------------------------------------------ semantics


@pytest.mark.parametrize("threshold", [0.0, 0.05, 0.2, 0.35, 0.6])
@pytest.mark.parametrize("seed", range(4))
def test_single_linkage_equals_components_of_close_edges(threshold, seed):
    pairs = random_graph(120, 200, seed)
    labels = agglomerative_labels(pairs, 130, linkage="single", distance_threshold=threshold)
    assert labels.tolist() == close_components(pairs, 130, threshold).tolist()
    assert labels.tolist() == dense_reference(pairs, 130, "single", threshold).tolist()


@pytest.mark.parametrize("method", LINKAGES)
@pytest.mark.parametrize("threshold", [0.1, 0.25, 0.45])
@pytest.mark.parametrize("seed", range(4))
def test_per_component_hac_equals_whole_corpus_hac(method, threshold, seed):
    # Dense random graphs on few documents give big components with many non-edges.
    pairs = random_graph(60, 400, seed, low=0.3)
    got = agglomerative_labels(pairs, 64, linkage=method, distance_threshold=threshold)
    assert got.tolist() == dense_reference(pairs, 64, method, threshold).tolist()


@pytest.mark.parametrize("method", LINKAGES)
def test_many_noisy_groups_match_whole_corpus_hac(method):
    # Groups of 1..8 copies (scores 0.7-1 inside, some pairs unscored) and random false
    # positives between groups (0.3-0.85): many components of every size.
    rng = np.random.default_rng(11)
    sizes = rng.integers(1, 9, size=40)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    edges, scores = [], []
    for a, b in zip(starts[:-1].tolist(), starts[1:].tolist()):
        for e in itertools.combinations(range(a, b), 2):
            if rng.random() < 0.8:
                edges.append(e)
                scores.append(rng.uniform(0.7, 1.0))
    n_docs = int(starts[-1])
    for _ in range(60):
        edges.append(tuple(rng.integers(0, n_docs, 2).tolist()))
        scores.append(rng.uniform(0.3, 0.85))
    pairs = make_pairs(edges, scores).canonical()
    got = agglomerative_labels(pairs, n_docs, linkage=method)
    assert got.tolist() == dense_reference(pairs, n_docs, method, 0.2).tolist()


def test_average_and_complete_differ_on_hand_built_case():
    # d(0,1) = 0.05, d(0,2) = 0.1, d(1,2) = 0.25; threshold 0.2.
    # {0,1} merge at 0.05; then document 2 is at mean(0.1, 0.25) = 0.175 <= 0.2 from
    # {0,1} (average joins it) but at max(0.1, 0.25) = 0.25 > 0.2 (complete does not).
    pairs = make_pairs([(0, 1), (0, 2), (1, 2)], [0.95, 0.9, 0.75])
    assert agglomerative_labels(pairs, 4, linkage="average").tolist() == [0, 0, 0, 1]
    assert agglomerative_labels(pairs, 4, linkage="complete").tolist() == [0, 0, 1, 2]
    assert agglomerative_labels(pairs, 4, linkage="single").tolist() == [0, 0, 0, 1]


def test_missing_pairs_count_as_distance_one():
    # A path 0-1-2 of very close edges, 0 and 2 not scored: for average linkage 2 is at
    # mean(0.01, 1) = 0.505 from {0,1}, so the path splits; single linkage chains it.
    pairs = make_pairs([(0, 1), (1, 2)], [0.99, 0.98])
    assert agglomerative_labels(pairs, 3).tolist() == [0, 0, 1]
    assert agglomerative_labels(pairs, 3, linkage="single").tolist() == [0, 0, 0]
    assert agglomerative_labels(pairs, 3, distance_threshold=0.6).tolist() == [0, 0, 0]


@pytest.mark.parametrize("method", ["average", "complete"])
def test_cliques_joined_by_weak_link_are_split(method):
    # Two 6-cliques (distance 0.1) bridged by one edge of distance 0.15 <= threshold.
    pairs = cliques([range(6), range(6, 12)], bridges=[(5, 6)])
    expected = [0] * 6 + [1] * 6 + [2, 3]
    assert agglomerative_labels(pairs, 14, linkage=method).tolist() == expected
    assert agglomerative_labels(pairs, 14, linkage="single").tolist() == [0] * 12 + [1, 2]


def test_weak_pairs_below_the_threshold_still_pull_average_linkage():
    # 0-1 close; 2 is close to 0 only, but far (0.5) from 1: average 0.3 > 0.2 keeps it
    # out. Dropping the far pair (as if never scored) makes it 1 -> also out; making it
    # 0.75 (distance 0.25) brings the mean to 0.175 -> in.
    base = [(0, 1), (0, 2), (1, 2)]
    assert agglomerative_labels(make_pairs(base, [0.95, 0.9, 0.5]), 3).tolist() == [0, 0, 1]
    assert agglomerative_labels(make_pairs(base, [0.95, 0.9, 0.75]), 3).tolist() == [0, 0, 0]
    assert agglomerative_labels(make_pairs(base[:2], [0.95, 0.9]), 3).tolist() == [0, 0, 1]


# ------------------------------------------------------------------------ contract


@pytest.mark.parametrize("method", LINKAGES)
def test_every_document_once_and_isolated_singletons(method):
    pairs = random_graph(50, 80, seed=3)
    n_docs = 70  # 50..69 have no edges
    labels = agglomerative_labels(pairs, n_docs, linkage=method)
    assert labels.dtype == np.int64 and labels.shape == (n_docs,)
    assert labels.tolist() == canonical_labels(labels).tolist()
    tail = labels[50:]
    assert len(set(tail.tolist())) == 20 and not set(tail.tolist()) & set(labels[:50].tolist())
    # Finer than (or equal to) single linkage: no cluster spans two single-linkage clusters.
    single = close_components(pairs, n_docs, 0.2)
    for c in np.unique(labels):
        assert np.unique(single[labels == c]).size == 1


@pytest.mark.parametrize("method", LINKAGES)
def test_deterministic_whatever_the_pair_order(method):
    pairs = random_graph(80, 300, seed=5, low=0.4)
    first = agglomerative_labels(pairs, 80, linkage=method, distance_threshold=0.3)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(pairs))
    flip = rng.random(len(pairs)) < 0.5
    left = np.where(flip, pairs.right, pairs.left)[order]
    right = np.where(flip, pairs.left, pairs.right)[order]
    # Shuffled, flipped, with weaker repeats and self-pairs added.
    shuffled = Pairs(
        np.concatenate([left, left[:20], [3, 4]]),
        np.concatenate([right, right[:20], [3, 4]]),
        np.concatenate([pairs.score[order], pairs.score[order][:20] - 0.2, [1.0, 1.0]]),
    )
    again = agglomerative_labels(shuffled, 80, linkage=method, distance_threshold=0.3)
    assert again.tolist() == first.tolist()


@pytest.mark.parametrize("method", LINKAGES)
def test_empty_inputs(method):
    assert agglomerative_labels(Pairs.empty(), 0, linkage=method).shape == (0,)
    assert agglomerative_labels(Pairs.empty(), 4, linkage=method).tolist() == [0, 1, 2, 3]
    one_pair = make_pairs([(1, 2)], [0.9])
    assert agglomerative_labels(one_pair, 4, linkage=method).tolist() == [0, 1, 1, 2]


def test_scores_outside_unit_interval_are_clipped():
    pairs = make_pairs([(0, 1), (1, 2), (0, 2)], [1.2, 1.0, -0.5])
    # Distances 0, 0 and 1: document 2 is at mean(0, 1) = 0.5 from {0, 1}.
    assert agglomerative_labels(pairs, 3, distance_threshold=0.4).tolist() == [0, 0, 1]
    assert agglomerative_labels(pairs, 3, distance_threshold=0.6).tolist() == [0, 0, 0]
    assert agglomerative_labels(pairs, 3, linkage="complete").tolist() == [0, 0, 1]


def test_oversized_component_falls_back_to_single_linkage_with_warning():
    big = cliques([range(6), range(6, 12)], bridges=[(5, 6)])
    small = cliques([range(12, 15), range(15, 18)], bridges=[(14, 15)])
    pairs = Pairs.concat([big, small])
    with pytest.warns(UserWarning, match=r"1 component\(s\) larger than max_component=10 "
                      r"\(largest: 12 documents\) kept their single-linkage clusters"):
        labels = agglomerative_labels(pairs, 18, max_component=10)
    # The 12-document component stays whole; the 6-document one is still split.
    assert labels.tolist() == [0] * 12 + [1] * 3 + [2] * 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        agglomerative_labels(pairs, 18, linkage="single", max_component=10)  # no warning
        agglomerative_labels(pairs, 18, max_component=12)


# ------------------------------------------------------------------------ invalid input


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"linkage": "ward"}, "'linkage' must be one of 'average', 'single', 'complete'"),
        ({"distance_threshold": 1.0}, r"'distance_threshold' must be a number in \[0, 1\)"),
        ({"distance_threshold": -0.1}, "'distance_threshold' must be a number in"),
        ({"max_component": 0}, "'max_component' must be an integer >= 1"),
    ],
)
def test_bad_parameters_raise(kwargs, match):
    with pytest.raises(ValueError, match=f"agglomerative_labels: parameter {match}"):
        agglomerative_labels(make_pairs([(0, 1)], [0.9]), 2, **kwargs)


def test_bad_pairs_raise():
    with pytest.raises(ValueError, match="parameter 'pairs' must have finite scores"):
        agglomerative_labels(make_pairs([(0, 1)], [np.nan]), 2)
    with pytest.raises(ValueError, match="positions in \\[0, n_docs\\)"):
        agglomerative_labels(make_pairs([(0, 5)], [0.9]), 3)
    with pytest.raises(TypeError, match="must be a neardup.graph.Pairs"):
        agglomerative_labels([(0, 1, 0.9)], 2)
