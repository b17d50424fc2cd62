"""Word and character n-gram shingles, hashed to 64 bits in one vectorized pass per batch.

A batch of normalized texts becomes a :class:`ShingleSets`: one flat ``uint64`` array of
shingle hashes plus ``offsets`` (CSR layout), never a Python set per document. Word tokens
are maximal runs of non-space code points (after :mod:`neardup.text.normalize` only single
spaces separate them). A document with at least one unit but fewer than ``n`` gets one
shingle covering all its units, so short documents can still match; an empty document gets
none and is never compared.

Shingle hashes are polynomial rolling hashes over unit hashes, finalised with ``mix64`` and
keyed by ``seed``, so a shingle costs O(1) whatever ``n`` is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
from numba import njit, uint64

from neardup.errors import check_choice, check_int
from neardup.text.hashing import encode_codepoints, mix64, readonly, seed_words

__all__ = ["ShingleConfig", "ShingleSets", "hash_shingles", "shingle_codes", "shingle_lengths"]

_BASE = uint64(0x100000001B3)  # odd multiplier of the rolling hash


@dataclass(frozen=True)
class ShingleConfig:
    """How documents become shingles.

    Parameters
    ----------
    unit : {"word", "char"}, default "word"
        Word n-grams suit news and prose; character n-grams (n = 10..25) resist OCR noise
        inside words better at a higher cost (Silcock et al. 2022, Table A2).
    n : int, default 3
        Shingle length in units. Word 3-grams were best on noisy news (Silcock et al.
        2022, sec. 4.3); use 5 for web-scale LLM data de-duplication.
    """

    unit: str = "word"
    n: int = 3

    def __post_init__(self) -> None:
        check_choice("ShingleConfig", "unit", self.unit, ("word", "char"))
        check_int("ShingleConfig", "n", self.n, low=1, high=255)

    def get_params(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ShingleSets:
    """Ragged per-document shingle hashes in CSR layout.

    Attributes
    ----------
    hashes : ndarray of uint64, shape (total,)
    offsets : ndarray of int64, shape (n_docs + 1,)
        Document ``i`` owns ``hashes[offsets[i]:offsets[i + 1]]``.
    """

    hashes: np.ndarray
    offsets: np.ndarray

    def __len__(self) -> int:
        return int(self.offsets.shape[0] - 1)

    def counts(self) -> np.ndarray:
        """Number of shingles per document, int64 shape (n_docs,)."""
        return np.diff(self.offsets)

    def doc(self, i: int) -> np.ndarray:
        return self.hashes[self.offsets[i] : self.offsets[i + 1]]

    def unique(self, *, compact: bool = True) -> ShingleSets:
        """Per-document sets: duplicates removed, hashes sorted within each document.

        With ``compact=False`` the hashes are a view of a work array as long as the input
        (no copy), for a caller that copies them or drops them soon."""
        n = len(self)
        if self.hashes.size == 0:
            return self
        # Each document sorted on its own (a global lexsort by document and hash was 8x
        # slower: it sorts the whole corpus' shingles).
        hashes = np.empty(self.hashes.size, np.uint64)
        sizes = np.empty(n, np.int64)
        total = _unique_segments(np.ascontiguousarray(self.hashes, np.uint64),
                                 np.ascontiguousarray(self.offsets, np.int64), hashes, sizes)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        return ShingleSets(hashes[:total].copy() if compact else hashes[:total], offsets)

    def is_sets(self) -> bool:
        """True when every document's hashes are strictly increasing (sorted, no repeats),
        as :meth:`unique` returns them."""
        hashes, offsets = self.hashes, self.offsets
        inner = np.ones(max(hashes.size - 1, 0), dtype=bool)
        starts = offsets[1:-1]
        inner[starts[(starts > 0) & (starts < hashes.size)] - 1] = False  # across documents
        return not np.any(hashes[1:][inner] <= hashes[:-1][inner])

    def require_sets(self, caller: str, name: str = "sets") -> None:
        """Raise ValueError unless :meth:`is_sets`."""
        if not self.is_sets():
            raise ValueError(
                f"{caller}: parameter {name!r} must hold sorted, duplicate-free sets; got "
                "unsorted or repeated hashes. Call ShingleSets.unique() first."
            )

    @staticmethod
    def concat(parts: Sequence[ShingleSets]) -> ShingleSets:
        if not parts:
            return ShingleSets(np.empty(0, np.uint64), np.zeros(1, np.int64))
        hashes = np.concatenate([p.hashes for p in parts])
        counts = np.concatenate([p.counts() for p in parts])
        offsets = np.zeros(counts.size + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        return ShingleSets(hashes, offsets)


_FNV_INIT = uint64(0xCBF29CE484222325)


#: Buckets of at most this many hashes are insertion-sorted, larger ones by np.sort, so
#: hashes that are not uniform (a caller's own) cost O(n log n), never O(n^2).
_SMALL_BUCKET = 16


@njit(cache=True)
def _unique_segments(hashes, offsets, out, sizes):
    """Each document's hashes sorted and deduplicated into ``out``; its set size into
    ``sizes``. Returns the number written.

    Shingle hashes are uniform over 64 bits, so a bucket sort on their top bits (about
    one bucket per hash) leaves a few hashes a bucket to insertion-sort: linear time,
    against a comparison sort's n log n for each document's array.
    """
    n = offsets.shape[0] - 1
    longest = 1
    for d in range(n):
        longest = max(longest, offsets[d + 1] - offsets[d])
    bits = 1
    while (1 << bits) < longest:
        bits += 1
    starts = np.zeros((1 << bits) + 1, np.int64)
    buf = np.empty(longest, np.uint64)
    written = 0
    for d in range(n):
        lo, hi = offsets[d], offsets[d + 1]
        m = hi - lo
        b = 0
        while (1 << b) < m:
            b += 1
        buckets = 1 << b
        starts[: buckets + 1] = 0
        if b > 0:
            shift = uint64(64 - b)
            for i in range(lo, hi):
                starts[(hashes[i] >> shift) + 1] += 1
            for k in range(buckets):
                starts[k + 1] += starts[k]
            for i in range(lo, hi):
                k = hashes[i] >> shift
                buf[starts[k]] = hashes[i]
                starts[k] += 1
        else:
            for i in range(m):
                buf[i] = hashes[lo + i]
            starts[0] = m
        begin = 0
        for k in range(buckets):  # starts[k] is now the end of bucket k
            end = starts[k]
            if end - begin > _SMALL_BUCKET:
                buf[begin:end].sort()
            else:
                for i in range(begin + 1, end):
                    x = buf[i]
                    j = i - 1
                    while j >= begin and buf[j] > x:
                        buf[j + 1] = buf[j]
                        j -= 1
                    buf[j + 1] = x
            begin = end
        first = written
        for i in range(m):
            if i == 0 or buf[i] != buf[i - 1]:
                out[written] = buf[i]
                written += 1
        sizes[d] = written - first
    return written


@njit(cache=True)
def doc_word_tokens(cps, start, end, seed, out, t):
    """Hash the word tokens of ``cps[start:end]`` into ``out[t:]``; returns the new end.

    ``cps`` holds code points (uint8 or uint32). Branch-free over characters: the FNV-1a
    state is stored at every position and the write index moves on at each token end, so
    ``out`` needs one spare slot beyond ``(end - start + 1) // 2`` tokens.
    """
    t0 = t
    h = _FNV_INIT
    in_token = False
    for p in range(start, end):
        c = cps[p]
        gap = c <= 32  # space, tab, newline and controls separate tokens
        out[t] = h
        t += gap & in_token
        h = _FNV_INIT if gap else (h ^ uint64(c)) * _BASE
        in_token = not gap
    out[t] = h
    t += in_token
    for i in range(t0, t):
        out[i] = mix64(out[i] ^ seed)
    return t


@njit(inline="always", cache=True)
def shingle_count(m, n):
    """Shingles of a document of ``m`` units."""
    return m - n + 1 if m >= n else (1 if m > 0 else 0)


@njit(cache=True)
def doc_rolling_shingles(units, start, end, n, seed, out, k):
    """n-gram hashes of ``units[start:end]`` into ``out[k:]``; returns the new end."""
    m = end - start
    if m == 0:
        return k
    top = uint64(1)  # _BASE ** n, to remove the unit leaving the window
    for _ in range(n):
        top *= _BASE
    w = n if m >= n else m
    h = uint64(0)
    for i in range(w):
        h = h * _BASE + uint64(units[start + i]) + uint64(1)
    out[k] = mix64(h ^ seed)
    k += 1
    for i in range(w, m):
        h = h * _BASE + uint64(units[start + i]) + uint64(1)
        h -= top * (uint64(units[start + i - n]) + uint64(1))
        out[k] = mix64(h ^ seed)
        k += 1
    return k


@njit(cache=True)
def _word_tokens(cps, offsets, seed):
    """Hash every word token; returns (token_hashes, token_offsets per document)."""
    n_docs = offsets.shape[0] - 1
    # A document of m characters has at most (m + 1) // 2 tokens, plus one spare slot.
    out = np.empty((cps.shape[0] + n_docs) // 2 + 1, dtype=np.uint64)
    tok_offsets = np.zeros(n_docs + 1, dtype=np.int64)
    t = 0
    for d in range(n_docs):
        t = doc_word_tokens(cps, offsets[d], offsets[d + 1], seed, out, t)
        tok_offsets[d + 1] = t
    return out[:t], tok_offsets


@njit(cache=True)
def _rolling_shingles(units, offsets, n, seed):
    """n-gram hashes over per-document unit hashes (tokens or code points)."""
    n_docs = offsets.shape[0] - 1
    total = 0
    for d in range(n_docs):
        total += shingle_count(offsets[d + 1] - offsets[d], n)
    out = np.empty(total, dtype=np.uint64)
    out_offsets = np.zeros(n_docs + 1, dtype=np.int64)
    k = 0
    for d in range(n_docs):
        k = doc_rolling_shingles(units, offsets[d], offsets[d + 1], n, seed, out, k)
        out_offsets[d + 1] = k
    return out, out_offsets


def hash_shingles(
    normalized_texts: Sequence[str], config: ShingleConfig = ShingleConfig(), *, seed: int = 0
) -> ShingleSets:
    """Hash the shingles of a batch of (already normalized) texts.

    Parameters
    ----------
    normalized_texts : sequence of str, length n_docs
    config : ShingleConfig
    seed : int, default 0
        Keys the hash; the same seed gives the same hashes in every process.

    Returns
    -------
    ShingleSets with ``len == n_docs``; a document's hashes keep shingle order and may repeat
    (call :meth:`ShingleSets.unique` for sets).
    """
    cps, offsets = encode_codepoints(list(normalized_texts))
    return shingle_codes(cps, offsets, config, seed=seed)


def shingle_codes(
    cps: np.ndarray, offsets: np.ndarray, config: ShingleConfig = ShingleConfig(), *, seed: int = 0
) -> ShingleSets:
    """:func:`hash_shingles` of texts given as code points (uint8 or uint32) with offsets,
    as :func:`neardup.text.normalize.normalize_codes` returns them."""
    return shingle_lengths(cps, offsets, config.unit, (config.n,), seed=seed)[0]


def shingle_lengths(
    cps: np.ndarray, offsets: np.ndarray, unit: str, ns: Sequence[int], *, seed: int = 0
) -> list[ShingleSets]:
    """:func:`shingle_codes` for each shingle length in ``ns`` (same ``unit``), the texts
    tokenized once for all of them."""
    for n in ns:
        ShingleConfig(unit, n)  # validates unit and n
    key_unit, key_shingle = seed_words(seed, 2, salt=0x5EED)
    cps = readonly(cps)
    if unit == "word":
        units, unit_offsets = _word_tokens(cps, offsets, key_unit)
        units = readonly(units)
    else:
        units, unit_offsets = cps, offsets
    return [ShingleSets(*_rolling_shingles(units, unit_offsets, n, key_shingle)) for n in ns]
