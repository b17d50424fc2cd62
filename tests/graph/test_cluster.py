"""Connected components, canonical labels and cluster_pairs (neardup/graph/cluster.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.graph import Clustering, Pairs, canonical_labels, cluster_pairs, connected_components


def make_pairs(edges, score=0.9):
    if not edges:
        return Pairs.empty()
    left, right = zip(*edges)
    return Pairs(np.array(left), np.array(right), np.full(len(edges), score))


def union_find(edges, n_docs):
    """Reference clustering, deliberately naive."""
    parent = list(range(n_docs))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        parent[find(a)] = find(b)
    return canonical_labels([find(x) for x in range(n_docs)])


# ------------------------------------------------------------------ canonical_labels


def test_canonical_labels_numbers_by_first_appearance():
    assert canonical_labels([7, 7, 3, 9, 3]).tolist() == [0, 0, 1, 2, 1]
    assert canonical_labels(["b", "a", "b", "c"]).tolist() == [0, 1, 0, 2]
    assert canonical_labels(np.array([5])).tolist() == [0]
    out = canonical_labels([])
    assert out.dtype == np.int64 and out.shape == (0,)


def test_canonical_labels_mixed_unorderable_types():
    assert canonical_labels(np.array([(1, 2), "x", (1, 2), 3], dtype=object)).tolist() == [
        0,
        1,
        0,
        2,
    ]


def test_canonical_labels_rejects_2d():
    with pytest.raises(ValueError, match="canonical_labels: parameter 'labels' must be a 1-D"):
        canonical_labels(np.zeros((2, 2)))


@given(st.lists(st.integers(0, 8), max_size=40), st.randoms(use_true_random=False))
def test_canonical_labels_independent_of_label_values(labels, rnd):
    values = list(range(100))
    rnd.shuffle(values)  # an arbitrary injective relabeling
    relabeled = [f"c{values[x]}" for x in labels]
    out = canonical_labels(labels)
    assert out.dtype == np.int64
    assert out.tolist() == canonical_labels(relabeled).tolist()
    assert out.tolist() == canonical_labels(out).tolist()  # idempotent
    if labels:
        # ids are 0..C-1 and each new id appears first in increasing order
        first_seen = [x for i, x in enumerate(out.tolist()) if x not in out[:i]]
        assert first_seen == list(range(len(set(labels))))


# -------------------------------------------------------------- connected_components


def test_components_known_graph():
    pairs = make_pairs([(0, 1), (1, 2), (4, 5)])
    labels = connected_components(pairs, 7)
    assert labels.dtype == np.int64
    assert labels.tolist() == [0, 0, 0, 1, 2, 2, 3]


def test_components_isolated_docs_are_singletons_and_every_doc_appears_once():
    pairs = make_pairs([(8, 3), (3, 9)])
    labels = connected_components(pairs, 12)
    assert labels.shape == (12,)
    assert labels.tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 3, 3, 8, 9]


def test_components_empty_pairs_and_empty_corpus():
    assert connected_components(Pairs.empty(), 4).tolist() == [0, 1, 2, 3]
    out = connected_components(Pairs.empty(), 0)
    assert out.dtype == np.int64 and out.shape == (0,)
    assert connected_components(Pairs.empty(), 1).tolist() == [0]


def test_components_ignore_order_direction_self_pairs_and_repeats():
    edges = [(0, 5), (5, 9), (2, 3), (7, 7)]
    messy = [(9, 5), (3, 2), (7, 7), (5, 0), (0, 5), (2, 3)]
    assert (
        connected_components(make_pairs(edges), 10).tolist()
        == connected_components(make_pairs(messy), 10).tolist()
        == [0, 1, 2, 2, 3, 0, 4, 5, 6, 0]
    )


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 30).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=40)
            if n
            else st.just([]),
        )
    )
)
def test_components_match_union_find(case):
    n_docs, edges = case
    assert connected_components(make_pairs(edges), n_docs).tolist() == union_find(
        edges, n_docs
    ).tolist()


@pytest.mark.parametrize("bad", [(0, 5), (-1, 2), (5, 0)])
def test_components_rejects_out_of_range_positions(bad):
    with pytest.raises(
        ValueError,
        match=r"connected_components: parameter 'pairs' must hold document positions in "
        r"\[0, n_docs\) = \[0, 5\)",
    ):
        connected_components(make_pairs([(0, 1), bad]), 5)


def test_components_rejects_bad_n_docs_and_pairs_type():
    with pytest.raises(ValueError, match="parameter 'n_docs' must be an integer >= 0; got -1"):
        connected_components(Pairs.empty(), -1)
    with pytest.raises(ValueError, match="parameter 'n_docs'"):
        connected_components(Pairs.empty(), 2.0)
    with pytest.raises(TypeError, match="parameter 'pairs' must be a neardup.graph.Pairs"):
        connected_components([(0, 1)], 2)
    # numpy integers are integers
    assert connected_components(make_pairs([(0, 1)]), np.int64(3)).tolist() == [0, 0, 1]


# ---------------------------------------------------------------------- cluster_pairs

METHODS = ["components", "leiden", "louvain"]


@pytest.mark.parametrize("method", METHODS)
def test_cluster_pairs_contract(method):
    """Every document once, singletons for the rest, deterministic, empty and single doc."""
    rng = np.random.default_rng(0)
    n_docs = 60
    left = rng.integers(0, n_docs, 80)
    right = rng.integers(0, n_docs, 80)
    pairs = Pairs(left, right, rng.uniform(0.5, 1.0, 80))
    result = cluster_pairs(pairs, n_docs, method=method, seed=3)
    assert isinstance(result, Clustering)
    assert result.labels.shape == result.sizes.shape == result.oversized.shape == (n_docs,)
    assert result.labels.dtype == result.sizes.dtype == np.int64
    assert result.oversized.dtype == bool and not result.oversized.any()
    assert result.labels.tolist() == canonical_labels(result.labels).tolist()
    assert result.n_clusters == len(set(result.labels.tolist()))
    assert result.n_docs == n_docs
    assert result.sizes.tolist() == [
        result.labels.tolist().count(x) for x in result.labels.tolist()
    ]
    untouched = np.setdiff1d(np.arange(n_docs), np.concatenate([left, right]))
    assert (result.sizes[untouched] == 1).all()
    # Every cluster lies inside one connected component.
    components = connected_components(pairs, n_docs)
    for label in range(result.n_clusters):
        assert np.unique(components[result.labels == label]).size == 1

    again = cluster_pairs(pairs, n_docs, method=method, seed=3)
    assert again.labels.tolist() == result.labels.tolist()
    flipped = Pairs(right[::-1], left[::-1], pairs.score[::-1])
    assert cluster_pairs(flipped, n_docs, method=method, seed=3).labels.tolist() == (
        result.labels.tolist()
    )

    empty = cluster_pairs(Pairs.empty(), 0, method=method)
    assert empty.labels.shape == empty.sizes.shape == empty.oversized.shape == (0,)
    assert empty.labels.dtype == np.int64 and empty.n_clusters == 0
    single = cluster_pairs(Pairs.empty(), 1, method=method)
    assert single.labels.tolist() == [0] and single.sizes.tolist() == [1]
    assert single.n_clusters == 1


def test_cluster_pairs_oversized_flag():
    # clusters of size 5, 2, 1 and 3
    pairs = make_pairs([(0, 1), (1, 2), (2, 3), (3, 4), (5, 6), (8, 9), (9, 10)])
    result = cluster_pairs(pairs, 11, max_cluster_size=2)
    assert result.labels.tolist() == [0, 0, 0, 0, 0, 1, 1, 2, 3, 3, 3]
    assert result.sizes.tolist() == [5, 5, 5, 5, 5, 2, 2, 1, 3, 3, 3]
    assert result.oversized.tolist() == [True] * 5 + [False] * 3 + [True] * 3
    assert result.n_clusters == 4
    assert not cluster_pairs(pairs, 11, max_cluster_size=5).oversized.any()
    assert not cluster_pairs(pairs, 11).oversized.any()


def test_cluster_pairs_oversized_split():
    pairs = make_pairs([(0, 1), (1, 2), (2, 3), (3, 4), (5, 6), (8, 9), (9, 10)])
    result = cluster_pairs(pairs, 11, max_cluster_size=2, oversized="split")
    assert result.labels.tolist() == [0, 1, 2, 3, 4, 5, 5, 6, 7, 8, 9]
    assert result.sizes.tolist() == [1, 1, 1, 1, 1, 2, 2, 1, 1, 1, 1]
    assert result.oversized.tolist() == [True] * 5 + [False] * 3 + [True] * 3
    assert result.n_clusters == 10


def test_cluster_pairs_rejects_bad_parameters():
    pairs = make_pairs([(0, 1)])
    with pytest.raises(
        ValueError,
        match="cluster_pairs: parameter 'method' must be one of 'components', 'leiden', "
        "'louvain', 'hac'; got 'dbscan'",
    ):
        cluster_pairs(pairs, 2, method="dbscan")
    with pytest.raises(ValueError, match="parameter 'oversized' must be one of 'flag', 'split'"):
        cluster_pairs(pairs, 2, oversized="drop")
    with pytest.raises(ValueError, match="parameter 'max_cluster_size' must be an integer >= 1"):
        cluster_pairs(pairs, 2, max_cluster_size=0)
    with pytest.raises(ValueError, match=r"parameter 'pairs' must hold document positions"):
        cluster_pairs(pairs, 1)
    with pytest.raises(ValueError, match="cluster_pairs: parameter 'resolution'"):
        cluster_pairs(pairs, 2, method="leiden", resolution=-1.0)
    with pytest.raises(ValueError, match="cluster_pairs: parameter 'seed'"):
        cluster_pairs(pairs, 2, method="louvain", seed=-3)


@pytest.mark.parametrize("method", ["leiden", "louvain"])
def test_identical_chain_is_not_cut_by_community_detection(method):
    # Methods link identical documents as a chain (linear in group size); a long path
    # would be cut into pieces by modularity if it were not contracted first.
    n = 40
    chain = Pairs(np.arange(n - 1), np.arange(1, n), np.ones(n - 1, np.float32))
    labels = cluster_pairs(chain, n, method=method).labels
    assert np.all(labels == 0)
