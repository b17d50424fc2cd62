"""64-bit hashing primitives compiled with numba, shared by every signature kernel.

``mix64`` is the SplitMix64 finalizer (Steele et al. 2014): a bijection on 64-bit integers
with full avalanche, cheap enough to call once per shingle and per permutation. All
arithmetic is modulo 2**64 (numba uint64 wraps), so results are identical on every
platform and in every process: nothing depends on Python's salted ``hash``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, uint64

__all__ = ["doc_digest64", "mix64", "seed_words", "encode_codepoints", "text_digest64",
           "text_digests"]

_M1 = uint64(0xBF58476D1CE4E5B9)
_M2 = uint64(0x94D049BB133111EB)
_GOLDEN = uint64(0x9E3779B97F4A7C15)


@njit(inline="always", cache=True)
def mix64(x):
    x = uint64(x)
    x = (x ^ (x >> uint64(30))) * _M1
    x = (x ^ (x >> uint64(27))) * _M2
    return x ^ (x >> uint64(31))


def seed_words(seed: int, count: int, salt: int = 0) -> np.ndarray:
    """``count`` well-mixed uint64 words derived from ``seed`` (and a per-use ``salt``).

    Uses numpy's PCG64 so the same (seed, salt) gives the same words everywhere.
    """
    rng = np.random.Generator(np.random.PCG64([int(seed) & 0xFFFFFFFFFFFFFFFF, int(salt)]))
    return rng.integers(0, 2**64, size=count, dtype=np.uint64, endpoint=False)


def encode_codepoints(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate ``texts`` into one array of Unicode code points with offsets.

    Returns
    -------
    codepoints : ndarray of uint32, shape (total_chars,)
    offsets : ndarray of int64, shape (len(texts) + 1,)
        Text ``i`` is ``codepoints[offsets[i]:offsets[i + 1]]``.
    """
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    if texts:
        np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)), out=offsets[1:])
    # One C-level encode for the whole batch; surrogatepass keeps lone surrogates (they can
    # survive in badly decoded input) instead of failing the batch.
    raw = "".join(texts).encode("utf-32-le", "surrogatepass")
    return np.frombuffer(raw, dtype=np.uint32), offsets


def readonly(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array`` (no copy). Compiled kernels take their inputs through
    it: numba compiles one specialization per writeable flag, and inputs arrive both ways
    (``np.frombuffer`` and Ray's shared memory give read-only arrays): one flag, and each
    kernel is compiled once for its dtypes, not once more for the other flag."""
    view = array.view()
    view.flags.writeable = False
    return view


@njit(cache=True)
def _mix64_array(values, salt, out):
    for i in range(values.shape[0]):
        out[i] = mix64(values[i] ^ salt)


def mix64_array(values: np.ndarray, salt: int = 0) -> np.ndarray:
    """:func:`mix64` of ``values ^ salt`` for a uint64 array: turns structured values
    (fingerprint blocks, digests) into uniformly spread keys."""
    values = np.ascontiguousarray(values, dtype=np.uint64)
    out = np.empty(values.shape[0], dtype=np.uint64)
    _mix64_array(values, np.uint64(salt), out)
    return out


@njit(cache=True)
def text_digests(cps, offsets, key_a, key_b):
    """Two independent 64-bit hashes (uint64, shape (n, 2)) of each text in the code
    points ``cps`` split at ``offsets`` (:func:`encode_codepoints`), keyed by ``key_a``
    and ``key_b``; the length is mixed in last."""
    n = offsets.shape[0] - 1
    out = np.empty((n, 2), dtype=np.uint64)
    for d in range(n):
        ha = key_a
        hb = key_b
        for p in range(offsets[d], offsets[d + 1]):
            c = uint64(cps[p])
            ha = mix64(ha ^ c)
            hb = (hb ^ c) * uint64(0x100000001B3)
        length = uint64(offsets[d + 1] - offsets[d])
        out[d, 0] = mix64(ha ^ length)
        out[d, 1] = mix64(hb ^ length)
    return out


@njit(cache=True)
def doc_digest64(cps, start, end, key, narrow):
    """The :func:`text_digest64` of the text ``cps[start:end]``, for a compiled pass
    that reads the text anyway (MinHash's shingling hashes the identity in the same
    pass). ``narrow``: every code point of ``cps`` fits a byte (a uint8 array), so the
    scan for wide ones is skipped; the result is the same either way."""
    # A text whose code points all fit a byte is read eight a word, any other two a word
    # (at most 21 bits each; marked apart); a multiply-rotate step per word, mix64 at the
    # end. The packing depends on the text alone, never on the array's dtype.
    wide = False
    if not narrow:
        for q in range(start, end):
            if uint64(cps[q]) > uint64(255):
                wide = True
                break
    per = 2 if wide else 8
    step = uint64(32) if wide else uint64(8)
    h = key ^ (_GOLDEN if wide else uint64(0))
    p = start
    while p < end:
        w = uint64(0)
        shift = uint64(0)
        stop = min(p + per, end)
        for q in range(p, stop):
            w |= uint64(cps[q]) << shift
            shift += step
        h = (h ^ w) * _M1
        h = (h << uint64(29)) | (h >> uint64(35))
        p = stop
    return mix64(h ^ uint64(end - start))


@njit(cache=True)
def _digest64(cps, offsets, key, narrow):
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    for d in range(n):
        out[d] = doc_digest64(cps, offsets[d], offsets[d + 1], key, narrow)
    return out


def text_digest64(cps: np.ndarray, offsets: np.ndarray, key: int) -> np.ndarray:
    """One 64-bit hash (uint64, shape (n,)) of each text in the code points ``cps`` split
    at ``offsets``, keyed by ``key``: several code points a multiply, for equality tests
    where speed counts (every document of every run); :func:`text_digests` gives two
    independent full-mix hashes. The same text hashes alike whether its batch came as
    uint8 (every text ASCII) or uint32 code points."""
    cps = readonly(np.ascontiguousarray(cps))
    return _digest64(cps, np.ascontiguousarray(offsets, np.int64), np.uint64(key),
                     cps.dtype == np.uint8)
