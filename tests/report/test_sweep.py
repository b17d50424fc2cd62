"""Score histogram and threshold sweep over a run's pairs."""

import numpy as np
import pytest

from neardup.graph import Pairs, connected_components
from neardup.report.sweep import score_histogram, score_threshold, threshold_sweep


def test_sweep_matches_connected_components_at_each_threshold():
    rng = np.random.default_rng(0)
    n = 300
    left = rng.integers(0, n, 400)
    right = rng.integers(0, n, 400)
    scores = rng.uniform(0.5, 1.0, 400).astype(np.float32)
    rows = threshold_sweep(left, right, scores, n, 0.5, steps=5)
    assert rows[0]["threshold"] == 0.5
    assert [r["threshold"] for r in rows] == sorted(r["threshold"] for r in rows)
    for row in rows:
        keep = scores >= row["threshold"] - 1e-6
        labels = connected_components(Pairs(left[keep], right[keep], scores[keep]), n)
        sizes = np.bincount(labels)
        assert row["clusters"] == sizes.size
        assert row["duplicates"] == n - sizes.size
        assert row["duplicate_clusters"] == int((sizes > 1).sum())
        assert row["largest"] == int(sizes.max())
    # Stricter thresholds never merge more.
    assert all(a["clusters"] <= b["clusters"] for a, b in zip(rows, rows[1:]))


def test_sweep_replays_the_runs_community_detection():
    # Two 6-document cliques joined by one bridge: components merge them, Leiden (the
    # run's clustering, rerank's default) keeps them apart; the sweep says what the run did.
    from neardup.graph import cluster_pairs

    clique = [(a, b) for a in range(6) for b in range(a + 1, 6)]
    edges = clique + [(a + 6, b + 6) for a, b in clique] + [(5, 6)]
    left, right = (np.array(side) for side in zip(*edges))
    scores = np.full(left.size, 0.95, np.float32)
    scores[-1] = 0.91
    leiden = {"algorithm": "leiden", "resolution": 1.0, "seed": 0}
    rows = threshold_sweep(left, right, scores, 14, 0.9, steps=3, clustering=leiden)
    want = cluster_pairs(Pairs(left, right, scores), 14, method="leiden").labels
    assert rows[0]["threshold"] == 0.9 and rows[0]["clusters"] == np.unique(want).size == 4
    assert rows[0]["largest"] == 6 and rows[0]["duplicate_clusters"] == 2
    components = threshold_sweep(left, right, scores, 14, 0.9, steps=3)
    assert components[0]["clusters"] == 3 and components[0]["largest"] == 12
    # HAC runs are swept by components (their merge rule is not the pairs' threshold).
    assert threshold_sweep(left, right, scores, 14, 0.9, steps=3, clustering={"algorithm": "hac"}) == components


def test_sweep_without_pairs_or_threshold():
    empty = np.zeros(0, np.int64)
    assert threshold_sweep(empty, empty, np.zeros(0, np.float32), 5, 0.5) == []
    rows = threshold_sweep(np.array([0]), np.array([1]), np.array([0.7], np.float32), 3, None)
    assert rows == [{"threshold": 0.7, "clusters": 2, "duplicates": 1, "duplicate_clusters": 1,
                     "largest": 2, "edges": 1}]


@pytest.mark.parametrize(("method", "params", "expected"), [
    ("minhash", {"method": {"threshold": 0.6}}, 0.6),
    ("simhash", {"method": {"threshold": 4}}, 1 - 4 / 64),
    ("exact", {"method": {"seed": 0}}, None),
    ("minhash", {}, None),
])
def test_score_threshold(method, params, expected):
    got = score_threshold(method, params)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected)


def test_histogram_spans_the_threshold():
    h = score_histogram(np.array([0.8, 0.9, 0.95, 1.0]), 0.5, bins=10)
    assert h["edges"][0] == 0.5 and h["edges"][-1] == 1.0
    assert sum(h["counts"]) == 4 and len(h["counts"]) == 10
    assert score_histogram(np.zeros(0), 0.5)["counts"] == []
