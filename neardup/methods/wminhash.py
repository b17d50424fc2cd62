"""Weighted MinHash (Ioffe 2010) over phrases weighted by collection statistics (Alonso 2013).

Plain MinHash treats every shingle alike, so two pages that share only a site's navigation
text or a legal notice look as similar as two copies of one story. Alonso, Fetterly &
Manasse (2013) instead weight each word ``phrase_length``-gram ("phrase", 7 words in the
paper) by statistics of the collection and compare documents by *weighted* (generalized)
Jaccard similarity::

    J_w(A, B) = sum_p min(W_A(p), W_B(p)) / sum_p max(W_A(p), W_B(p))

estimated with Ioffe's Improved Consistent Sampling (ICWS). The weight of a phrase ``p``
whose first word is ``v`` combines three factors (their sec. 4.3 and Table 4)::

    W(p) = f(df(v)) [/ df(p)] * [p is rare]

* ``f(df(v))`` favours phrases that begin with common words, which are more likely body
  text than captions or headlines (the SpotSigs idea, without a hand-picked stop-word
  list); ``f`` is one of the Table 4 functions (see ``WeightedMinHash.weighting``);
* dividing by the phrase's own document frequency ``df(p)`` down-weights repeated
  phrases (``divide_by_phrase_df``; off by default here, because a phrase repeated in a
  cluster of copies is exactly the evidence of duplication: see the class docstring);
* phrases found in more than ``rare_fraction`` of the documents are boilerplate and get
  weight 0 (the "rare phrase" variants, best in the paper's Tables 6 and 7).

Statistics come from the corpus being de-duplicated, or from a reference corpus given to
:meth:`WeightedMinHash.fit`.

ICWS (Ioffe 2010, Algorithm 1): for sample ``k`` and every phrase with weight ``w > 0``
draw ``r, c ~ Gamma(2, 1)`` and ``beta ~ U(0, 1)``; set ``t = floor(ln w / r + beta)``,
``y = exp(r (t - beta))`` and ``a = c / (y exp(r))``; the sample is the ``(phrase, t)`` of
least ``a``. Two documents draw equal samples with probability exactly ``J_w``. Here the
variates are not drawn from a random generator but derived from a SplitMix64 stream keyed
by ``(seed, k, phrase hash)``, so every document draws the same variates for the same
phrase in any process, in any order, and no ``(num_samples x vocabulary)`` table exists;
``a`` is compared in log space (``ln a = ln c - r (t - beta + 1)``), which needs no
``exp``. Each sample is stored as one 64-bit value mixing the phrase hash and ``t``, so
signatures are banded (Broder's "supershingles": :func:`~neardup.methods.lsh.band_keys`,
:func:`~neardup.methods.lsh.bucket_pairs`) and scored (fraction of equal samples,
:func:`~neardup.methods.minhash.jaccard_from_signatures`) exactly like MinHash signatures.

Sketch layout (ragged, CSR): ``sketch.sets`` holds each document's distinct phrase hashes,
sorted within the document; ``sketch.arrays["first_word"]`` is a *flat* uint64 array of
the same length as ``sketch.sets.hashes``, element ``i`` being the hash of the first word
of phrase ``sketch.sets.hashes[i]`` (it shares ``sketch.sets.offsets``; unlike fixed-width
arrays its first dimension is the number of phrases, not of documents).
:meth:`~neardup.methods.base.Sketch.concat` concatenates both in order, which keeps them
aligned. ``n_features`` is the number of distinct phrases (0 for a document empty after
normalization).

References: Ioffe, "Improved consistent sampling, weighted minhash and L1 sketching",
ICDM 2010; Alonso, Fetterly & Manasse, "Duplicate news story detection revisited",
MSR-TR-2013-60 (2013); Theobald, Siddharth & Paepcke, "SpotSigs", SIGIR 2008; Broder,
Glassman, Manasse & Zweig, "Syntactic clustering of the web" (1997).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any
from dataclasses import dataclass

import numpy as np
from numba import njit, prange, uint64

from neardup.errors import check_choice, check_float, check_int, spelled
from neardup.graph.edges import Pairs
from neardup.methods.capabilities import Capabilities, KeyedCandidates, Verification
from neardup.methods.capabilities import CorpusStatistics as StatisticsTables
from neardup.methods.base import (
    SET_WEIGHTS,
    CandidateKeys,
    CandidateRows,
    FeatureStatistics,
    Method,
    Sketch,
    StatisticsPartial,
)
from neardup.methods.lsh import band_keys, banded_candidates, check_banding, optimal_bands
from neardup.methods.minhash import jaccard_from_signatures
from neardup.text.hashing import mix64, seed_words
from neardup.text.normalize import NormalizeConfig, normalize_batch
from neardup.text.shingle import ShingleConfig, ShingleSets, hash_shingles

__all__ = ["WeightedMinHash", "CorpusStatistics", "icws_samples", "generalized_jaccard"]

WEIGHTINGS = ("uniform", "df", "ln_df", "df^k", "ln_df^k", "idf")
_VERIFY = ("estimate", "exact", "none")
EMPTY_SAMPLE = np.iinfo(np.uint64).max  # every sample of a document with no positive weight
_SAMPLE_SALT = 0x1C75  # seed_words salt of the per-sample keys
_GOLDEN = uint64(0x9E3779B97F4A7C15)
_T_SALT = uint64(0xD1B54A32D192ED03)
_T_LIMIT = 2.0**62  # |t| is clipped here before the cast to int64 (never reached in practice)
_FIT_BATCH = 20_000  # texts sketched at once by fit


# --------------------------------------------------------------------------- kernels


@njit(inline="always", cache=True)
def _unit(x):
    """A uniform double in (0, 1) from 53 random bits (never 0, so logs stay finite)."""
    return (float(x >> uint64(11)) + 0.5) * (1.0 / 9007199254740992.0)


@njit(parallel=True, cache=True)
def _icws(hashes, offsets, log_w, keys, out):
    n_docs = offsets.shape[0] - 1
    num_samples = keys.shape[0]
    for d in prange(n_docs):
        best = np.full(num_samples, np.inf)
        best_elem = np.zeros(num_samples, dtype=np.uint64)
        best_t = np.zeros(num_samples, dtype=np.int64)
        for s in range(offsets[d], offsets[d + 1]):
            lw = log_w[s]
            if not lw > -np.inf:  # weight 0 (or NaN): never sampled
                continue
            elem = hashes[s]
            for k in range(num_samples):
                state = mix64(elem ^ keys[k])  # SplitMix64 stream of (seed, k, element)
                u1 = _unit(mix64(state + _GOLDEN))
                u2 = _unit(mix64(state + _GOLDEN * uint64(2)))
                v1 = _unit(mix64(state + _GOLDEN * uint64(3)))
                v2 = _unit(mix64(state + _GOLDEN * uint64(4)))
                beta = _unit(mix64(state + _GOLDEN * uint64(5)))
                r = -math.log(u1 * u2)  # Gamma(2, 1)
                t = np.floor(lw / r + beta)  # a float: math.floor would wrap at 2**63
                ln_a = math.log(-math.log(v1 * v2)) - r * (t - beta + 1.0)
                if ln_a < best[k]:
                    best[k] = ln_a
                    best_elem[k] = elem
                    best_t[k] = np.int64(max(min(t, _T_LIMIT), -_T_LIMIT))
        row = out[d]
        for k in range(num_samples):
            if best[k] < np.inf:
                row[k] = mix64(best_elem[k] ^ mix64(uint64(best_t[k]) ^ _T_SALT))
            else:
                row[k] = uint64(0xFFFFFFFFFFFFFFFF)  # EMPTY_SAMPLE


@njit(parallel=True, cache=True)
def _distinct_phrases(phrases, phrase_offsets, words, word_offsets):
    """Per document: distinct phrase hashes, sorted, each with its first word's hash.

    Phrase ``j`` of a document starts at its word ``j`` (the single phrase of a document
    shorter than the phrase length starts at word 0), so its first word is word ``j``.
    """
    n_docs = phrase_offsets.shape[0] - 1
    hashes = np.empty_like(phrases)
    first = np.empty_like(phrases)
    counts = np.zeros(n_docs, dtype=np.int64)
    for d in prange(n_docs):
        lo, hi = phrase_offsets[d], phrase_offsets[d + 1]
        if hi == lo:
            continue
        order = np.argsort(phrases[lo:hi])
        w0 = word_offsets[d]
        k = lo
        for i in range(order.shape[0]):
            h = phrases[lo + order[i]]
            if k > lo and hashes[k - 1] == h:
                continue  # a repeated phrase (it has one first word)
            hashes[k] = h
            first[k] = words[w0 + order[i]]
            k += 1
        counts[d] = k - lo
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    for d in range(n_docs):
        offsets[d + 1] = offsets[d] + counts[d]
    out_hashes = np.empty(offsets[n_docs], dtype=phrases.dtype)
    out_first = np.empty(offsets[n_docs], dtype=phrases.dtype)
    for d in prange(n_docs):
        lo = phrase_offsets[d]
        for i in range(counts[d]):
            out_hashes[offsets[d] + i] = hashes[lo + i]
            out_first[offsets[d] + i] = first[lo + i]
    return out_hashes, out_first, offsets


@njit(parallel=True, cache=True)
def _pair_generalized_jaccard(hashes, offsets, weights, left, right):
    out = np.empty(left.shape[0], dtype=np.float64)
    for p in prange(left.shape[0]):
        i, j = left[p], right[p]
        a, a_end = offsets[i], offsets[i + 1]
        b, b_end = offsets[j], offsets[j + 1]
        lo = 0.0
        hi = 0.0
        while a < a_end and b < b_end:
            if hashes[a] == hashes[b]:
                lo += min(weights[a], weights[b])
                hi += max(weights[a], weights[b])
                a += 1
                b += 1
            elif hashes[a] < hashes[b]:
                hi += weights[a]
                a += 1
            else:
                hi += weights[b]
                b += 1
        while a < a_end:
            hi += weights[a]
            a += 1
        while b < b_end:
            hi += weights[b]
            b += 1
        out[p] = lo / hi if hi > 0.0 else 0.0
    return out


# --------------------------------------------------------------------------- building blocks


def icws_samples(
    hashes: np.ndarray,
    offsets: np.ndarray,
    weights: np.ndarray,
    num_samples: int = 64,
    seed: int = 0,
) -> np.ndarray:
    """Improved Consistent Weighted Sampling (Ioffe 2010) of many weighted sets at once.

    Parameters
    ----------
    hashes : ndarray of uint64, shape (total,)
        Element hashes of all sets, set ``i`` owning ``hashes[offsets[i]:offsets[i + 1]]``.
        Elements must be distinct within a set.
    offsets : ndarray of int64, shape (n_sets + 1,)
    weights : ndarray of float, shape (total,)
        Non-negative element weights; elements of weight 0 are never sampled.
    num_samples : int, default 64
        Samples per set. The fraction of equal samples of two sets estimates their
        generalized Jaccard ``J`` without bias, with standard error ``sqrt(J (1 - J) / k)``.
    seed : int, default 0
        Samples are comparable only between calls with the same seed.

    Returns
    -------
    ndarray of uint64, shape (n_sets, num_samples)
        Sample ``k`` of a set is a 64-bit hash of the chosen ``(element, t)``; a set with no
        positive weight gets ``EMPTY_SAMPLE`` (``2**64 - 1``) everywhere (compare such sets
        to nothing).

    Examples
    --------
    >>> offsets = np.array([0, 3, 6])
    >>> hashes = np.array([1, 2, 3, 1, 2, 4], np.uint64)
    >>> weights = np.array([1.0, 2.0, 1.0, 1.0, 2.0, 1.0])
    >>> s = icws_samples(hashes, offsets, weights, num_samples=2000, seed=1)
    >>> round(float(np.mean(s[0] == s[1])), 1)  # exact: (1 + 2) / (1 + 2 + 1 + 1) = 0.6
    0.6
    """
    caller = "icws_samples"
    check_int(caller, "num_samples", num_samples, low=1, high=4096)
    check_int(caller, "seed", seed, low=0)
    hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    if weights.shape != hashes.shape or offsets.ndim != 1 or offsets.size < 1:
        raise ValueError(
            f"{caller}: parameters 'hashes' and 'weights' must be 1-D arrays of one length and "
            f"'offsets' a 1-D array of n_sets + 1 positions; got shapes {hashes.shape}, "
            f"{weights.shape} and {offsets.shape}."
        )
    if np.any(weights < 0) or np.any(~np.isfinite(weights)):
        raise ValueError(
            f"{caller}: parameter 'weights' must be finite and >= 0; "
            f"got min {weights.min()!r}, max {weights.max()!r}."
        )
    with np.errstate(divide="ignore"):
        log_w = np.log(weights)
    return _icws_log(hashes, offsets, log_w, num_samples, seed)


def _icws_log(hashes, offsets, log_w, num_samples, seed):
    """:func:`icws_samples` on log-weights (``-inf`` for weight 0), without checks."""
    keys = seed_words(seed, num_samples, salt=_SAMPLE_SALT)
    out = np.empty((offsets.shape[0] - 1, num_samples), dtype=np.uint64)
    _icws(hashes, offsets, np.ascontiguousarray(log_w, dtype=np.float64), keys, out)
    return out


def generalized_jaccard(
    a_elems: np.ndarray, a_w: np.ndarray, b_elems: np.ndarray, b_w: np.ndarray
) -> float:
    """Exact generalized (weighted) Jaccard ``sum min / sum max`` of two weighted sets.

    Parameters
    ----------
    a_elems, b_elems : array-like, shape (n_a,) and (n_b,)
        Distinct elements of each set (any comparable dtype); an element missing from a set
        has weight 0 there.
    a_w, b_w : array-like of float, shapes matching ``a_elems`` and ``b_elems``
        Non-negative weights.

    Returns
    -------
    float in [0, 1]; 0.0 when both sets have zero total weight.

    Examples
    --------
    >>> generalized_jaccard([1, 2, 3], [1.0, 2.0, 1.0], [1, 2, 4], [1.0, 2.0, 1.0])
    0.6
    """
    a_elems, b_elems = np.asarray(a_elems), np.asarray(b_elems)
    a_w, b_w = np.asarray(a_w, dtype=np.float64), np.asarray(b_w, dtype=np.float64)
    if a_elems.shape != a_w.shape or b_elems.shape != b_w.shape:
        raise ValueError(
            "generalized_jaccard: each set's elements and weights must have one shape; "
            f"got {a_elems.shape} vs {a_w.shape} and {b_elems.shape} vs {b_w.shape}."
        )
    universe, inverse = np.unique(np.concatenate([a_elems, b_elems]), return_inverse=True)
    dense = np.zeros((2, universe.size))
    np.add.at(dense[0], inverse[: a_elems.size], a_w)
    np.add.at(dense[1], inverse[a_elems.size :], b_w)
    hi = float(dense.max(axis=0).sum())
    return float(dense.min(axis=0).sum()) / hi if hi > 0 else 0.0


@dataclass(frozen=True)
class CorpusStatistics:
    """Document frequencies of words and phrases in a corpus.

    Attributes
    ----------
    n_docs : int
        Documents with at least one phrase.
    word_hashes : ndarray of uint64, shape (n_words,), sorted
    word_df : ndarray of int64, shape (n_words,)
        Documents in which each word begins a phrase (every word of a document except its
        last ``phrase_length - 1``; the first word of a document shorter than that).
    phrase_hashes : ndarray of uint64, shape (n_phrases,), sorted
    phrase_df : ndarray of int64, shape (n_phrases,)
        Documents containing each phrase.
    absent_df : int, default 0
        Document frequency of a hash not in the tables: 0 for a reference corpus's full
        tables; 1 for the de-duplicated corpus's own statistics counted by the corpus
        stage, which stores only what the weights need (every feature looked up is then
        in at least its own document).
    """

    n_docs: int
    word_hashes: np.ndarray
    word_df: np.ndarray
    phrase_hashes: np.ndarray
    phrase_df: np.ndarray
    absent_df: int = 0

    @classmethod
    def from_sketch(cls, sketch: Sketch) -> CorpusStatistics:
        """Statistics of a :class:`WeightedMinHash` sketch (distinct phrases per document)."""
        sets = sketch.sets
        phrase_hashes, phrase_df = np.unique(sets.hashes, return_counts=True)
        # Word df: distinct (word, document) pairs, counted per word.
        word_hashes, word_df = np.unique(cls.word_features(sketch), return_counts=True)
        return cls(
            int(np.count_nonzero(sets.counts())),
            word_hashes,
            word_df.astype(np.int64),
            phrase_hashes,
            phrase_df.astype(np.int64),
        )

    def _lookup(self, keys: np.ndarray, values: np.ndarray, query: np.ndarray) -> np.ndarray:
        if keys.size == 0:
            return np.full(query.size, self.absent_df, np.int64)
        pos = np.minimum(np.searchsorted(keys, query), keys.size - 1)
        return np.where(keys[pos] == query, values[pos], self.absent_df)

    def lookup_words(self, hashes: np.ndarray) -> np.ndarray:
        """Document frequency of each word hash (``absent_df`` for words not stored)."""
        return self._lookup(self.word_hashes, self.word_df, hashes)

    def lookup_phrases(self, hashes: np.ndarray) -> np.ndarray:
        """Document frequency of each phrase hash (``absent_df`` for phrases not stored)."""
        return self._lookup(self.phrase_hashes, self.phrase_df, hashes)

    @staticmethod
    def word_features(sketch: Sketch) -> np.ndarray:
        """Each document's distinct first words (hashes), concatenated: counted per
        word they are the words' document frequencies."""
        sets = sketch.sets
        doc_of = np.repeat(np.arange(len(sets), dtype=np.int64), sets.counts())
        first = sketch.arrays["first_word"]
        order = np.lexsort((doc_of, first))
        words, docs = first[order], doc_of[order]
        new = np.ones(words.size, dtype=bool)
        new[1:] = (words[1:] != words[:-1]) | (docs[1:] != docs[:-1])
        return words[new]


# --------------------------------------------------------------------------- method


class WeightedMinHash(Method):
    """Weighted MinHash LSH over rare, collection-weighted phrases (``--method wminhash``).

    Each document becomes the set of its word ``phrase_length``-grams; each phrase gets a
    weight from document frequencies (of its first word, of itself) and documents are
    compared by weighted Jaccard, estimated from ``num_samples`` ICWS samples, banded into
    supershingles for candidate generation (Alonso, Fetterly & Manasse 2013; Ioffe 2010).
    Compared with :class:`~neardup.methods.minhash.MinHashLSH`, boilerplate (navigation,
    legal notices, datelines shared by many documents) no longer makes pages look alike.

    The weight of phrase ``p`` with first word ``v`` in a corpus of ``N`` documents::

        W(p) = f(df(v)) * [df(p) <= max(2, rare_fraction * N)]      (/ df(p) optionally)

    where ``f`` is set by ``weighting`` and the optional division by
    ``divide_by_phrase_df``. Document frequencies are those of the corpus passed to
    :meth:`find_pairs`, or, after :meth:`fit`, those of the reference corpus given to it.

    Requirements
        numba; document frequencies need the whole corpus (or a fitted reference
        corpus), so the ICWS samples are drawn in :meth:`find_pairs`, not in
        :meth:`sketch`, and the corpus sketch holds every document's distinct phrase
        hashes (16 bytes per phrase).
    Inputs
        Raw texts; any language whose words are separated by spaces.
    Relations
        ``weighting="uniform"``, ``rare_fraction=None`` is unweighted MinHash LSH over
        ``phrase_length``-word shingles (ICWS with equal weights is plain MinHash).
        On noisy news copies ``phrase_length=3`` with ``"ln_df"`` does best, and
        ``rare_fraction`` keeps templates appended to many stories from merging them,
        where plain ``MinHashLSH`` merges them all (accuracy on every labelled set:
        docs/transfer.md). OCR noise breaks long phrases: 7-word phrases need thresholds near 0.1-0.15 on
        that corpus. Tune ``threshold`` on labelled data (the paper's best thresholds
        were 1/4 to 1/2 on cleaner web text).

    Parameters
    ----------
    threshold : float in [0, 1], default 0.5
        Weighted Jaccard at which documents count as near-duplicates: chooses ``bands`` and
        ``rows`` (see :func:`~neardup.methods.lsh.optimal_bands`) unless both are given, and
        is the cut-off of ``verify``. Recommended 0.3-0.5 on clean text with 7-word
        phrases, 0.15-0.2 on OCR-noisy text with ``phrase_length=3``.
    num_samples : int in [1, 4096], default 64
        ICWS samples per document. Cost is linear in it; the standard error of an estimate
        is ``sqrt(J (1 - J) / num_samples)`` (0.06 at J = 0.5 with 64). Use 128 when
        ``verify="estimate"`` must be precise near the threshold.
    bands, rows : int or None, default None
        Explicit banding overriding the choice from ``threshold``; give both, with
        ``bands * rows <= num_samples``.
    weighting : {"uniform", "df", "ln_df", "df^k", "ln_df^k", "idf"}, default "ln_df"
        ``f`` in the formula above (Alonso et al. 2013, Table 4), with ``n = df(v)`` the
        document frequency of the phrase's first word:

        ========== ==================================================================
        uniform    ``1``
        df         ``n``
        ln_df      ``ln(1 + n)``
        df^k       ``n ** power``
        ln_df^k    ``ln(1 + n) ** power``
        idf        ``ln(1 + N / df(p))`` — of the *phrase*, not of its first word
        ========== ==================================================================

        The logarithms add 1 to the paper's ``ln df`` (and to ``ln(N / df)``) so that no
        phrase outside boilerplate gets weight 0 merely because its first word (or the
        phrase itself, in a small corpus) is in a single (or in every) document: the paper
        gives "all phrases which do not appear to be boilerplate some positive weight".
        For ``"idf"`` the phrase's df already sets the weight, so ``divide_by_phrase_df`` is
        not applied on top. The df-based functions make phrases starting with common
        words (SpotSigs' "antecedents": the, said, is...) dominate; ``df^k`` with
        ``power`` 2-4 had the best F1 and Pearson r in the paper (Tables 6, 7); on the
        demo corpus they win only at high thresholds and lose precision at low ones, so
        the milder ``"ln_df"`` is the default. A word never seen in fitted statistics has
        ``n = 0`` (weight 0, except for ``"uniform"`` and ``"idf"``).
    power : int in [1, 16], default 2
        Exponent ``k`` of ``"df^k"`` and ``"ln_df^k"`` (paper: 2, 3, 4 and 10 for logs);
        ignored otherwise.
    divide_by_phrase_df : bool, default False
        Divide each weight by the phrase's own document frequency (the paper's "scale by
        the inverse document frequency of the complete phrase"). Leave it off: the
        phrases copies share have ``df`` equal to the number of copies while their edits
        and OCR errors have ``df = 1``, so dividing makes the *differences* dominate and
        scores fall as clusters grow (on the demo corpus, at every threshold).
        ``rare_fraction`` removes boilerplate without that cost.
    rare_fraction : float in (0, 1] or None, default 0.5
        Phrases found in more than ``max(2, rare_fraction * N)`` documents are common
        (boilerplate) and get weight 0 (the paper's sec. 4.3 definition: "a rare phrase is a
        phrase that occurs in at most n% of the documents"; 50% was best there). A phrase
        in two documents is always rare, since one pair cannot reveal a template. None
        keeps every phrase. Lower it (e.g. 0.01 or 0.001) for large corpora mixing many
        sites, where a site's template appears in a small fraction of all documents; keep
        it above the largest expected duplicate cluster size divided by ``N``, since a
        cluster's own shared phrases have df equal to its size. (Sec. 4.5 of the paper
        also speaks of "the bottom 50% of phrases by document frequency"; as a quantile
        over distinct phrases that cut lands at df 1 or 2 in any corpus, since most
        phrases occur once, and zeroes every phrase of a cluster of three or more copies,
        hence the definition by fraction of documents.)
    phrase_length : int in [1, 255], default 7
        Words per phrase (the paper used 7). Shorter phrases (3-5) tolerate more OCR noise
        and rewording; a document with fewer words is one phrase.
    verify : {"estimate", "exact", "none"}, default "estimate"
        How band collisions are confirmed: "estimate" keeps pairs whose fraction of equal
        samples (estimated weighted Jaccard) is >= threshold; "exact" computes exact
        weighted Jaccard from the phrase sets and weights (no sampling error, a little
        slower; the out-of-core corpus stage then stores each document's phrase hashes
        and float64 weights in its work directory, 16 bytes per distinct phrase plus 8
        per document, instead of the samples' ``8 * num_samples`` bytes); "none" keeps
        every collision, scored by the estimate.
    normalize : NormalizeConfig, default all steps on
        Text normalization before tokenizing.
    seed : int >= 0, default 0
        Seeds phrase hashing and the ICWS variates; the same input and seed give the same
        pairs.
    max_bucket_pairs : int >= 1, default 50
        Band buckets with more members are chained instead of fully paired (linear pair
        generation); their documents are listed in ``oversized_docs_``.

    Attributes
    ----------
    n_docs_, word_hashes_, word_df_, phrase_hashes_, phrase_df_
        Set by :meth:`fit`: the reference corpus's document count (documents with at least
        one phrase) and document frequencies (sorted hashes with aligned counts). When set,
        :meth:`find_pairs` uses them instead of the corpus's own statistics.
    oversized_docs_ : ndarray of int64
        Set by :meth:`find_pairs`: documents that sat in an oversized band bucket.
    unweighted_docs_ : ndarray of int64
        Set by :meth:`find_pairs`: documents with phrases but no positive weight (all their
        phrases are boilerplate, or their words unknown to fitted statistics). They have
        nothing to compare and are never paired (they keep ``n_features > 0`` and stay in
        every output as singletons, because ``sketch`` cannot know corpus statistics).

    Examples
    --------
    >>> story = ("the minister said on tuesday that the new budget would cut taxes for "
    ...          "small firms and raise spending on roads and schools next year")
    >>> texts = [story, story.replace("tuesday", "monday") + " he added", "an unrelated note"]
    >>> wmh = WeightedMinHash(threshold=0.3, num_samples=128, phrase_length=5, seed=1)
    >>> pairs = wmh.find_pairs(wmh.sketch(texts))
    >>> list(zip(pairs.left.tolist(), pairs.right.tolist()))
    [(0, 1)]
    """

    name = "wminhash"
    # The sketch holds phrase sets only; weights, samples and bands are all computed in
    # find_pairs, so every parameter but phrase_length, normalize and seed is pair-stage.
    pair_params = frozenset(
        {"threshold", "num_samples", "bands", "rows", "weighting", "power",
         "divide_by_phrase_df", "rare_fraction", "verify", "max_bucket_pairs"}
    )

    def __init__(
        self,
        *,
        threshold: float = 0.5,
        num_samples: int = 64,
        bands: int | None = None,
        rows: int | None = None,
        weighting: str = "ln_df",
        power: int = 2,
        divide_by_phrase_df: bool = False,
        rare_fraction: float | None = 0.5,
        phrase_length: int = 7,
        verify: str = "estimate",
        normalize: NormalizeConfig = NormalizeConfig(),
        seed: int = 0,
        max_bucket_pairs: int = 50,
    ) -> None:
        caller = "WeightedMinHash"
        self.threshold = check_float(caller, "threshold", threshold, low=0.0, high=1.0)
        self.num_samples = check_int(caller, "num_samples", num_samples, low=1, high=4096)
        check_banding(caller, bands, rows, self.num_samples, "num_samples")
        self.bands = bands
        self.rows = rows
        self.weighting = check_choice(caller, "weighting", weighting, WEIGHTINGS)
        self.power = check_int(caller, "power", power, low=1, high=16)
        if not isinstance(divide_by_phrase_df, (bool, np.bool_)):
            raise ValueError(
                f"{caller}: parameter 'divide_by_phrase_df' must be "
                f"{spelled('True or False', 'true or false')}; "
                f"got {divide_by_phrase_df!r}."
            )
        self.divide_by_phrase_df = bool(divide_by_phrase_df)
        if rare_fraction is not None:
            rare_fraction = check_float(
                caller, "rare_fraction", rare_fraction, low=0.0, high=1.0,
                hint=spelled("Use None to keep every phrase.",
                             "Leave it out to keep every phrase."),
            )
            if rare_fraction == 0.0:
                raise ValueError(
                    f"{caller}: parameter 'rare_fraction' must be a number in (0, 1]"
                    f"{spelled(' or None', '')}; got 0.0. "
                    f"{spelled('Use None to keep every phrase.', 'Leave it out to keep every phrase.')}"
                )
        self.rare_fraction = rare_fraction
        self.phrase_length = check_int(caller, "phrase_length", phrase_length, low=1, high=255)
        self.verify = check_choice(caller, "verify", verify, _VERIFY)
        if not isinstance(normalize, NormalizeConfig):
            raise ValueError(
                f"{caller}: parameter 'normalize' must be a NormalizeConfig; got {normalize!r}."
            )
        self.normalize = normalize
        self.seed = check_int(caller, "seed", seed, low=0)
        self.max_bucket_pairs = check_int(caller, "max_bucket_pairs", max_bucket_pairs, low=1)

    # ----------------------------------------------------------------- per batch

    @property
    def banding(self) -> tuple[int, int]:
        """The ``(bands, rows)`` in use."""
        if self.bands is not None:
            return self.bands, self.rows
        return optimal_bands(max(min(self.threshold, 0.99), 0.01), self.num_samples)

    def derived_params(self) -> dict[str, Any]:
        bands, rows = self.banding
        return {"bands": int(bands), "rows": int(rows)}

    def sketch(self, texts: Sequence[str]) -> Sketch:
        """Distinct phrase hashes of each text, with the hash of each phrase's first word.

        See the module docstring for the layout. Pure: depends on the batch only.
        """
        normalized = normalize_batch(texts, self.normalize)
        shingle = ShingleConfig("word", self.phrase_length)
        phrases = hash_shingles(normalized, shingle, seed=self.seed)
        words = hash_shingles(normalized, ShingleConfig("word", 1), seed=self.seed)
        hashes, first, offsets = _distinct_phrases(
            phrases.hashes, phrases.offsets, words.hashes, words.offsets
        )
        sets = ShingleSets(hashes, offsets)
        return Sketch(sets.counts(), {"first_word": first}, sets)

    # ----------------------------------------------------------------- statistics

    def fit(self, texts: Iterable[str]) -> WeightedMinHash:
        """Learn document frequencies from a reference corpus; later :meth:`find_pairs`
        calls weight phrases with them instead of the de-duplicated corpus's own.

        Parameters
        ----------
        texts : iterable of str
            Reference corpus (sketched in batches of 20,000 texts).

        Returns
        -------
        self
        """
        parts, batch = [], []
        for text in texts:
            batch.append(text)
            if len(batch) == _FIT_BATCH:
                parts.append(self.sketch(batch))
                batch = []
        if batch or not parts:
            parts.append(self.sketch(batch))
        stats = CorpusStatistics.from_sketch(Sketch.concat(parts))
        self.n_docs_ = stats.n_docs
        self.word_hashes_, self.word_df_ = stats.word_hashes, stats.word_df
        self.phrase_hashes_, self.phrase_df_ = stats.phrase_hashes, stats.phrase_df
        self.absent_df_ = 0
        return self

    def statistics(self, sketch: Sketch) -> CorpusStatistics:
        """The statistics weights use for ``sketch``: the fitted ones, else its own."""
        if hasattr(self, "n_docs_"):
            return CorpusStatistics(
                self.n_docs_, self.word_hashes_, self.word_df_,
                self.phrase_hashes_, self.phrase_df_, getattr(self, "absent_df_", 0),
            )
        return CorpusStatistics.from_sketch(sketch)

    def max_rare_df(self, n_docs: int) -> float:
        """Largest phrase document frequency still counted as rare (inf if all are)."""
        if self.rare_fraction is None:
            return math.inf
        return max(2.0, self.rare_fraction * n_docs)

    def log_weights(self, sketch: Sketch, stats: CorpusStatistics | None = None) -> np.ndarray:
        """Natural log of every phrase weight (``-inf`` for weight 0).

        Returns
        -------
        ndarray of float64, shape (len(sketch.sets.hashes),), aligned with
        ``sketch.sets.hashes``. Logs keep ``df ** power`` finite for any corpus size.
        """
        if stats is None:
            stats = self.statistics(sketch)
        phrase_df = stats.lookup_phrases(sketch.sets.hashes).astype(np.float64)
        with np.errstate(divide="ignore"):
            if self.weighting == "idf":
                n = max(stats.n_docs, 1)
                log_w = np.log(np.log1p(n / np.maximum(phrase_df, 1.0)))
            else:
                word_df = stats.lookup_words(sketch.arrays["first_word"]).astype(np.float64)
                if self.weighting == "uniform":
                    log_w = np.zeros(word_df.size)
                elif self.weighting == "df":
                    log_w = np.log(word_df)
                elif self.weighting == "df^k":
                    log_w = self.power * np.log(word_df)
                elif self.weighting == "ln_df":
                    log_w = np.log(np.log1p(word_df))
                else:  # "ln_df^k"
                    log_w = self.power * np.log(np.log1p(word_df))
                if self.divide_by_phrase_df:
                    log_w = log_w - np.log(np.maximum(phrase_df, 1.0))
        if self.rare_fraction is not None:
            log_w[phrase_df > self.max_rare_df(stats.n_docs)] = -np.inf
        return log_w

    def phrase_weights(self, sketch: Sketch, stats: CorpusStatistics | None = None) -> np.ndarray:
        """Every phrase weight, float64 aligned with ``sketch.sets.hashes`` (see the class
        docstring for the formula)."""
        return np.exp(self.log_weights(sketch, stats))

    # ----------------------------------------------------------------- corpus

    def samples(self, sketch: Sketch, stats: CorpusStatistics | None = None) -> np.ndarray:
        """ICWS samples of every document, uint64 shape (n_docs, num_samples)."""
        log_w = self.log_weights(sketch, stats)
        sets = sketch.sets
        return _icws_log(sets.hashes, sets.offsets, log_w, self.num_samples, self.seed)

    def find_pairs(self, sketch: Sketch) -> Pairs:
        n_docs = len(sketch)
        self.oversized_docs_ = np.empty(0, np.int64)
        self.unweighted_docs_ = np.empty(0, np.int64)
        if n_docs < 2 or sketch.sets is None:
            return Pairs.empty()
        log_w = self.log_weights(sketch)
        sets = sketch.sets
        positive = np.zeros(n_docs, dtype=bool)
        doc_of = np.repeat(np.arange(n_docs, dtype=np.int64), sets.counts())
        positive[doc_of[log_w > -np.inf]] = True
        self.unweighted_docs_ = np.flatnonzero(~positive & (sketch.n_features > 0))
        valid = np.flatnonzero(positive)
        if valid.size < 2:
            return Pairs.empty()
        samples = _icws_log(sets.hashes, sets.offsets, log_w, self.num_samples, self.seed)
        bands, rows = self.banding
        candidates, self.oversized_docs_ = banded_candidates(
            samples, valid, bands, rows, self.max_bucket_pairs
        )
        if self.verify == "exact":
            weights = np.exp(log_w)
            score = _pair_generalized_jaccard(
                sets.hashes, sets.offsets, weights, candidates.left, candidates.right
            )
            keep = score >= self.threshold  # compared in float64, stored as float32
            pairs = Pairs(candidates.left, candidates.right, score.astype(np.float32))
            return pairs.select(keep)
        score = jaccard_from_signatures(samples, candidates.left, candidates.right)
        pairs = Pairs(candidates.left, candidates.right, score)
        return pairs if self.verify == "none" else pairs.above(self.threshold)

    # ----------------------------------------------------------------- keyed stage
    #
    # Statistics contract: the corpus stage counts word and phrase document frequencies
    # in one pass (keeping only what the weights read), then keys batches with the
    # fitted copy: its keyed sketch carries the ICWS samples, keyed by their LSH bands
    # as find_pairs buckets them, and verified by the fraction of equal samples, or, with
    # verify="exact", by the exact weighted Jaccard of the stored weighted phrase sets.

    def _tables_needed(self) -> tuple[str, ...]:
        tables = ()
        if self.weighting not in ("uniform", "idf"):
            tables += ("word",)
        if self.weighting == "idf" or self.divide_by_phrase_df or self.rare_fraction is not None:
            tables += ("phrase",)
        return tables

    @property
    def capabilities(self) -> Capabilities:
        # Exact verification reads the weighted phrase sets, not the samples. Unfitted
        # weights need corpus statistics (the fitted copy declares none).
        exact = self.verify == "exact"
        tables = () if hasattr(self, "n_docs_") else self._tables_needed()
        return Capabilities(
            keyed=KeyedCandidates(all_pairs_upto=self.max_bucket_pairs,
                                  keys_per_doc=self.banding[0]),
            statistics=StatisticsTables(tables) if tables else None,
            verification=Verification(arrays=() if exact else ("samples",), sets=exact,
                                      set_weights=exact))

    def statistics_partial(self, sketch: Sketch) -> StatisticsPartial:
        features = {}
        if "word" in self._tables_needed():
            features["word"] = CorpusStatistics.word_features(sketch)
        if "phrase" in self._tables_needed():
            features["phrase"] = sketch.sets.hashes  # distinct within each document
        return StatisticsPartial(features, {"docs": int(np.count_nonzero(sketch.sets.counts()))})

    def statistics_min_df(self, table: str, totals: dict[str, int]) -> int:
        if table == "phrase" and self.weighting != "idf" and not self.divide_by_phrase_df:
            # Phrase df only decides "rare": below the cut every df weighs the same.
            return int(math.floor(self.max_rare_df(totals.get("docs", 0)))) + 1
        return 2

    def with_statistics(self, stats: FeatureStatistics) -> WeightedMinHash:
        import copy

        empty = (np.zeros(0, np.uint64), np.zeros(0, np.int64))
        fitted = copy.copy(self)
        fitted.n_docs_ = int(stats.totals.get("docs", 0))
        fitted.word_hashes_, fitted.word_df_ = stats.tables.get("word", empty)
        fitted.phrase_hashes_, fitted.phrase_df_ = stats.tables.get("phrase", empty)
        fitted.absent_df_ = stats.absent_df
        return fitted

    def statistics_digest(self) -> str | None:
        if not hasattr(self, "n_docs_"):
            return None
        return FeatureStatistics(
            {"docs": int(self.n_docs_)},
            {"word": (self.word_hashes_, self.word_df_),
             "phrase": (self.phrase_hashes_, self.phrase_df_)},
            getattr(self, "absent_df_", 0),
        ).digest()

    def _keyed_statistics(self) -> CorpusStatistics:
        if hasattr(self, "n_docs_"):
            return self.statistics(None)
        if self._tables_needed():
            raise ValueError(
                "WeightedMinHash: weights need corpus statistics before a batch can be "
                "keyed; fit the method (fit) or run it through the corpus stage, which "
                "counts them (with_statistics)."
            )
        empty = np.zeros(0, np.uint64), np.zeros(0, np.int64)
        return CorpusStatistics(0, *empty, *empty)

    def keyed_sketch(self, sketch: Sketch) -> Sketch:
        if "samples" in sketch.arrays:
            return sketch
        log_w = self.log_weights(sketch, self._keyed_statistics())
        sets = sketch.sets
        samples = _icws_log(sets.hashes, sets.offsets, log_w, self.num_samples, self.seed)
        ragged = sketch.ragged
        if self.verify == "exact":
            # The weights find_pairs verifies with (float64, the same expression), so the
            # stage's verdicts are the in-memory ones.
            ragged = {**ragged, SET_WEIGHTS: np.exp(log_w)}
        return Sketch(sketch.n_features, {**sketch.arrays, "samples": samples}, sets,
                      ragged=ragged)

    def candidate_keys(self, sketch: Sketch) -> CandidateKeys:
        samples = self.keyed_sketch(sketch).arrays["samples"]
        # A document with no positive weight has only empty samples: never paired.
        valid = np.flatnonzero(samples[:, 0] != EMPTY_SAMPLE) if samples.size else np.zeros(0, np.int64)
        bands, rows = self.banding
        keys = band_keys(samples[valid], bands, rows)  # (bands, n_valid)
        return CandidateKeys(np.tile(valid, bands), keys.ravel())

    def score_candidate_rows(self, rows: CandidateRows, left: np.ndarray,
                             right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.verify != "exact":
            return super().score_candidate_rows(rows, left, right)
        score = _pair_generalized_jaccard(rows.sets.hashes, rows.sets.offsets, rows.set_weights,
                                          np.asarray(left, np.int64), np.asarray(right, np.int64))
        # Accepted in float64, stored as float32, as find_pairs does.
        return score.astype(np.float32), score >= self.threshold

    def score_candidates(self, left, right):
        a, b = left["samples"], right["samples"]
        # As jaccard_from_signatures: equal samples / num_samples, as float32.
        score = ((a == b).sum(axis=1) / a.shape[1]).astype(np.float32)
        accept = np.ones(score.shape[0], bool) if self.verify == "none" else score >= self.threshold
        return score, accept
