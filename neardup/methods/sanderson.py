"""Mutual retrieval: two documents are duplicates when each one's query retrieves the other.

Sanderson (1997) found the duplicates of the Reuters collection with an IR system: every
document becomes a query by relevance feedback on that document alone (its 20 best
terms by idf weight, footnote 2), the query is run against the whole collection, and the
result list is examined. Normally the query document scores highest and every other
document "significantly lower" (his Figure 2); another document with a comparably high
score is a duplicate, and the first document is said to *retrieve* it. Two modifications
followed (sec. 3.1-3.2):

* **mutual retrieval** — a shorter story retrieves any longer story that contains it, so
  a pair counts only when the first document retrieves the second *and* the second
  retrieves the first;
* **time window** — wire services reuse templates for regular events (the Fed's
  customer repurchases, earnings reports), so a pair also had to be relayed within
  48 hours; pairs further apart were set aside as *template* candidates.

On Reuters-21578 the mutual pairs within 48 hours were 322 (320 true exact duplicates),
the one-way retrievals ("expanded" candidates, one story a longer version of the other)
283 (139 true) and the mutual pairs beyond 48 hours 33 (29 true templates).

Implementation (all corpus-wide work is array and sparse-matrix code, no Python loop over
documents):

1. :meth:`Sanderson.sketch` hashes the word tokens of each normalized text and keeps them
   sorted per document with repeats (a term's count is its run length), in a
   :class:`~neardup.text.ShingleSets`; ``n_features`` is the number of tokens.
2. :meth:`Sanderson.find_pairs` maps hashes to term ids, computes document frequencies,
   idf and the average length, and builds the document matrix ``D`` (BM25 term weights, or
   L2-normalized tf-idf) and the query matrix ``Q`` (each document's ``query_terms``
   terms of highest ``tf * idf``) as scipy CSR matrices.
3. Queries are scored against the index in row blocks, ``Q[block] @ D.T``, each block
   sized so that at most ``_BLOCK_SCORES`` scores are held at once (a bound computed from
   the document frequencies of the block's query terms). Each score is divided by the
   query document's own score (the diagonal of the product), so the normalized score is
   1 for an exact duplicate.
4. **Retrieval rule** (our reading of "analyse any other documents with a high relevance
   score", see :class:`Sanderson`): document ``i`` retrieves ``j`` when ``j``'s
   normalized score is at least ``threshold``, ``j`` is among the ``top_k`` such results
   whose score is closest to ``i``'s own (``i`` itself excluded), and ``j``'s score is at
   least ``margin`` times the best score of any result that fails the threshold (the
   partners stand out from the rest of the ranking).
5. Pairs retrieved in both directions are kept (scored by the smaller of the two
   normalized scores, clipped to [0, 1]); the others are reported as one-way retrievals.
   With dates, mutual pairs further apart than ``time_window_hours`` are reported apart.

Reference: M. Sanderson, *Duplicate detection in the Reuters collection*, Technical
Report TR-1997-5, Department of Computing Science, University of Glasgow, 1997.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numba import njit, prange

from neardup.errors import check_choice, check_float, check_int
from neardup.graph.edges import Pairs, check_time_window, outside_time_window
from neardup.methods.capabilities import (
    Capabilities,
    CorpusStatistics,
    KeyedCandidates,
    Verification,
)
from neardup.methods.base import (
    CandidateKeys,
    FeatureStatistics,
    Matches,
    Method,
    Sketch,
    StatisticsPartial,
)
from neardup.text.normalize import NormalizeConfig, normalize_batch
from neardup.text.shingle import ShingleConfig, ShingleSets, hash_shingles

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = ["Sanderson"]

_RANKINGS = ("bm25", "tfidf")
# Query-document scores held in memory at once by find_pairs (upper bound from document
# frequencies; about 16 bytes each in scipy's product plus our temporaries). A single
# query needing more gets a block of its own.
_BLOCK_SCORES = 1 << 22
_TOKENS = ShingleConfig(unit="word", n=1)


def _term_counts(sets: ShingleSets) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct terms of each document and their counts, from sorted token multisets.

    Returns ``(doc, hash, count)`` arrays, one row per (document, distinct term), ordered
    by document then hash.
    """
    hashes = sets.hashes
    counts = sets.counts()
    doc_of = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    if hashes.size == 0:
        return doc_of, hashes, np.zeros(0, np.int64)
    start = np.ones(hashes.size, dtype=bool)
    start[1:] = (hashes[1:] != hashes[:-1]) | (doc_of[1:] != doc_of[:-1])
    first = np.flatnonzero(start)
    run = np.diff(np.append(first, hashes.size))
    return doc_of[first], hashes[first], run


def _csr_pair(docs, term, weight, chosen, q_weight, n, n_terms):
    """Document matrix ``D`` and query matrix ``Q`` (n x n_terms CSR) from (document,
    term) rows ordered by document, and the rows ``chosen`` as query terms."""
    import scipy.sparse as sp  # loaded only when this method runs

    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(docs, minlength=n), out=indptr[1:])
    doc_matrix = sp.csr_matrix((weight, term, indptr), shape=(n, n_terms))
    q_indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(docs[chosen], minlength=n), out=q_indptr[1:])
    query = sp.csr_matrix((q_weight, term[chosen], q_indptr), shape=(n, n_terms))
    return doc_matrix, query


def _top_per_row(rows: np.ndarray, keys: tuple[np.ndarray, ...], k: int) -> np.ndarray:
    """Indices of the first ``k`` entries of each row when entries are ordered by ``rows``
    then by ``keys`` (ascending, first key most significant)."""
    if rows.size == 0:
        return np.zeros(0, np.int64)
    order = np.lexsort(tuple(reversed(keys)) + (rows,))
    sorted_rows = rows[order]
    start = np.ones(sorted_rows.size, dtype=bool)
    start[1:] = sorted_rows[1:] != sorted_rows[:-1]
    first = np.flatnonzero(start)
    run_start = np.repeat(first, np.diff(np.append(first, sorted_rows.size)))
    rank = np.arange(sorted_rows.size) - run_start
    return order[rank < k]


@njit(parallel=True, cache=True)
def _scan_block(indptr, indices, scores, d0, threshold):
    """One pass over a block of query results (CSR rows = queries ``d0 + r``).

    For each query: its own score (the diagonal; 0 if the query is empty), the best score
    among the other results whose normalized score fails ``threshold`` (the "rest"), and
    the results that pass it, returned as flat ``(row, col, score)`` arrays in row order.
    """
    m = indptr.shape[0] - 1
    own = np.zeros(m)
    rest = np.zeros(m)
    passing = np.zeros(m, dtype=np.int64)
    for r in prange(m):
        q = d0 + r
        mine = 0.0
        for p in range(indptr[r], indptr[r + 1]):
            if indices[p] == q:
                mine = scores[p]
                break
        own[r] = mine
        if mine <= 0.0:
            continue
        best = 0.0
        count = 0
        for p in range(indptr[r], indptr[r + 1]):
            if indices[p] == q:
                continue
            v = scores[p]
            if v / mine >= threshold:
                count += 1
            elif v > best:
                best = v
        rest[r] = best
        passing[r] = count
    start = np.zeros(m + 1, dtype=np.int64)
    for r in range(m):
        start[r + 1] = start[r] + passing[r]
    rows = np.empty(start[m], dtype=np.int64)
    cols = np.empty(start[m], dtype=np.int64)
    out = np.empty(start[m])
    for r in prange(m):
        mine = own[r]
        if passing[r] == 0:
            continue
        q = d0 + r
        k = start[r]
        for p in range(indptr[r], indptr[r + 1]):
            j = indices[p]
            if j != q and scores[p] / mine >= threshold:
                rows[k] = r
                cols[k] = j
                out[k] = scores[p]
                k += 1
    return rows, cols, out, own, rest


class Sanderson(Method):
    """Duplicates by mutual retrieval of relevance-feedback queries (``--method sanderson``).

    Each document's ``query_terms`` best terms form a query; the query is scored against
    every document (BM25 or tf-idf cosine); two documents are a pair when each retrieves
    the other. Finds exact and lightly edited copies with few false links from one story
    being contained in a longer one, at the cost of a sparse query-by-document product.

    Requirements
        numpy and scipy. Memory: the corpus' token hashes (8 bytes per token), the
        document matrix (about 24 bytes per distinct term of each document, twice) and at
        most ``_BLOCK_SCORES`` scores at a time. Time grows with the sum, over queries, of
        the document frequencies of their terms: a query of common words scores against
        most of the corpus, so very large corpora of short documents are slow.

    Inputs
        :meth:`sketch` takes raw texts (one batch); :meth:`find_pairs` takes the
        concatenated corpus sketch and, optionally, the documents' dates (taken from
        the corpus stage's dates, given to :meth:`match`).

    Relations
        A retrieval counterpart of :class:`~neardup.methods.ngram.NGramOverlap`: scores
        come from weighted term overlap rather than shingle Jaccard, so word order does not
        matter and abridged copies are retrieved by their sources but not the other way
        round. :func:`neardup.methods.pair_types.classify_pairs` sorts its pairs (and any
        method's) into Sanderson's duplicate types.

    Parameters
    ----------
    query_terms : int >= 1, default 20
        Terms per query: the document's terms with the highest ``tf * idf`` (ties by term
        hash). Sanderson found 20 "large enough to accurately find the duplicates".
    ranking : {"bm25", "tfidf"}, default "bm25"
        ``"bm25"``: a document's score is the sum over the query's terms of their BM25
        weight in that document (``k1``, ``b``; idf ``log(1 + (N - df + 0.5) / (df +
        0.5))``). ``"tfidf"``: cosine between the query (the selected terms with their
        weights) and the document, both vectors of ``(1 + log tf) * idf`` (idf ``log((1 +
        N) / (1 + df)) + 1``) L2-normalized, so long documents are not favoured.
        Both normalize by document length, which Sanderson notes would have made his
        mutual test less necessary. Use "bm25".
    k1 : float > 0, default 1.2
        BM25 term-frequency saturation (``"bm25"`` only).
    b : float in [0, 1], default 0.75
        BM25 length normalization: 0 ignores length, 1 divides fully by relative length.
    top_k : int >= 1, default 5
        A document retrieves at most ``top_k`` of the results passing ``threshold`` (itself
        excluded): those whose score is closest to its own (a document that outscores the
        query document itself, e.g. a short story dense in the query's terms, is less
        like it than an exact copy), ties (exact copies) by distance in input position,
        then position. So with ``top_k >= 2`` each copy in a group of more than ``top_k``
        identical copies retrieves its neighbours and the group stays connected. 5 is
        plenty unless copies are very numerous.
    margin : float >= 1, default 1.25
        The partner must stand out from the rest of the ranking: its score must be at
        least ``margin`` times the best score among the query's other results that fail
        ``threshold`` (0 if none do). This is our reading of the report's "all other
        retrieved documents were assigned a significantly lower score" (it gives no
        number). 1 disables the test. With ``margin <= 1 / threshold`` (the defaults) an
        exact copy always stands out; a partner scoring 0.85 needs the rest at or below
        0.68. On Reuters-21578, 1.25 keeps 97.8% of the identical-body pairs, 1.5 only 89%:
        a story often has a third, rewritten version just under the threshold.
    threshold : float in [0, 1], default 0.8
        Minimum normalized score (the partner's score divided by the query document's own
        score) for a retrieval. Exact copies score 1; copies with light edits about
        0.8-0.95; an abridged copy retrieves its source near 1 but is retrieved by it far
        lower. Lower it (0.6) to link more loosely edited copies.
    time_window_hours : float > 0 or None, default 48
        With dates, mutual pairs relayed more than this many hours apart are not returned
        but reported in :attr:`outside_window_` (Sanderson's template candidates; pairs
        with an unknown date on either side count as inside). None, or no dates, keeps
        every mutual pair.
    normalize : NormalizeConfig, default all steps on
        Text normalization before tokenizing.
    seed : int >= 0, default 0
        Keys the term hashes. Sketches are only comparable with the same seed.

    Attributes
    ----------
    mutual_ : Pairs
        Every mutually retrieved pair, inside the time window or not (set by
        :meth:`find_pairs`).
    outside_window_mask_ : ndarray of bool, shape (len(mutual_),)
        True where the pair's dates are more than ``time_window_hours`` apart.
    outside_window_ : Pairs
        ``mutual_`` where ``outside_window_mask_``: template candidates.
    one_way_ : Pairs
        Pairs where exactly one document retrieves the other (Sanderson's "expanded"
        candidates), canonical, scored by that one retrieval's normalized score.
    stats_ : dict of str -> int
        ``docs``, ``terms`` (vocabulary size), ``postings`` (distinct terms of documents),
        ``scores`` (query-document scores computed), ``retrievals`` (directed),
        ``mutual``, ``one_way``, ``outside_window`` and ``pairs`` (returned).

    Examples
    --------
    >>> method = Sanderson(time_window_hours=None)
    >>> texts = [
    ...     "Fed adds reserves via customer repurchases, a spokesman said on Monday.",
    ...     "FED ADDS RESERVES VIA CUSTOMER REPURCHASES, a spokesman said on Monday!",
    ...     "Grain exports from the port rose sharply in March, traders said.",
    ...     "",
    ... ]
    >>> pairs = method.find_pairs(method.sketch(texts))
    >>> pairs.left.tolist(), pairs.right.tolist(), pairs.score.tolist()
    ([0], [1], [1.0])

    References
    ----------
    M. Sanderson, *Duplicate detection in the Reuters collection*, TR-1997-5, University
    of Glasgow, 1997. S. Robertson & H. Zaragoza, *The probabilistic relevance framework:
    BM25 and beyond*, 2009 (BM25 weights).
    """

    name = "sanderson"
    pair_params = frozenset(
        {"query_terms", "ranking", "k1", "b", "top_k", "margin", "threshold", "time_window_hours"}
    )

    def __init__(
        self,
        *,
        query_terms: int = 20,
        ranking: str = "bm25",
        k1: float = 1.2,
        b: float = 0.75,
        top_k: int = 5,
        margin: float = 1.25,
        threshold: float = 0.8,
        time_window_hours: float | None = 48,
        normalize: NormalizeConfig = NormalizeConfig(),
        seed: int = 0,
    ) -> None:
        caller = "Sanderson"
        self.query_terms = check_int(caller, "query_terms", query_terms, low=1)
        self.ranking = check_choice(caller, "ranking", ranking, _RANKINGS)
        self.k1 = check_float(caller, "k1", k1, low=0.0)
        if self.k1 == 0.0:
            raise ValueError(f"{caller}: parameter 'k1' must be a number > 0; got {k1!r}.")
        self.b = check_float(caller, "b", b, low=0.0, high=1.0)
        self.top_k = check_int(caller, "top_k", top_k, low=1)
        self.margin = check_float(
            caller, "margin", margin, low=1.0, hint="It is a score ratio; 1 disables the test."
        )
        self.threshold = check_float(caller, "threshold", threshold, low=0.0, high=1.0)
        check_time_window(caller, time_window_hours)
        self.time_window_hours = time_window_hours
        if not isinstance(normalize, NormalizeConfig):
            raise ValueError(
                f"{caller}: parameter 'normalize' must be a NormalizeConfig; got {normalize!r}."
            )
        self.normalize = normalize
        self.seed = check_int(caller, "seed", seed, low=0)

    # ------------------------------------------------------------------ stage 1

    def sketch(self, texts: Sequence[str]) -> Sketch:
        """Token hashes of one batch, sorted per document with repeats kept.

        Returns
        -------
        Sketch
            ``n_features`` = number of word tokens per document (int64); ``sets`` holds
            each document's token hashes sorted ascending, repeats kept (a term's count
            in the document is the length of its run).
        """
        tokens = hash_shingles(normalize_batch(texts, self.normalize), _TOKENS, seed=self.seed)
        counts = tokens.counts()
        doc_of = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
        order = np.lexsort((tokens.hashes, doc_of))
        return Sketch(counts, sets=ShingleSets(tokens.hashes[order], tokens.offsets))

    # ------------------------------------------------------------------ stage 2

    def _idf(self, df: np.ndarray, n_eff: float) -> np.ndarray:
        if self.ranking == "bm25":
            return np.log1p((n_eff - df + 0.5) / (df + 0.5))
        return np.log((1.0 + n_eff) / (1.0 + df)) + 1.0

    def _weights(self, docs: np.ndarray, tf: np.ndarray, idf: np.ndarray, lengths: np.ndarray,
                 avg: float, tie: np.ndarray, n: int):
        """Term weights of the (document, term) rows (``idf`` per row, ``lengths`` per
        document), the rows chosen as queries (each document's ``query_terms`` best by
        ``tf * idf``, ties by ``tie``, ascending) and their query weights."""
        tf = tf.astype(np.float64)
        if self.ranking == "bm25":
            norm_len = self.k1 * (1.0 - self.b + self.b * lengths[docs] / avg)
            weight = idf * tf * (self.k1 + 1.0) / (tf + norm_len)
        else:
            weight = (1.0 + np.log(tf)) * idf
            row_norm = np.sqrt(np.bincount(docs, weight * weight, minlength=n))
            weight = weight / row_norm[docs]
        chosen = _top_per_row(docs, (-(tf * idf), tie), self.query_terms)
        chosen.sort()  # back to (document, term) order: valid CSR
        q_docs = docs[chosen]
        q_weight = np.ones(chosen.size) if self.ranking == "bm25" else weight[chosen]
        if self.ranking == "tfidf":
            q_norm = np.sqrt(np.bincount(q_docs, q_weight * q_weight, minlength=n))
            q_weight = q_weight / q_norm[q_docs]
        return weight, chosen, q_weight

    def _matrices(self, sets: ShingleSets, lengths: np.ndarray) -> tuple[sp.csr_matrix, ...]:
        """Document matrix ``D`` (n x V) and query matrix ``Q`` (n x V), both CSR."""
        n = len(sets)
        docs, hashes, tf = _term_counts(sets)
        vocab, term = np.unique(hashes, return_inverse=True)
        n_terms = vocab.size
        df = np.bincount(term, minlength=n_terms).astype(np.float64)
        n_eff = float(np.count_nonzero(lengths))
        idf = self._idf(df, n_eff)
        # Query ties broken by term id (hash order).
        weight, chosen, q_weight = self._weights(docs, tf, idf[term], lengths,
                                                 lengths.sum() / n_eff, term, n)
        doc_matrix, query = _csr_pair(docs, term, weight, chosen, q_weight, n, n_terms)
        return doc_matrix, query, df

    def retrieve(self, block: sp.csr_matrix, d0: int):
        """Directed retrievals of one block of queries: (query, partner, normalized score)."""
        rows, cols, scores, own, rest = _scan_block(
            block.indptr.astype(np.int64), block.indices.astype(np.int64), block.data,
            d0, self.threshold,
        )  # fmt: skip
        norm = scores / own[rows]
        query_doc = rows + d0
        # Closest to the query's own score first, then nearest in input, then position.
        keys = (np.abs(norm - 1.0), np.abs(cols - query_doc), cols)
        top = _top_per_row(rows, keys, self.top_k)
        rows, cols, scores, norm = rows[top], cols[top], scores[top], norm[top]
        stands_out = scores >= self.margin * rest[rows]
        return rows[stands_out] + d0, cols[stands_out], norm[stands_out]

    def find_pairs(self, sketch: Sketch, *, dates: np.ndarray | None = None) -> Pairs:
        """Mutually retrieved pairs within the time window.

        Parameters
        ----------
        sketch : Sketch
            The corpus sketch (batches from :meth:`sketch` joined by ``Sketch.concat``).
        dates : ndarray of datetime64, shape (n_docs,), or None, default None
            Document dates (NaT where unknown) for the time window; None applies no
            window.

        Returns
        -------
        Pairs
            Canonical (``left < right``, sorted), scored by the smaller of the two
            normalized retrieval scores, clipped to [0, 1] (float32). Pairs outside the
            time window are in :attr:`outside_window_` instead; one-way retrievals in
            :attr:`one_way_`.
        """
        caller = "Sanderson.find_pairs"
        sets = sketch.sets
        if sets is None:
            raise ValueError(
                f"{caller}: parameter 'sketch' must carry token hashes; got a Sketch "
                "without sets. Build it with Sanderson.sketch."
            )
        n = len(sets)
        if dates is not None:
            dates = np.asarray(dates)
            if dates.shape != (n,) or not np.issubdtype(dates.dtype, np.datetime64):
                raise ValueError(
                    f"{caller}: parameter 'dates' must be a datetime64 array of shape "
                    f"({n},), one date per document; got dtype {dates.dtype} and shape "
                    f"{dates.shape}."
                )
        lengths = sets.counts().astype(np.float64)
        stats = dict.fromkeys(
            ("docs", "terms", "postings", "scores", "retrievals", "mutual", "one_way",
             "outside_window", "pairs"),
            0,
        )  # fmt: skip
        stats["docs"] = n
        self.stats_ = stats
        self.mutual_ = self.outside_window_ = self.one_way_ = Pairs.empty()
        self.outside_window_mask_ = np.zeros(0, dtype=bool)
        if n < 2 or np.count_nonzero(lengths) < 2:
            return Pairs.empty()

        doc_matrix, query, df = self._matrices(sets, lengths)
        stats.update(terms=int(df.size), postings=int(doc_matrix.nnz))
        index = doc_matrix.T.tocsr()  # terms x documents: the inverted index
        # Upper bound of each query's scored documents: the sum of its terms' df.
        bound = np.add.reduceat(
            np.append(df[query.indices], 0.0), np.minimum(query.indptr[:-1], query.nnz)
        )
        bound[np.diff(query.indptr) == 0] = 0.0
        cum = np.zeros(n + 1)
        np.cumsum(bound, out=cum[1:])
        capacity = max(float(_BLOCK_SCORES), float(bound.max(initial=0.0)))
        parts_i, parts_j, parts_s = [], [], []
        d0 = 0
        while d0 < n:
            d1 = int(np.searchsorted(cum, cum[d0] + capacity, side="right")) - 1
            d1 = min(max(d1, d0 + 1), n)
            if cum[d1] > cum[d0]:
                block = query[d0:d1] @ index
                stats["scores"] += int(block.nnz)
                i, j, s = self.retrieve(block, d0)
                parts_i.append(i)
                parts_j.append(j)
                parts_s.append(s)
                del block
            d0 = d1
        src = np.concatenate(parts_i) if parts_i else np.zeros(0, np.int64)
        dst = np.concatenate(parts_j) if parts_j else np.zeros(0, np.int64)
        norm = np.concatenate(parts_s) if parts_s else np.zeros(0)
        return self.mutual(src, dst, norm, n, dates)

    def mutual(self, src: np.ndarray, dst: np.ndarray, norm: np.ndarray, n: int,
               dates: np.ndarray | None) -> Pairs:
        """The pairs of the directed retrievals ``src -> dst`` (normalized scores
        ``norm``) found in both directions, within the time window; sets ``mutual_``,
        ``one_way_``, ``outside_window_`` and the retrieval counts of ``stats_``."""
        stats = self.__dict__.setdefault("stats_", {})
        stats["retrievals"] = int(src.size)

        # Mutual test: (i, j) is mutual when (j, i) is also a retrieval.
        key = src * n + dst
        order = np.argsort(key, kind="stable")
        sorted_key = key[order]
        reverse = dst * n + src
        at = np.minimum(np.searchsorted(sorted_key, reverse), max(key.size - 1, 0))
        mutual = sorted_key[at] == reverse if key.size else np.zeros(0, dtype=bool)
        back = norm[order[at]] if key.size else np.zeros(0)
        forward = mutual & (src < dst)
        score = np.clip(np.minimum(norm[forward], back[forward]), 0.0, 1.0)
        self.mutual_ = Pairs(src[forward], dst[forward], score).canonical()
        self.one_way_ = Pairs(src[~mutual], dst[~mutual], np.clip(norm[~mutual], 0, 1)).canonical()

        outside = outside_time_window(self.mutual_, dates, self.time_window_hours)
        self.outside_window_mask_ = outside
        self.outside_window_ = self.mutual_.select(outside)
        pairs = self.mutual_.select(~outside)
        stats.update(
            mutual=len(self.mutual_), one_way=len(self.one_way_),
            outside_window=int(outside.sum()), pairs=len(pairs),
        )  # fmt: skip
        return pairs

    def match(self, sketch: Sketch, *, dates: np.ndarray | None = None) -> Matches:
        pairs = self.find_pairs(sketch, dates=dates)
        return Matches(pairs, outside_window=self.outside_window_, stats=dict(self.stats_))


    # ------------------------------------------------------------------ corpus stage
    #
    # Statistics contract: the corpus stage counts term document frequencies (df >= 2;
    # a term of one document reads as df 1), documents and tokens in one pass. With the
    # fitted copy it then runs the retrieval out of core (neardup.engine.retrieval): the
    # inverted index is built term-sorted in the work directory and every block of
    # queries is scored against the postings of its own terms, read back memory-mapped,
    # with the very find_pairs code above (retrieve, mutual). Key groups cannot do it:
    # top_k and margin rank a query's whole result list, not a pair.

    @property
    def capabilities(self) -> Capabilities:
        # No key groups: mutual retrieval over the stored token multisets; term
        # statistics until fitted.
        return Capabilities(
            keyed=KeyedCandidates(keys_per_doc=0, query_retrieval=True),
            statistics=None if hasattr(self, "term_hashes_") else CorpusStatistics(("term",)),
            verification=Verification(sets=True, multisets=True))

    def statistics_partial(self, sketch: Sketch) -> StatisticsPartial:
        _, hashes, _ = _term_counts(sketch.sets)  # distinct terms of each document
        counts = sketch.sets.counts()
        return StatisticsPartial({"term": hashes}, {"docs": int(np.count_nonzero(counts)),
                                                    "tokens": int(counts.sum())})

    def with_statistics(self, stats: FeatureStatistics) -> Sanderson:
        import copy

        fitted = copy.copy(self)
        fitted.n_docs_ = int(stats.totals.get("docs", 0))
        fitted.n_tokens_ = int(stats.totals.get("tokens", 0))
        fitted.term_hashes_, fitted.term_df_ = stats.tables["term"]
        fitted.absent_df_ = stats.absent_df
        return fitted

    def fitted_statistics(self) -> FeatureStatistics:
        """The statistics given to :meth:`with_statistics` (ValueError when not fitted)."""
        if not hasattr(self, "term_hashes_"):
            raise ValueError(
                "Sanderson: query terms need the corpus's term statistics; run it through "
                "the corpus stage, which counts them (with_statistics)."
            )
        return FeatureStatistics({"docs": self.n_docs_, "tokens": self.n_tokens_},
                                 {"term": (self.term_hashes_, self.term_df_)}, self.absent_df_)

    def statistics_digest(self) -> str | None:
        return self.fitted_statistics().digest() if hasattr(self, "term_hashes_") else None

    def retrieval_rows(self, sets: ShingleSets):
        """The (document, term) rows of the token multisets ``sets`` weighted with the
        fitted statistics, as :meth:`find_pairs` weights them: ``(docs, hashes, weight,
        chosen, q_weight)``, rows ordered by document then term hash, ``chosen`` the rows
        that are query terms (ascending) and ``q_weight`` their query weights."""
        stats = self.fitted_statistics()
        n = len(sets)
        docs, hashes, tf = _term_counts(sets)
        lengths = sets.counts().astype(np.float64)
        n_eff = float(max(stats.totals["docs"], 1))
        idf = self._idf(stats.df("term", hashes).astype(np.float64), n_eff)
        # Ties by hash: the order of find_pairs' term ids.
        weight, chosen, q_weight = self._weights(docs, tf, idf, lengths,
                                                 stats.totals["tokens"] / n_eff, hashes, n)
        return docs, hashes, weight, chosen, q_weight

    def candidate_keys(self, sketch: Sketch) -> CandidateKeys:
        # No key groups: the retrieval stage reads the stored token multisets.
        empty = np.zeros(0, np.uint64)
        return CandidateKeys(np.zeros(0, np.int64), empty)
