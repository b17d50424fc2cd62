"""Each document's best low-estimate partners (neardup.graph.partners): the selection is
the brute-force one, whatever order and repeats the pairs come in."""

from __future__ import annotations

import numpy as np
import pytest

from neardup.graph.edges import Pairs, code_pairs
from neardup.graph.partners import PartnerTable, low_pairs, screened_mask, selected_pairs


def brute_force(n_docs, left, right, estimate, below, keep):
    """Pairs at ``below`` or more, and of the others those among the ``keep`` highest of
    either document (ties: the lower partner), by listing each document's partners."""
    chosen = estimate >= below
    low = np.flatnonzero(~chosen)
    for doc in range(n_docs):
        mine = low[(left[low] == doc) | (right[low] == doc)]
        partner = np.where(left[mine] == doc, right[mine], left[mine])
        order = np.lexsort((partner, -estimate[mine]))
        chosen[mine[order[:keep]]] = True
    return chosen


def random_pairs(seed, n_docs=60, n_pairs=700):
    rng = np.random.default_rng(seed)
    left, right = rng.integers(0, n_docs, (2, n_pairs))
    lo, hi = np.minimum(left, right), np.maximum(left, right)
    codes = np.unique(lo[lo != hi] * n_docs + hi[lo != hi])
    lo, hi = codes // n_docs, codes % n_docs
    # Few distinct values, so ties are common.
    estimate = rng.choice(np.arange(10, 50) / 100, lo.size).astype(np.float32)
    return n_docs, lo, hi, estimate


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("keep", [1, 3])
def test_the_selection_is_each_documents_best_partners(seed, keep):
    n_docs, left, right, estimate = random_pairs(seed)
    mask = screened_mask(n_docs, Pairs(left, right, estimate), 0.3, keep)
    np.testing.assert_array_equal(mask, brute_force(n_docs, left, right, estimate, 0.3, keep))
    assert 0 < mask.sum() < left.size  # the cap binds on this input


@pytest.mark.parametrize("seed", range(3))
def test_order_and_repeats_do_not_change_the_selection(seed):
    n_docs, left, right, estimate = random_pairs(seed)
    rng = np.random.default_rng(seed + 10)
    expected = brute_force(n_docs, left, right, estimate, 0.3, 3)
    table = PartnerTable(n_docs, 3)
    # Every pair offered in shuffled batches, some twice, some reversed.
    offered = rng.permutation(np.concatenate((np.arange(left.size), rng.integers(0, left.size, 200))))
    for batch in np.array_split(offered, 9):
        flip = rng.random(batch.size) < 0.5
        a = np.where(flip, right[batch], left[batch])
        b = np.where(flip, left[batch], right[batch])
        low = low_pairs(a, b, estimate[batch], np.ones(batch.size, bool), 0.3)
        assert (low.left < low.right).all() and (low.score < 0.3).all()
        table.offer(low.left, low.right, low.score)
    codes = table.selected_codes()
    assert (np.diff(codes.astype(np.float64)) > 0).all()  # ascending, each once
    got = selected_pairs(left, right, estimate, np.ones(left.size, bool), 0.3, codes)
    np.testing.assert_array_equal(got, expected)
    # The codes are exactly the low pairs selected.
    sel_left, sel_right = code_pairs(codes)
    low_chosen = expected & (estimate < 0.3)
    assert set(zip(sel_left.tolist(), sel_right.tolist())) == set(
        zip(left[low_chosen].tolist(), right[low_chosen].tolist()))


def test_pairs_that_failed_the_screen_are_never_selected():
    left, right = np.array([0, 0, 1]), np.array([1, 2, 2])
    estimate = np.array([0.05, 0.5, 0.2], np.float32)
    passed = np.array([False, True, True])
    table = PartnerTable(3, 2)
    low = low_pairs(left, right, estimate, passed, 0.3)
    assert low.left.tolist() == [1] and low.right.tolist() == [2]
    table.offer(low.left, low.right, low.score)
    mask = selected_pairs(left, right, estimate, passed, 0.3, table.selected_codes())
    assert mask.tolist() == [False, True, True]


def test_keep_must_be_positive():
    with pytest.raises(ValueError, match="keep must be at least 1"):
        PartnerTable(3, 0)
