"""Property tests of ``neardup.dedup``: every document exactly once in every output, and the
same clusters whatever the batch size and the input order (up to cluster numbering)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import neardup

WORDS = ["grain", "wheat", "prices", "rose", "fell", "in", "chicago", "on", "monday", "the", ""]
# Few distinct texts, so that exact and near copies are common.
TEXTS = st.lists(
    st.lists(st.sampled_from(WORDS), min_size=0, max_size=9).map(" ".join), min_size=0, max_size=25
)
METHODS = st.sampled_from([
    ("exact", {}),
    ("ngram", {"threshold": 0.5}),
    ("ngram", {"threshold": 0.3, "max_df": 2}),  # most shingles over max_df: chained
    ("minhash", {"threshold": 0.5}),
    ("simhash", {}),
])
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def partition(result, ids) -> set[frozenset[str]]:
    """The clusters as sets of document ids (independent of cluster numbering)."""
    groups: dict[int, set[str]] = {}
    for doc_id, label in zip(ids, result.clusters.tolist()):
        groups.setdefault(label, set()).add(doc_id)
    return {frozenset(g) for g in groups.values()}


def check_every_document_once(result, n: int) -> None:
    table = result.clusters_table()
    assert table.num_rows == n == result.n_docs
    assert sorted(table.column("id").to_pylist(), key=int) == [str(i) for i in range(n)]
    clusters = result.clusters
    assert clusters.shape == (n,) and (n == 0 or clusters.min() >= 0)
    # One representative per cluster, and cluster sizes that match the labels.
    reps = clusters[result.representative]
    assert sorted(reps.tolist()) == sorted(set(clusters.tolist()))
    sizes = np.bincount(clusters) if n else np.zeros(0, np.int64)
    np.testing.assert_array_equal(result.cluster_size, sizes[clusters] if n else sizes)
    # Pairs name valid, distinct documents; the summary adds up.
    left, right, score = result.pairs
    assert np.all((0 <= left) & (left < right) & (right < n))
    assert np.all((score >= 0) & (score <= 1.0 + 1e-6))
    summary = result.summary()
    assert summary["documents"] == n
    assert summary["clusters"] + summary["duplicates_removed"] == n


@SETTINGS
@given(texts=TEXTS, method=METHODS, batch_size=st.integers(1, 7), seed=st.integers(0, 2**16))
@pytest.mark.slow
def test_every_document_once_whatever_the_batch_size_and_order(texts, method, batch_size, seed):
    name, params = method
    n = len(texts)
    base = neardup.dedup(texts, method=name, **params)
    check_every_document_once(base, n)
    ids = [str(i) for i in range(n)]

    batched = neardup.dedup(texts, method=name, batch_size=batch_size, **params)
    check_every_document_once(batched, n)
    np.testing.assert_array_equal(batched.clusters, base.clusters)
    np.testing.assert_array_equal(batched.representative, base.representative)

    order = np.random.default_rng(seed).permutation(n)
    records = [{"id": ids[k], "text": texts[k]} for k in order]
    shuffled = neardup.dedup(records, method=name, id_field="id", **params)
    assert shuffled.n_docs == n
    assert partition(shuffled, shuffled.ids.tolist()) == partition(base, ids)


@SETTINGS
@given(texts=TEXTS, copies=st.integers(2, 12), max_df=st.integers(2, 5))
@pytest.mark.slow
def test_exact_copies_always_one_cluster_with_ngram(texts, copies, max_df):
    """However many copies (above max_df or not), exact copies end in one cluster."""
    story = "grain prices rose in chicago on monday"
    corpus = texts + [story] * copies
    result = neardup.dedup(corpus, method="ngram", max_df=max_df, threshold=0.9)
    labels = result.clusters[len(texts):]
    assert np.unique(labels).size == 1
