import numpy as np
import pytest

from neardup.graph.edges import Pairs, check_time_window, outside_time_window


def _dates(*values):
    return np.array(values, dtype="datetime64[s]")


def test_outside_time_window_by_gap_with_unknown_dates_inside():
    dates = _dates("1987-03-11T10:00", "1987-03-11T22:00", "1987-03-13T10:00", "NaT")
    pairs = Pairs(np.array([0, 0, 1, 0]), np.array([1, 2, 2, 3]), np.ones(4, np.float32))
    # 12 h, 48 h, 36 h apart; the last pair has an unknown date and stays in.
    assert outside_time_window(pairs, dates, 12.0).tolist() == [False, True, True, False]
    assert outside_time_window(pairs, dates, 48.0).tolist() == [False, False, False, False]
    assert outside_time_window(pairs, dates, 11.5).tolist() == [True, True, True, False]


def test_no_dates_or_no_window_keeps_every_pair():
    pairs = Pairs(np.array([0]), np.array([1]), np.ones(1, np.float32))
    assert outside_time_window(pairs, None, 1.0).tolist() == [False]
    assert outside_time_window(pairs, _dates("2000-01-01", "2001-01-01"), None).tolist() == [False]
    assert outside_time_window(Pairs.empty(), _dates("2000-01-01"), 1.0).tolist() == []


@pytest.mark.parametrize("hours", [0, -1, float("inf"), float("nan"), "48", True])
def test_check_time_window_rejects(hours):
    with pytest.raises(ValueError, match="time_window_hours"):
        check_time_window("caller", hours)


def test_check_time_window_accepts():
    assert check_time_window("caller", None) is None
    assert check_time_window("caller", 48) == 48.0


def test_pairs_unpack_into_their_three_arrays():
    pairs = Pairs([3, 0], [1, 2], [0.5, 1.0]).canonical()
    left, right, score = pairs
    assert left is pairs.left and right is pairs.right and score is pairs.score
    assert (left.tolist(), right.tolist(), score.tolist()) == ([0, 1], [2, 3], [1.0, 0.5])
    assert len(pairs) == 2  # the number of pairs, not of arrays


@pytest.mark.parametrize("offset", [0, 2**62], ids=["one-key", "lexsort"])
def test_canonical_orders_merges_repeats_to_their_best_score_and_drops_self_pairs(offset):
    # Ids near 2**62 cannot share one int64 key, so they take the lexsort.
    rng = np.random.default_rng(3)
    left, right = rng.integers(0, 30, 2000) + offset, rng.integers(0, 30, 2000) + offset
    score = rng.random(2000).astype(np.float32)
    got = Pairs(left, right, score).canonical()
    best: dict[tuple[int, int], float] = {}
    for a, b, s in zip(left.tolist(), right.tolist(), score.tolist()):
        if a != b:
            key = (min(a, b), max(a, b))
            best[key] = max(best.get(key, -1.0), s)
    assert list(zip(got.left.tolist(), got.right.tolist())) == sorted(best)
    assert got.score.tolist() == [best[k] for k in sorted(best)]
    assert len(Pairs([4, 4], [4, 4], [1.0, 0.5]).canonical()) == 0
