"""SpotSigs: Jaccard over stopword-anchored word chains, with length-based pruning.

Theobald, Siddharth & Paepcke (SIGIR 2008) observed that in news pages the running text of
an article is dense in common function words while navigation bars, ads and captions are
not. A *spot signature* is therefore taken only where an *antecedent* (a word from a small
stopword set such as "the" or "said") occurs: it is that antecedent followed by a chain of
``chain_length`` non-stopword tokens, each ``distance`` non-stopword tokens after the
previous one (stopwords are skipped, not counted). With chain length 2, distance 1 and
"the" an antecedent, "... the record straight from an attack ..." gives ``the:record:straight``.
Two documents are compared by the Jaccard similarity of their sets of signatures. Alonso,
Fetterly & Manasse (2013, sec. 4.4) summarise the paper's best setting as chain length 3
and distance 2, and report (Table 5, sec. 4.6 and 4.8) antecedent sets from the single
word "is" up to the 571 SMART stopwords; "is, the, said, was, there" correlated best with
human judgements on their ClueWeb news pairs, "is, the, said, was" had the best F1 on the
SpotSigs gold set. They also found SpotSigs confuses pages sharing site boilerplate.

Sketching (:meth:`SpotSigs.sketch`) is vectorised over a batch: texts are normalized and
hashed into word tokens in one pass (:func:`~neardup.text.shingle.hash_shingles` with
1-grams); antecedent and stopword flags come from a sorted-array lookup of the token hashes;
a compiled kernel walks each document once, keeping the positions of its non-stopwords, so
a signature costs O(chain_length) whatever the stopword runs; signature hashes are made
unique per document (:meth:`~neardup.text.shingle.ShingleSets.unique`).

Finding pairs (:meth:`SpotSigs.find_pairs`) is exact. Since
``J(A, B) = |A ∩ B| / |A ∪ B| <= |A| / |B|`` for ``|A| <= |B|``, a pair can only reach the
threshold ``t`` if ``|A| >= t |B|``; SpotSigs partitions documents into ranges of
signature-set length and compares only documents in ranges within that ratio. Here the
partitions are taken to their limit:

1. documents are ranked by signature count, and every posting list of an inverted index
   (signature -> documents) is sorted by that rank, hence by length;
2. document ``A`` scans each of its posting lists only from its own position up to the last
   document ``B`` with ``|A| / |B| >= t`` (found by binary search: early termination), so
   pairs the length filter rejects are never generated;
3. as in :mod:`neardup.methods.ngram`, signatures in more than ``max_df`` documents are not
   used to generate candidates but still count in the similarity, the candidates of a
   document are reduced to distinct partners with their number of shared signatures, a
   count bound drops hopeless ones, and survivors get the exact Jaccard (compared with the
   threshold in float64, stored as float32).

The result is exactly the set of pairs with Jaccard ``>= threshold`` sharing at least one
signature held by at most ``max_df`` documents, i.e. the brute-force result whenever
``max_df >= n_docs``.

References: Theobald, Siddharth & Paepcke, "SpotSigs: robust and efficient near duplicate
detection in large web collections", SIGIR 2008; Alonso, Fetterly & Manasse, "Duplicate
news story detection revisited", MSR-TR-2013-60 (2013).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import njit, uint64

from neardup.errors import check_choice, check_float, check_int
from neardup.graph.edges import Pairs
from neardup.methods.base import CandidateKeys, CandidateRows, Method, SetKeyedMixin, Sketch
from neardup.methods.capabilities import Capabilities
from neardup.methods.overlap_kernels import (
    bounded_similarity,
    count_bound_passes,
    count_similarity,
    indexed_pairs,
    jaccard_min_shared,
    set_similarity,
)
from neardup.text.hashing import mix64, mix64_array, seed_words
from neardup.text.normalize import NormalizeConfig, normalize_batch
from neardup.text.shingle import ShingleConfig, ShingleSets, hash_shingles

__all__ = ["ANTECEDENT_PRESETS", "ENGLISH_STOPWORDS", "SpotSigs"]

#: Named antecedent sets (``antecedents="alonso5"``). The "alonso" sets are the nested
#: lists of Alonso et al. (2013), Table 5; "articles" is the three English articles.
ANTECEDENT_PRESETS: dict[str, tuple[str, ...]] = {
    "alonso4": ("is", "the", "said", "was"),
    "alonso5": ("is", "the", "said", "was", "there"),
    "alonso7": ("is", "the", "said", "was", "there", "a", "it"),
    "articles": ("a", "an", "the"),
}

#: Words skipped when chains are built (``stopwords=None``): English articles, pronouns,
#: auxiliaries, prepositions, conjunctions and determiners, plus the fragments contractions
#: leave once punctuation is stripped ("don't" -> "don t"). "up" and "down", which carry
#: meaning in news ("shares were up"), are deliberately absent.
ENGLISH_STOPWORDS: tuple[str, ...] = tuple(
    """
    a about above after again against all also am an and any are aren as at be because been
    before being below between both but by can cannot could couldn d did didn do does doesn
    doing don during each either else ever every few for from further had hadn has hasn
    have haven having he her here hers herself him himself his how however i if in into is
    isn it its itself just ll m may me might more most must mustn my myself neither no nor
    not now of off on once only or other ought our ours ourselves out over own re s same
    shall shan she should shouldn so some such t than that the their theirs them themselves
    then there these they this those through to too under until upon us ve very was wasn we
    were weren what when where whether which while who whom whose why will with won would
    wouldn yet you your yours yourself yourselves
    """.split()
)

_MULT = uint64(0x9E3779B97F4A7C15)  # odd multiplier chaining token hashes
_TOKEN = re.compile(r"[^\x00-\x20]+")  # the word tokens of hash_shingles (split at <= 32)


# --------------------------------------------------------------------------- word lists


def _resolve_antecedents(antecedents: str | tuple[str, ...]) -> tuple[str, ...]:
    if isinstance(antecedents, str):
        return ANTECEDENT_PRESETS[antecedents]
    return antecedents


def _normalize_words(words: Sequence[str], config: NormalizeConfig) -> list[str]:
    # Word lists get the texts' normalization minus spelling correction, which would leave
    # these dictionary words alone anyway but costs loading a dictionary.
    return normalize_batch(list(words), dataclasses.replace(config, spell_correct=False))


@functools.lru_cache(maxsize=64)
def _word_hashes(words: tuple[str, ...], config: NormalizeConfig, seed: int) -> np.ndarray:
    """Sorted, unique token hashes of (validated) single words, as the texts' tokens get."""
    tokens = hash_shingles(_normalize_words(words, config), ShingleConfig("word", 1), seed=seed)
    hashes = np.unique(tokens.hashes)
    hashes.flags.writeable = False  # shared by every caller through the cache
    return hashes


def _member(tokens: np.ndarray, sorted_words: np.ndarray) -> np.ndarray:
    """bool mask, shape tokens.shape: which token hashes are in ``sorted_words``."""
    if sorted_words.size == 0 or tokens.size == 0:
        return np.zeros(tokens.shape, dtype=bool)
    at = np.minimum(np.searchsorted(sorted_words, tokens), sorted_words.size - 1)
    return sorted_words[at] == tokens


# --------------------------------------------------------------------------- kernels


@njit(cache=True)
def _spot_chains(tokens, offsets, is_ante, is_skip, chain_length, distance, key, positions):
    """Spot signatures of every document, in document order (repeats kept).

    Antecedent ``p`` with ``r`` non-skipped tokens before it in its document takes as chain
    the non-skipped tokens of document ranks ``r + d - 1, r + 2d - 1, ...`` (d = distance),
    ``chain_length`` of them. A document without any complete chain instead gets every
    chain cut short by its end that has at least one word. The hash chains the token
    hashes of the antecedent and of the words through ``mix64``. When ``positions`` is
    True, also returns the global token positions of each signature's words (antecedent
    first, -1 pads cut chains).
    """
    n_docs = offsets.shape[0] - 1
    n_ante = 0
    for p in range(tokens.shape[0]):
        if is_ante[p]:
            n_ante += 1
    out = np.empty(n_ante, dtype=np.uint64)
    out_pos = np.full((n_ante if positions else 0, chain_length + 1), -1, dtype=np.int64)
    out_offsets = np.zeros(n_docs + 1, dtype=np.int64)
    kept = np.empty(tokens.shape[0], dtype=np.int64)  # non-skipped positions of one doc
    k = 0
    for d in range(n_docs):
        m = 0
        for p in range(offsets[d], offsets[d + 1]):
            if not is_skip[p]:
                kept[m] = p
                m += 1
        # Complete chains only, unless the document has none: then chains cut short by
        # its end (at least one word) let short texts match. The first antecedent has the
        # fewest words after it, so it decides.
        need = distance  # kept words an antecedent needs after it, counting skipped ones
        r = 0
        for p in range(offsets[d], offsets[d + 1]):
            if not is_skip[p]:
                r += 1
            elif is_ante[p]:
                if r + chain_length * distance <= m:
                    need = chain_length * distance
                break
        r = 0
        for p in range(offsets[d], offsets[d + 1]):
            if not is_skip[p]:
                r += 1
            elif is_ante[p] and r + need <= m:
                h = mix64(tokens[p] ^ key)
                if positions:
                    out_pos[k, 0] = p
                for c in range(chain_length):
                    q = r + (c + 1) * distance - 1
                    if q >= m:
                        break
                    h = mix64(h * _MULT ^ tokens[kept[q]])
                    if positions:
                        out_pos[k, c + 1] = kept[q]
                out[k] = h
                k += 1
        out_offsets[d + 1] = k
    return out[:k], out_offsets, out_pos[: k if positions else 0]


@njit(cache=True)
def _build_index(sorted_hashes, sorted_ranks, sizes, max_df, threshold):
    """Inverted index over documents ranked by size, with the SpotSigs length window.

    ``sorted_hashes``/``sorted_ranks`` are the postings sorted by (hash, rank). Returns
    each rank's number of frequent signatures (df > max_df), the kept postings (2 <= df <=
    max_df; ``keep_rank`` grouped by hash, ranks ascending), ``keep_stop[p]``: the end of the
    window of partners after ``p`` whose length ratio can reach the threshold, the CSR
    ``doc_ptr``/``doc_posts`` from rank to its kept postings, per-rank emission counts, the
    number of distinct frequent signatures and of emissions skipped by the window.
    """
    n = sizes.shape[0]
    total = sorted_hashes.shape[0]
    frequent = np.zeros(n, dtype=np.int64)
    n_frequent = 0
    kept = 0
    s = 0
    while s < total:
        e = s + 1
        while e < total and sorted_hashes[e] == sorted_hashes[s]:
            e += 1
        if e - s > max_df:
            n_frequent += 1
            for p in range(s, e):
                frequent[sorted_ranks[p]] += 1
        elif e - s >= 2:
            kept += e - s
        s = e
    keep_rank = np.empty(kept, dtype=np.int64)
    keep_stop = np.empty(kept, dtype=np.int64)
    doc_ptr = np.zeros(n + 1, dtype=np.int64)
    emits = np.zeros(n, dtype=np.int64)
    skipped = 0
    k = 0
    s = 0
    while s < total:
        e = s + 1
        while e < total and sorted_hashes[e] == sorted_hashes[s]:
            e += 1
        if 2 <= e - s <= max_df:
            end = k + e - s
            for p in range(s, e):
                keep_rank[k + p - s] = sorted_ranks[p]
            for p in range(k, end):
                i = keep_rank[p]
                # Sizes grow along the list, so |i| / |j| >= threshold holds on a prefix
                # of the partners: binary search for its end. Same float64 expression as
                # the Jaccard of intersection |i| and union |j|, so no pair is lost.
                lo = p + 1
                hi = end
                while lo < hi:
                    mid = (lo + hi) // 2
                    if set_similarity(sizes[i], sizes[i], sizes[keep_rank[mid]], False) >= threshold:
                        lo = mid + 1
                    else:
                        hi = mid
                keep_stop[p] = lo
                emits[i] += lo - p - 1
                skipped += end - lo
                doc_ptr[i + 1] += 1
            k = end
        s = e
    for i in range(n):
        doc_ptr[i + 1] += doc_ptr[i]
    fill = doc_ptr[:-1].copy()
    doc_posts = np.empty(kept, dtype=np.int64)
    for p in range(kept):
        i = keep_rank[p]
        doc_posts[fill[i]] = p
        fill[i] += 1
    return frequent, keep_rank, keep_stop, doc_ptr, doc_posts, emits, n_frequent, skipped


class SpotSigs(SetKeyedMixin, Method):
    """SpotSigs near-duplicate detection (``--method spotsigs``).

    Each document becomes the set of its *spot signatures*: an antecedent word followed by
    a chain of non-stopwords (see the module docstring). Pairs whose signature sets have an
    exact Jaccard similarity at or above ``threshold`` are returned; documents of very
    different signature counts are never compared (SpotSigs' length pruning). Because
    signatures sit where function words are dense, running text dominates them and
    navigation, captions and lists of links contribute little, which suits web pages and
    scanned newspapers whose layout differs between copies of one story.

    Requirements
        Only numpy and numba. English text (or antecedents and stopwords for your
        language). Memory: 8 bytes per distinct signature of each document, about 32 more
        during :meth:`find_pairs`, a candidate buffer of at most ~50 MB and dense counters
        of 4 bytes per document and thread (at most 256 MB).

    Inputs
        :meth:`sketch` takes raw texts (one batch); :meth:`find_pairs` takes the
        concatenated sketch of the whole corpus and returns scored
        :class:`~neardup.graph.Pairs` (document positions, ``left < right``, sorted).

    Relations
        :class:`~neardup.methods.ngram.NGramOverlap` compares *all* word n-grams with the
        same exact-Jaccard machinery; SpotSigs keeps only the n-grams (with stopwords
        squeezed out) that start at an antecedent, so documents have 5-20x fewer features
        and boilerplate without function words is ignored. Documents with no antecedent
        followed by a non-stopword (``n_features == 0``) are never paired.

    Parameters
    ----------
    threshold : float in [0, 1], default 0.4
        Minimum Jaccard similarity of the signature sets of a reported pair (``>=``).
        Higher is more precise and prunes more pairs by length; lower finds rewritten
        copies. Tune on labelled pairs; Alonso et al. (2013, sec. 4.7) found useful
        thresholds for such measures between about 1/4 and 1/2. 0.4 is a good start.
    antecedents : tuple of str, or str, default ("is", "the", "said", "was", "there")
        The words that start a signature, each one word after normalization; or the name
        of a preset in :data:`ANTECEDENT_PRESETS`: ``"alonso5"`` (the default set, best
        correlation with human judgements in Alonso et al. 2013, sec. 4.6), ``"alonso4"``
        ("is, the, said, was": best F1, 0.87, on the SpotSigs gold set, sec. 4.8),
        ``"alonso7"`` (adds "a, it": best F1 on their ClueWeb pairs, Table 5) or
        ``"articles"`` ("a, an, the"). Alonso et al. also tried the 571 SMART stopwords,
        which scored worse; that list is not shipped (pass it as a tuple if you need it).
        More antecedents give more signatures per document (recall on short texts) but
        more signatures from boilerplate. Keep the default for English news.
    stopwords : tuple of str or None, default None
        Words skipped (neither counted nor taken) when a chain is built, each one word
        after normalization. None means :data:`ENGLISH_STOPWORDS` (165 English function
        words). Antecedents are always skipped too, so a chain never contains a word that
        starts another signature. Pass ``()`` to skip only the antecedents.
    chain_length : int in [1, 64], default 3
        Number of words after the antecedent in a signature. Longer chains are more
        specific. Chains cut short by the end of the document are dropped, except in a
        document with no complete chain, which keeps them (those with at least one word)
        so that short texts still match. 3 was best in Theobald et al. (2008), as
        summarised by Alonso et al. (2013, sec. 4.4).
    distance : int in [1, 64], default 2
        Gap, in non-stopwords, between consecutive chain words (1 takes adjacent
        non-stopwords). 2 was best in Theobald et al. (2008); with chain length 3 a
        signature spans about 7 words of text.
    normalize : NormalizeConfig, default all steps on
        Normalization of texts (and of the antecedents and stopwords, without spelling
        correction) before tokenization. Keep case folding on, or the word lists miss
        capitalised occurrences.
    seed : int >= 0, default 0
        Keys the token and signature hashes. Sketches are comparable only with one seed.
    max_df : int >= 2, default 1000
        Signatures in more documents than this (boilerplate sentences, templates) are not
        used to find candidate pairs, which keeps the work near-linear; they still count in
        the similarity of pairs found through rarer signatures. Pairs sharing only such
        signatures are not reported. Set it to at least the number of documents for the
        exact brute-force result; 1000 suits corpora of millions of documents.

    Attributes
    ----------
    stats_ : dict of str -> int
        Set by :meth:`find_pairs`: ``docs``, ``signatures`` (signature-document
        incidences), ``frequent_signatures`` (distinct signatures over ``max_df``),
        ``length_pruned`` (document pairs skipped by the length filter, counted once per
        shared posting list), ``candidates`` (distinct pairs compared), ``pruned``
        (dropped by the count bound), ``merged`` (signature arrays merged) and ``pairs``.

    Examples
    --------
    >>> method = SpotSigs(threshold=0.4)
    >>> texts = [
    ...     "Officials said the storm was the worst there is on record, and the city "
    ...     "said cleanup crews was working through the weekend.",
    ...     "BREAKING: Officials said the storm was the worst there is on record; "
    ...     "the city said cleanup crews was working through the weekend. Share this!",
    ...     "Home | Sports | Weather | Contact us",
    ...     "",
    ... ]
    >>> method.spot_signatures(texts)[0][:2]
    [('said', 'worst', 'city', 'crews'), ('the', 'worst', 'city', 'crews')]
    >>> sketch = method.sketch(texts)
    >>> sketch.n_features.tolist()  # the second adds ('the', 'cleanup', 'working', 'share')
    [6, 7, 0, 0]
    >>> pairs = method.find_pairs(sketch)
    >>> pairs.left.tolist(), pairs.right.tolist(), [round(s, 4) for s in pairs.score.tolist()]
    ([0], [1], [0.8571])

    References
    ----------
    Theobald, Siddharth & Paepcke, "SpotSigs: robust and efficient near duplicate detection
    in large web collections", SIGIR 2008. Alonso, Fetterly & Manasse, "Duplicate news
    story detection revisited", Microsoft Research MSR-TR-2013-60, 2013.
    """

    name = "spotsigs"
    pair_params = frozenset({"threshold", "max_df"})

    def __init__(
        self,
        *,
        threshold: float = 0.4,
        antecedents: tuple[str, ...] | str = ("is", "the", "said", "was", "there"),
        stopwords: tuple[str, ...] | None = None,
        chain_length: int = 3,
        distance: int = 2,
        normalize: NormalizeConfig = NormalizeConfig(),
        seed: int = 0,
        max_df: int = 1000,
    ) -> None:
        caller = "SpotSigs"
        self.threshold = check_float(caller, "threshold", threshold, low=0.0, high=1.0)
        if not isinstance(normalize, NormalizeConfig):
            raise ValueError(
                f"{caller}: parameter 'normalize' must be a NormalizeConfig; got {normalize!r}."
            )
        self.normalize = normalize
        if isinstance(antecedents, str):
            check_choice(
                caller, "antecedents", antecedents, tuple(ANTECEDENT_PRESETS),
                hint="Or pass the words themselves as a tuple, e.g. ('the', 'said').",
            )  # fmt: skip
            self.antecedents = antecedents
        else:
            self.antecedents = self._check_words(caller, "antecedents", antecedents)
            if not self.antecedents:
                raise ValueError(
                    f"{caller}: parameter 'antecedents' must hold at least one word; got (). "
                    f"Presets: {', '.join(map(repr, ANTECEDENT_PRESETS))}."
                )
        self.stopwords = (
            None if stopwords is None else self._check_words(caller, "stopwords", stopwords)
        )
        self.chain_length = check_int(caller, "chain_length", chain_length, low=1, high=64)
        self.distance = check_int(caller, "distance", distance, low=1, high=64)
        self.seed = check_int(caller, "seed", seed, low=0)
        self.max_df = check_int(
            caller, "max_df", max_df, low=2,
            hint="A signature must be in at least 2 documents to link them.",
        )  # fmt: skip

    def _check_words(self, caller: str, pname: str, words: Any) -> tuple[str, ...]:
        """A tuple of strings that each normalize to exactly one word token."""
        if isinstance(words, (str, bytes)) or not isinstance(words, Sequence):
            raise ValueError(
                f"{caller}: parameter '{pname}' must be a tuple of words; got {words!r}."
            )
        words = tuple(words)
        bad = [w for w in words if not isinstance(w, str)]
        if not bad:
            normalized = _normalize_words(words, self.normalize)
            bad = [w for w, n in zip(words, normalized) if len(_TOKEN.findall(n)) != 1]
        if bad:
            raise ValueError(
                f"{caller}: parameter '{pname}' must be a tuple of words that are each one "
                f"word after normalization; got {bad[0]!r} in {words!r}. Punctuation becomes "
                "a space: write \"dont\" or \"don\" rather than \"don't\"."
            )
        return words

    # ---------------------------------------------------------------- sketching

    def _lists(self) -> tuple[np.ndarray, np.ndarray]:
        """Sorted token hashes of the antecedents and of the words chains skip."""
        antecedents = _resolve_antecedents(self.antecedents)
        stop = ENGLISH_STOPWORDS if self.stopwords is None else self.stopwords
        ante = _word_hashes(antecedents, self.normalize, self.seed)
        skip = _word_hashes(tuple(stop) + antecedents, self.normalize, self.seed)
        return ante, skip

    def _chains(self, normalized: list[str], positions: bool):
        tokens = hash_shingles(normalized, ShingleConfig("word", 1), seed=self.seed)
        ante, skip = self._lists()
        key = seed_words(self.seed, 1, salt=0x5907)[0]
        return _spot_chains(
            tokens.hashes, tokens.offsets, _member(tokens.hashes, ante),
            _member(tokens.hashes, skip), self.chain_length, self.distance, key, positions,
        )  # fmt: skip

    def sketch(self, texts: Sequence[str]) -> Sketch:
        """Spot-signature sets of one batch.

        Returns
        -------
        Sketch
            ``sets``: per-document sorted, unique uint64 signature hashes;
            ``n_features``: int64 (n_docs,), the number of distinct signatures.
        """
        hashes, offsets, _ = self._chains(normalize_batch(texts, self.normalize), False)
        sets = ShingleSets(hashes, offsets).unique()
        return Sketch(sets.counts(), sets=sets)

    def spot_signatures(self, texts: Sequence[str]) -> list[list[tuple[str, ...]]]:
        """The signatures of each text as words, in text order with repeats: a tuple
        ``(antecedent, word_1, ..., word_c)`` per signature (shorter when the text ends
        first). For inspection and tuning; :meth:`sketch` hashes the same signatures."""
        normalized = normalize_batch(texts, self.normalize)
        _, offsets, pos = self._chains(normalized, True)
        words = [w for text in normalized for w in _TOKEN.findall(text)]
        rows = [tuple(words[p] for p in row if p >= 0) for row in pos.tolist()]
        return [rows[offsets[d] : offsets[d + 1]] for d in range(len(normalized))]

    # -- keyed contract (the out-of-core corpus stage) ------------------------------------
    #
    # Every signature is a key. Groups of up to min(max_df, KEYED_ALL_PAIRS_UPTO) documents
    # are compared all-to-all (the stage counts each pair's shared signatures in compiled
    # code and drops pairs whose count bound cannot reach the threshold, as find_pairs
    # does); groups over max_df are not linked, as find_pairs leaves those signatures out
    # (between max_df > 1000 and 1000, a star plus a chain). Edges are verified with the
    # exact Jaccard of the stored sets, whose size bound is SpotSigs' length pruning.


    @property
    def capabilities(self) -> Capabilities:
        return self.set_overlap_capabilities(keys_per_doc=40, skip_over=self.max_df)

    def candidate_keys(self, sketch: Sketch) -> CandidateKeys:
        sets = sketch.require_sets("SpotSigs.candidate_keys", "signature", "SpotSigs.sketch")
        docs = np.repeat(np.arange(len(sets), dtype=np.int64), sets.counts())
        return CandidateKeys(docs, mix64_array(sets.hashes))

    def overlap_bound(self, shared, known_left, known_right, size_left, size_right):
        return count_bound_passes(shared, known_left, known_right, size_left, size_right,
                                  self.threshold, False)

    def overlap_scores(self, inter, size_left, size_right):
        return count_similarity(inter, size_left, size_right, self.threshold, False)

    def overlap_min_shared(self, sizes):
        return jaccard_min_shared(sizes, self.threshold)

    def keyed_pruning(self, stats: dict) -> dict[str, int]:
        return {"max_df_signatures": int(stats.get("capped_keys", 0))}

    def score_candidate_rows(self, rows: CandidateRows, left: np.ndarray, right: np.ndarray):
        sets = rows.sets
        sim = bounded_similarity(sets.hashes, sets.offsets, np.ascontiguousarray(left, np.int64),
                                 np.ascontiguousarray(right, np.int64), False, self.threshold)
        return np.maximum(sim, 0.0).astype(np.float32), sim >= self.threshold

    # ---------------------------------------------------------------- pairs

    def find_pairs(self, sketch: Sketch) -> Pairs:
        """Pairs with exact signature Jaccard ``>= threshold`` (sharing a signature with
        df <= max_df), found with length pruning.

        Parameters
        ----------
        sketch : Sketch
            The corpus sketch (batches from :meth:`sketch` joined by ``Sketch.concat``).

        Returns
        -------
        Pairs
            Canonical (``left < right``, sorted), scored by exact Jaccard (float32).
        """
        caller = "SpotSigs.find_pairs"
        sets = sketch.require_sets(caller, "signature", "SpotSigs.sketch")
        hashes, offsets = sets.hashes, sets.offsets
        sizes = np.diff(offsets)
        n = sizes.shape[0]
        stats = dict.fromkeys(
            ("docs", "signatures", "frequent_signatures", "length_pruned", "candidates",
             "pruned", "merged", "pairs"),
            0,
        )  # fmt: skip
        stats.update(docs=n, signatures=int(hashes.size))
        self.stats_ = stats
        if n < 2 or hashes.size == 0:
            return Pairs.empty()

        # Rank documents by signature count; postings sorted by (hash, rank) so every
        # posting list runs from short to long documents.
        order = np.argsort(sizes, kind="stable")
        rank_of = np.empty(n, dtype=np.int64)
        rank_of[order] = np.arange(n, dtype=np.int64)
        post_rank = np.repeat(rank_of, sizes)
        by = np.lexsort((post_rank, hashes))
        frequent, keep_rank, keep_stop, doc_ptr, doc_posts, emits, n_frequent, skipped = (
            _build_index(hashes[by], post_rank[by], sizes[order], self.max_df, self.threshold)
        )
        del by, post_rank
        stats.update(frequent_signatures=int(n_frequent), length_pruned=int(skipped))

        pairs = indexed_pairs(
            doc_ptr=doc_ptr, doc_posts=doc_posts, keep=keep_rank, keep_end=keep_stop,
            emits=emits, sizes=sizes[order], frequent=frequent, order=order, hashes=hashes,
            offsets=offsets, threshold=self.threshold, containment=False, stats=stats,
        )
        stats["pairs"] = len(pairs)
        return pairs
