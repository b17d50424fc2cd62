"""The shape every de-duplication method shares.

A method is an estimator-like object (scikit-learn style): the constructor stores
keyword-only parameters under their own names and does no work; :meth:`get_params` returns
them (neardup writes them into output metadata). Work happens in two stages, so that the
first can run on any executor (local, a process pool, Ray ``map_batches``) without change:

1. :meth:`Method.sketch` — a pure function over one *batch* of raw texts returning a
   :class:`Sketch` (signatures, fingerprints, shingle sets or embeddings), row-aligned with
   the batch;
2. :meth:`Method.find_pairs` — over the concatenated sketch of the whole corpus, returns
   scored candidate :class:`~neardup.graph.Pairs` (document positions).

Methods whose candidates come from equal keys (exact hashes, LSH bands, SimHash blocks)
also implement the *keyed contract* that the engine-independent corpus stage
(:mod:`neardup.engine`) runs out of core and that no step of needs the whole corpus in
memory:

* :meth:`Method.candidate_keys` — per batch sketch, the keys each document files under
  (:class:`CandidateKeys`);
* :attr:`Method.candidate_arrays` — the fixed-width sketch arrays the stage stores per
  document so that candidates can be checked later;
* :meth:`Method.score_candidates` — scores and accepts candidate edges from the rows of
  those arrays, in bounded batches;
* optionally, per-document data that is not fixed-width: :attr:`Method.candidate_sets`
  (the ragged shingle sets, stored by the stage as offsets + values; with
  :attr:`Method.candidate_set_weights`, a float64 weight per element beside them), and
  :attr:`Method.candidate_text_chars` / :attr:`Method.candidate_dates` (texts and dates a
  pair scorer reads); the stage fetches them for each batch of edges as a
  :class:`CandidateRows` and calls :meth:`Method.score_candidate_rows`;
* :meth:`Method.link_bucket` (optional) — methods whose keys are weak (SimHash blocks hold
  unrelated documents) verify inside each key group instead of linking it as a star.

Methods that weight features by whole-corpus statistics (``wminhash``, ``sanderson``)
cannot key a batch before a pass over the corpus. They add the *statistics contract*,
estimator-style: the corpus stage counts what they declare in one streaming pass, then
keys batches with the fitted copy the method returns:

* :attr:`Method.corpus_statistics` — the document-frequency tables to count (empty when
  none are needed, or the method is already fitted);
* :meth:`Method.statistics_partial` — one batch sketch's share (:class:`StatisticsPartial`);
* :meth:`Method.statistics_min_df` — the smallest document frequency of a table the
  weights need stored (features below it are read as df 1);
* :meth:`Method.with_statistics` — a fitted copy given the counted
  :class:`FeatureStatistics`; its :meth:`Method.keyed_sketch` may add what the fitted
  statistics give (ICWS samples) to each batch sketch before it is keyed and stored.

Methods that link documents by the cosine of embeddings implement the *vector contract*,
which the out-of-core vector stage (:mod:`neardup.engine.vectors`) searches shard by
shard:

* :attr:`Method.vector_search` — the threshold and search mode (:class:`VectorSearch`);
* :meth:`Method.vector_rows` — per batch sketch, the unit rows to search and how many
  rows each document owns (one, or one per chunk).

Documents with ``n_features == 0`` (empty after normalization) are never paired.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from neardup._params import ParamsMixin
from neardup.graph.edges import Pairs
from neardup.text.shingle import ShingleSets

__all__ = ["SET_WEIGHTS", "CandidateKeys", "CandidateRows", "FeatureStatistics", "Matches",
           "Method", "SetKeyedMixin", "Sketch", "StatisticsPartial", "VectorSearch",
           "build_method", "init_parameters"]

#: Key of the per-element set weights in a keyed sketch's ``ragged`` arrays
#: (:attr:`Method.candidate_set_weights`).
SET_WEIGHTS = "set_weights"


@dataclass
class CandidateKeys:
    """The keys under which a sketch's documents meet their candidates.

    Attributes
    ----------
    docs : ndarray of int64, shape (n_rows,)
        Position of the document (within its sketch) each key belongs to; a document can
        own several rows (one per LSH band, one per SimHash block) or none (empty).
    keys : ndarray of uint64, shape (n_rows,)
        Well-mixed 64-bit keys; documents sharing one are candidates. The corpus stage
        partitions rows by key bits, so keys must look uniformly random.
    payload : ndarray of uint64, shape (n_rows,), or None
        A fixed-width value carried with each row into its key group, for
        :meth:`Method.link_bucket` (the SimHash fingerprint). Without ``link_bucket``,
        the stage orders each key group by it before linking, so that documents with
        close payloads are chained together (ngram: a MinHash value and a set digest).
    """

    docs: np.ndarray
    keys: np.ndarray
    payload: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.docs.shape[0])


@dataclass
class StatisticsPartial:
    """One batch's share of the corpus statistics a method weights features by
    (:meth:`Method.statistics_partial`).

    Attributes
    ----------
    features : dict of str -> ndarray of uint64
        Per table of :attr:`Method.corpus_statistics`: the batch's feature hashes, each
        listed once per document that holds it (so counts are document frequencies).
    totals : dict of str -> int
        Additive counts (documents with features, tokens), summed over the batches.
    """

    features: dict[str, np.ndarray]
    totals: dict[str, int]


@dataclass(frozen=True)
class FeatureStatistics:
    """Document frequencies counted over a whole corpus (the corpus stage's statistics
    stage), handed to :meth:`Method.with_statistics`.

    Attributes
    ----------
    totals : dict of str -> int
        The summed :attr:`StatisticsPartial.totals`.
    tables : dict of str -> (ndarray of uint64, ndarray of int64)
        Per table: sorted feature hashes and their document frequencies, only those of at
        least :meth:`Method.statistics_min_df`.
    absent_df : int, default 1
        The document frequency of a hash not in a table. Every feature looked up comes
        from the counted corpus, so it is in at least one document: 1.
    """

    totals: dict[str, int]
    tables: dict[str, tuple[np.ndarray, np.ndarray]]
    absent_df: int = 1

    def df(self, table: str, hashes: np.ndarray) -> np.ndarray:
        """Document frequency (int64) of each hash in ``table``."""
        keys, values = self.tables[table]
        if keys.size == 0:
            return np.full(hashes.shape, self.absent_df, np.int64)
        pos = np.minimum(np.searchsorted(keys, hashes), keys.size - 1)
        return np.where(keys[pos] == hashes, values[pos], self.absent_df).astype(np.int64)

    def digest(self) -> str:
        """A short fingerprint of the statistics (for stage keys)."""
        import hashlib

        h = hashlib.sha1(repr(sorted(self.totals.items())).encode())
        h.update(str(self.absent_df).encode())
        for name in sorted(self.tables):
            keys, values = self.tables[name]
            h.update(name.encode())
            h.update(np.ascontiguousarray(keys).tobytes())
            h.update(np.ascontiguousarray(values, np.int64).tobytes())
        return h.hexdigest()[:16]


@dataclass(frozen=True)
class VectorSearch:
    """How a method's :meth:`Method.find_pairs` searches its embedding rows, for the
    out-of-core vector stage to do the same.

    Attributes
    ----------
    threshold : float
        Rows (documents, or chunks of two different documents) whose cosine reaches it
        link their documents.
    k : int or None
        None: every row above the threshold (exact range search). Otherwise the ``k``
        nearest rows of each row, then the threshold.
    threads : int or None
        faiss threads (None: faiss's setting).
    exact_limit : int or None
        Largest number of rows searched exactly (flat index); above it the rows are
        searched with the approximate ``index``. None: always exact.
    index : {"flat", "ivf"}, default "flat"
        The index above ``exact_limit`` rows ("flat": exact at any size). ``"ivf"``: one
        inverted-file index per shard on shared centroids, the ``k`` nearest rows of each
        row (``k`` None: :data:`neardup.graph.similarity.DEFAULT_APPROX_K`).
    nlist, nprobe, seed : int or None, int, int
        IVF: cells (None: :func:`neardup.graph.similarity.ivf_nlist` of the row count),
        cells visited per query, seed of the centroid training.
    one_row_per_document : bool, default True
        False when :meth:`Method.vector_rows` gives several rows per document (chunks).
    """

    threshold: float
    k: int | None = None
    threads: int | None = None
    exact_limit: int | None = None
    index: str = "flat"
    nlist: int | None = None
    nprobe: int = 16
    seed: int = 0
    #: Whether each document owns at most one row (a document embedding) rather than one
    #: per chunk: the persistent index keeps one vector per document.
    one_row_per_document: bool = True


@dataclass
class CandidateRows:
    """The stored per-document data of a batch of documents, fetched by the corpus stage
    to verify a batch of candidate edges (only what the method declares it reads).

    Attributes
    ----------
    docs : ndarray of int64, shape (n,)
        Corpus positions of the documents, ascending; edges index rows by position here.
    arrays : dict of str -> ndarray
        The rows of :attr:`Method.candidate_arrays`, aligned with ``docs``.
    sets : ShingleSets or None
        The documents' shingle sets (:attr:`Method.candidate_sets`), aligned with ``docs``.
    set_weights : ndarray of float64 or None
        The weight of each element of ``sets.hashes`` (same length and order), when
        :attr:`Method.candidate_set_weights`.
    texts : sequence of str, an object with ``take(positions) -> list[str]``, or None
        The documents' raw texts cut to :attr:`Method.candidate_text_chars`, aligned with
        ``docs`` (the corpus stage gives a lazy reader: ``take`` what is read).
    dates : ndarray of datetime64[s] or None
        The documents' dates (NaT where unknown) when :attr:`Method.candidate_dates`.
    """

    docs: np.ndarray
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    sets: ShingleSets | None = None
    texts: Sequence[str] | None = None
    dates: np.ndarray | None = None
    set_weights: np.ndarray | None = None


@dataclass
class Sketch:
    """Per-document summaries of a batch or a corpus, row-aligned with its documents.

    Attributes
    ----------
    n_features : ndarray of int64, shape (n_docs,)
        How many features (shingles, tokens, chunks) each document had; 0 marks a document
        that cannot be compared (empty after normalization).
    arrays : dict of str -> ndarray, each with first dimension n_docs
        Fixed-width summaries, e.g. ``"signature"`` (n_docs, num_perm) uint64.
    sets : ShingleSets or None
        Ragged per-document shingle hashes, when the method keeps them.
    ragged : dict of str -> ndarray
        Arrays that are not one row per document (e.g. one row per chunk), in document
        order; a row-aligned count in ``arrays`` says how many rows each document owns
        (or, for :data:`SET_WEIGHTS`, one value per element of ``sets.hashes``).
        ``concat`` stacks them in order.
    identity : ndarray of uint64, shape (n_docs,), or None
        Each text's :func:`~neardup.text.identity.text_identity`, when the method had
        the default normalization's code points at hand (the corpus stage computes it
        otherwise: normalizing twice is the cost it saves).

    Dates are not part of a sketch: they belong to the corpus stage, which passes them
    to :meth:`Method.match`.
    """

    n_features: np.ndarray
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    sets: ShingleSets | None = None
    ragged: dict[str, np.ndarray] = field(default_factory=dict)
    identity: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.n_features.shape[0])

    def require_sets(self, caller: str, what: str, built_by: str) -> ShingleSets:
        """The sketch's sets as contiguous arrays, checked to be sorted, duplicate-free sets;
        ValueError naming ``built_by`` when the sketch has none."""
        if self.sets is None:
            raise ValueError(
                f"{caller}: parameter 'sketch' must carry {what} sets; got a Sketch without "
                f"sets. Build it with {built_by}."
            )
        sets = ShingleSets(
            np.ascontiguousarray(self.sets.hashes, dtype=np.uint64),
            np.ascontiguousarray(self.sets.offsets, dtype=np.int64),
        )
        sets.require_sets(caller, "sketch")
        return sets

    @staticmethod
    def concat(parts: Sequence[Sketch]) -> Sketch:
        """Stack batch sketches in order into one corpus sketch."""
        if not parts:
            return Sketch(np.zeros(0, np.int64))
        if len(parts) == 1:
            return parts[0]
        arrays = {k: np.concatenate([p.arrays[k] for p in parts]) for k in parts[0].arrays}
        sets = None
        if parts[0].sets is not None:
            sets = ShingleSets.concat([p.sets for p in parts])
        ragged = {k: np.concatenate([p.ragged[k] for p in parts]) for k in parts[0].ragged}
        identity = None
        if all(p.identity is not None for p in parts):
            identity = np.concatenate([p.identity for p in parts])
        return Sketch(np.concatenate([p.n_features for p in parts]), arrays, sets, ragged=ragged,
                      identity=identity)


@dataclass
class Matches:
    """What a method's corpus-wide stage returns (:meth:`Method.match`): one object, so
    the pipeline never reads side outputs off the method.

    Attributes
    ----------
    pairs : Pairs
        Scored, canonical pairs to cluster.
    outside_window : Pairs
        Pairs the method matched but its own time window keeps apart (Sanderson's 48
        hours); the corpus stage adds those of the run's window.
    oversized_docs : ndarray of int64
        Documents that sat in a candidate bucket too large to pair fully (likely
        templates or boilerplate).
    stats : dict
        The method's counters (candidates, retrievals...).
    pruning : dict of str -> int
        What the method skipped in a way that can cost recall (ngram's ``max_df``
        shingles), for the run's summary.
    """

    pairs: Pairs
    outside_window: Pairs = field(default_factory=Pairs.empty)
    oversized_docs: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    stats: dict = field(default_factory=dict)
    pruning: dict = field(default_factory=dict)


class Method(ParamsMixin, ABC):
    """Base class of lexical and neural de-duplication methods.

    Subclasses set ``name``, accept only keyword arguments in ``__init__`` and store each
    under its own name, validate them in ``__init__`` (the public boundary), and implement
    :meth:`sketch` and :meth:`find_pairs`.
    """

    name: ClassVar[str]
    #: Parameters that only :meth:`find_pairs` reads. Sweeping them (e.g. a threshold)
    #: can reuse one corpus sketch; see :meth:`sketch_key`.
    pair_params: ClassVar[frozenset[str]] = frozenset()

    def sketch_key(self) -> str:
        """A string equal for two instances exactly when their sketches are equal: the
        parameters except :attr:`pair_params`, as sorted JSON."""
        import json

        params = {k: v for k, v in self.get_params().items() if k not in self.pair_params}
        return json.dumps([self.name, params], sort_keys=True, default=str)

    @abstractmethod
    def sketch(self, texts: Sequence[str]) -> Sketch:
        """Summaries of one batch of raw texts (a pure function of the batch)."""

    @abstractmethod
    def find_pairs(self, sketch: Sketch) -> Pairs:
        """Scored candidate pairs over a whole corpus sketch, canonical (left < right)."""

    def match(self, sketch: Sketch, *, dates: np.ndarray | None = None) -> Matches:
        """The corpus-wide stage as the pipeline runs it: :meth:`find_pairs` plus what
        the method knows about the run, in one :class:`Matches`. ``dates``
        (datetime64[s], NaT where unknown) reach the methods that read them
        (Sanderson's window, the verifier's date features); others ignore them."""
        pairs = self.find_pairs(sketch)
        return Matches(pairs, oversized_docs=self._oversized_docs(), stats=dict(self._stats()),
                       pruning=dict(self.__dict__.get("pruning_") or {}))

    def _oversized_docs(self) -> np.ndarray:
        # Estimator-style learned attributes, read by the method itself.
        value = self.__dict__.get("oversized_docs_")
        return np.empty(0, np.int64) if value is None else np.asarray(value, np.int64)

    def _stats(self) -> dict:
        return self.__dict__.get("stats_") or {}

    def recommended_cluster(self) -> dict[str, Any]:
        """The clustering this method was measured best with on held-out data, as
        :class:`~neardup.pipeline.ClusterConfig` fields (e.g. ``{"algorithm": "leiden",
        "resolution": 0.4}``), or ``{}`` for connected components. A run's default
        clustering (``ClusterConfig(algorithm="auto")``) applies it."""
        return {}

    # -- keyed contract (see the module docstring) ---------------------------------------

    @property
    def candidate_arrays(self) -> tuple[str, ...] | None:
        """Names of the :attr:`Sketch.arrays` that :meth:`score_candidates` reads, or None
        when the method does not implement the keyed contract (its corpus-wide stage then
        runs in memory through :meth:`find_pairs`)."""
        return None

    @property
    def bucket_all_pairs_upto(self) -> int:
        """Key groups of at most this many documents are linked by all their pairs; larger
        ones by a star plus a chain (see :mod:`neardup.graph.buckets`). 0: always a star
        (keys that imply a match, such as exact hashes)."""
        return 0

    def candidate_keys(self, sketch: Sketch) -> CandidateKeys:
        """Keys of a batch sketch's comparable documents (``n_features > 0``)."""
        raise NotImplementedError(f"{type(self).__name__} has no keyed corpus stage")

    def score_candidates(
        self, left: dict[str, np.ndarray], right: dict[str, np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Scores (float32) and acceptance (bool) of candidate edges, given the rows of
        :attr:`candidate_arrays` of their two sides (row-aligned, one row per edge)."""
        raise NotImplementedError(f"{type(self).__name__} has no keyed corpus stage")

    @property
    def candidate_sets(self) -> bool:
        """Whether :meth:`score_candidate_rows` reads the documents' shingle sets
        (:attr:`Sketch.sets`); the stage then stores them ragged in its work directory."""
        return False

    @property
    def candidate_set_weights(self) -> bool:
        """Whether the stored :attr:`candidate_sets` carry a weight per element (weighted
        sets): the keyed sketch (:meth:`keyed_sketch`) then holds them as
        ``Sketch.ragged[SET_WEIGHTS]``, float64 aligned with ``Sketch.sets.hashes``; the
        stage stores them beside the sets (8 bytes per element) and hands them to
        :meth:`score_candidate_rows` as ``CandidateRows.set_weights``."""
        return False

    @property
    def candidate_dates(self) -> bool:
        """Whether :meth:`score_candidate_rows` reads the documents' dates."""
        return False

    @property
    def candidate_text_chars(self) -> int | None:
        """How many leading characters of each raw text :meth:`score_candidate_rows`
        reads (``CandidateRows.texts``), or None (the default) when it reads no text. The
        stage writes them to its work directory, so that no sketch carries text. With a
        vector contract too (rerank over embedding candidates), the vector stage scores
        the search's pairs above :attr:`vector_search`'s threshold with
        :meth:`score_candidate_rows` (texts, and dates when :attr:`candidate_dates`) and
        joins those it accepts."""
        return None

    @property
    def candidate_fixed_width(self) -> bool:
        """Whether verification reads the fixed-width :attr:`candidate_arrays` only (no
        sets, texts or dates) and keys need no statistics stage: rows an executor can
        ship as plain arrays (Ray's fixed-width path), and what rerank's keyed stage
        needs of its candidate method."""
        return (self.candidate_arrays is not None and not self.candidate_sets
                and not self.candidate_dates and self.candidate_text_chars is None
                and not self.corpus_statistics)

    @property
    def costly_verification(self) -> bool:
        """Whether :meth:`score_candidate_rows` costs far more per pair than a lookup (a
        learned scorer's features): the corpus stage then remembers the pairs it rejects,
        so that a pair met again under another key is not scored again. False (the
        default): checking again is as cheap as remembering."""
        return False

    @property
    def candidate_multisets(self) -> bool:
        """Whether the stored :attr:`candidate_sets` may repeat elements (term
        multisets, a term's count being its run length); otherwise they are checked to
        be sets."""
        return False

    @property
    def query_retrieval(self) -> bool:
        """Whether the method links documents by mutual retrieval of per-document queries
        (sanderson: ``retrieval_rows``, ``retrieve``, ``mutual``) rather than by key
        groups: the corpus stage then builds a term-sorted inverted index in its work
        directory and scores blocks of queries against it
        (:mod:`neardup.engine.retrieval`)."""
        return False

    def keyed_sketch(self, sketch: Sketch) -> Sketch:
        """The batch sketch the keyed stage keys and stores: by default ``sketch``
        itself; a fitted method adds what its statistics give (wminhash: ICWS samples)."""
        return sketch

    # -- statistics contract (see the module docstring) ---------------------------------

    @property
    def corpus_statistics(self) -> tuple[str, ...]:
        """Names of the document-frequency tables that must be counted over the whole
        corpus before a batch can be keyed (:meth:`with_statistics`); empty (the
        default) when the method needs none or is already fitted."""
        return ()

    def statistics_partial(self, sketch: Sketch) -> StatisticsPartial:
        """One batch sketch's share of :attr:`corpus_statistics`."""
        raise NotImplementedError(f"{type(self).__name__} needs no corpus statistics")

    def statistics_min_df(self, table: str, totals: dict[str, int]) -> int:
        """The smallest document frequency of ``table`` the weights read (given the
        corpus ``totals``); features below it are not stored and read as df 1. The
        default, 2: a feature in one document is the absent default."""
        return 2

    def with_statistics(self, stats: FeatureStatistics) -> Method:
        """A fitted copy of the method that weights features by ``stats`` (the method
        itself is unchanged)."""
        raise NotImplementedError(f"{type(self).__name__} needs no corpus statistics")

    def statistics_digest(self) -> str | None:
        """A fingerprint of fitted statistics (None when the method holds none), so that
        a resumed run never reuses stages keyed with other statistics."""
        return None

    @property
    def bucket_star_upto(self) -> int | None:
        """Key groups larger than this are linked by their chain alone (no star): keys
        so common that a star would compare unrelated documents (ngram's ``max_df``).
        None (the default): star plus chain at every size."""
        return None

    @property
    def candidate_keys_per_doc(self) -> int:
        """Typical candidate-key rows per document, for sizing the stage's partitions
        (when not given) so that one partition's keys fit its share of the memory limit."""
        return 40

    @property
    def bucket_skip_over(self) -> int | None:
        """Key groups larger than this are not linked at all (SpotSigs' ``max_df``:
        signatures that common never pair documents, as in its in-memory search). None
        (the default): every group is linked."""
        return None

    @property
    def bucket_edges_overlap(self) -> bool:
        """Whether two documents typically share many keys (inverted-index keys such as
        shingles, unlike LSH bands): the stage then removes repeated edges from each
        chunk of buckets before verifying, so a pair is checked once per chunk."""
        return False

    def overlap_bound(self, shared: np.ndarray, known_left: np.ndarray, known_right: np.ndarray,
                      size_left: np.ndarray, size_right: np.ndarray) -> np.ndarray | None:
        """With :attr:`bucket_edges_overlap`: which candidate edges can still reach the
        threshold, given ``shared`` (the key groups of at most
        :attr:`bucket_all_pairs_upto` documents, in this partition, that hold both) and
        ``known_*`` (each side's keys in such groups, singletons included; the others are
        unseen here). None (the default): all.
        """
        return None

    def overlap_min_shared(self, sizes: np.ndarray) -> np.ndarray | None:
        """With :attr:`bucket_edges_overlap`: the fewest elements (int64) any set must share
        with a set of each size in ``sizes`` to reach the threshold, at most the size (the
        keyed stage's prefix filter counts a pair only over keys early in both sets'
        orders: see :mod:`neardup.engine.overlap`). None (the default): no such bound, every
        key is counted."""
        return None

    def overlap_scores(self, inter: np.ndarray, size_left: np.ndarray,
                       size_right: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """With :attr:`bucket_edges_overlap`: the similarity (float64) and acceptance of
        pairs from their intersection and set sizes, exactly as :meth:`score_candidate_rows`
        would score them after merging their sets (the stage then scores pairs whose
        intersection it knows from its counts without reading them). None (the default):
        the method does not score from counts."""
        return None

    def keyed_pruning(self, stats: dict) -> dict[str, int]:
        """What the keyed stage skipped that can cost recall, named as the method's
        :attr:`Matches.pruning`, from the stage's counts (``capped_keys``: key groups over
        :attr:`bucket_star_upto`, linked by their chain alone)."""
        return {}

    def score_candidate_rows(
        self, rows: CandidateRows, left: np.ndarray, right: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Scores (float32) and acceptance (bool) of candidate edges ``(left[i],
        right[i])``, row positions in ``rows``. The default gathers the fixed-width rows
        and calls :meth:`score_candidates`."""
        return self.score_candidates({k: v[left] for k, v in rows.arrays.items()},
                                     {k: v[right] for k, v in rows.arrays.items()})

    # -- vector contract (see the module docstring) -------------------------------------

    @property
    def vector_search(self) -> VectorSearch | None:
        """How the method's rows are searched, or None when it has no vector contract (or
        its parameters ask for a search the vector stage does not do)."""
        return None

    def vector_rows(self, sketch: Sketch) -> tuple[np.ndarray, np.ndarray]:
        """The rows of a batch sketch to search: float32 (n_rows, d) L2-normalised rows in
        document order, and int64 (n_docs,) how many of them each document owns (0 for a
        document that is never paired)."""
        raise NotImplementedError(f"{type(self).__name__} has no vector contract")

    def link_bucket(self, keys: np.ndarray, docs: np.ndarray, payload: np.ndarray | None) -> Pairs | None:
        """Verified edges among rows sharing keys, or None (the default) to let the corpus
        stage link each key group as a star plus chain and verify those edges with
        :meth:`score_candidates`. ``keys``, ``docs``, ``payload`` are one key partition's
        rows, in any order."""
        return None


class SetKeyedMixin:
    """The keyed contract shared by the set-overlap methods (``ngram``, ``spotsigs``):
    every set element is a key, verification reads the stored sets (no fixed-width
    arrays), and key groups of up to ``min(max_df, KEYED_ALL_PAIRS_UPTO)`` documents are
    compared all-to-all, as their in-memory inverted index does. The class needs a
    ``max_df`` attribute."""

    #: Largest key group compared all-to-all in the keyed stage (bounds the pairs of a
    #: group: 1000 members, ~500k pairs, most dropped by the count bound).
    KEYED_ALL_PAIRS_UPTO = 1000

    @property
    def candidate_arrays(self) -> tuple[str, ...] | None:
        return ()

    @property
    def candidate_sets(self) -> bool:
        return True

    @property
    def bucket_all_pairs_upto(self) -> int:
        return min(self.max_df, self.KEYED_ALL_PAIRS_UPTO)


def init_parameters(cls: type[Method]) -> list[str]:
    """Names of the keyword parameters the method class ``cls`` accepts."""
    return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]


def build_method(cls: type[Method], name: str, params: dict[str, Any]) -> Method:
    """``cls(**params)`` for the method called ``name``; unknown parameters raise a
    ValueError listing the accepted ones. The registry (:func:`neardup.methods.make_method`)
    and rerank's candidate methods build through this."""
    accepted = init_parameters(cls)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(
            f"make_method: method {name!r} does not take parameter(s) {', '.join(unknown)}; "
            f"it accepts: {', '.join(accepted)}."
        )
    return cls(**params)
