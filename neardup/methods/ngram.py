"""Exact n-gram overlap: every pair sharing a rare shingle, scored by exact Jaccard.

The "N-gram overlap" baseline of Silcock et al. (2022), sec. 4.3: shingle each document
into word N-grams after stripping punctuation, compute the Jaccard similarity
``|A ∩ B| / |A ∪ B|`` of the shingle sets of document pairs and draw an edge when it is at
least a threshold tuned on validation data (N = 3 gave the best adjusted Rand index on
noisy newspaper articles). It is the accurate, costlier counterpart of MinHash LSH: no
similarity is estimated, so there are no false positives or negatives *among the pairs it
compares*.

Comparing all ``n (n - 1) / 2`` pairs is out of the question at scale, so only pairs that
share at least one *rare* shingle are compared, found with an inverted index built from flat
arrays (no Python object per shingle or per document):

1. ``(hash, doc)`` postings of every document's shingle set are sorted by hash; each run of
   equal hashes is a posting list whose length is the shingle's document frequency (df).
2. Shingles with ``df > max_df`` (boilerplate: datelines, bylines, templates, or a document
   copied more than ``max_df`` times) are not paired all-to-all; each document remembers how
   many it had (``frequent``). Their posting lists are *chained* instead (step 6).
3. Documents are processed in blocks sized so that at most ``BLOCK_PAIRS`` (i, j)
   emissions are buffered at once (memory stays bounded whatever the corpus). For each
   document ``i`` of a block, a compiled kernel (parallel over documents) emits every
   ``j > i`` that follows ``i`` in one of its posting lists and reduces them to the
   distinct candidates ``(i, j)`` with the number of rare shingles they share: with a
   per-thread dense counter indexed by ``j`` (a direct-address hash table, reset as it is
   read) while that fits in ``DENSE_BYTES``, else by sorting ``i``'s emissions and
   counting runs (the sort/unique of pair codes ``i * n + j``, segmented by ``i`` so no
   global sort is needed). Both give the same pairs; the counter is faster.
4. Since ``|A ∩ B| <= shared_rare + min(frequent_A, frequent_B)`` (and ``<= min(|A|, |B|)``),
   a candidate whose upper-bound similarity is below the threshold is dropped without
   looking at its shingles.
5. Survivors get their exact intersection by merging the two sorted shingle arrays (when
   one of the two documents has no frequent shingle the intersection *is* ``shared_rare``
   and the merge is skipped), then their exact similarity; pairs at or above the threshold
   are kept. Similarities are compared with the threshold in float64 and stored as float32.

6. Each frequent shingle's posting list is *chained*: sorted by a value of each document
   (:func:`chain_payload`: one of eight MinHash values, picked by the shingle, then a digest
   of the whole shingle set) and each document paired with its successor, at most one
   candidate per frequent posting, so the work stays linear. It is the one key-group rule
   (:func:`~neardup.graph.buckets.key_groups` and
   :func:`~neardup.graph.buckets.bucket_edges`, chain alone) that the out-of-core stage
   applies to the same shingles, so both find the same pairs. Identical shingle sets sort
   next to each other in every list, so exact copies (after normalization) are linked
   however many there are; a near-copy shares the picked MinHash value with probability
   its Jaccard similarity, a different value in each list, so one sharing several
   frequent shingles usually sorts next to its original in some of them. These candidates
   get their exact similarity as in step 5.

Consequently the result is every pair whose similarity is ``>= threshold`` *and* that shares
at least one shingle with ``df <= max_df``, plus the chained pairs of step 6 at or above the
threshold, which link every group of documents with identical (non-empty) shingle sets into
one connected chain. With ``max_df >= n_docs`` that is every pair with positive similarity at
or above the threshold; with a smaller ``max_df``, near-duplicates linked only by frequent
shingles can be missed when other documents sort between them: :attr:`NGramOverlap.pruning_`
counts the shingles and documents concerned, and the run summary reports them.

:func:`exact_similarity` (exact Jaccard or containment of given pairs) is public: MinHash
LSH uses it to verify its candidates. Steps 3-5 are shared with SpotSigs
(:mod:`neardup.methods.overlap_kernels`).

References: Silcock, Arora, D'Amico-Wong & Dell, "Noise-robust de-duplication at scale"
(2022), sec. 4.3; Broder, "On the resemblance and containment of documents" (1997).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit, prange

from neardup.errors import check_choice, check_float, check_int
from neardup.graph.buckets import bucket_edges, group_runs, key_groups
from neardup.graph.edges import Pairs
from neardup.methods.base import CandidateKeys, CandidateRows, Method, SetKeyedMixin, Sketch
from neardup.methods.capabilities import Capabilities
from neardup.methods.overlap_kernels import (
    bounded_similarity,
    count_bound_passes,
    count_similarity,
    indexed_pairs,
    intersection_size,
    jaccard_min_shared,
)
from neardup.text.normalize import NormalizeConfig, normalize_batch
from neardup.text.shingle import ShingleConfig, ShingleSets, hash_shingles

__all__ = ["NGramOverlap", "exact_similarities", "exact_similarity"]

_KINDS = ("jaccard", "containment")


# --------------------------------------------------------------------------- kernels


@njit(parallel=True, cache=True)
def _pair_intersections(hashes, offsets, left, right):
    out = np.empty(left.shape[0], dtype=np.int64)
    for p in prange(left.shape[0]):
        i = left[p]
        j = right[p]
        out[p] = intersection_size(hashes, offsets[i], offsets[i + 1], offsets[j], offsets[j + 1])
    return out


def _similarity_of_counts(inter: np.ndarray, size_a: np.ndarray, size_b: np.ndarray,
                          kind: str) -> np.ndarray:
    """:func:`~neardup.methods.overlap_kernels.set_similarity` over arrays (the same
    float64 division, 0 where the denominator is)."""
    low = np.minimum(size_a, size_b) if kind == "containment" else size_a + size_b - inter
    out = np.zeros(inter.shape[0], np.float64)
    np.divide(inter, low, out=out, where=low > 0)
    return out


@njit(cache=True)
def _scan_postings(sorted_hashes, sorted_docs, max_df, n_docs):
    """Walk postings sorted by (hash, doc) once per pass.

    Returns each document's number of frequent shingles (df > max_df), the postings of
    shareable shingles (2 <= df <= max_df), still grouped by hash with docs ascending
    (``keep_doc[p]`` is the document and ``keep_end[p]`` the end of its posting list), and
    the number of distinct frequent shingles.
    """
    total = sorted_hashes.shape[0]
    frequent = np.zeros(n_docs, dtype=np.int64)
    n_frequent = 0
    kept = 0
    s = 0
    while s < total:  # pass 1: frequent counts and how many postings are kept
        e = s + 1
        while e < total and sorted_hashes[e] == sorted_hashes[s]:
            e += 1
        df = e - s
        if df > max_df:
            n_frequent += 1
            for p in range(s, e):
                frequent[sorted_docs[p]] += 1
        elif df >= 2:
            kept += df
        s = e
    keep_doc = np.empty(kept, dtype=np.int64)
    keep_end = np.empty(kept, dtype=np.int64)
    k = 0
    s = 0
    while s < total:  # pass 2: copy the kept posting lists
        e = s + 1
        while e < total and sorted_hashes[e] == sorted_hashes[s]:
            e += 1
        df = e - s
        if 2 <= df <= max_df:
            end = k + df
            for p in range(s, e):
                keep_doc[k] = sorted_docs[p]
                keep_end[k] = end
                k += 1
        s = e
    return frequent, keep_doc, keep_end, n_frequent


@njit(cache=True)
def _postings_by_doc(keep_doc, keep_end, n_docs):
    """CSR from each document to its kept postings, and how many (i, j > i) it emits."""
    ptr = np.zeros(n_docs + 1, dtype=np.int64)
    for p in range(keep_doc.shape[0]):
        ptr[keep_doc[p] + 1] += 1
    for d in range(n_docs):
        ptr[d + 1] += ptr[d]
    fill = ptr[:-1].copy()
    posts = np.empty(keep_doc.shape[0], dtype=np.int64)
    emits = np.zeros(n_docs, dtype=np.int64)
    for p in range(keep_doc.shape[0]):
        d = keep_doc[p]
        posts[fill[d]] = p
        fill[d] += 1
        emits[d] += keep_end[p] - p - 1  # docs after d in this posting list
    return ptr, posts, emits


def prefix_sizes(sizes: np.ndarray, threshold: float, containment: bool) -> np.ndarray:
    """How many of each set's smallest hashes two sets with similarity ``>= threshold``
    must share one of (prefix filtering, Chaudhuri et al. 2006): Jaccard ``>= t`` needs
    ``|A ∩ B| >= t |A|``, and the smallest common hash then lies in the first
    ``|A| - ceil(t |A|) + 1`` hashes of both sets. Containment (divided by the smaller
    set) gives no such bound: every hash."""
    sizes = np.asarray(sizes, np.int64)
    if containment or threshold <= 0.0:
        return sizes
    # The 1e-6 slack keeps the prefix at least as long as needed despite float rounding.
    need = np.ceil(threshold * sizes - 1e-6).astype(np.int64)
    return np.clip(sizes - need + 1, 0, sizes)


def _mix(values: np.ndarray) -> np.ndarray:
    """SplitMix64 finalizer of uint64 values (vectorized; wraps modulo 2**64)."""
    z = values + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _set_digests(hashes: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """A digest of each document's whole set (uint64, shape (n_docs,)): the sum of its
    mixed hashes, equal for equal sets; 0 for an empty set."""
    sizes = np.diff(offsets)
    digests = np.zeros(sizes.size, np.uint64)
    filled = sizes > 0
    if filled.any():
        digests[filled] = np.add.reduceat(_mix(hashes), offsets[:-1][filled])
    return digests


#: MinHash orders a key group's chain may follow (one per group, picked by its key).
CHAIN_ORDERS = 8
#: Each order's hash: the SplitMix64 finalizer of the shingle hash XOR its salt.
_ORDER_SALTS = np.array([0x5851F42D4C957F2D * (k + 1) % (1 << 64) for k in range(CHAIN_ORDERS)],
                        np.uint64)


@njit(parallel=True, cache=True)
def _order_minima(hashes, offsets, salts):
    """Each document's smallest hash under each order (uint64, n_docs x orders; 0 for an
    empty set): one pass over the sets, no array per order."""
    n = offsets.shape[0] - 1
    out = np.zeros((n, salts.shape[0]), np.uint64)
    for d in prange(n):
        if offsets[d + 1] == offsets[d]:
            continue
        for k in range(salts.shape[0]):
            best = np.uint64(0xFFFFFFFFFFFFFFFF)
            for p in range(offsets[d], offsets[d + 1]):
                z = (hashes[p] ^ salts[k]) + np.uint64(0x9E3779B97F4A7C15)
                z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
                z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
                z = z ^ (z >> np.uint64(31))
                if z < best:
                    best = z
            out[d, k] = best
    return out


def chain_payload(hashes: np.ndarray, offsets: np.ndarray, docs: np.ndarray,
                  keys: np.ndarray) -> np.ndarray:
    """Each (shingle key, document) row's place in its key group's chain (uint64, shape
    (m,)), the payload of :meth:`NGramOverlap.candidate_keys`.

    High 32 bits: one of :data:`CHAIN_ORDERS` MinHash values of the document, picked by
    the key, so that a near-duplicate pair (equal minimum with probability its Jaccard)
    sits next to each other in some of the groups it shares, like LSH bands; low 32 bits:
    a digest of the whole set, so that identical sets are next to each other in every
    group.

    Parameters
    ----------
    hashes, offsets : ndarray
        The corpus's shingle sets (:class:`~neardup.text.shingle.ShingleSets` arrays).
    docs : ndarray of int64, shape (m,)
        Each row's document.
    keys : ndarray of uint64, shape (m,)
        Each row's key (the mixed shingle hash).
    """
    minima = _order_minima(np.ascontiguousarray(hashes, np.uint64),
                           np.ascontiguousarray(offsets, np.int64), _ORDER_SALTS)
    content = _set_digests(hashes, offsets)
    pick = (keys % np.uint64(CHAIN_ORDERS)).astype(np.int64)
    high = minima[docs, pick] & np.uint64(0xFFFFFFFF00000000)
    return high | (content[docs] >> np.uint64(32))


def _chained_candidates(sorted_hashes: np.ndarray, sorted_docs: np.ndarray, max_df: int,
                        sets: ShingleSets) -> np.ndarray:
    """Distinct pair codes ``lo * n + hi`` of the frequent shingles' chains: each posting
    list over ``max_df`` linked by the chain alone of the one key-group rule
    (:func:`~neardup.graph.buckets.bucket_edges` in the order of
    :func:`~neardup.graph.buckets.key_groups`, the payload :func:`chain_payload`), as the
    out-of-core stage links the same key group."""
    n = len(sets)
    starts, df = group_runs(sorted_hashes)
    frequent = df > max_df
    if not frequent.any():
        return np.zeros(0, np.int64)
    chosen = np.repeat(frequent, df)
    docs = sorted_docs[chosen]
    keys = _mix(sorted_hashes[chosen])
    payload = chain_payload(sets.hashes, sets.offsets, docs, keys)
    order, starts, sizes = key_groups(keys, docs, payload)
    a, b = bucket_edges(docs[order], starts, sizes, all_pairs_upto=0, star_upto=0)
    return np.unique(np.minimum(a, b) * n + np.maximum(a, b))


# --------------------------------------------------------------------------- public API


def exact_similarity(
    sets: ShingleSets, left: np.ndarray, right: np.ndarray, kind: str = "jaccard"
) -> np.ndarray:
    """Exact similarity of the shingle sets of given document pairs: ``kind`` of
    :func:`exact_similarities` (see there)."""
    return exact_similarities(sets, left, right, (kind,))[0]


def exact_similarities(
    sets: ShingleSets, left: np.ndarray, right: np.ndarray,
    kinds: Sequence[str] = ("jaccard", "containment"), *, check_sets: bool = True,
) -> tuple[np.ndarray, ...]:
    """Exact similarities of the shingle sets of given document pairs, one array per
    name in ``kinds``.

    Each pair costs one merge of two sorted hash arrays (compiled, parallel over pairs),
    whatever the number of kinds.

    Parameters
    ----------
    sets : ShingleSets
        Per-document shingle *sets*: sorted and duplicate-free within each document, as
        returned by :meth:`ShingleSets.unique` (checked; ValueError otherwise).
    left, right : array-like of int, shape (n_pairs,)
        Document positions in ``sets``.
    kinds : sequence of {"jaccard", "containment"}, default both
        ``"jaccard"``: ``|A ∩ B| / |A ∪ B|``. ``"containment"``: ``|A ∩ B| / min(|A|, |B|)``,
        which scores 1.0 when the smaller document is wholly inside the larger (excerpts,
        abridged reprints). A pair involving an empty set scores 0.
    check_sets : bool, default True
        Check that ``sets`` holds sets. A caller whose sets came from
        :meth:`ShingleSets.unique` and that scores a few pairs of many documents at a time
        (rerank's kept profiles) skips the check, which reads every hash.

    Returns
    -------
    tuple of ndarray of float32, shape (n_pairs,), one per kind

    Examples
    --------
    >>> from neardup.text.shingle import ShingleSets
    >>> sets = ShingleSets(np.array([1, 2, 3, 2, 3, 4, 5], np.uint64), np.array([0, 3, 7]))
    >>> exact_similarity(sets, [0], [1])  # {1,2,3} vs {2,3,4,5}: 2 / 5
    array([0.4], dtype=float32)
    >>> exact_similarity(sets, [0], [1], kind="containment")  # 2 / 3
    array([0.6666667], dtype=float32)
    >>> exact_similarities(sets, [0], [1])  # one merge, both kinds
    (array([0.4], dtype=float32), array([0.6666667], dtype=float32))
    """
    caller = "exact_similarity"
    for kind in kinds:
        check_choice(caller, "kind", kind, _KINDS)
    left = np.ascontiguousarray(left, dtype=np.int64)
    right = np.ascontiguousarray(right, dtype=np.int64)
    if left.ndim != 1 or left.shape != right.shape:
        raise ValueError(
            f"{caller}: parameters 'left' and 'right' must be 1-D arrays of one length; "
            f"got shapes {left.shape} and {right.shape}."
        )
    n = len(sets)
    if left.size and (min(left.min(), right.min()) < 0 or max(left.max(), right.max()) >= n):
        raise ValueError(
            f"{caller}: parameters 'left' and 'right' must be document positions in "
            f"[0, {n - 1}]; got values outside that range."
        )
    hashes = np.ascontiguousarray(sets.hashes, dtype=np.uint64)
    offsets = np.ascontiguousarray(sets.offsets, dtype=np.int64)
    if check_sets:
        ShingleSets(hashes, offsets).require_sets(caller)
    inter = _pair_intersections(hashes, offsets, left, right)
    sizes = np.diff(offsets)
    return tuple(_similarity_of_counts(inter, sizes[left], sizes[right], kind).astype(np.float32)
                 for kind in kinds)


class NGramOverlap(SetKeyedMixin, Method):
    """Exact n-gram overlap near-duplicate detection (``--method ngram``).

    Every pair of documents sharing at least one rare shingle gets its exact Jaccard (or
    containment) similarity; pairs at or above ``threshold`` are returned. Slower than
    MinHash LSH but free of estimation error; best for up to a few million documents or to
    produce reference pairs for tuning faster methods.

    Requirements
        Only numpy and numba. Memory: the corpus' shingle sets (8 bytes per distinct
        shingle of each document); during :meth:`find_pairs` about 32 more bytes per such
        shingle, a candidate buffer of at most ~50 MB (unless one document alone emits
        more) and dense counters of 4 bytes per document and thread (at most 256 MB).

    Inputs
        :meth:`sketch` takes raw texts (one batch); :meth:`find_pairs` takes the
        concatenated sketch of the whole corpus and returns scored
        :class:`~neardup.graph.Pairs` (document positions, ``left < right``, sorted).

    Relations
        Same normalization and shingling as :class:`~neardup.methods.minhash.MinHashLSH`,
        whose ``verify="exact"`` reuses :func:`exact_similarity`. With ``max_df >= n_docs``
        the result equals a brute-force all-pairs comparison.

    Parameters
    ----------
    threshold : float in [0, 1], default 0.5
        Minimum similarity of a reported pair (pairs with ``score >= threshold`` are kept).
        Higher is more precise, lower catches noisier copies. Silcock et al. tuned it on
        labelled validation data (value not reported); start from 0.5 for word 3-grams
        and tune. Borgeaud et al. (2022) used 0.8 on 13-grams for test-set leakage.
    similarity : {"jaccard", "containment"}, default "jaccard"
        ``"jaccard"`` is ``|A ∩ B| / |A ∪ B|`` (the paper's overlap). ``"containment"`` is
        ``|A ∩ B| / min(|A|, |B|)``: an abridged or truncated copy of a longer document
        still scores high. Use "jaccard" unless abridgement is common.
    normalize : NormalizeConfig, default all steps on
        Text normalization before shingling (Unicode, hyphenation, homoglyphs, case,
        punctuation). Keep the default for noisy text.
    shingle : ShingleConfig, default word 3-grams
        Shingle unit and length. Word 3-grams were best in Silcock et al. (2022, sec. 4.3);
        use ``n=5`` for web-scale data, character n-grams (n = 10..25) for heavy OCR noise.
    max_df : int >= 2, default 1000
        Shingles present in more documents than this (templates, datelines, boilerplate,
        or a text copied more than ``max_df`` times) are not paired all-to-all, which keeps
        the work near-linear: each of their documents is compared with its neighbour in a
        MinHash order only (see the module docstring), so exact copies are always
        linked, while near-copies linked only by such shingles can be missed (counted in
        :attr:`pruning_`). They still count in the exact similarity of every compared pair.
        Raise it (up to ``n_docs``) for completeness on small corpora; 1000 suits corpora of
        millions of documents (the size above which Silcock et al. 2022, sec. 7, ignore
        clusters as templates on RealNews).
    seed : int >= 0, default 0
        Keys the shingle hashes. Sketches are only comparable with the same seed.

    Attributes
    ----------
    stats_ : dict of str -> int
        Set by :meth:`find_pairs`: ``docs``, ``postings`` (shingle-document incidences),
        ``frequent_shingles`` (distinct shingles over ``max_df``), ``candidates`` (distinct
        pairs sharing a rare shingle), ``pruned`` (dropped by the upper bound), ``merged``
        (pairs whose shingle arrays were merged), ``chained_candidates`` and
        ``chained_pairs`` (distinct pairs from the frequent-shingle chains, and those at or
        above the threshold) and ``pairs`` (returned).
    pruning_ : dict of str -> int
        Set by :meth:`find_pairs`: what ``max_df`` may have cost in recall, for the run
        summary: ``max_df_shingles`` (distinct shingles over ``max_df``),
        ``max_df_documents`` (documents holding one or more of them) and
        ``max_df_only_documents`` (documents all of whose shingles are over ``max_df``:
        found only through the chains).

    Examples
    --------
    >>> method = NGramOverlap(threshold=0.5)
    >>> texts = [
    ...     "The cat sat on the mat, and then it slept.",
    ...     "the cat sat on the mat and then it  slept!",
    ...     "A dog barked at the postman all afternoon.",
    ...     "",
    ... ]
    >>> pairs = method.find_pairs(method.sketch(texts))
    >>> pairs.left.tolist(), pairs.right.tolist(), pairs.score.tolist()
    ([0], [1], [1.0])

    References
    ----------
    Silcock, Arora, D'Amico-Wong & Dell, "Noise-robust de-duplication at scale", 2022,
    sec. 4.3 (N-gram overlap baseline).
    """

    name = "ngram"
    pair_params = frozenset({"threshold", "similarity", "max_df"})

    def __init__(
        self,
        *,
        threshold: float = 0.5,
        similarity: str = "jaccard",
        normalize: NormalizeConfig = NormalizeConfig(),
        shingle: ShingleConfig = ShingleConfig(unit="word", n=3),
        max_df: int = 1000,
        seed: int = 0,
    ) -> None:
        caller = "NGramOverlap"
        self.threshold = check_float(caller, "threshold", threshold, low=0.0, high=1.0)
        self.similarity = check_choice(caller, "similarity", similarity, _KINDS)
        for pname, value, cls in (
            ("normalize", normalize, NormalizeConfig),
            ("shingle", shingle, ShingleConfig),
        ):
            if not isinstance(value, cls):
                raise ValueError(
                    f"{caller}: parameter '{pname}' must be a {cls.__name__}; got {value!r}."
                )
        self.normalize = normalize
        self.shingle = shingle
        self.max_df = check_int(
            caller, "max_df", max_df, low=2,
            hint="A shingle must be in at least 2 documents to link them.",
        )  # fmt: skip
        self.seed = check_int(caller, "seed", seed, low=0)

    def sketch(self, texts: Sequence[str]) -> Sketch:
        """Shingle sets of one batch: ``Sketch(n_features=set sizes, sets=sorted sets)``."""
        sets = hash_shingles(
            normalize_batch(texts, self.normalize), self.shingle, seed=self.seed
        ).unique()
        return Sketch(sets.counts(), sets=sets)

    # -- keyed contract (the out-of-core corpus stage) ------------------------------------
    #
    # Keys are every shingle of each set (the documents' postings). A key group of up to
    # min(max_df, KEYED_ALL_PAIRS_UPTO) documents is compared all-to-all, as find_pairs
    # compares every group up to max_df (star plus chain there lost pairs against the
    # in-memory clusters, docs/decisions/0003-ngram-pair-count-exchange.md): the stage
    # counts each pair's shared keys in compiled code and drops pairs whose count bound
    # (overlap_bound, step 4 of the module docstring) cannot reach the threshold. A larger
    # group gets a star plus a chain, and one over max_df the chain alone, in the order of
    # the payload (chain_payload), the order find_pairs chains the same group in (step 6).
    # Edges are verified with the exact similarity of the stored sets.

    # (KEYED_ALL_PAIRS_UPTO comes from SetKeyedMixin.)

    @property
    def capabilities(self) -> Capabilities:
        # One key per distinct shingle: ~200 word n-grams for a news story (measured on
        # the scale corpus: 201), about five times that many character n-grams.
        # Containment divides by the smaller set: a partner of one element needs one, so
        # no prefix filter.
        return self.set_overlap_capabilities(
            keys_per_doc=200 if self.shingle.unit == "word" else 1000, star_upto=self.max_df,
            prefix_filter=self.similarity != "containment")

    def candidate_keys(self, sketch: Sketch) -> CandidateKeys:
        sets = sketch.require_sets("NGramOverlap.candidate_keys", "shingle", "NGramOverlap.sketch")
        hashes, offsets = sets.hashes, sets.offsets
        sizes = np.diff(offsets)
        # Every shingle is a key (not only a prefix, which would suffice to find every
        # pair at the threshold): the stage's count bound is then the in-memory search's
        # (shared shingles + the smaller count of shingles not seen), which drops most
        # unrelated pairs before their sets are read; with prefix keys it could not.
        prefix = sizes
        docs = np.repeat(np.arange(sizes.size, dtype=np.int64), prefix)
        # Row r of document d is its (r - first row of d)-th smallest hash.
        starts = np.cumsum(prefix) - prefix
        rank = np.arange(docs.size, dtype=np.int64) - np.repeat(starts, prefix)
        keys = _mix(hashes[offsets[:-1][docs] + rank])
        # Chain order inside a key group: the one find_pairs chains its frequent shingles
        # in (chain_payload).
        return CandidateKeys(docs, keys, chain_payload(hashes, offsets, docs, keys))

    def overlap_bound(self, shared, known_left, known_right, size_left, size_right):
        # Every shingle is a key: a common shingle not counted in ``shared`` sits in a key
        # group neither document is "known" in, so it is one of both sides' unseen ones.
        return count_bound_passes(shared, known_left, known_right, size_left, size_right,
                                  self.threshold, self.similarity == "containment")

    def overlap_scores(self, inter, size_left, size_right):
        return count_similarity(inter, size_left, size_right, self.threshold,
                                self.similarity == "containment")

    def overlap_min_shared(self, sizes):
        return jaccard_min_shared(sizes, self.threshold)

    def keyed_pruning(self, stats: dict) -> dict[str, int]:
        # Every shingle is a key, so these are find_pairs' counts.
        return {"max_df_shingles": int(stats.get("capped_keys", 0)),
                "max_df_documents": int(stats.get("capped_documents", 0)),
                "max_df_only_documents": int(stats.get("capped_only_documents", 0))}

    def score_candidate_rows(self, rows: CandidateRows, left: np.ndarray, right: np.ndarray):
        sets = rows.sets
        sim = bounded_similarity(sets.hashes, sets.offsets, np.ascontiguousarray(left, np.int64),
                                  np.ascontiguousarray(right, np.int64),
                                  self.similarity == "containment", self.threshold)
        return np.maximum(sim, 0.0).astype(np.float32), sim >= self.threshold

    def find_pairs(self, sketch: Sketch) -> Pairs:
        """Pairs with exact similarity ``>= threshold`` sharing a shingle with df <= max_df.

        Parameters
        ----------
        sketch : Sketch
            The corpus sketch (batches from :meth:`sketch` joined by ``Sketch.concat``).

        Returns
        -------
        Pairs
            Canonical (``left < right``, sorted), scored by exact similarity (float32).
        """
        caller = "NGramOverlap.find_pairs"
        sets = sketch.require_sets(caller, "shingle", "NGramOverlap.sketch")
        hashes, offsets = sets.hashes, sets.offsets
        n = len(sets)
        sizes = np.diff(offsets)
        stats = dict.fromkeys(
            ("docs", "postings", "frequent_shingles", "candidates", "pruned", "merged",
             "chained_candidates", "chained_pairs", "pairs"),
            0,
        )  # fmt: skip
        stats.update(docs=n, postings=int(hashes.size))
        self.stats_ = stats
        self.pruning_ = dict.fromkeys(
            ("max_df_shingles", "max_df_documents", "max_df_only_documents"), 0
        )
        if n < 2 or hashes.size == 0:
            return Pairs.empty()

        # Inverted index: postings sorted by hash; the stable sort keeps docs ascending
        # within each posting list, which lets each doc emit only partners j > i.
        order = np.argsort(hashes, kind="stable")
        sorted_hashes = hashes[order]
        sorted_docs = np.repeat(np.arange(n, dtype=np.int64), sizes)[order]
        del order
        frequent, keep_doc, keep_end, n_frequent = _scan_postings(
            sorted_hashes, sorted_docs, self.max_df, n
        )
        stats["frequent_shingles"] = int(n_frequent)
        self.pruning_.update(
            max_df_shingles=int(n_frequent),
            max_df_documents=int(np.count_nonzero(frequent)),
            max_df_only_documents=int(np.count_nonzero((frequent == sizes) & (sizes > 0))),
        )
        containment = self.similarity == "containment"
        chained = self._chained_pairs(sorted_hashes, sorted_docs, sets, sizes, containment)
        stats.update(chained_pairs=len(chained))
        del sorted_hashes, sorted_docs
        doc_ptr, doc_posts, emits = _postings_by_doc(keep_doc, keep_end, n)

        pairs = indexed_pairs(
            doc_ptr=doc_ptr, doc_posts=doc_posts, keep=keep_doc, keep_end=keep_end,
            emits=emits, sizes=sizes, frequent=frequent, order=np.arange(n, dtype=np.int64),
            hashes=hashes, offsets=offsets, threshold=self.threshold,
            containment=containment, stats=stats,
        )
        if len(chained):
            pairs = Pairs.concat([pairs, chained]).canonical()
        stats["pairs"] = len(pairs)
        return pairs

    def _chained_pairs(
        self, sorted_hashes, sorted_docs, sets: ShingleSets, sizes, containment: bool
    ) -> Pairs:
        """Step 6 of the module docstring: pairs adjacent in a frequent shingle's chain,
        with exact similarity ``>= threshold``."""
        n = sizes.shape[0]
        if self.stats_["frequent_shingles"] == 0:
            return Pairs.empty()
        codes = _chained_candidates(sorted_hashes, sorted_docs, self.max_df, sets)
        self.stats_["chained_candidates"] = int(codes.size)
        left, right = codes // n, codes % n
        # Size bound first (the intersection is at most the smaller set), as in step 4.
        low = np.minimum(sizes[left], sizes[right]).astype(np.float64)
        high = np.maximum(sizes[left], sizes[right]).astype(np.float64)
        bound = np.ones_like(low) if containment else low / high
        possible = bound >= self.threshold
        left, right = left[possible], right[possible]
        sim = _similarity_of_counts(_pair_intersections(sets.hashes, sets.offsets, left, right),
                                    sizes[left], sizes[right],
                                    "containment" if containment else "jaccard")
        keep = sim >= self.threshold
        return Pairs(left[keep], right[keep], sim[keep].astype(np.float32))
