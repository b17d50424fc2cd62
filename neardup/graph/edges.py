"""Scored candidate pairs: the one currency between methods and clustering.

Every method returns a :class:`Pairs`: three parallel arrays indexed by document
*position* (0..n_docs-1 in input order), never one Python object per match. Positions
are mapped back to document ids only when results are written.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from neardup.errors import ParameterError, check_float, spelled

__all__ = ["NO_DATE", "Pairs", "TimeWindow", "check_time_window", "code_pairs", "outside_time_window",
           "pair_codes"]


@dataclass(frozen=True)
class Pairs:
    """Scored, undirected document pairs.

    Attributes
    ----------
    left, right : ndarray of int64, shape (n_pairs,)
        Document positions; after :meth:`canonical`, ``left < right``.
    score : ndarray of float32, shape (n_pairs,)
        Similarity in [0, 1] (Jaccard, estimated Jaccard, 1 - hamming/bits, cosine...).
        Higher means more alike.

    Notes
    -----
    Unpacks as its three arrays, ``left, right, score = pairs`` (iterating yields the
    arrays, not one item per pair; ``len(pairs)`` is the number of pairs).

    Examples
    --------
    >>> left, right, score = Pairs([0, 2], [1, 3], [1.0, 0.5])
    >>> left.tolist(), right.tolist(), score.tolist()
    ([0, 2], [1, 3], [1.0, 0.5])
    """

    left: np.ndarray
    right: np.ndarray
    score: np.ndarray

    def __post_init__(self) -> None:
        left = np.ascontiguousarray(self.left, dtype=np.int64)
        right = np.ascontiguousarray(self.right, dtype=np.int64)
        score = np.ascontiguousarray(self.score, dtype=np.float32)
        if not (left.shape == right.shape == score.shape) or left.ndim != 1:
            raise ValueError(
                "Pairs: 'left', 'right' and 'score' must be 1-D arrays of one length; "
                f"got shapes {left.shape}, {right.shape}, {score.shape}."
            )
        object.__setattr__(self, "left", left)
        object.__setattr__(self, "right", right)
        object.__setattr__(self, "score", score)

    @classmethod
    def empty(cls) -> Pairs:
        return cls(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32))

    def __len__(self) -> int:
        return int(self.left.shape[0])

    def __iter__(self) -> Iterator[np.ndarray]:
        """``left``, ``right`` and ``score``, so that ``left, right, score = pairs``."""
        return iter((self.left, self.right, self.score))

    def canonical(self) -> Pairs:
        """Drop self-pairs, order each pair as ``left < right``, merge repeats keeping the
        highest score, and sort by (left, right) so output is deterministic."""
        lo = np.minimum(self.left, self.right)
        hi = np.maximum(self.left, self.right)
        keep = lo != hi
        lo, hi, score = lo[keep], hi[keep], self.score[keep]
        if lo.size == 0:
            return Pairs.empty()
        # Sort by (lo, hi): one int64 key per pair sorts much faster than a lexsort
        # (millions of candidate pairs per search batch), which
        # stays for ids too large to share a key. Repeats keep their best score.
        width = int(hi.max()) + 1
        fits = int(lo.max()) < np.iinfo(np.int64).max // width
        order = np.argsort(lo * width + hi) if fits else np.lexsort((hi, lo))
        lo, hi, score = lo[order], hi[order], score[order]
        first = np.ones(lo.size, dtype=bool)
        first[1:] = (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])
        starts = np.flatnonzero(first)
        return Pairs(lo[starts], hi[starts], np.maximum.reduceat(score, starts))

    def select(self, mask: np.ndarray) -> Pairs:
        """Pairs where ``mask`` (bool, shape (n_pairs,)) is true."""
        return Pairs(self.left[mask], self.right[mask], self.score[mask])

    def above(self, threshold: float) -> Pairs:
        """Pairs whose score is at least ``threshold``."""
        return self.select(self.score >= threshold)

    @staticmethod
    def concat(parts: list[Pairs]) -> Pairs:
        if not parts:
            return Pairs.empty()
        return Pairs(
            np.concatenate([p.left for p in parts]),
            np.concatenate([p.right for p in parts]),
            np.concatenate([p.score for p in parts]),
        )


def check_time_window(caller: str, hours: float | None) -> float | None:
    """``hours`` as a float if it is a finite number > 0, or None (no time window)."""
    if hours is None:
        return None
    hint = spelled("Use None for no time window.", "Leave it out for no time window.")
    check_float(caller, "time_window_hours", hours, low=0.0, hint=hint)
    if hours <= 0 or hours == float("inf"):
        raise ParameterError(caller, "time_window_hours",
                             spelled("a finite number > 0 or None", "a finite number > 0"),
                             hours, hint)
    return float(hours)


#: An unknown date in the engines' int64 epoch seconds (numpy's own NaT value).
NO_DATE = np.iinfo(np.int64).min


@dataclass(frozen=True)
class TimeWindow:
    """The time window, as every stage and executor applies it: two documents dated more
    than ``hours`` apart are not merged, unless their texts are identical
    (:func:`neardup.text.identity.text_identity`: a story re-sent unchanged days later is
    still the same story). A pair with an unknown date on either side is inside: a
    missing date never splits duplicates.

    Attributes
    ----------
    hours : float
    seconds : ndarray of int64, shape (n,)
        Each document's date in epoch seconds, :data:`NO_DATE` where unknown.
    identity : ndarray of uint64, shape (n,), or None
        Each document's text identity (0: blank); None: no pair counts as identical.
    """

    hours: float
    seconds: np.ndarray
    identity: np.ndarray | None = None

    @classmethod
    def of(cls, hours: float | None, dates: np.ndarray | None,
           identity: np.ndarray | None = None) -> TimeWindow | None:
        """The window over ``dates`` (datetime64, NaT where unknown, or int64 seconds), or
        None without a window or dates."""
        if hours is None or dates is None:
            return None
        dates = np.asarray(dates)
        if dates.dtype.kind == "M":
            dates = dates.astype("datetime64[s]").view(np.int64)
        return cls(float(hours), np.asarray(dates, np.int64),
                   None if identity is None else np.asarray(identity, np.uint64))

    def take(self, docs: np.ndarray) -> TimeWindow:
        """The window over the documents ``docs`` (positions into this one), renumbered."""
        return TimeWindow(self.hours, self.seconds[docs],
                          None if self.identity is None else self.identity[docs])

    def apart(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        """True (bool, shape (n_pairs,)) where the pair must not be merged."""
        a, b = self.seconds[left], self.seconds[right]
        known = (a != NO_DATE) & (b != NO_DATE)
        far = known & (np.abs(a - b) > self.hours * 3600.0)
        if self.identity is not None and far.any():
            same = self.identity[left] == self.identity[right]
            far &= ~(same & (self.identity[left] != 0))
        return far


def outside_time_window(pairs: Pairs, dates: np.ndarray | None, hours: float | None,
                        identity: np.ndarray | None = None) -> np.ndarray:
    """True (bool, shape (n_pairs,)) where :class:`TimeWindow` keeps the pair apart: the
    documents' dates (datetime64, NaT where unknown) are more than ``hours`` apart and
    their texts are not identical (``identity``: per-document text identities; None: no
    pair counts as identical). No dates or window: every pair is inside."""
    window = TimeWindow.of(hours, dates, identity)
    if window is None or not len(pairs):
        return np.zeros(len(pairs), dtype=bool)
    return window.apart(pairs.left, pairs.right)


#: Documents are positions below 2**32 in a pair code.
_SHIFT = np.uint64(32)
_LOW = np.uint64(0xFFFFFFFF)


def pair_codes(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``left << 32 | right`` as uint64 (positions below 2**32): codes sort like the pairs
    (by left, then right)."""
    return (np.asarray(left).astype(np.uint64) << _SHIFT) | np.asarray(right).astype(np.uint64)


def code_pairs(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (left, right) int64 positions of pair codes."""
    codes = np.asarray(codes, np.uint64)
    return (codes >> _SHIFT).astype(np.int64), (codes & _LOW).astype(np.int64)
