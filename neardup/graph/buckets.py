"""The one rule that turns documents grouped by candidate key into a linear number of
candidate edges.

Expanding every bucket of ``m`` documents into all ``m * (m - 1) / 2`` pairs is what made a
1M-document run need 20 GB (one bucket of 100,000 copies alone would need 5 billion
pairs). Here a bucket becomes:

* all its pairs while it is small (``m <= all_pairs_upto``, the
  ``all_pairs_upto`` of a method's keyed spec: MinHash's ``max_bucket_pairs``, 50 by default), so a member
  that matches another member but not the first still gets its edge — a constant per
  document, not a function of the bucket;
* above that, a *star* (every member against the bucket's anchor, its first document)
  plus a *chain* (each member against the next), at most ``2 * (m - 1)`` edges;
* above ``star_upto`` (its keyed spec's ``star_upto``; keys so common that the anchor
  is unrelated to most members), the chain alone: ``m - 1`` edges.

Inside a key group, members stand in the *chain order* of :func:`key_groups`: by the
row's payload when the method gives one (a value under which likely matches sort next to
each other: ngram's MinHash value and set digest), then by position. Every path links a
group from this one order, so they all make the same edges of it (issue 36: the in-memory
ngram search once chained its frequent shingles in two orders of its own, and its clusters
differed from the out-of-core stage's).

Candidates are verified afterwards and only joins matter for connected components, so
edges between documents already joined are skipped without a check.

Every path that groups documents by key uses this rule: the corpus stage on each engine
(:mod:`neardup.engine.link`, :mod:`neardup.engine.ray`), the in-memory LSH
banding (:func:`neardup.methods.lsh.bucket_pairs`: all pairs, else the chain alone), the
in-memory ngram search's shingles over ``max_df`` (:class:`neardup.methods.ngram.NGramOverlap`:
the chain alone) and the index's incremental adds
(:func:`neardup.index._link.keyed_candidates`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["bucket_edge_counts", "bucket_edges", "group_runs", "key_groups"]


def group_runs(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts and sizes (int64) of the runs of equal values in ``sorted_keys`` (all runs)."""
    n = sorted_keys.shape[0]
    if n == 0:
        empty = np.empty(0, np.int64)
        return empty, empty
    boundary = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
    starts = np.concatenate(([0], boundary)).astype(np.int64)
    sizes = np.diff(np.append(starts, n)).astype(np.int64)
    return starts, sizes


def key_groups(keys: np.ndarray, docs: np.ndarray, payload: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Key rows grouped by key, each group in the chain order :func:`bucket_edges` links.

    Parameters
    ----------
    keys : ndarray, shape (m,)
        Each row's key (any integer dtype).
    docs : ndarray of int64, shape (m,)
        Each row's document position.
    payload : ndarray of uint64, shape (m,), or None
        Each row's chain order inside its group (a method's ``CandidateKeys.payload``);
        None: positions ascending.

    Returns
    -------
    order : ndarray of int64, shape (m,)
        Rows sorted by key, then payload, then document (a stable, deterministic order).
    starts, sizes : ndarray of int64
        The groups: ``order[starts[g] : starts[g] + sizes[g]]``.
    """
    order = np.lexsort((docs, keys) if payload is None else (docs, payload, keys))
    starts, sizes = group_runs(keys[order])
    return order.astype(np.int64, copy=False), starts, sizes


@njit(cache=True)
def _edge_count(sizes, all_pairs_upto, star_upto):
    total = 0
    for m in sizes:
        if m <= all_pairs_upto:
            total += m * (m - 1) // 2
        elif m > star_upto:
            total += m - 1  # chain only
        elif m > 1:
            total += 2 * m - 3  # m - 1 star edges, m - 2 chain edges
    return total


@njit(cache=True)
def _emit_edges(docs, starts, sizes, all_pairs_upto, star_upto, left, right):
    k = 0
    for g in range(starts.shape[0]):
        s, m = starts[g], sizes[g]
        if m <= all_pairs_upto:
            for a in range(m):
                for b in range(a + 1, m):
                    left[k] = docs[s + a]
                    right[k] = docs[s + b]
                    k += 1
        elif m > star_upto:
            for a in range(m - 1):
                left[k] = docs[s + a]
                right[k] = docs[s + a + 1]
                k += 1
        elif m > 1:
            for a in range(1, m):
                left[k] = docs[s]
                right[k] = docs[s + a]
                k += 1
            for a in range(1, m - 1):
                left[k] = docs[s + a]
                right[k] = docs[s + a + 1]
                k += 1
    return k


def bucket_edge_counts(sizes: np.ndarray, all_pairs_upto: int, star_upto: int | None) -> np.ndarray:
    """Candidate edges :func:`bucket_edges` makes of each group of ``sizes`` members (so an
    executor can size its steps before making them)."""
    sizes = sizes.astype(np.int64)
    count = np.where(sizes <= all_pairs_upto, sizes * (sizes - 1) // 2, 2 * sizes - 3)
    if star_upto is not None:
        count = np.where((sizes > all_pairs_upto) & (sizes > star_upto), sizes - 1, count)
    return np.maximum(count, 0)


def bucket_edges(
    sorted_docs: np.ndarray, starts: np.ndarray, sizes: np.ndarray, all_pairs_upto: int = 0,
    star_upto: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Candidate edges of the buckets ``sorted_docs[starts[g] : starts[g] + sizes[g]]``.

    Parameters
    ----------
    sorted_docs : ndarray of int64
        Document positions grouped by key, in chain order inside each group (ascending
        unless the method orders them by payload); a bucket's anchor is its first.
    starts, sizes : ndarray of int64
        The buckets to link.
    all_pairs_upto : int, default 0
        Buckets of at most this many members yield all their pairs; larger ones a star
        plus a chain.
    star_upto : int or None, default None
        Buckets larger than this get the chain alone; None: no limit.

    Returns
    -------
    left, right : ndarray of int64
        Edges, ``left`` the earlier document in the bucket; may repeat across buckets.
    """
    starts = np.ascontiguousarray(starts, np.int64)
    sizes = np.ascontiguousarray(sizes, np.int64)
    star = np.iinfo(np.int64).max if star_upto is None else int(star_upto)
    total = _edge_count(sizes, all_pairs_upto, star)
    left = np.empty(total, np.int64)
    right = np.empty(total, np.int64)
    _emit_edges(np.ascontiguousarray(sorted_docs, np.int64), starts, sizes, all_pairs_upto,
                star, left, right)
    return left, right
