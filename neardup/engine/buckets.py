"""Documents grouped by candidate key become a linear number of candidate edges.

Expanding a bucket of ``m`` documents into all ``m * (m - 1) / 2`` pairs is what made a
1M-document run need 20 GB (one template bucket of 100,000 copies alone would need 5
billion pairs). Here a bucket becomes at most ``2 * (m - 1)`` edges:

* a *star*: every member against the bucket's anchor (its first document in input
  order), so a verified copy joins the anchor's cluster in one step;
* a *chain*: each non-anchor member against the next, so two members that match each
  other but not the anchor (a story and its abridgement, both far from a longer
  anchor) can still be linked.

Edges are verified afterwards and only joins matter for connected components, so a
member linked twice costs one extra check, never a quadratic blow-up.
"""

from __future__ import annotations

import numpy as np

__all__ = ["group_runs", "star_chain_edges"]


def group_runs(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts and sizes of the runs of equal values in ``sorted_keys`` (all runs)."""
    n = sorted_keys.shape[0]
    if n == 0:
        empty = np.empty(0, np.int64)
        return empty, empty
    boundary = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
    starts = np.concatenate(([0], boundary)).astype(np.int64)
    sizes = np.diff(np.append(starts, n)).astype(np.int64)
    return starts, sizes


def star_chain_edges(keys: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Candidate edges (left, right), int64, of documents sharing a key.

    Parameters
    ----------
    keys : ndarray of uint64, shape (m,)
    docs : ndarray of int64, shape (m,)
        Document position of each key row.

    Returns
    -------
    left, right : ndarray of int64
        ``left < right``; at most ``2 * (bucket size - 1)`` edges per bucket, unique
        within this call.
    """
    if keys.shape[0] < 2:
        empty = np.empty(0, np.int64)
        return empty, empty
    order = np.lexsort((docs, keys))
    keys_sorted, docs_sorted = keys[order], docs[order]
    starts, sizes = group_runs(keys_sorted)
    # The anchor of each row's bucket: its first (smallest) document.
    anchor = np.repeat(docs_sorted[starts], sizes)
    member = np.ones(keys_sorted.shape[0], dtype=bool)
    member[starts] = False  # anchors are not members of their own star
    star_left, star_right = anchor[member], docs_sorted[member]
    # Chain: member i -> member i+1 inside a bucket, skipping the anchor (already starred).
    nxt = np.zeros(keys_sorted.shape[0], dtype=bool)
    nxt[1:] = member[1:] & member[:-1] & (keys_sorted[1:] == keys_sorted[:-1])
    chain_right = docs_sorted[nxt]
    chain_left = docs_sorted[np.flatnonzero(nxt) - 1]
    left = np.concatenate((star_left, chain_left))
    right = np.concatenate((star_right, chain_right))
    keep = left != right  # a document listed twice under one key
    left, right = left[keep], right[keep]
    lo, hi = np.minimum(left, right), np.maximum(left, right)
    if lo.size == 0:
        return lo, hi
    # Unique edges, sorted, so verification reads signatures in order.
    code = np.unique(lo.astype(np.uint64) << np.uint64(32) | hi.astype(np.uint64)) if (
        hi.size and int(hi.max()) < 2**32
    ) else None
    if code is not None:
        return (code >> np.uint64(32)).astype(np.int64), (code & np.uint64(0xFFFFFFFF)).astype(np.int64)
    pairs = np.unique(np.stack((lo, hi), axis=1), axis=0)
    return pairs[:, 0].copy(), pairs[:, 1].copy()
