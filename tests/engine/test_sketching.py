"""The per-batch sketch step every keyed executor shares: what a method's verification reads
of a batch (:func:`~neardup.engine.sketching.verification_rows`)."""

from __future__ import annotations

import numpy as np
import pytest

from neardup.engine.sketching import (
    SET_SIZES,
    SET_VALUES,
    SET_WEIGHT_VALUES,
    sketch_batch,
    verification_names,
    verification_rows,
)
from neardup.methods import make_method
from neardup.methods.base import SET_WEIGHTS

TEXTS = ["the quick brown fox jumps over the lazy dog", "", "a b c d e f g h",
         "the quick brown fox jumped over a lazy dog today"]


@pytest.mark.parametrize(("name", "params"), [("minhash", {}), ("simhash", {}), ("ngram", {}),
                                              ("spotsigs", {})])
def test_rows_are_the_declared_arrays_and_ragged_sets(name, params):
    method = make_method(name, **params)
    sketch, _ = sketch_batch(method, TEXTS)
    rows = verification_rows(method, sketch, "test")
    reads = method.capabilities.reads
    assert tuple(rows) == verification_names(method)
    for array in reads.arrays:
        np.testing.assert_array_equal(rows[array], sketch.arrays[array])
        assert rows[array].flags.c_contiguous
    if reads.sets:
        sets = sketch.sets
        np.testing.assert_array_equal(rows[SET_SIZES], np.diff(sets.offsets))
        assert rows[SET_SIZES].dtype == np.int64 and rows[SET_SIZES].size == len(TEXTS)
        np.testing.assert_array_equal(rows[SET_VALUES], sets.hashes)
        assert rows[SET_VALUES].dtype == np.uint64
    else:
        assert SET_SIZES not in rows


def test_weighted_sets_carry_one_weight_per_element():
    method = make_method("wminhash", verify="exact", phrase_length=2).fit(TEXTS)
    sketch, _ = sketch_batch(method, TEXTS)
    rows = verification_rows(method, sketch, "test")
    assert tuple(rows) == verification_names(method)
    assert rows[SET_WEIGHT_VALUES].dtype == np.float64
    assert rows[SET_WEIGHT_VALUES].shape == rows[SET_VALUES].shape
    np.testing.assert_array_equal(rows[SET_WEIGHT_VALUES], sketch.ragged[SET_WEIGHTS])

    sketch.ragged[SET_WEIGHTS] = sketch.ragged[SET_WEIGHTS][:-1]
    with pytest.raises(ValueError, match="one weight per set element"):
        verification_rows(method, sketch, "test")


def test_a_sketch_without_the_declared_sets_names_the_caller():
    method = make_method("ngram")
    sketch, _ = sketch_batch(method, TEXTS)
    sketch.sets = None
    with pytest.raises(ValueError, match="^run_x: .*ngram.sketch"):
        verification_rows(method, sketch, "run_x")
