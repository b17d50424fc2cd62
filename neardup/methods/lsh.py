"""Locality-sensitive hashing over MinHash signatures: band selection and bucketing.

Banding (Indyk & Motwani 1998; Leskovec, Rajaraman & Ullman, *Mining of Massive Datasets*
ch. 3): split a signature of ``b * r`` values into ``b`` bands of ``r`` rows; two documents
become candidates when all ``r`` rows of any band agree, which happens with probability
``1 - (1 - s**r)**b`` at Jaccard similarity ``s``.

:func:`optimal_bands` picks ``(b, r)`` for a threshold by minimising the weighted areas of
false positives (below the threshold) and false negatives (above it) under that S-curve,
the rule datasketch's ``MinHashLSH`` uses. :func:`bucket_pairs` turns band keys into
candidate pairs by sorting, in time linear in bucket sizes: small buckets yield all their
pairs, buckets larger than ``max_bucket_pairs`` members are chained (each member linked to
the next), which keeps them connected without a quadratic blow-up, and are reported (the
rule of :func:`neardup.graph.buckets.bucket_edges`, without its star).
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit, prange, uint64

from neardup.graph.buckets import bucket_edges
from neardup.text.hashing import mix64

__all__ = [
    "band_keys",
    "banded_candidates",
    "bucket_pairs",
    "check_banding",
    "collision_probability",
    "optimal_bands",
]


def check_banding(caller: str, bands, rows, length: int, length_name: str) -> None:
    """Validate explicit ``bands``/``rows`` against a signature of ``length`` values."""
    from neardup.errors import check_int, setting

    # On the command line (inside neardup.errors.spelled_as) the parameters are flags.
    flag = {name: setting(name, "").removesuffix("=...") for name in ("bands", "rows", length_name)}
    if (bands is None) != (rows is None):
        given, missing = ("bands", "rows") if rows is None else ("rows", "bands")
        if flag["bands"]:
            value = bands if rows is None else rows
            raise ValueError(
                f"{flag['bands']} and {flag['rows']} must be given together; got "
                f"{flag[given]} {value} without {flag[missing]}. Give both, or neither to "
                "choose them from --threshold."
            )
        raise ValueError(
            f"{caller}: parameters 'bands' and 'rows' must be given together; "
            f"got bands={bands!r}, rows={rows!r}."
        )
    if bands is None:
        return
    check_int(caller, "bands", bands, low=1)
    check_int(caller, "rows", rows, low=1)
    if bands * rows > length:
        if flag["bands"]:
            raise ValueError(
                f"{flag['bands']} times {flag['rows']} must be at most {flag[length_name]} "
                f"({length}); got {bands} x {rows} = {bands * rows}. Raise "
                f"{flag[length_name]} or lower {flag['bands']} or {flag['rows']}."
            )
        raise ValueError(
            f"{caller}: parameters 'bands' * 'rows' must be <= {length_name}={length}; got "
            f"{bands} * {rows} = {bands * rows}. Did you forget to raise {length_name}?"
        )


def collision_probability(s: np.ndarray | float, bands: int, rows: int) -> np.ndarray:
    """Probability that two documents with Jaccard ``s`` share at least one band."""
    s = np.asarray(s, dtype=np.float64)
    return 1.0 - (1.0 - s**rows) ** bands


@functools.lru_cache(maxsize=256)
def optimal_bands(
    threshold: float,
    num_perm: int,
    false_positive_weight: float = 0.5,
    false_negative_weight: float = 0.5,
) -> tuple[int, int]:
    """``(bands, rows)`` with ``bands * rows <= num_perm`` minimising weighted error area.

    Parameters
    ----------
    threshold : float in (0, 1)
        Jaccard similarity where the S-curve should switch from "no" to "yes".
    num_perm : int
        Signature length available.
    false_positive_weight, false_negative_weight : float, default 0.5 each
        Relative cost of the two error areas; raise the first to favour precision.
    """
    grid = np.linspace(0.0, 1.0, 2001)
    below, above = grid <= threshold, grid >= threshold
    best, best_err = (1, 1), np.inf
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            p = collision_probability(grid, b, r)
            fp = np.trapezoid(p[below], grid[below]) if below.sum() > 1 else 0.0
            fn = np.trapezoid(1.0 - p[above], grid[above]) if above.sum() > 1 else 0.0
            err = false_positive_weight * fp + false_negative_weight * fn
            if err < best_err - 1e-12:
                best, best_err = (b, r), err
    return best


@njit(parallel=True, cache=True)
def _band_keys(signatures, bands, rows, salt):
    n = signatures.shape[0]
    keys = np.empty((bands, n), dtype=np.uint64)
    for i in prange(n):
        for b in range(bands):
            h = salt ^ uint64(b)
            for r in range(rows):
                h = mix64(h ^ signatures[i, b * rows + r])
            keys[b, i] = h
    return keys


def band_keys(signatures: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """One 64-bit key per band and document.

    Parameters
    ----------
    signatures : ndarray of uint64, shape (n_docs, >= bands * rows)

    Returns
    -------
    ndarray of uint64, shape (bands, n_docs)
    """
    return _band_keys(np.ascontiguousarray(signatures), bands, rows, uint64(0xB4D5EED))


def bucket_pairs(
    keys: np.ndarray, docs: np.ndarray, max_bucket_pairs: int = 50
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Candidate pairs of documents whose keys are equal.

    Parameters
    ----------
    keys : ndarray of uint64, shape (m,)
        One key per document in ``docs``.
    docs : ndarray of int64, shape (m,)
        Document positions.
    max_bucket_pairs : int, default 50
        Buckets with more members than this are chained instead of fully paired.

    Returns
    -------
    left, right : ndarray of int64
        Candidate pairs (unordered, may repeat across calls).
    oversized : ndarray of int64
        Documents that sat in a chained (oversized) bucket.
    """
    if keys.size < 2:
        empty = np.empty(0, np.int64)
        return empty, empty, empty
    order = np.argsort(keys, kind="stable")
    sorted_keys, sorted_docs = keys[order], docs[order]
    boundary = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
    starts = np.concatenate(([0], boundary)).astype(np.int64)
    sizes = np.diff(np.concatenate((starts, [sorted_keys.size]))).astype(np.int64)
    multi = sizes > 1
    starts, sizes = starts[multi], sizes[multi]
    small = sizes <= max_bucket_pairs
    # The corpus stage's bucket rule with the star switched off: a bucket past the cap is
    # past star_upto too, so it gets the chain alone.
    left, right = bucket_edges(sorted_docs, starts, sizes, all_pairs_upto=max_bucket_pairs,
                               star_upto=max_bucket_pairs)
    big_starts, big_sizes = starts[~small], sizes[~small]
    if big_sizes.size:
        idx = np.repeat(big_starts, big_sizes) + (
            np.arange(big_sizes.sum()) - np.repeat(np.cumsum(big_sizes) - big_sizes, big_sizes)
        )
        oversized = sorted_docs[idx]
    else:
        oversized = np.empty(0, np.int64)
    return left, right, oversized


def banded_candidates(
    signatures: np.ndarray, valid: np.ndarray, bands: int, rows: int, max_bucket_pairs: int
):
    """Candidate pairs of the ``valid`` documents that share any band of ``signatures``.

    Parameters
    ----------
    signatures : ndarray of uint64, shape (n_docs, >= bands * rows)
        All documents' signatures (MinHash values, weighted samples...).
    valid : ndarray of int64
        Positions of the documents that may be paired.

    Returns
    -------
    candidates : Pairs
        Canonical, unscored (score 0).
    oversized : ndarray of int64
        Documents that sat in a bucket too large to pair fully (likely templates).
    """
    from neardup.graph.edges import Pairs

    keys = band_keys(signatures[valid], bands, rows)
    lefts, rights, oversized = [], [], []
    for band in range(bands):
        left, right, big = bucket_pairs(keys[band], valid, max_bucket_pairs)
        lefts.append(left)
        rights.append(right)
        oversized.append(big)
    left, right = np.concatenate(lefts), np.concatenate(rights)
    candidates = Pairs(left, right, np.zeros(left.size, np.float32)).canonical()
    return candidates, np.unique(np.concatenate(oversized))
