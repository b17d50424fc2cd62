"""Whitespace tokens of a batch and hashes of their N-token windows, vectorized.

A token is a maximal run of non-whitespace characters (``str.isspace``), compared exactly
(no case folding: exact-substring de-duplication matches the text as written, as Lee et
al. 2022 match token ids). Token hashes come from
:func:`neardup.text.hashing.text_digest64` over the batch's code points at once; window
hashes roll a polynomial over the token hashes (one multiply-add per token, numba).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numba import njit, uint64

from neardup.text.hashing import encode_codepoints, mix64, readonly, text_digest64

__all__ = ["TOKEN_HASH_KEY", "TokenTable", "runs", "tokenize", "whitespace_mask", "window_hashes"]

TOKEN_HASH_KEY = 0x544F4B454E  # "TOKEN"
# str.isspace per code point up to U+3001; U+3000 is the last space, and every code point
# above maps to U+3001's entry (False).
_WHITESPACE = np.array([chr(c).isspace() for c in range(0x3002)], dtype=bool)
_BASE = uint64(0x100000001B3)


@dataclass
class TokenTable:
    """The tokens of a batch, in document then position order.

    Attributes
    ----------
    bounds : ndarray of int64, shape (n_docs + 1,)
        Tokens of document ``d`` are ``bounds[d]:bounds[d + 1]``.
    start, end, stop : ndarray of int64, shape (n_tokens,)
        Character offsets in the document: token start, token end, and the start of the
        next token (or the text's end): a removed token takes its trailing whitespace.
    hash : ndarray of uint64, shape (n_tokens,)
    """

    bounds: np.ndarray
    start: np.ndarray
    end: np.ndarray
    stop: np.ndarray
    hash: np.ndarray

    def __len__(self) -> int:
        return int(self.hash.shape[0])


def whitespace_mask(cps: np.ndarray) -> np.ndarray:
    """``str.isspace`` of each code point (bool array of cps's shape)."""
    return _WHITESPACE[np.minimum(cps, _WHITESPACE.shape[0] - 1)]


def runs(mask: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The maximal runs of True in ``mask`` (one entry per character of the texts that
    ``offsets`` delimit) that stay within one text: first positions and ends (exclusive),
    int64 arrays in order."""
    total = mask.shape[0]
    nonempty = offsets[:-1] < offsets[1:]
    before = np.zeros(total, dtype=bool)
    before[1:] = mask[:-1]
    before[offsets[:-1][nonempty]] = False  # a text's first character starts a run
    after = np.zeros(total, dtype=bool)
    after[:-1] = mask[1:]
    after[offsets[1:][nonempty] - 1] = False  # and its last ends one
    return np.flatnonzero(mask & ~before), np.flatnonzero(mask & ~after) + 1


def tokenize(texts: Sequence[str]) -> TokenTable:
    """The whitespace tokens of ``texts`` (no per-token Python step)."""
    cps, offsets = encode_codepoints(list(texts))
    space = whitespace_mask(cps)
    word = ~space
    first, last = runs(word, offsets)
    doc = np.searchsorted(offsets, first, side="right") - 1
    counts = np.bincount(doc, minlength=len(texts)) if doc.size else np.zeros(len(texts), np.int64)
    bounds = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(counts, out=bounds[1:])
    lengths = last - first
    packed = np.zeros(first.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=packed[1:])
    hashes = (text_digest64(cps[word], packed, TOKEN_HASH_KEY) if first.size
              else np.empty(0, np.uint64))
    base = offsets[doc]
    stop = np.empty_like(first)
    if first.size:
        stop[:-1] = first[1:]
        ends_doc = np.ones(first.shape[0], dtype=bool)
        ends_doc[:-1] = doc[1:] != doc[:-1]
        stop[-1] = 0
        stop[ends_doc] = offsets[doc[ends_doc] + 1]
    return TokenTable(bounds, first - base, last - base, stop - base, hashes)


@njit(cache=True)
def _windows(hashes, bounds, n, out_hash, out_token):
    power = uint64(1)
    for _ in range(n - 1):
        power *= _BASE
    k = 0
    for d in range(bounds.shape[0] - 1):
        lo, hi = bounds[d], bounds[d + 1]
        if hi - lo < n:
            continue
        h = uint64(0)
        for i in range(lo, lo + n):
            h = h * _BASE + hashes[i]
        out_hash[k] = mix64(h ^ uint64(n))
        out_token[k] = lo
        k += 1
        for s in range(lo + 1, hi - n + 1):
            h = (h - hashes[s - 1] * power) * _BASE + hashes[s + n - 1]
            out_hash[k] = mix64(h ^ uint64(n))
            out_token[k] = s
            k += 1


def window_hashes(tokens: TokenTable, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The 64-bit hash of every window of ``n`` consecutive tokens within one document,
    and the index (into ``tokens``) of its first token; shape (n_windows,) each."""
    counts = np.maximum(np.diff(tokens.bounds) - n + 1, 0)
    total = int(counts.sum())
    out_hash = np.empty(total, dtype=np.uint64)
    out_token = np.empty(total, dtype=np.int64)
    if total:
        _windows(readonly(tokens.hash), readonly(tokens.bounds), n, out_hash, out_token)
    return out_hash, out_token
