"""The keep rule (neardup.graph.keep): each policy keeps its documented member, ties break
by input order, and the rule only reads per-document keys."""

from __future__ import annotations

import numpy as np
import pytest

from neardup.errors import InputError, ParameterError
from neardup.graph.keep import KeepKeys, KeepPolicy, choose_representatives, record_values

# One cluster of four members (positions 10..13) and one singleton (position 14).
LABELS = np.array([0, 0, 0, 0, 1])
KEYS = KeepKeys(
    positions=np.array([10, 11, 12, 13, 14]),
    lengths=np.array([5, 9, 9, 2, 1]),
    dates=np.array(["2020-01-03", "NaT", "2020-01-01", "2020-01-05", "NaT"], "datetime64[s]"),
    values=np.array([3.0, np.nan, 7.0, 7.0, np.nan]),
)


@pytest.mark.parametrize("policy, kept", [
    (KeepPolicy("first"), 0), (KeepPolicy("last"), 3), (KeepPolicy("longest"), 1),
    (KeepPolicy("earliest"), 2), (KeepPolicy("latest"), 3),
    (KeepPolicy(field="score"), 2),  # 7 twice: the first of them
])
def test_each_policy_keeps_its_documented_member(policy, kept):
    chosen = choose_representatives(LABELS, KEYS, policy)
    assert np.flatnonzero(chosen).tolist() == [kept, 4]


def test_most_complete_breaks_ties_by_length_then_order():
    keys = KeepKeys(positions=np.arange(4), lengths=np.array([3, 8, 8, 20]),
                    values=np.array([4.0, 5.0, 5.0, 2.0]))
    assert np.flatnonzero(choose_representatives(np.zeros(4, int), keys, KeepPolicy("most-complete"))).tolist() == [1]


def test_undated_or_valueless_members_win_only_alone():
    keys = KeepKeys(positions=np.arange(2), lengths=np.ones(2, int),
                    dates=np.array(["NaT", "NaT"], "datetime64[s]"), values=np.array([np.nan, np.nan]))
    for policy in (KeepPolicy("earliest"), KeepPolicy("latest"), KeepPolicy(field="x")):
        assert choose_representatives(np.zeros(2, int), keys, policy).tolist() == [True, False]


def test_same_choice_whatever_the_order_the_documents_arrive_in():
    rng = np.random.default_rng(0)
    n = 200
    labels = rng.integers(0, 20, n)
    keys = KeepKeys(positions=np.arange(n), lengths=rng.integers(0, 5, n),
                    dates=rng.integers(0, 4, n).astype("datetime64[D]").astype("datetime64[s]"),
                    values=rng.integers(0, 3, n).astype(float))
    shuffled = rng.permutation(n)
    moved = KeepKeys(*(getattr(keys, f)[shuffled] for f in ("positions", "lengths", "dates", "values")))
    for rule in ("first", "last", "longest", "earliest", "latest", "most-complete"):
        a = choose_representatives(labels, keys, KeepPolicy(rule))
        b = choose_representatives(labels[shuffled], moved, KeepPolicy(rule))
        assert np.array_equal(a[shuffled], b), rule
        assert np.bincount(labels[a]).max() == 1 and set(labels[a]) == set(labels)


def test_record_values():
    records = [{"a": 1, "b": "", "c": None, "d": []}, {"a": 1, "b": "x", "c": [1]}, {}]
    assert record_values(records, KeepPolicy("most-complete")).tolist() == [1.0, 3.0, 0.0]
    scored = record_values([{"s": "4"}, {"s": None}, {"t": 1}, {"s": True}], KeepPolicy(field="s"))
    assert np.array_equal(scored, [4.0, np.nan, np.nan, 1.0], equal_nan=True)
    with pytest.raises(InputError, match="record 1: field 's'.*number"):
        record_values([{"s": 1}, {"s": "many"}], KeepPolicy(field="s"))
    with pytest.raises(InputError, match="no record has a number in field 's'"):
        record_values([{"t": 1}], KeepPolicy(field="s"))


def test_policy_checks():
    assert KeepPolicy.make("f", None, None) == KeepPolicy("longest")
    with pytest.raises(ParameterError, match="keep"):
        KeepPolicy.make("f", "newest", None)
    with pytest.raises(ParameterError, match="unset when keep_by"):
        KeepPolicy.make("f", "first", "score")
