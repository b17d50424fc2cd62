"""MinHash signatures (Broder 1997) with LSH banding, computed for whole batches at once.

A document's signature holds, for each of ``num_perm`` seeded bijections ``p_k``, the
minimum of ``p_k`` over its shingle hashes (64-bit, from :mod:`neardup.text.shingle`).
Two permutation families exist (``signature_scheme``):

* ``"perm32"`` (default, 32-bit values): each shingle hash ``h`` is folded once to 32 bits,
  ``x = (h ^ (h >> 32)) mod 2**32``, and permuted by ``p_k(x) = a_k * x + b_k`` modulo
  2**32 (``a_k`` odd, so a bijection). 32-bit products fill twice the SIMD lanes of 64-bit
  ones and compile to ``vpmulld`` instead of the slow ``vpmullq`` (or its emulation on
  CPUs without AVX-512DQ) (docs/decisions/0001-minhash-sketching-kernel.md).
* ``"perm64"`` (64-bit values, and 32-bit values of neardup before issue #14):
  ``p_k(h) = xorshift(a_k * h + b_k)`` modulo 2**64; a 32-bit value is the top half of
  the 64-bit minimum.

Affine maps are not min-wise independent on arbitrary inputs, but the shingle hashes are
already uniformly mixed (keyed SplitMix64), and for such inputs any fixed bijection makes
the minimum a uniform draw from the union; what matters is that the ``num_perm`` minima
are close to independent. The tests check that empirically for both families: estimates
against exact Jaccard, the LSH S-curve, and over many seeds the estimates' mean (no bias)
and variance (the binomial one of independent permutations, sets of 20 and 200). A
xorshift after the 32-bit product would not change the order of the top bits that decide
the minimum, so perm32 leaves it out. Folding to 32 bits first costs a false match only
when two different shingles' folded hashes collide (2**-32 per pair), as likely as two
different 64-bit minima sharing their top halves in perm64.

The kernels run over a flat array of shingle hashes with offsets, one compiled pass for
the batch and parallel over blocks of documents — the per-document, per-token Python
work that dominates ``datasketch`` is gone. Eight shingles share each sweep over the
permutations, so ``a``, ``b`` and the running minima are loaded once for eight products.

References: Broder, "On the resemblance and containment of documents" (1997); Silcock et
al., "Noise-robust de-duplication at scale" (2022), sec. 4.3 and 6 (MinHash LSH baseline,
10 permutations and word 3-grams; 15 bands x 2 rows for 10M documents).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import njit, prange, uint32, uint64

from neardup.errors import check_choice, check_float, check_int
from neardup.graph.edges import Pairs
from neardup.methods.base import CandidateKeys, CandidateRows, Method, Sketch
from neardup.methods.capabilities import Capabilities, KeyedCandidates, Verification
from neardup.methods.lsh import band_keys, banded_candidates, check_banding, optimal_bands
from neardup.text.hashing import doc_digest64, readonly, seed_words
from neardup.text.identity import identity_from_digests, identity_key
from neardup.text.normalize import NormalizeConfig, normalize_codes
from neardup.text.shingle import (
    ShingleConfig,
    ShingleSets,
    doc_rolling_shingles,
    doc_word_tokens,
    shingle_codes,
)

__all__ = ["MinHash", "MinHashLSH", "jaccard_from_signatures", "resolve_signature_scheme"]

#: Permutation schemes, newest first (see :class:`MinHash`'s ``signature_scheme``).
SIGNATURE_SCHEMES = ("perm32", "perm64")


def resolve_signature_scheme(caller: str, scheme: str | None, hash_bits: int) -> str:
    """The scheme in use: ``scheme``, or the default for ``hash_bits`` when None."""
    if scheme is None:
        return "perm32" if hash_bits == 32 else "perm64"
    scheme = check_choice(caller, "signature_scheme", scheme, SIGNATURE_SCHEMES)
    if scheme == "perm32" and hash_bits != 32:
        from neardup.errors import setting

        if setting("hash_bits", ""):  # the command line
            raise ValueError(
                f"{setting('signature_scheme', '').removesuffix('...')}perm32 needs "
                f"{setting('hash_bits', '').removesuffix('...')}32; got {hash_bits}. Use "
                f"{setting('signature_scheme', '').removesuffix('...')}perm64 (or leave it "
                "out) for 64-bit values."
            )
        raise ValueError(
            f"{caller}: parameter 'signature_scheme' 'perm32' needs hash_bits=32; got "
            f"hash_bits={hash_bits}. Use signature_scheme='perm64' (or None) for 64-bit values."
        )
    return scheme

#: Documents per parallel task of the kernels: scratch buffers are allocated per block,
#: not per document.
_BLOCK_DOCS = 64


@njit(inline="always", cache=True)
def _permute(a, b, h):
    v = a * h + b
    return v ^ (v >> uint64(29))


# The per-document bodies below are plain compiled calls, not ``inline="always"``: numba's
# IR inlining into each parallel kernel specialization cost seconds of compile apiece, and
# the kernels run as fast without it (decision 0048). Only one-line helpers are inlined.
@njit(cache=True)
def _doc_minhash64(hashes, start, end, a, b, out, d, shift, row):
    """``out[d]`` = the minimum of every 64-bit permutation over ``hashes[start:end]``,
    shifted right by ``shift`` (0 for uint64 output, 32 for the legacy uint32 scheme);
    ``row`` (uint64, ``num_perm``) is scratch."""
    num_perm = a.shape[0]
    row[:] = uint64(0xFFFFFFFFFFFFFFFF)
    s = start
    # Four shingles per sweep over the permutations: a and b are loaded once for four
    # products, and the vectorized loop has four independent chains.
    while s + 4 <= end:
        h0 = hashes[s]
        h1 = hashes[s + 1]
        h2 = hashes[s + 2]
        h3 = hashes[s + 3]
        for k in range(num_perm):
            ak = a[k]
            bk = b[k]
            v = min(min(_permute(ak, bk, h0), _permute(ak, bk, h1)),
                    min(_permute(ak, bk, h2), _permute(ak, bk, h3)))  # fmt: skip
            row[k] = min(row[k], v)
        s += 4
    while s < end:
        h0 = hashes[s]
        for k in range(num_perm):
            row[k] = min(row[k], _permute(a[k], b[k], h0))
        s += 1
    for k in range(num_perm):
        out[d, k] = row[k] >> shift


@njit(inline="always", cache=True)
def _fold32(h):
    """A 64-bit shingle hash folded to 32 bits (both halves count)."""
    return uint32((h ^ (h >> uint64(32))) & uint64(0xFFFFFFFF))


@njit(inline="always", cache=True)
def _affine32(a, b, h):
    """``a * h + b`` modulo 2**32 (numba widens uint32 products to 64 bits: cast back)."""
    return uint32(a * h + b)


@njit(cache=True)
def _doc_minhash32(hashes, start, end, a, b, out, d):
    """``out[d, k]`` = min over ``hashes[start:end]`` of ``a[k] * fold32(h) + b[k]``
    (modulo 2**32), accumulated in place in the output row: no scratch allocation."""
    num_perm = a.shape[0]
    for k in range(num_perm):
        out[d, k] = uint32(0xFFFFFFFF)
    s = start
    # Eight shingles per sweep over the permutations: the row, a and b are loaded once
    # for eight products (vpmulld, 8 lanes a ymm register) with independent chains.
    while s + 8 <= end:
        h0 = _fold32(hashes[s])
        h1 = _fold32(hashes[s + 1])
        h2 = _fold32(hashes[s + 2])
        h3 = _fold32(hashes[s + 3])
        h4 = _fold32(hashes[s + 4])
        h5 = _fold32(hashes[s + 5])
        h6 = _fold32(hashes[s + 6])
        h7 = _fold32(hashes[s + 7])
        for k in range(num_perm):
            ak = a[k]
            bk = b[k]
            v = min(min(min(_affine32(ak, bk, h0), _affine32(ak, bk, h1)),
                        min(_affine32(ak, bk, h2), _affine32(ak, bk, h3))),
                    min(min(_affine32(ak, bk, h4), _affine32(ak, bk, h5)),
                        min(_affine32(ak, bk, h6), _affine32(ak, bk, h7))))  # fmt: skip
            out[d, k] = min(out[d, k], v)
        s += 8
    while s < end:
        h0 = _fold32(hashes[s])
        for k in range(num_perm):
            out[d, k] = min(out[d, k], _affine32(a[k], b[k], h0))
        s += 1


@njit(parallel=True, cache=True)
def _signatures64(hashes, offsets, a, b, out, shift, block):
    """Signatures of shingle sets in CSR layout, parallel over blocks of documents."""
    n_docs = offsets.shape[0] - 1
    for blk in prange((n_docs + block - 1) // block):
        row = np.empty(a.shape[0], dtype=np.uint64)
        for d in range(blk * block, min(blk * block + block, n_docs)):
            _doc_minhash64(hashes, offsets[d], offsets[d + 1], a, b, out, d, shift, row)


@njit(parallel=True, cache=True)
def _signatures32(hashes, offsets, a, b, out, block):
    n_docs = offsets.shape[0] - 1
    for blk in prange((n_docs + block - 1) // block):
        for d in range(blk * block, min(blk * block + block, n_docs)):
            _doc_minhash32(hashes, offsets[d], offsets[d + 1], a, b, out, d)


@njit(cache=True)
def _block_scratch(offsets, first, last):
    """Token and shingle buffers large enough for every document in ``first:last``."""
    longest = 0
    for d in range(first, last):
        longest = max(longest, offsets[d + 1] - offsets[d])
    max_tokens = (longest + 1) // 2 + 1
    return np.empty(max_tokens, dtype=np.uint64), np.empty(max_tokens + 1, dtype=np.uint64)


@njit(cache=True)
def _doc_word_shingles(cps, offsets, d, n, key_unit, key_shingle, tokens, shingles):
    """Word n-gram hashes of document ``d`` into ``shingles``; returns their number."""
    t = doc_word_tokens(cps, offsets[d], offsets[d + 1], key_unit, tokens, 0)
    return doc_rolling_shingles(tokens, 0, t, n, key_shingle, shingles, 0)


@njit(parallel=True, cache=True)
def _word_signatures32(cps, offsets, n, key_unit, key_shingle, a, b, out, counts, block,
                       digest_key, narrow, digests):
    """Normalized text (code points) to signatures for word n-grams in one pass per
    document: tokens, shingles and permutations stay in per-block buffers, with the same
    hashes as :func:`~neardup.text.shingle.hash_shingles`. ``counts[d]`` receives the
    document's number of shingles, and ``digests[d]`` (when ``digests`` has a row per
    document) its :func:`~neardup.text.hashing.text_digest64` with ``digest_key``, read
    while the text is in cache (the text identity)."""
    n_docs = offsets.shape[0] - 1
    with_digest = digests.shape[0] == n_docs
    for blk in prange((n_docs + block - 1) // block):
        first = blk * block
        last = min(first + block, n_docs)
        tokens, shingles = _block_scratch(offsets, first, last)
        for d in range(first, last):
            if with_digest:
                digests[d] = doc_digest64(cps, offsets[d], offsets[d + 1], digest_key, narrow)
            c = _doc_word_shingles(cps, offsets, d, n, key_unit, key_shingle, tokens, shingles)
            counts[d] = c
            _doc_minhash32(shingles, 0, c, a, b, out, d)


@njit(parallel=True, cache=True)
def _word_signatures64(cps, offsets, n, key_unit, key_shingle, a, b, out, shift, counts, block,
                       digest_key, narrow, digests):
    """:func:`_word_signatures32` with 64-bit permutations shifted right by ``shift``."""
    n_docs = offsets.shape[0] - 1
    with_digest = digests.shape[0] == n_docs
    for blk in prange((n_docs + block - 1) // block):
        first = blk * block
        last = min(first + block, n_docs)
        tokens, shingles = _block_scratch(offsets, first, last)
        row = np.empty(a.shape[0], dtype=np.uint64)
        for d in range(first, last):
            if with_digest:
                digests[d] = doc_digest64(cps, offsets[d], offsets[d + 1], digest_key, narrow)
            c = _doc_word_shingles(cps, offsets, d, n, key_unit, key_shingle, tokens, shingles)
            counts[d] = c
            _doc_minhash64(shingles, 0, c, a, b, out, d, shift, row)


@njit(parallel=True, cache=True)
def _pair_agreement(signatures, left, right):
    out = np.empty(left.shape[0], dtype=np.float32)
    num_perm = signatures.shape[1]
    for p in prange(left.shape[0]):
        i, j = left[p], right[p]
        same = 0
        for k in range(num_perm):
            if signatures[i, k] == signatures[j, k]:
                same += 1
        out[p] = same / num_perm
    return out


def jaccard_from_signatures(
    signatures: np.ndarray, left: np.ndarray, right: np.ndarray
) -> np.ndarray:
    """Estimated Jaccard of document pairs: the fraction of equal signature values.

    Parameters
    ----------
    signatures : ndarray of uint32 or uint64, shape (n_docs, num_perm)
    left, right : ndarray of int64, shape (n_pairs,)

    Returns
    -------
    ndarray of float32, shape (n_pairs,)
    """
    return _pair_agreement(
        np.ascontiguousarray(signatures),
        np.ascontiguousarray(left, dtype=np.int64),
        np.ascontiguousarray(right, dtype=np.int64),
    )


class MinHash:
    """MinHash signatures for batches of texts (no LSH): the building block.

    Parameters
    ----------
    num_perm : int, default 128
        Signature length. The standard error of a Jaccard estimate is about
        ``sqrt(s (1 - s) / num_perm)``: 0.044 at s = 0.5 with 128.
    normalize : NormalizeConfig, default all steps on
    shingle : ShingleConfig, default word 3-grams
    seed : int, default 0
        Seeds shingle hashing and the permutations; signatures are only comparable
        between objects with the same seed, shingling, normalization and ``hash_bits``.
    hash_bits : {32, 64}, default 32
        Width of the stored signature values. 32 bits halve the memory and change an
        estimate only when two different minima are equal 32-bit values (about one
        comparison in 10**8 for documents of 100 shingles). rensa and datasketch's usual
        settings keep 32 bits too.
    signature_scheme : {"perm32", "perm64"} or None, default None
        How the permutations are computed. "perm32": each shingle hash is folded to 32
        bits once and permuted with 32-bit arithmetic (twice the SIMD lanes of 64-bit
        products; only with ``hash_bits=32``). "perm64": 64-bit permutations, a 32-bit
        value being the top half of the 64-bit one; the only scheme before issue #14,
        kept so that indexes built with it still open and match. None picks
        "perm32" for ``hash_bits=32`` and "perm64" for ``hash_bits=64``. Signatures of
        different schemes are not comparable.

    Examples
    --------
    >>> mh = MinHash(num_perm=128, seed=1)
    >>> sig = mh.signatures(["the cat sat on the mat", "the cat sat on a mat"])
    >>> sig.shape, sig.dtype
    ((2, 128), dtype('uint32'))
    >>> 0.0 <= mh.jaccard(sig[0], sig[1]) <= 1.0
    True
    """

    def __init__(
        self,
        *,
        num_perm: int = 128,
        normalize: NormalizeConfig = NormalizeConfig(),
        shingle: ShingleConfig = ShingleConfig(),
        seed: int = 0,
        hash_bits: int = 32,
        signature_scheme: str | None = None,
    ) -> None:
        self.num_perm = check_int("MinHash", "num_perm", num_perm, low=1, high=4096)
        self.normalize = normalize
        self.shingle = shingle
        self.seed = check_int("MinHash", "seed", seed, low=0)
        self.hash_bits = check_choice("MinHash", "hash_bits", hash_bits, (32, 64))
        self.signature_scheme = resolve_signature_scheme("MinHash", signature_scheme, self.hash_bits)
        words = seed_words(seed, 2 * self.num_perm, salt=0x313)
        if self.signature_scheme == "perm32":
            self._a = readonly((words[: self.num_perm] & np.uint64(0xFFFFFFFF)).astype(np.uint32) | np.uint32(1))
            self._b = readonly((words[self.num_perm :] & np.uint64(0xFFFFFFFF)).astype(np.uint32))
        else:
            self._a = readonly(words[: self.num_perm] | np.uint64(1))  # odd -> bijective
            self._b = readonly(words[self.num_perm :])

    def shingle_sets(self, texts: Sequence[str]) -> ShingleSets:
        """Normalize and shingle ``texts`` the way :meth:`signatures` does."""
        cps, offsets = normalize_codes(texts, self.normalize)
        return shingle_codes(cps, offsets, self.shingle, seed=self.seed)

    @property
    def dtype(self) -> np.dtype:
        """dtype of the signature values: uint32 or uint64 (``hash_bits``)."""
        return np.dtype(np.uint32 if self.hash_bits == 32 else np.uint64)

    def signatures_from_sets(self, sets: ShingleSets) -> np.ndarray:
        """Signatures, shape (n_docs, num_perm) of :attr:`dtype`, of already-hashed
        shingle sets.

        A document without shingles gets all values 2**hash_bits - 1.
        """
        out = np.empty((len(sets), self.num_perm), dtype=self.dtype)
        if self.signature_scheme == "perm32":
            _signatures32(readonly(sets.hashes), readonly(sets.offsets), self._a, self._b, out, _BLOCK_DOCS)
        else:
            shift = uint64(64 - self.hash_bits)
            _signatures64(readonly(sets.hashes), readonly(sets.offsets), self._a, self._b, out, shift,
                          _BLOCK_DOCS)
        return out

    def signatures(self, texts: Sequence[str]) -> np.ndarray:
        """Signatures, shape (len(texts), num_perm) of :attr:`dtype`."""
        return self.signatures_and_counts(texts)[0]

    def signatures_and_counts(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Signatures (as :meth:`signatures`) and each text's number of shingles (int64),
        without keeping the shingles: word shingles are hashed and permuted document by
        document in one compiled pass."""
        if self.shingle.unit != "word":
            sets = self.shingle_sets(texts)
            return self.signatures_from_sets(sets), sets.counts()
        return self.signatures_from_codes(*normalize_codes(texts, self.normalize))

    def signatures_from_codes(self, cps: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`signatures_and_counts` of word shingles from the texts' normalized code
        points (:func:`~neardup.text.normalize.normalize_codes` with ``normalize``)."""
        return self._from_codes(cps, offsets, None)[:2]

    def signatures_and_digests(self, cps: np.ndarray, offsets: np.ndarray,
                               digest_key: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`signatures_from_codes` and each text's
        :func:`~neardup.text.hashing.text_digest64` with ``digest_key``, hashed in the
        same compiled pass (the text identity costs no pass of its own)."""
        return self._from_codes(cps, offsets, np.uint64(digest_key))

    def _from_codes(self, cps, offsets, digest_key):
        key_unit, key_shingle = seed_words(self.seed, 2, salt=0x5EED)  # as shingle_codes
        n_docs = offsets.shape[0] - 1
        out = np.empty((n_docs, self.num_perm), dtype=self.dtype)
        counts = np.empty(n_docs, dtype=np.int64)
        digests = np.empty(0 if digest_key is None else n_docs, dtype=np.uint64)
        digest = (np.uint64(0) if digest_key is None else digest_key, cps.dtype == np.uint8,
                  digests)
        cps = readonly(cps)
        if self.signature_scheme == "perm32":
            _word_signatures32(
                cps, offsets, self.shingle.n, key_unit, key_shingle, self._a, self._b, out,
                counts, _BLOCK_DOCS, *digest,
            )  # fmt: skip
        else:
            _word_signatures64(
                cps, offsets, self.shingle.n, key_unit, key_shingle, self._a, self._b, out,
                uint64(64 - self.hash_bits), counts, _BLOCK_DOCS, *digest,
            )  # fmt: skip
        return out, counts, digests

    @staticmethod
    def jaccard(signature_a: np.ndarray, signature_b: np.ndarray) -> float:
        """Estimated Jaccard between two signatures of equal length."""
        a, b = np.asarray(signature_a), np.asarray(signature_b)
        if a.shape != b.shape:
            raise ValueError(
                f"MinHash.jaccard: signatures must have one shape; got {a.shape} and {b.shape}."
            )
        return float(np.mean(a == b))

    def get_params(self) -> dict:
        return {
            "num_perm": self.num_perm,
            "normalize": self.normalize.get_params(),
            "shingle": self.shingle.get_params(),
            "seed": self.seed,
            "hash_bits": self.hash_bits,
            "signature_scheme": self.signature_scheme,
        }


class MinHashLSH(Method):
    """MinHash + LSH banding near-duplicate detection (``--method minhash``).

    Parameters
    ----------
    threshold : float, default 0.5
        Jaccard similarity at which documents count as near-duplicates. Chooses ``bands``
        and ``rows`` (see :func:`~neardup.methods.lsh.optimal_bands`) unless both are given,
        and is the cut-off of ``verify``. Tune it on labelled validation data.
    num_perm : int, default 128
        Signature length; more is more accurate and slower (linear).
    bands, rows : int or None, default None
        Explicit banding, overriding the choice made from ``threshold``; ``bands * rows``
        must not exceed ``num_perm``. Silcock et al. used 15 x 2 on 10M news articles.
    verify : {"signature", "exact", "none"}, default "signature"
        How candidate pairs are confirmed: "signature" keeps pairs whose estimated Jaccard
        is >= threshold; "exact" computes exact shingle Jaccard from the documents'
        shingle sets (kept in memory by ``engine="memory"``; the out-of-core corpus stage
        stores them in its work directory instead of the signatures: 8 bytes per distinct
        shingle plus 8 per document, against ``hash_bits / 8 * num_perm`` bytes of
        signature); "none" keeps every band collision (classic LSH, most recall, least
        precision), scored by the estimate.
    max_bucket_pairs : int, default 50
        Buckets with more members are chained rather than fully paired, keeping pair
        generation linear; such documents are reported as likely templates.
    normalize : NormalizeConfig
    shingle : ShingleConfig, default word 3-grams (best on news in Silcock et al.)
    seed : int, default 0
    hash_bits : {32, 64}, default 32
        Width of the stored signature values (see :class:`MinHash`).
    signature_scheme : {"perm32", "perm64"} or None, default None
        How permutations are computed (see :class:`MinHash`); None picks "perm32" for
        32-bit values. :meth:`get_params` reports the scheme in use, so a persisted index
        or stage records it.
    """

    name = "minhash"
    pair_params = frozenset({"threshold", "bands", "rows", "max_bucket_pairs"})

    def __init__(
        self,
        *,
        threshold: float = 0.5,
        num_perm: int = 128,
        bands: int | None = None,
        rows: int | None = None,
        verify: str = "signature",
        max_bucket_pairs: int = 50,
        normalize: NormalizeConfig = NormalizeConfig(),
        shingle: ShingleConfig = ShingleConfig(),
        seed: int = 0,
        hash_bits: int = 32,
        signature_scheme: str | None = None,
    ) -> None:
        caller = "MinHashLSH"
        self.threshold = check_float(caller, "threshold", threshold, low=0.0, high=1.0)
        self.num_perm = check_int(caller, "num_perm", num_perm, low=1, high=4096)
        self.bands = bands
        self.rows = rows
        check_banding(caller, bands, rows, self.num_perm, "num_perm")
        self.verify = check_choice(caller, "verify", verify, ("signature", "exact", "none"))
        self.max_bucket_pairs = check_int(caller, "max_bucket_pairs", max_bucket_pairs, low=1)
        self.normalize = normalize
        self.shingle = shingle
        self.seed = check_int(caller, "seed", seed, low=0)
        self.hash_bits = check_choice(caller, "hash_bits", hash_bits, (32, 64))
        self.signature_scheme = resolve_signature_scheme(caller, signature_scheme, self.hash_bits)
        self._minhash = MinHash(
            num_perm=num_perm, normalize=normalize, shingle=shingle, seed=seed,
            hash_bits=hash_bits, signature_scheme=self.signature_scheme,
        )  # fmt: skip

    @property
    def banding(self) -> tuple[int, int]:
        """The ``(bands, rows)`` in use."""
        if self.bands is not None:
            return self.bands, self.rows
        return optimal_bands(max(min(self.threshold, 0.99), 0.01), self.num_perm)

    def derived_params(self) -> dict[str, Any]:
        bands, rows = self.banding
        return {"bands": int(bands), "rows": int(rows)}

    def sketch(self, texts: Sequence[str]) -> Sketch:
        if self.verify == "exact":
            sets = self._minhash.shingle_sets(texts)
            signature = self._minhash.signatures_from_sets(sets)
            return Sketch(sets.counts(), {"signature": signature}, sets.unique())
        if self.shingle.unit == "word" and self.normalize == NormalizeConfig():
            # The text identity's normalization: its code points serve both.
            texts = texts if isinstance(texts, list) else list(texts)
            cps, offsets = normalize_codes(texts, self.normalize)
            # The identity digest is hashed in the shingling pass, while each text is in
            # cache (a pass of its own cost 6% of a 1M-document run's CPU).
            signature, counts, digests = self._minhash.signatures_and_digests(
                cps, offsets, identity_key())
            return Sketch(counts, {"signature": signature}, None,
                          identity=identity_from_digests(texts, offsets, digests))
        signature, counts = self._minhash.signatures_and_counts(texts)
        return Sketch(counts, {"signature": signature}, None)

    def find_pairs(self, sketch: Sketch) -> Pairs:
        valid = np.flatnonzero(sketch.n_features > 0)
        if valid.size < 2:
            return Pairs.empty()
        signature = sketch.arrays["signature"]
        bands, rows = self.banding
        candidates, self.oversized_docs_ = banded_candidates(
            signature, valid, bands, rows, self.max_bucket_pairs
        )
        if self.verify == "exact":
            from neardup.methods.ngram import exact_similarity

            score = exact_similarity(sketch.sets, candidates.left, candidates.right)
        else:
            score = jaccard_from_signatures(signature, candidates.left, candidates.right)
        pairs = Pairs(candidates.left, candidates.right, score)
        return pairs if self.verify == "none" else pairs.above(self.threshold)

    # Keyed contract: the LSH band keys of the signatures, as find_pairs buckets them;
    # edges verified by the signature estimate from the stored signatures, or, with
    # verify="exact", by the exact Jaccard of the stored shingle sets (as find_pairs).

    @property
    def capabilities(self) -> Capabilities:
        # Exact verification reads the shingle sets, not the signatures.
        exact = self.verify == "exact"
        return Capabilities(
            keyed=KeyedCandidates(all_pairs_upto=self.max_bucket_pairs),
            verification=Verification(arrays=() if exact else ("signature",), sets=exact))

    def candidate_keys(self, sketch: Sketch) -> CandidateKeys:
        valid = np.flatnonzero(sketch.n_features > 0)
        bands, rows = self.banding
        keys = band_keys(sketch.arrays["signature"][valid], bands, rows)  # (bands, n_valid)
        return CandidateKeys(np.tile(valid, bands), keys.ravel())

    def score_candidate_rows(self, rows: CandidateRows, left: np.ndarray,
                             right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.verify != "exact":
            # score_candidates' estimate, read in place: gathering each pair's two
            # signature rows first copied 2 x num_perm values a pair.
            score = jaccard_from_signatures(rows.arrays["signature"], left, right)
            return score, self._accepted(score)
        from neardup.methods.ngram import exact_similarity

        # find_pairs' score (float32) and cut-off (Pairs.above on that float32 score).
        score = exact_similarity(rows.sets, left, right)
        return score, score >= self.threshold

    def score_candidates(self, left, right):
        a, b = left["signature"], right["signature"]
        score = (a == b).mean(axis=1, dtype=np.float64).astype(np.float32)
        return score, self._accepted(score)

    def _accepted(self, score: np.ndarray) -> np.ndarray:
        """The signature check's verdicts on estimates ``score``: every pair under
        ``verify="none"``."""
        return np.ones(score.shape[0], bool) if self.verify == "none" else score >= self.threshold
