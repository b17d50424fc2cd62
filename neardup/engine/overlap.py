"""The pair-count exchange of the keyed stage for set-overlap methods (ngram, spotsigs).

These methods file every document under each of its features (shingles, signatures),
and the corpus stage hashes the keys into P partitions, so a pair's shared keys are
spread over the partitions: a partition sees about 1/P of them and cannot tell from its
own count whether the pair reaches the threshold. The exchange is the map-reduce form of
the sparse product ``X Xᵀ`` (documents by features):

1. **map** (per key partition): every pair of an all-pairs key group, once, with the
   number of this partition's groups it shares (:func:`~neardup.engine.buckets.overlap_pairs`),
   becomes a *record* ``(pair code, shared)``; the records are spilled ordered by their
   left document. A record may be left out when the pair's outcome is already settled:
   its documents are already joined, or a bound that holds for the whole pair rules it
   out, or its sets were merged and it was rejected (see :func:`likely_pairs`).
2. **reduce** (per range of left documents, :func:`pair_ranges`): the records of a
   range, from every key partition, are summed by pair (:func:`sum_pair_counts`). With a
   document's keys in compared groups summed over the partitions (``known``), a pair
   whose two documents had every key compared (or one of them did) has its exact
   intersection, so its similarity comes from the counts without reading any set; the
   others get the count bound with the totals and only its survivors are verified
   (:func:`decide_pairs`).

Why leaving records out is exact: a pair's totals are then at most its true counts, so
its similarity from the counts, and its bound, are at most the true ones. A pair left
out because a whole-pair bound or a merge of its sets rejected it is below the
threshold, and stays so. A pair left out because its documents were already joined (by
edges verified earlier) may come out below the threshold or be dropped, but joins only
matter for the connected components, and those documents are already connected. So the
components are those of every pair at or above the threshold.

Functions take and return arrays only (no files, no union-find), so an executor other
than the local engine (Ray) can run the same steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = [
    "RECORD_BYTES",
    "code_pairs",
    "decide_pairs",
    "likely_pairs",
    "pair_codes",
    "pair_ranges",
    "records_below",
    "sum_pair_counts",
]

#: Bytes of one spilled record: the pair's code (uint64) and its shared count (uint32).
RECORD_BYTES = 12

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


def sum_pair_counts(codes: np.ndarray, shared: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct pair codes (ascending) and the sum of ``shared`` over each one's records.
    The records of one key partition are ordered by left document, so a stable sort
    (NumPy's timsort, which merges runs) costs about ``n log(partitions)``."""
    if codes.size == 0:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    order = np.argsort(codes, kind="stable")
    codes = codes[order]
    shared = shared[order].astype(np.int64)
    del order
    first = np.ones(codes.size, bool)
    np.not_equal(codes[1:], codes[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    return codes[starts], np.add.reduceat(shared, starts)


def records_below(code_files: Sequence[np.ndarray], doc: int) -> np.ndarray:
    """How many records of each file (codes ordered by left document) have a left
    document below ``doc``."""
    bound = np.uint64(doc) << _SHIFT
    return np.array([int(np.searchsorted(codes, bound)) for codes in code_files], np.int64)


def pair_ranges(code_files: Sequence[np.ndarray], n_docs: int, max_records: int) -> list[tuple[int, int]]:
    """Consecutive ranges ``[lo, hi)`` of left documents covering ``0..n_docs`` whose
    records, over all files, number at most ``max_records`` (a single document with more
    gets a range of its own). Deterministic in the files and ``max_records``."""
    max_records = max(int(max_records), 1)
    ranges = []
    lo, below_lo = 0, 0
    total = sum(int(c.shape[0]) for c in code_files)
    while lo < n_docs:
        if total - below_lo <= max_records:
            ranges.append((lo, n_docs))
            break
        # The largest hi with records(lo, hi) <= max_records, by bisection on hi.
        a, b = lo + 1, n_docs
        while a < b:
            mid = (a + b + 1) // 2
            if int(records_below(code_files, mid).sum()) - below_lo <= max_records:
                a = mid
            else:
                b = mid - 1
        hi = a
        ranges.append((lo, hi))
        lo, below_lo = hi, int(records_below(code_files, hi).sum())
    return ranges


ScoreFn = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
BoundFn = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def likely_pairs(shared: np.ndarray, known_left: np.ndarray, known_right: np.ndarray,
                 scores: ScoreFn, min_shared: int) -> np.ndarray:
    """Pairs worth verifying at once, in the key partition (bool mask): at least
    ``min_shared`` shared keys and accepted by the method's similarity applied to this
    partition's counts (a sample of each document's keys, so an estimate). Verifying them
    joins groups of near-copies early, after which their other pairs are left out of the
    exchange; it is a heuristic for speed only (a wrong guess costs one merge of sets)."""
    _, accept = scores(shared, known_left, known_right)
    return accept & (shared >= min_shared)


def decide_pairs(total: np.ndarray, size_left: np.ndarray, size_right: np.ndarray,
                 unseen_left: np.ndarray, unseen_right: np.ndarray, scores: ScoreFn,
                 bound: BoundFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What to do with each summed pair.

    Parameters
    ----------
    total : int64
        Shared keys summed over the key partitions.
    size_left, size_right : int64
        Set sizes.
    unseen_left, unseen_right : int64
        Keys of each side in no compared group (groups over ``bucket_all_pairs_upto``).
    scores : callable ``(inter, size_left, size_right) -> (similarity, accept)``
    bound : callable, the method's ``overlap_bound``

    Returns
    -------
    exact : bool
        The intersection is ``total`` (one side has no unseen key): scored from counts.
    score : float32
        The similarity of the exact ones (meaningless elsewhere).
    accept : bool
        Exact and at or above the threshold.
    verify : bool
        Not exact, and the count bound (``total`` + the smaller unseen count) passes:
        the sets must be merged.
    """
    exact = np.minimum(unseen_left, unseen_right) == 0
    score, accept = scores(total, size_left, size_right)
    verify = ~exact
    if verify.any():
        passes = bound(total[verify], size_left[verify] - unseen_left[verify],
                       size_right[verify] - unseen_right[verify], size_left[verify],
                       size_right[verify])
        verify[verify] = passes
    return exact, np.asarray(score, np.float32), exact & accept, verify
