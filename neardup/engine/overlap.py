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

**Prefix filter.** Before the map, the ``prefix`` stage counts every key's document
frequency (df: its group's size) and gives each document a *prefix*: its compared keys
(groups of at most the keyed spec's ``all_pairs_upto``) taken in a global order, rarest df class
first (:data:`DF_CLASS_UPPER`), as many as it takes that a partner reaching the threshold
must share one of them (AllPairs / PPJoin, Bayardo et al. 2007, Xiao et al. 2008). The
map then counts a pair only over the groups whose key is in **both** documents' prefixes,
so two documents sharing only keys common in the corpus (the bulk of the pairs sharing
some key) never become a record. Exactness, with ``m(x)`` the fewest keys a partner of
``x`` must share with it (:meth:`~neardup.methods.Method.overlap_min_shared`; ``t·|x|``
for Jaccard ``t``) and ``u(x)`` its keys in groups not compared all-to-all, a pair the
in-memory search accepts shares at least one compared key and at least ``m(x)`` keys in
all; with the prefix the first ``|x'| - max(1, m(x) - u(x)) + 1`` of ``x``'s ``|x'|``
compared keys, if the pair's first common compared key (in the global order) were past
``x``'s prefix, the pair would share at most ``max(1, m - u) - 1`` compared keys and at
most ``u(x)`` others, fewer than it needs (or no compared key at all): so it is in both
prefixes and the pair is counted (:func:`prefix_cuts`; a document's prefix is rounded up
to whole df classes, a superset, which keeps this). Its summed count is then its keys
shared inside both prefixes; the keys it may share outside them are at most the suffix
(compared keys past the prefix) of the side whose prefix ends earlier in the order, plus
the smaller ``u`` (:func:`uncounted_keys`), which is the bound the reduce applies before
merging sets; when that is 0 the count is the exact intersection.

Functions take and return arrays only (no files, no union-find), so an executor other
than the local engine (Ray) can run the same steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numba import njit

from neardup.graph.edges import pair_codes

__all__ = [
    "DF_CLASS_UPPER",
    "RECORD_BYTES",
    "add_key_classes",
    "decide_pairs",
    "df_classes",
    "likely_pairs",
    "pair_ranges",
    "prefix_cuts",
    "records_below",
    "sum_pair_counts",
    "uncounted_keys",
]

#: Bytes of one spilled record: the pair's code (uint64) and its shared count (uint32).
RECORD_BYTES = 12

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
    bound = pair_codes(np.int64(doc), np.int64(0))
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
        Keys of each side in no compared group (groups over the keyed spec's ``all_pairs_upto``).
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


#: Upper ends of the df classes that order keys for the prefix filter (class ``c`` holds
#: the dfs in ``(DF_CLASS_UPPER[c-1], DF_CLASS_UPPER[c]]``): exact for the rarest keys,
#: where prefixes end, coarser above. A document's per-class counts are uint16 (32 bytes).
DF_CLASS_UPPER = np.array([1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 64, 128, 256, 512, 1 << 62],
                          np.int64)
_SATURATED = np.iinfo(np.uint16).max


def df_classes(df: np.ndarray) -> np.ndarray:
    """The df class (int64, ``0 .. len(DF_CLASS_UPPER) - 1``) of keys of document
    frequency ``df``: the global order of the prefix filter, rarest first."""
    return np.searchsorted(DF_CLASS_UPPER, np.asarray(df, np.int64), side="left")


@njit(cache=True)
def _add_key_classes(counts, unseen, docs, classes):
    n_classes = counts.shape[1]
    for r in range(docs.shape[0]):
        d, c = docs[r], classes[r]
        if c >= n_classes:
            unseen[d] += 1
        elif counts[d, c] < 65535:  # saturated: read as "this many or more"
            counts[d, c] += 1


def add_key_classes(counts: np.ndarray, unseen: np.ndarray, docs: np.ndarray, df: np.ndarray,
                    all_pairs_upto: int) -> None:
    """Count one key partition's rows into ``counts`` (uint16, documents x df classes; in
    place, saturating) and ``unseen`` (int64 per document: rows of groups over
    ``all_pairs_upto``, not compared all-to-all). ``df`` is each row's key's df."""
    df = np.asarray(df, np.int64)
    classes = np.where(df <= all_pairs_upto, df_classes(df), counts.shape[1])
    _add_key_classes(counts, unseen, np.ascontiguousarray(docs, np.int64),
                     np.ascontiguousarray(classes, np.int64))


def prefix_cuts(counts: np.ndarray, unseen: np.ndarray, min_shared: np.ndarray | None
                ) -> tuple[np.ndarray, np.ndarray]:
    """Each document's prefix for the filter (see the module docstring): its last df
    class (int8; -1: no compared key) and its suffix (int64: compared keys in later
    classes).

    Parameters
    ----------
    counts : uint16, documents x df classes
        Compared keys per class (:func:`add_key_classes`; a saturated count makes the
        whole compared set the prefix).
    unseen : int64
        Keys in groups not compared all-to-all.
    min_shared : int64 or None
        The fewest keys any partner must share with the document
        (:meth:`~neardup.methods.Method.overlap_min_shared`); None: 1 (no filter).
    """
    n_docs, n_classes = counts.shape
    cut = np.full(n_docs, -1, np.int8)
    suffix = np.zeros(n_docs, np.int64)
    step = 1 << 18  # documents at once: the cumulative counts take 8 bytes per class
    for lo in range(0, n_docs, step):
        hi = min(lo + step, n_docs)
        part = counts[lo:hi]
        cum = np.cumsum(part, axis=1, dtype=np.int64)
        compared = cum[:, -1]
        need = np.ones(hi - lo, np.int64)
        if min_shared is not None:
            need = np.maximum(need, np.asarray(min_shared[lo:hi], np.int64) - unseen[lo:hi])
        length = compared - need + 1  # the prefix: this many compared keys
        last = np.argmax(cum >= np.maximum(length, 1)[:, None], axis=1)
        # Saturated counts, or a prefix longer than the compared keys (no partner can
        # reach the threshold: the set is smaller than the overlap it needs, which does
        # not happen when keys are the set's elements): every compared key.
        whole = (part == _SATURATED).any(axis=1) | (length <= 0)
        last = np.where(whole, n_classes - 1, last)
        rest = compared - cum[np.arange(hi - lo), last]
        has = compared > 0
        cut[lo:hi] = np.where(has, last, -1)
        suffix[lo:hi] = np.where(has & ~whole, rest, 0)
    return cut, suffix


def uncounted_keys(cut_left: np.ndarray, cut_right: np.ndarray, suffix_left: np.ndarray,
                   suffix_right: np.ndarray, unseen_left: np.ndarray,
                   unseen_right: np.ndarray) -> np.ndarray:
    """The most keys a pair may share that its count (over groups in both prefixes) does
    not hold: the suffix of the side whose prefix ends in the earlier df class (both
    suffixes' smaller one when they end in the same class: every common key past it is in
    that side's suffix), plus the smaller count of keys in groups not compared."""
    suffix = np.where(cut_left < cut_right, suffix_left,
                      np.where(cut_right < cut_left, suffix_right,
                               np.minimum(suffix_left, suffix_right)))
    return suffix + np.minimum(unseen_left, unseen_right)
