"""The index's keyed rule is dedup's bucket rule (neardup.graph.buckets.bucket_edges)
replayed one batch at a time."""

from __future__ import annotations

import numpy as np
import pytest

from neardup.graph.buckets import bucket_edges
from neardup.index._link import keyed_candidates


def _groups(rng, n_docs, n_keys):
    keys = rng.integers(0, n_keys, n_docs).astype(np.int64)
    docs = np.arange(n_docs, dtype=np.int64)
    return keys, docs


@pytest.mark.parametrize("cap", [0, 1, 3, 50])
def test_one_batch_into_an_empty_index_is_dedups_rule(cap):
    keys, docs = _groups(np.random.default_rng(cap), 200, 12)
    left, right = keyed_candidates(keys, docs, {}, {}, cap)
    order = np.lexsort((docs, keys))
    starts = np.flatnonzero(np.r_[True, keys[order][1:] != keys[order][:-1]])
    sizes = np.diff(np.r_[starts, keys.size])
    want_left, want_right = bucket_edges(docs[order], starts, sizes, all_pairs_upto=cap)
    assert sorted(zip(left.tolist(), right.tolist())) == sorted(
        zip(want_left.tolist(), want_right.tolist()))


def test_new_documents_of_a_large_key_meet_its_anchor_and_predecessor():
    # Key 7 holds 10 stored documents (more than cap = 3): the index keeps its anchor (2),
    # last member (40) and count. New documents 50, 51 join the star and the chain.
    left, right = keyed_candidates(np.array([7, 7]), np.array([51, 50]), {}, {7: (2, 40, 10)}, 3)
    assert list(zip(left.tolist(), right.tolist())) == [(2, 50), (40, 50), (2, 51), (50, 51)]
    # As a query (with_new=False), each new document is checked as if it alone were added.
    left, right = keyed_candidates(np.array([7, 7]), np.array([51, 50]), {}, {7: (2, 40, 10)}, 3,
                                   with_new=False)
    assert list(zip(left.tolist(), right.tolist())) == [(2, 50), (40, 50), (2, 51), (40, 51)]


def test_small_key_pairs_every_member():
    stored = {4: np.array([1, 5])}
    left, right = keyed_candidates(np.array([4, 4]), np.array([9, 8]), stored, {}, 50)
    assert list(zip(left.tolist(), right.tolist())) == [(1, 8), (5, 8), (1, 9), (5, 9), (8, 9)]
