"""Clustering metrics (neardup/eval/metrics.py) against scikit-learn."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import (
    adjusted_rand_score,
    homogeneity_completeness_v_measure,
    matthews_corrcoef,
)
from sklearn.metrics.cluster import pair_confusion_matrix

from neardup.eval import adjusted_rand_index, cluster_metrics, pairwise_scores


@st.composite
def labelings(draw, max_size=50):
    """Two labelings of one length, from few big clusters to all singletons."""
    n = draw(st.integers(0, max_size))
    k_true = draw(st.integers(1, max(n, 1)))
    k_pred = draw(st.integers(1, max(n, 1)))
    true = draw(st.lists(st.integers(0, k_true - 1), min_size=n, max_size=n))
    pred = draw(
        st.one_of(
            st.lists(st.integers(0, k_pred - 1), min_size=n, max_size=n),
            st.just(list(range(n))),  # all singletons
            st.just([0] * n),  # one cluster
            st.just(list(true)),  # identical
        )
    )
    if draw(st.booleans()):
        true = list(range(n)) if draw(st.booleans()) else [0] * n
    return true, pred


def sklearn_counts(true, pred):
    """Unordered (tp, fp, fn, tn) from sklearn's ordered-pair confusion matrix."""
    (tn, fp), (fn, tp) = pair_confusion_matrix(true, pred) // 2
    return int(tp), int(fp), int(fn), int(tn)


# One property test for ARI and the pair counts: both read the same labelings, so one
# search over them checks both (two searches of 150 cost twice as much and find no more).
@settings(max_examples=150, deadline=None)
@given(labelings())
def test_ari_and_pair_counts_match_sklearn(case):
    true, pred = case
    assert adjusted_rand_index(true, pred) == adjusted_rand_score(true, pred)
    assert adjusted_rand_index(pred, true) == adjusted_rand_score(pred, true)
    tp, fp, fn, tn = sklearn_counts(true, pred)
    scores = pairwise_scores(true, pred)
    assert (scores["tp"], scores["fp"], scores["fn"]) == (tp, fp, fn)
    metrics = cluster_metrics(true, pred)
    assert (metrics["tp"], metrics["fp"], metrics["fn"], metrics["tn"]) == (tp, fp, fn, tn)
    assert scores["precision"] == (tp / (tp + fp) if tp + fp else 1.0)
    assert scores["recall"] == (tp / (tp + fn) if tp + fn else 1.0)
    p, r = scores["precision"], scores["recall"]
    assert scores["f1"] == pytest.approx(2 * p * r / (p + r) if p + r else 0.0)
    assert 0.0 <= scores["f1"] <= 1.0


@settings(max_examples=100, deadline=None)
@given(labelings(max_size=25))
def test_cluster_metrics_match_sklearn(case):
    true, pred = case
    metrics = cluster_metrics(true, pred)
    assert metrics["ari"] == adjusted_rand_score(true, pred)
    n = len(true)
    if n:
        h, c, v = homogeneity_completeness_v_measure(true, pred)
        assert metrics["homogeneity"] == pytest.approx(h)
        assert metrics["completeness"] == pytest.approx(c)
        assert metrics["v_measure"] == pytest.approx(v)
    assert metrics["n_docs"] == n
    assert metrics["n_true_clusters"] == len(set(true))
    assert metrics["n_pred_clusters"] == len(set(pred))
    # MCC over explicitly enumerated pairs, where sklearn's value is defined.
    pairs = list(itertools.combinations(range(n), 2))
    same_true = [true[i] == true[j] for i, j in pairs]
    same_pred = [pred[i] == pred[j] for i, j in pairs]
    if same_true == same_pred:
        assert metrics["mcc"] == 1.0
    elif len(set(same_true)) == 2 and len(set(same_pred)) == 2:
        assert metrics["mcc"] == pytest.approx(matthews_corrcoef(same_true, same_pred))
    else:
        assert metrics["mcc"] == 0.0


@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_degenerate_partitions_score_one(n):
    singletons, one = list(range(n)), [0] * n
    for labels in (singletons, one):
        assert adjusted_rand_index(labels, labels) == 1.0
        metrics = cluster_metrics(labels, labels)
        for key in ("ari", "precision", "recall", "f1", "mcc", "homogeneity", "completeness"):
            assert metrics[key] == 1.0, key


def test_pairwise_conventions_for_empty_denominators():
    # no predicted pairs, some true pairs
    assert pairwise_scores([0, 0, 1], [0, 1, 2]) == {
        "precision": 1.0,
        "recall": 0.0,
        "f1": 0.0,
        "tp": 0,
        "fp": 0,
        "fn": 1,
    }
    # predicted pairs, no true pairs
    scores = pairwise_scores([0, 1, 2], [0, 0, 1])
    assert (scores["precision"], scores["recall"], scores["f1"]) == (0.0, 1.0, 0.0)
    # neither
    scores = pairwise_scores([0, 1, 2], [5, 6, 7])
    assert (scores["precision"], scores["recall"], scores["f1"]) == (1.0, 1.0, 1.0)


def test_known_values():
    true, pred = [0, 0, 1, 1], [0, 1, 0, 1]
    assert adjusted_rand_index(true, pred) == -0.5
    assert adjusted_rand_index([0, 0, 0, 0], [0, 1, 2, 3]) == 0.0
    scores = pairwise_scores([0, 0, 1, 1, 2], [0, 0, 0, 1, 2])
    assert (scores["tp"], scores["fp"], scores["fn"]) == (1, 2, 1)
    assert scores["precision"] == pytest.approx(1 / 3)
    assert scores["recall"] == 0.5
    assert scores["f1"] == pytest.approx(0.4)


def test_labels_of_any_hashable_type():
    true = ["a", "a", "b", "b", "c"]
    pred = np.array([10, 10, 20, 20, 30])
    assert adjusted_rand_index(true, pred) == 1.0
    assert cluster_metrics(true, pred)["f1"] == 1.0
    mixed = np.array([(1, 2), "x", (1, 2), 3, 3.5], dtype=object)
    assert adjusted_rand_index(mixed, [0, 1, 0, 2, 3]) == 1.0
    # the numbering of labels never matters
    assert adjusted_rand_index([3, 3, 1, 2], [0, 0, 9, 8]) == 1.0


@pytest.mark.slow
def test_large_input_counts_without_overflow():
    # tp * tn exceeds the int64 range here; the Hubert-Arabie form, in exact fractions,
    # is an independent reference.
    # Clusters of 64 (true) inside clusters of 128 (predicted): big clusters make tp large
    # at a million documents, a quarter of the 2**22 that pairs of 2 and 4 would need.
    n = 2**20
    true, pred = np.arange(n) // 64, np.arange(n) // 128
    scores = pairwise_scores(true, pred)
    true_pairs, pred_pairs, all_pairs = (n // 64) * (64 * 63 // 2), (n // 128) * (128 * 127 // 2), n * (n - 1) // 2
    tp = true_pairs  # every true pair is predicted
    assert tp * (all_pairs - pred_pairs) > 2**63  # tp * tn: the product that would overflow
    assert (scores["tp"], scores["fp"], scores["fn"]) == (tp, pred_pairs - tp, 0)
    expected = Fraction(true_pairs * pred_pairs, all_pairs)
    ari = (tp - expected) / (Fraction(true_pairs + pred_pairs, 2) - expected)
    assert adjusted_rand_index(true, pred) == pytest.approx(float(ari), rel=1e-12)


@pytest.mark.parametrize("func", [adjusted_rand_index, pairwise_scores, cluster_metrics])
def test_rejects_length_mismatch_and_2d(func):
    name = func.__name__
    with pytest.raises(
        ValueError,
        match=f"{name}: parameter 'pred_labels' must have one label per document, like "
        r"'true_labels' \(3\); got 2 labels",
    ):
        func([0, 0, 1], [0, 1])
    with pytest.raises(ValueError, match=f"{name}: parameter 'true_labels' must be a 1-D"):
        func(np.zeros((2, 2)), [0, 1, 2, 3])


def test_metrics_by_group_restricts_the_same_clustering():
    from neardup.eval.metrics import metrics_by_group

    true = ["a", "a", "b", "c", "c", "d"]
    pred = [0, 0, 0, 1, 2, 3]  # "b" wrongly joins "a"; "c" is split
    groups = ["x", "x", "x", "y", "y", "y"]
    out = metrics_by_group(true, pred, groups)
    assert out["x"] == cluster_metrics(true[:3], pred[:3])
    assert out["y"]["fn"] == 1 and out["y"]["fp"] == 0
    assert out["x"]["fp"] == 2 and out["x"]["tp"] == 1
    with pytest.raises(ValueError, match="one group per document"):
        metrics_by_group(true, pred, groups[:2])
