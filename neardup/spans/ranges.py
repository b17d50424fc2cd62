"""Character ranges to remove from a batch's documents: merged, cut out or listed.

Both ``neardup spans`` and ``neardup substrings`` end with the same step: a set of
``(document, start, stop)`` ranges (character offsets, stop exclusive), possibly
overlapping, that are cut out of the texts (or, under ``--mark``, listed beside them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numba import njit

__all__ = ["BatchRemoval", "apply_ranges", "merge_ranges"]


@njit(cache=True)
def _merge_sorted(doc, start, stop, keep, new_stop):
    # Ranges sorted by (doc, start); a range that starts within or at the end of the
    # previous one of its document extends it.
    n = doc.shape[0]
    last = -1
    for i in range(n):
        if last >= 0 and doc[i] == doc[last] and start[i] <= new_stop[last]:
            if stop[i] > new_stop[last]:
                new_stop[last] = stop[i]
            keep[i] = False
        else:
            keep[i] = True
            new_stop[i] = stop[i]
            last = i


def merge_ranges(doc: np.ndarray, start: np.ndarray, stop: np.ndarray):
    """Overlapping or touching ranges of one document merged; sorted by (doc, start).

    Parameters
    ----------
    doc, start, stop : ndarray of int64, shape (n,)

    Returns
    -------
    (doc, start, stop) : three ndarrays of int64, shape (m,), m <= n
    """
    doc = np.asarray(doc, np.int64)
    start = np.asarray(start, np.int64)
    stop = np.asarray(stop, np.int64)
    if doc.shape[0] == 0:
        return doc, start, stop
    order = np.lexsort((start, doc))
    doc, start, stop = doc[order], start[order], stop[order]
    keep = np.empty(doc.shape[0], dtype=np.bool_)
    new_stop = np.empty_like(stop)
    _merge_sorted(doc, start, stop, keep, new_stop)
    return doc[keep], start[keep], new_stop[keep]


@dataclass
class BatchRemoval:
    """What removal did to one batch.

    Attributes
    ----------
    texts : list of str
        The texts with the ranges cut out (unchanged texts are the same objects).
    ranges : list of list of [int, int]
        Per document, its merged ranges ``[start, stop]`` in the original text.
    bytes_removed, chars_removed, ranges_removed : ndarray of int64, shape (n,)
        Per document: UTF-8 bytes and characters cut, and merged ranges.
    bytes_before : ndarray of int64, shape (n,)
        UTF-8 bytes of the original text.
    """

    texts: list[str]
    ranges: list[list[list[int]]]
    bytes_removed: np.ndarray
    chars_removed: np.ndarray
    ranges_removed: np.ndarray
    bytes_before: np.ndarray


def _utf8_length(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def apply_ranges(texts: Sequence[str], doc: np.ndarray, start: np.ndarray,
                 stop: np.ndarray) -> BatchRemoval:
    """Cut the ranges (``doc`` indexes ``texts``; any order, may overlap) out of ``texts``."""
    doc, start, stop = merge_ranges(doc, start, stop)
    n = len(texts)
    new_texts = list(texts)
    ranges: list[list[list[int]]] = [[] for _ in range(n)]
    bytes_removed = np.zeros(n, np.int64)
    chars_removed = np.zeros(n, np.int64)
    bytes_before = np.fromiter((_utf8_length(t) for t in texts), np.int64, count=n)
    counts = np.bincount(doc, minlength=n).astype(np.int64) if doc.size else np.zeros(n, np.int64)
    bounds = np.concatenate(([0], np.cumsum(counts)))
    starts, stops = start.tolist(), stop.tolist()
    # A Python step per changed document only; untouched documents cost nothing here.
    for d in np.flatnonzero(counts).tolist():
        text = texts[d]
        pieces, position = [], 0
        for i in range(bounds[d], bounds[d + 1]):
            pieces.append(text[position:starts[i]])
            ranges[d].append([starts[i], stops[i]])
            position = stops[i]
        pieces.append(text[position:])
        new_texts[d] = "".join(pieces)
        chars_removed[d] = len(text) - len(new_texts[d])
        bytes_removed[d] = bytes_before[d] - _utf8_length(new_texts[d])
    return BatchRemoval(new_texts, ranges, bytes_removed, chars_removed, counts, bytes_before)
