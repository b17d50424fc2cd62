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

What else a method can do it declares in one place, :attr:`Method.capabilities`: a
:class:`~neardup.methods.capabilities.Capabilities` of frozen, typed specs (see
:mod:`neardup.methods.capabilities`), each a spec or None:

* ``keyed`` (:class:`~neardup.methods.capabilities.KeyedCandidates`) — candidates from
  equal keys (exact hashes, LSH bands, SimHash blocks, shingles) and the rule that links a
  key group; the engine-independent corpus stage (:mod:`neardup.engine`) runs it out of
  core: :meth:`Method.candidate_keys` per batch sketch, :meth:`Method.keyed_sketch`,
  :meth:`Method.link_bucket` when the method links groups itself;
* ``verification`` (:class:`~neardup.methods.capabilities.Verification`) — the
  per-document rows the stage stores and fetches (:class:`CandidateRows`) for
  :meth:`Method.score_candidate_rows` (fixed-width arrays: :meth:`Method.score_candidates`);
* ``statistics`` (:class:`~neardup.methods.capabilities.CorpusStatistics`) — tables counted
  in one streaming pass (:meth:`Method.statistics_partial`, :meth:`Method.statistics_min_df`)
  before :meth:`Method.with_statistics` returns the fitted copy that keys batches;
* ``overlap`` (:class:`~neardup.methods.capabilities.OverlapScoring`) — set-overlap keys
  scored from shared-key counts (:meth:`Method.overlap_bound`, :meth:`Method.overlap_scores`,
  :meth:`Method.overlap_min_shared`);
* ``vectors`` (:class:`~neardup.methods.capabilities.VectorSearch`) — a cosine search of
  :meth:`Method.vector_rows`, shard by shard (:mod:`neardup.engine.vectors`).

The engines, the support matrix and the index decide what to run from these specs only.
A method's text normalization is the declared :attr:`Method.normalize`. Models are loaded
when a method is first used, never in its constructor.

Documents with ``n_features == 0`` (empty after normalization) are never paired.
"""

from __future__ import annotations

import dataclasses
import inspect
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from neardup._params import ParamsMixin
from neardup.graph.edges import Pairs
from neardup.methods.capabilities import (
    Capabilities,
    KeyedCandidates,
    OverlapScoring,
    VectorSearch,
    Verification,
)
from neardup.text.normalize import NormalizeConfig
from neardup.text.shingle import ShingleSets

__all__ = ["SET_WEIGHTS", "CandidateKeys", "CandidateRows", "Capabilities", "FeatureStatistics",
           "KeyedCandidates", "Matches", "Method", "OverlapScoring", "SetKeyedMixin", "Sketch",
           "StatisticsPartial", "VectorSearch", "Verification", "build_method",
           "init_parameters"]

#: Key of the per-element set weights in a keyed sketch's ``ragged`` arrays
#: (``Verification.set_weights``).
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
        Per table of ``CorpusStatistics.tables``: the batch's feature hashes, each
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


@dataclass
class CandidateRows:
    """The stored per-document data of a batch of documents, fetched by the corpus stage
    to verify a batch of candidate edges (only what the method declares it reads).

    Attributes
    ----------
    docs : ndarray of int64, shape (n,)
        Corpus positions of the documents, ascending; edges index rows by position here.
    arrays : dict of str -> ndarray
        The rows of ``Verification.arrays``, aligned with ``docs``.
    sets : ShingleSets or None
        The documents' shingle sets (``Verification.sets``), aligned with ``docs``.
    set_weights : ndarray of float64 or None
        The weight of each element of ``sets.hashes`` (same length and order), when
        ``Verification.set_weights``.
    texts : sequence of str, an object with ``take(positions) -> list[str]``, or None
        The documents' raw texts cut to ``Verification.text_chars``, aligned with
        ``docs`` (the corpus stage gives a lazy reader: ``take`` what is read).
    dates : ndarray of datetime64[s] or None
        The documents' dates (NaT where unknown) when ``Verification.dates``.
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

    #: The text normalization the method compares texts under (the lexical methods'
    #: ``normalize`` parameter); None: the method reads raw text. Identity checks
    #: (leakage, the index, pair types) normalize as the method does.
    normalize: NormalizeConfig | None = None

    def derived_params(self) -> dict[str, Any]:
        """Parameters the method derives from the given ones, as used (MinHash's LSH
        ``bands`` and ``rows``), for output metadata; ``{}`` by default."""
        return {}

    # -- what the method declares (neardup.methods.capabilities) --------------------------

    @property
    def capabilities(self) -> Capabilities:
        """The specs of the contracts the method implements with these parameters (and
        this fitted state). The default, none: the corpus-wide stage runs in memory
        through :meth:`find_pairs`."""
        return Capabilities()

    # -- computing functions the specs promise --------------------------------------------

    def candidate_keys(self, sketch: Sketch) -> CandidateKeys:
        """Keyed: keys of a batch sketch's comparable documents (``n_features > 0``)."""
        raise NotImplementedError(f"{type(self).__name__} has no keyed corpus stage")

    def keyed_sketch(self, sketch: Sketch) -> Sketch:
        """Keyed: the batch sketch the stage keys and stores: by default ``sketch``
        itself; a fitted method adds what its statistics give (wminhash: ICWS samples)."""
        return sketch

    def keyed_pruning(self, stats: dict) -> dict[str, int]:
        """Keyed: what the stage skipped that can cost recall, named as the method's
        :attr:`Matches.pruning`, from the stage's counts (``capped_keys``: key groups over
        the bucket rule's ``star_upto`` or ``skip_over``)."""
        return {}

    def link_bucket(self, keys: np.ndarray, docs: np.ndarray, payload: np.ndarray | None) -> Pairs:
        """Keyed with ``links_buckets``: verified edges among one key partition's rows
        (``keys``, ``docs``, ``payload`` in any order)."""
        raise NotImplementedError(f"{type(self).__name__} does not link key groups itself")

    def score_candidates(
        self, left: dict[str, np.ndarray], right: dict[str, np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Verification from fixed-width rows: scores (float32) and acceptance (bool) of
        candidate edges, given the rows of the declared arrays of their two sides
        (row-aligned, one row per edge)."""
        raise NotImplementedError(f"{type(self).__name__} has no keyed corpus stage")

    def score_candidate_rows(
        self, rows: CandidateRows, left: np.ndarray, right: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Verification: scores (float32) and acceptance (bool) of candidate edges
        ``(left[i], right[i])``, row positions in ``rows`` (what the verification spec
        declares). The default gathers the fixed-width rows and calls
        :meth:`score_candidates`."""
        return self.score_candidates({k: v[left] for k, v in rows.arrays.items()},
                                     {k: v[right] for k, v in rows.arrays.items()})

    def screen_candidate_rows(
        self, rows: CandidateRows, left: np.ndarray, right: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Screening: the cheap estimate (float32) of candidate edges and whether each
        passes it; the edges the stage selects then go to :meth:`verify_screened_rows`.
        :meth:`score_candidate_rows` must equal the two in turn."""
        raise NotImplementedError(f"{type(self).__name__} declares no screening")

    def verify_screened_rows(
        self, rows: CandidateRows, left: np.ndarray, right: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Screening: scores (float32) and acceptance of edges that passed
        :meth:`screen_candidate_rows`."""
        raise NotImplementedError(f"{type(self).__name__} declares no screening")

    def statistics_partial(self, sketch: Sketch) -> StatisticsPartial:
        """Statistics: one batch sketch's share of the declared tables."""
        raise NotImplementedError(f"{type(self).__name__} needs no corpus statistics")

    def statistics_min_df(self, table: str, totals: dict[str, int]) -> int:
        """Statistics: the smallest document frequency of ``table`` the weights read
        (given the corpus ``totals``); features below it are not stored and read as df 1.
        The default, 2: a feature in one document is the absent default."""
        return 2

    def with_statistics(self, stats: FeatureStatistics) -> Method:
        """Statistics: a fitted copy that weights features by ``stats`` (the method
        itself is unchanged)."""
        raise NotImplementedError(f"{type(self).__name__} needs no corpus statistics")

    def statistics_digest(self) -> str | None:
        """A fingerprint of fitted statistics (None when the method holds none), so that
        a resumed run never reuses stages keyed with other statistics."""
        return None

    def overlap_bound(self, shared: np.ndarray, known_left: np.ndarray, known_right: np.ndarray,
                      size_left: np.ndarray, size_right: np.ndarray) -> np.ndarray:
        """Overlap: which candidate edges can still reach the threshold, given ``shared``
        (the key groups of at most ``all_pairs_upto`` documents, in this partition, that
        hold both) and ``known_*`` (each side's keys in such groups, singletons included;
        the others are unseen here)."""
        raise NotImplementedError(f"{type(self).__name__} declares no overlap scoring")

    def overlap_min_shared(self, sizes: np.ndarray) -> np.ndarray:
        """Overlap with ``prefix_filter``: the fewest elements (int64) any set must share
        with a set of each size in ``sizes`` to reach the threshold, at most the size
        (see :mod:`neardup.engine.overlap`)."""
        raise NotImplementedError(f"{type(self).__name__} declares no prefix filter")

    def overlap_scores(self, inter: np.ndarray, size_left: np.ndarray,
                       size_right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Overlap: the similarity (float64) and acceptance of pairs from their
        intersection and set sizes, exactly as :meth:`score_candidate_rows` would score
        them after merging their sets."""
        raise NotImplementedError(f"{type(self).__name__} declares no overlap scoring")

    def vector_rows(self, sketch: Sketch) -> tuple[np.ndarray, np.ndarray]:
        """Vectors: the rows of a batch sketch to search: float32 (n_rows, d)
        L2-normalised rows in document order, and int64 (n_docs,) how many of them each
        document owns (0 for a document that is never paired)."""
        raise NotImplementedError(f"{type(self).__name__} has no vector contract")


class SetKeyedMixin:
    """The keyed contract shared by the set-overlap methods (``ngram``, ``spotsigs``):
    every set element is a key, verification reads the stored sets (no fixed-width
    arrays), key groups of up to ``min(max_df, KEYED_ALL_PAIRS_UPTO)`` documents are
    compared all-to-all, as their in-memory inverted index does, and pairs are scored
    from shared-key counts. The class needs ``max_df`` and ``threshold`` attributes."""

    #: Largest key group compared all-to-all in the keyed stage (bounds the pairs of a
    #: group: 1000 members, ~500k pairs, most dropped by the count bound).
    KEYED_ALL_PAIRS_UPTO = 1000

    def set_overlap_capabilities(self, *, keys_per_doc: int, star_upto: int | None = None,
                                 skip_over: int | None = None,
                                 prefix_filter: bool = True) -> Capabilities:
        """The capabilities of a set-overlap method with these bucket settings."""
        keyed = KeyedCandidates(all_pairs_upto=min(self.max_df, self.KEYED_ALL_PAIRS_UPTO),
                                star_upto=star_upto, skip_over=skip_over,
                                keys_per_doc=keys_per_doc)
        return Capabilities(keyed=keyed, overlap=OverlapScoring(prefix_filter=prefix_filter),
                            verification=Verification(sets=True))


def init_parameters(cls: type[Method]) -> list[str]:
    """Names of the keyword parameters the method class ``cls`` accepts."""
    return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]


def build_method(cls: type[Method], name: str, params: dict[str, Any]) -> Method:
    """``cls(**params)`` for the method called ``name``; unknown parameters raise a
    ValueError listing the accepted ones. A dict given for a parameter whose default is a
    settings dataclass (``shingle``, ``normalize``: what JSON, a tuning file or
    ``Method.get_params()`` spells) is built into that dataclass. The registry
    (:func:`neardup.methods.make_method`) and rerank's candidate methods build through this."""
    signature = inspect.signature(cls.__init__).parameters
    accepted = [p for p in signature if p != "self"]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(
            f"make_method: method {name!r} does not take parameter(s) {', '.join(unknown)}; "
            f"it accepts: {', '.join(accepted)}."
        )
    return cls(**{key: _settings_object(name, key, value, signature[key].default)
                  for key, value in params.items()})


def _settings_object(name: str, key: str, value: Any, default: Any) -> Any:
    """``value``, or the settings dataclass of ``default``'s type built from a dict of its
    fields; any other type there is refused by name, not left to fail inside the method."""
    if not dataclasses.is_dataclass(default) or isinstance(default, type):
        return value
    kind = type(default)
    if isinstance(value, kind):
        return value
    fields = [f.name for f in dataclasses.fields(kind)]
    unknown = sorted(set(value) - set(fields)) if isinstance(value, Mapping) else []
    if not isinstance(value, Mapping) or unknown:
        extra = f" (no field(s) {', '.join(map(str, unknown))})" if unknown else ""
        raise ValueError(
            f"make_method: method {name!r} parameter {key!r} must be a {kind.__name__} or a "
            f"dict of its fields ({', '.join(fields)}); got {value!r}{extra}.")
    return kind(**value)
