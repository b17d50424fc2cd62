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
2. Shingles with ``df > max_df`` (boilerplate: datelines, bylines, templates) are dropped
   from candidate generation, but each document remembers how many it had (``frequent``).
3. Documents are processed in blocks sized so that at most ``_BLOCK_PAIRS`` (i, j)
   emissions are buffered at once (memory stays bounded whatever the corpus). For each
   document ``i`` of a block, a compiled kernel (parallel over documents) emits every
   ``j > i`` that follows ``i`` in one of its posting lists and reduces them to the
   distinct candidates ``(i, j)`` with the number of rare shingles they share: with a
   per-thread dense counter indexed by ``j`` (a direct-address hash table, reset as it is
   read) while that fits in ``_DENSE_BYTES``, else by sorting ``i``'s emissions and
   counting runs (the sort/unique of pair codes ``i * n + j``, segmented by ``i`` so no
   global sort is needed). Both give the same pairs; the counter is about 3x faster.
4. Since ``|A ∩ B| <= shared_rare + min(frequent_A, frequent_B)`` (and ``<= min(|A|, |B|)``),
   a candidate whose upper-bound similarity is below the threshold is dropped without
   looking at its shingles.
5. Survivors get their exact intersection by merging the two sorted shingle arrays (when
   one of the two documents has no frequent shingle the intersection *is* ``shared_rare``
   and the merge is skipped), then their exact similarity; pairs at or above the threshold
   are kept. Similarities are compared with the threshold in float64 and stored as float32.

Consequently the result is exactly the set of pairs whose similarity is ``>= threshold``
*and* that share at least one shingle with ``df <= max_df``. With ``max_df >= n_docs`` that
is every pair with positive similarity at or above the threshold; with a smaller ``max_df``,
pairs linked only by boilerplate shingles are not reported.

:func:`exact_similarity` (exact Jaccard or containment of given pairs) is public: MinHash
LSH uses it to verify its candidates.

References: Silcock, Arora, D'Amico-Wong & Dell, "Noise-robust de-duplication at scale"
(2022), sec. 4.3; Broder, "On the resemblance and containment of documents" (1997).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import get_num_threads, get_thread_id, njit, prange

from neardup.errors import check_choice, check_float, check_int
from neardup.graph.edges import Pairs
from neardup.methods.base import Method, Sketch
from neardup.text.normalize import NormalizeConfig, normalize_batch
from neardup.text.shingle import ShingleConfig, ShingleSets, hash_shingles

__all__ = ["NGramOverlap", "exact_similarity"]

_KINDS = ("jaccard", "containment")
# Candidate (i, j) emissions held in memory at once by find_pairs (12 bytes each); a single
# document needing more gets a block of its own.
_BLOCK_PAIRS = 1 << 22
# Largest dense candidate counter (4 bytes per thread and document) find_pairs allocates;
# beyond it, candidates are reduced by sorting instead (about 3x slower, no O(n) memory).
_DENSE_BYTES = 1 << 28


# --------------------------------------------------------------------------- kernels


@njit(cache=True)
def _similarity(inter, size_a, size_b, containment):
    """Exact similarity from integer counts, in float64 (0 for two empty sets)."""
    if containment:
        low = min(size_a, size_b)
        return inter / low if low > 0 else 0.0
    union = size_a + size_b - inter
    return inter / union if union > 0 else 0.0


@njit(inline="always", cache=True)
def _intersect(hashes, a0, a1, b0, b1):
    """Size of the intersection of two sorted, duplicate-free runs of ``hashes``."""
    inter = 0
    while a0 < a1 and b0 < b1:
        x = hashes[a0]
        y = hashes[b0]
        if x == y:
            inter += 1
            a0 += 1
            b0 += 1
        elif x < y:
            a0 += 1
        else:
            b0 += 1
    return inter


@njit(parallel=True, cache=True)
def _pair_similarity(hashes, offsets, left, right, containment):
    out = np.empty(left.shape[0], dtype=np.float32)
    for p in prange(left.shape[0]):
        i = left[p]
        j = right[p]
        a0, a1, b0, b1 = offsets[i], offsets[i + 1], offsets[j], offsets[j + 1]
        inter = _intersect(hashes, a0, a1, b0, b1)
        out[p] = _similarity(inter, a1 - a0, b1 - b0, containment)
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


@njit(inline="always", cache=True)
def _verify(i, j, shared, sizes, frequent, hashes, offsets, threshold, containment):
    """Bound, then exact similarity of candidate (i, j) sharing ``shared`` rare shingles.

    Returns ``(how, sim)``: ``how`` is 0 if the intersection was known without merging,
    1 if the bound pruned the pair (``sim`` is then meaningless), 2 if the shingle arrays
    were merged.
    """
    size_i = sizes[i]
    size_j = sizes[j]
    slack = min(frequent[i], frequent[j])
    bound = min(shared + slack, min(size_i, size_j))
    # Similarity is monotone in the intersection, so the bound's similarity is an upper
    # bound of the exact one (same float64 formula: no tolerance needed).
    if _similarity(bound, size_i, size_j, containment) < threshold:
        return 1, 0.0
    if slack == 0:  # one side had no frequent shingle: nothing shared was dropped
        return 0, _similarity(shared, size_i, size_j, containment)
    inter = _intersect(hashes, offsets[i], offsets[i + 1], offsets[j], offsets[j + 1])
    return 2, _similarity(inter, size_i, size_j, containment)


@njit(parallel=True, cache=True)
def _block_pairs(
    d0, d1, seg_start, doc_ptr, doc_posts, keep_doc, keep_end,
    sizes, frequent, hashes, offsets, threshold, containment,
    acc, buf_j, buf_score, n_kept, counts,
):  # fmt: skip
    """Candidates, bound and exact check for documents d0..d1-1, in parallel.

    Document ``i`` emits every ``j > i`` following it in one of its posting lists and owns
    ``buf_j[seg_start[i - d0]:]`` (room for all its emissions). Distinct candidates and
    their shared counts come from one of two reductions:

    * ``acc`` of shape (n_threads, n_docs): a dense per-thread counter indexed by ``j``
      (a direct-address hash table); first sightings go to the segment, and counters are
      reset while reading them back. No sort, O(1) per emission.
    * ``acc`` of shape (0, 0): the segment holds all emissions, is sorted, and runs of
      equal ``j`` are counted (the sort/unique of pair codes ``i * n + j``, segmented by
      ``i``). Used when dense counters would take too much memory.

    Kept pairs are written back to the front of the segment (writes never pass the read
    position) with ``buf_score``; ``n_kept[i - d0]`` says how many. ``counts[i - d0]``
    receives the numbers of distinct candidates, of bound-pruned ones and of merges.
    """
    dense = acc.shape[0] > 0
    for i in prange(d0, d1):
        r = i - d0
        base = seg_start[r]
        counts[r, 0] = 0
        counts[r, 1] = 0
        counts[r, 2] = 0
        w = 0
        if dense:
            tally = acc[get_thread_id()]
            m = 0
            for q in range(doc_ptr[i], doc_ptr[i + 1]):
                p = doc_posts[q]
                for t in range(p + 1, keep_end[p]):
                    j = keep_doc[t]
                    if tally[j] == 0:
                        buf_j[base + m] = j
                        m += 1
                    tally[j] += 1
            for t in range(m):
                j = buf_j[base + t]
                shared = tally[j]
                tally[j] = 0
                how, sim = _verify(
                    i, j, shared, sizes, frequent, hashes, offsets, threshold, containment
                )
                if how:
                    counts[r, how] += 1
                if how != 1 and sim >= threshold:
                    buf_j[base + w] = j
                    buf_score[base + w] = sim
                    w += 1
            counts[r, 0] = m
        else:
            m = 0
            for q in range(doc_ptr[i], doc_ptr[i + 1]):
                p = doc_posts[q]
                for t in range(p + 1, keep_end[p]):
                    buf_j[base + m] = keep_doc[t]
                    m += 1
            seg = buf_j[base : base + m]
            seg.sort()
            run = 1
            for t in range(1, m + 1):
                if t < m and seg[t] == seg[t - 1]:
                    run += 1
                    continue
                j = seg[t - 1]
                how, sim = _verify(
                    i, j, run, sizes, frequent, hashes, offsets, threshold, containment
                )
                run = 1
                counts[r, 0] += 1
                if how:
                    counts[r, how] += 1
                if how != 1 and sim >= threshold:
                    seg[w] = j  # w <= t - 1
                    buf_score[base + w] = sim
                    w += 1
        n_kept[r] = w


@njit(cache=True)
def _gather(d0, seg_start, n_kept, buf_j, buf_score):
    total = 0
    for r in range(n_kept.shape[0]):
        total += n_kept[r]
    left = np.empty(total, dtype=np.int64)
    right = np.empty(total, dtype=np.int64)
    score = np.empty(total, dtype=np.float32)
    k = 0
    for r in range(n_kept.shape[0]):
        base = seg_start[r]
        for t in range(n_kept[r]):
            left[k] = d0 + r
            right[k] = buf_j[base + t]
            score[k] = buf_score[base + t]
            k += 1
    return left, right, score


# --------------------------------------------------------------------------- public API


def exact_similarity(
    sets: ShingleSets, left: np.ndarray, right: np.ndarray, kind: str = "jaccard"
) -> np.ndarray:
    """Exact similarity of the shingle sets of given document pairs.

    Each pair costs one merge of two sorted hash arrays (compiled, parallel over pairs).

    Parameters
    ----------
    sets : ShingleSets
        Per-document shingle *sets*: sorted and duplicate-free within each document, as
        returned by :meth:`ShingleSets.unique` (checked; ValueError otherwise).
    left, right : array-like of int, shape (n_pairs,)
        Document positions in ``sets``.
    kind : {"jaccard", "containment"}, default "jaccard"
        ``"jaccard"``: ``|A ∩ B| / |A ∪ B|``. ``"containment"``: ``|A ∩ B| / min(|A|, |B|)``,
        which scores 1.0 when the smaller document is wholly inside the larger (excerpts,
        abridged reprints). A pair involving an empty set scores 0.

    Returns
    -------
    ndarray of float32, shape (n_pairs,)

    Examples
    --------
    >>> from neardup.text.shingle import ShingleSets
    >>> sets = ShingleSets(np.array([1, 2, 3, 2, 3, 4, 5], np.uint64), np.array([0, 3, 7]))
    >>> exact_similarity(sets, [0], [1])  # {1,2,3} vs {2,3,4,5}: 2 / 5
    array([0.4], dtype=float32)
    >>> exact_similarity(sets, [0], [1], kind="containment")  # 2 / 3
    array([0.6666667], dtype=float32)
    """
    caller = "exact_similarity"
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
    ShingleSets(hashes, offsets).require_sets(caller)
    return _pair_similarity(hashes, offsets, left, right, kind == "containment")


class NGramOverlap(Method):
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
        Shingles present in more documents than this (templates, datelines, boilerplate)
        are not used to *find* candidate pairs, which keeps the work near-linear; they still
        count in the exact similarity of pairs found through rarer shingles. Pairs sharing
        only such shingles are not reported. Raise it (up to ``n_docs``) for completeness on
        small corpora; 1000 suits corpora of millions of documents (the size above which
        Silcock et al. 2022, sec. 7, ignore clusters as templates on RealNews).
    seed : int >= 0, default 0
        Keys the shingle hashes. Sketches are only comparable with the same seed.

    Attributes
    ----------
    stats_ : dict of str -> int
        Set by :meth:`find_pairs`: ``docs``, ``postings`` (shingle-document incidences),
        ``frequent_shingles`` (distinct shingles over ``max_df``), ``candidates`` (distinct
        pairs sharing a rare shingle), ``pruned`` (dropped by the upper bound), ``merged``
        (pairs whose shingle arrays were merged) and ``pairs`` (returned).

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
            ("docs", "postings", "frequent_shingles", "candidates", "pruned", "merged", "pairs"),
            0,
        )
        stats.update(docs=n, postings=int(hashes.size))
        self.stats_ = stats
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
        del sorted_hashes, sorted_docs
        doc_ptr, doc_posts, emits = _postings_by_doc(keep_doc, keep_end, n)

        # Blocks of consecutive docs emitting at most _BLOCK_PAIRS (i, j) between them.
        cum = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(emits, out=cum[1:])
        capacity = max(_BLOCK_PAIRS, int(emits.max(initial=0)))
        buf_j = np.empty(capacity, dtype=np.int64)
        buf_score = np.empty(capacity, dtype=np.float32)
        # Dense per-thread counters when they fit in _DENSE_BYTES, else segment sorts.
        threads = get_num_threads()
        if threads * n * 4 <= _DENSE_BYTES:
            acc = np.zeros((threads, n), dtype=np.int32)
        else:
            acc = np.zeros((0, 0), dtype=np.int32)
        containment = self.similarity == "containment"
        parts = []
        d0 = 0
        while d0 < n:
            d1 = int(np.searchsorted(cum, cum[d0] + capacity, side="right")) - 1
            d1 = min(max(d1, d0 + 1), n)
            if cum[d1] > cum[d0]:
                seg_start = cum[d0:d1] - cum[d0]
                width = d1 - d0
                n_kept = np.empty(width, np.int64)
                counts = np.empty((width, 3), np.int64)
                _block_pairs(
                    d0, d1, seg_start, doc_ptr, doc_posts, keep_doc, keep_end,
                    sizes, frequent, hashes, offsets, self.threshold, containment,
                    acc, buf_j, buf_score, n_kept, counts,
                )  # fmt: skip
                parts.append(Pairs(*_gather(d0, seg_start, n_kept, buf_j, buf_score)))
                totals = counts.sum(axis=0)
                stats["candidates"] += int(totals[0])
                stats["pruned"] += int(totals[1])
                stats["merged"] += int(totals[2])
            d0 = d1
        pairs = Pairs.concat(parts).canonical()
        stats["pairs"] = len(pairs)
        return pairs
