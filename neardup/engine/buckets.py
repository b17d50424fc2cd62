"""Documents grouped by candidate key: runs of equal keys, their ranges, and the pairs of
documents that share many buckets (:func:`overlap_pairs`). The rule that turns a bucket
into candidate edges (all pairs, else a star plus a chain, in the chain order of
:func:`~neardup.graph.buckets.key_groups`) is :func:`neardup.graph.buckets.bucket_edges`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from neardup.graph.buckets import group_runs  # re-exported: the engine's callers import it here

__all__ = ["concat_ranges", "group_runs", "overlap_pairs"]


def concat_ranges(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The concatenated ranges ``starts[i] .. starts[i] + sizes[i] - 1`` (the rows of a
    set of groups, or the values of ragged rows), without a Python loop."""
    total = int(sizes.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    ends = np.cumsum(sizes)
    return np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - sizes), sizes)


@njit(cache=True)
def _overlap_index(local, starts, sizes, n_local):
    """Document -> its buckets (CSR), each document's bucket count (``known``) and the
    partners it emits (members after it in each of its buckets)."""
    ptr = np.zeros(n_local + 1, np.int64)
    known = np.zeros(n_local, np.int64)
    emits = np.zeros(n_local, np.int64)
    for g in range(starts.shape[0]):
        for r in range(starts[g], starts[g] + sizes[g]):
            ptr[local[r] + 1] += 1
            known[local[r]] += 1
            emits[local[r]] += starts[g] + sizes[g] - r - 1
    for d in range(n_local):
        ptr[d + 1] += ptr[d]
    fill = ptr[:-1].copy()
    member_of = np.empty(ptr[n_local], np.int64)
    for g in range(starts.shape[0]):
        for r in range(starts[g], starts[g] + sizes[g]):
            d = local[r]
            member_of[fill[d]] = g
            fill[d] += 1
    return ptr, member_of, known, emits


@njit(cache=True)
def _overlap_block(local, starts, sizes, ptr, member_of, n_local, d0, d1, out_left, out_right,
                   out_shared):
    # Per document i, a dense counter over its partners j > i (reset as it is read).
    counter = np.zeros(n_local, np.int32)
    touched = np.empty(n_local, np.int64)
    k = 0
    for i in range(d0, d1):
        n_touched = 0
        for q in range(ptr[i], ptr[i + 1]):
            g = member_of[q]
            s = starts[g]
            e = s + sizes[g]
            # Members ascend within a bucket: partners are those after i.
            lo = s + np.searchsorted(local[s:e], i, side="right")
            for r in range(lo, e):
                j = local[r]
                if counter[j] == 0:
                    touched[n_touched] = j
                    n_touched += 1
                counter[j] += 1
        for t in range(n_touched):
            j = touched[t]
            out_left[k] = i
            out_right[k] = j
            out_shared[k] = counter[j]
            counter[j] = 0
            k += 1
    return k


def overlap_pairs(sorted_docs: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
                  block_emits: int = 1 << 62):
    """The distinct pairs of documents sharing a bucket, with how many buckets each pair
    shares, for keys that documents share many of (shingles), where listing every
    bucket's pairs repeats a pair once per shared key. Counted per document with a dense
    counter (as ngram's in-memory index does), in compiled code, in blocks of documents
    whose emissions (partners listed before counting) stay under ``block_emits``, so each
    pair is produced exactly once and a block's arrays are bounded.

    Parameters
    ----------
    sorted_docs : ndarray of int64
        Document positions grouped by bucket, ascending inside each bucket.
    starts, sizes : ndarray of int64
        The buckets (all pairs of each are candidates).
    block_emits : int
        Emissions per block (a single document with more gets a block of its own).

    Yields
    ------
    left, right, shared : ndarray of int64
        A block's pairs (``left < right``, ordered by ``left``) and the buckets each
        shares.
    docs, known : ndarray of int64
        The documents of the buckets (ascending) and how many of the buckets each is in
        (the same in every block).
    left_local, right_local : ndarray of int64
        The block's pairs as positions in ``docs`` (to look up per-document facts
        without a search).
    """
    starts = np.ascontiguousarray(starts, np.int64)
    sizes = np.ascontiguousarray(sizes, np.int64)
    docs, local = np.unique(np.ascontiguousarray(sorted_docs, np.int64), return_inverse=True)
    local = local.astype(np.int64)
    if docs.size == 0:
        return
    ptr, member_of, known, emits = _overlap_index(local, starts, sizes, docs.size)
    ends = np.cumsum(emits)
    d0 = 0
    while d0 < docs.size:
        done = int(ends[d0 - 1]) if d0 else 0
        d1 = max(int(np.searchsorted(ends, done + block_emits, "right")), d0 + 1)
        total = int(ends[d1 - 1]) - done
        left = np.empty(total, np.int64)
        right = np.empty(total, np.int64)
        shared = np.empty(total, np.int64)
        k = _overlap_block(local, starts, sizes, ptr, member_of, docs.size, d0, d1, left, right,
                           shared)
        yield docs[left[:k]], docs[right[:k]], shared[:k], docs, known, left[:k], right[:k]
        d0 = d1
