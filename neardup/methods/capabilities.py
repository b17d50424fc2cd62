"""What a method declares it can do, as a few frozen, typed specs.

A method exposes one :class:`Capabilities` (:attr:`neardup.methods.Method.capabilities`);
each field is a spec or None. The engines, the support matrix, the index and the CLI decide
what to run from these specs alone, then call the computing functions a spec promises:

* :class:`Verification` — what the verifier reads per document (fixed-width arrays, sets,
  set weights, dates, text) and whether a check is costly;
  ``score_candidate_rows`` (and ``score_candidates`` for fixed-width rows).
* :class:`KeyedCandidates` — candidates from equal keys and the bucket rule that links a
  key group; ``candidate_keys``, ``keyed_sketch``, ``keyed_pruning``, and
  ``link_bucket`` when :attr:`KeyedCandidates.links_buckets`, the query retrieval
  functions when :attr:`KeyedCandidates.query_retrieval`. Always with a Verification.
* :class:`VectorCandidates` — candidates from a cosine search of embedding rows;
  ``vector_rows``.
* :class:`CorpusStatistics` — document-frequency tables counted over the corpus before a
  batch can be keyed; ``statistics_partial``, ``statistics_min_df``, ``with_statistics``.
* :class:`OverlapScoring` — set-overlap keys whose pairs are scored from shared-key
  counts; ``overlap_bound``, ``overlap_scores`` and, with :attr:`OverlapScoring.prefix_filter`,
  ``overlap_min_shared``.
* :class:`Screening` — a cheap estimate that bounds each document's low-estimate pairs
  before a costly check; ``screen_candidate_rows`` and ``verify_screened_rows``.

Specs are values (equal when the declarations are equal), so they can be compared,
printed and tested; they hold no arrays, models or callables.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Capabilities", "CorpusStatistics", "KeyedCandidates", "OverlapScoring",
           "Screening", "VectorCandidates", "VectorSearch", "Verification"]


@dataclass(frozen=True)
class Verification:
    """The per-document rows a method's verifier reads (``score_candidate_rows``).

    Attributes
    ----------
    arrays : tuple of str
        Fixed-width :attr:`~neardup.methods.Sketch.arrays` stored per document.
    sets : bool
        The documents' shingle sets, stored ragged (offsets + values).
    set_weights : bool
        A float64 weight per set element (``Sketch.ragged[SET_WEIGHTS]`` of the keyed
        sketch), stored beside the sets.
    multisets : bool
        The stored sets may repeat elements (term multisets); otherwise checked as sets.
    dates : bool
        The documents' dates.
    text_chars : int or None
        Leading characters of each raw text read (None: no text). The stage writes them
        to its work directory, so no sketch carries text.
    costly : bool
        A check costs far more per pair than a lookup (a learned scorer): the stage then
        remembers rejected pairs so a pair met again under another key is not rescored.
    """

    arrays: tuple[str, ...] = ()
    sets: bool = False
    set_weights: bool = False
    multisets: bool = False
    dates: bool = False
    text_chars: int | None = None
    costly: bool = False

    def __post_init__(self) -> None:
        if (self.set_weights or self.multisets) and not self.sets:
            raise ValueError("Verification: set_weights and multisets need sets=True.")
        if self.text_chars is not None and self.text_chars <= 0:
            raise ValueError(f"Verification: text_chars must be positive or None; got {self.text_chars}.")

    @property
    def fixed_width(self) -> bool:
        """Whether only the fixed-width arrays are read (rows an executor ships as plain
        arrays)."""
        return not (self.sets or self.dates or self.text_chars is not None)


@dataclass(frozen=True)
class KeyedCandidates:
    """Candidates from documents sharing a key, and how a key group is linked.

    Attributes
    ----------
    all_pairs_upto : int
        Key groups of at most this many documents are linked by all their pairs; larger
        ones by a star plus a chain (:mod:`neardup.graph.buckets`). 0: always a star.
    star_upto : int or None
        Groups larger than this are linked by their chain alone (keys so common that a
        star would compare unrelated documents). None: star plus chain at every size.
    skip_over : int or None
        Groups larger than this are not linked at all. None: every group is linked.
    keys_per_doc : int
        Typical key rows per document, for sizing the stage's partitions.
    links_buckets : bool
        The method verifies inside each key group itself (``link_bucket``: SimHash's
        weak block keys) instead of the stage's star plus chain.
    query_retrieval : bool
        Documents are linked by mutual retrieval of per-document queries (sanderson:
        ``retrieval_rows``, ``retrieve``, ``mutual``), not by key groups.
    """

    all_pairs_upto: int = 0
    star_upto: int | None = None
    skip_over: int | None = None
    keys_per_doc: int = 40
    links_buckets: bool = False
    query_retrieval: bool = False

    def __post_init__(self) -> None:
        if self.all_pairs_upto < 0 or self.keys_per_doc < 0:
            raise ValueError("KeyedCandidates: all_pairs_upto and keys_per_doc must be >= 0.")

    @property
    def capped(self) -> bool:
        """Whether some key groups are linked by less than a star (chain only, or not)."""
        return self.star_upto is not None or self.skip_over is not None


@dataclass(frozen=True)
class VectorSearch:
    """How a method searches its embedding rows (the vector stage does the same).

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
        False when ``vector_rows`` gives several rows per document (chunks); the
        persistent index keeps one vector per document.
    """

    threshold: float
    k: int | None = None
    threads: int | None = None
    exact_limit: int | None = None
    index: str = "flat"
    nlist: int | None = None
    nprobe: int = 16
    seed: int = 0
    one_row_per_document: bool = True


#: The vector-candidates spec is the search it runs.
VectorCandidates = VectorSearch


@dataclass(frozen=True)
class CorpusStatistics:
    """Document-frequency tables counted over the whole corpus before a batch can be keyed
    (estimator style: ``with_statistics`` returns a fitted copy, whose own capabilities
    then declare no statistics).

    Attributes
    ----------
    tables : tuple of str
        Names of the tables to count (non-empty). Features below the table's
        ``statistics_min_df(table, totals)`` are not stored and read as df 1.
    """

    tables: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.tables:
            raise ValueError("CorpusStatistics: tables must name at least one table.")


@dataclass(frozen=True)
class OverlapScoring:
    """Set-overlap keys (every set element a key): two documents share many keys, so the
    stage removes repeated edges per chunk, drops pairs by ``overlap_bound`` and scores
    pairs from their shared-key counts with ``overlap_scores`` (the pair-count exchange,
    :mod:`neardup.engine.overlap`).

    Attributes
    ----------
    prefix_filter : bool
        ``overlap_min_shared`` gives the fewest shared elements a pair needs, so a pair is
        counted only over keys early in both sets' orders. False: every key is counted.
    """

    prefix_filter: bool = True


@dataclass(frozen=True)
class Screening:
    """Keyed candidates screened by a cheap estimate (``screen_candidate_rows``) before a
    costly check (``verify_screened_rows``): the pairs estimated at ``below`` or more are
    all checked; of those under it, each document keeps its ``keep`` highest, and a pair
    is checked when it is among the ``keep`` of either document. Low-estimate pairs, the
    ones whose number a document grows with the corpus, are then bounded at ``keep`` a
    document. The selection needs every partition's pairs before any is checked: the
    stage screens all key partitions first (:mod:`neardup.graph.partners`, :func:`neardup.engine.link.screen_partition`).

    Attributes
    ----------
    below : float
        Estimates under it are capped per document.
    keep : int
        Low-estimate partners kept a document (at least 1).
    """

    below: float
    keep: int

    def __post_init__(self) -> None:
        if self.keep < 1:
            raise ValueError(f"Screening: keep must be at least 1; got {self.keep}.")


@dataclass(frozen=True)
class Capabilities:
    """Everything a method declares, one spec (or None) per contract.

    Invariants (checked): keyed candidates and overlap scoring come with a verification
    (what the stage stores per document); overlap scoring, corpus statistics and
    screening with keyed candidates.
    """

    keyed: KeyedCandidates | None = None
    vectors: VectorSearch | None = None
    statistics: CorpusStatistics | None = None
    overlap: OverlapScoring | None = None
    verification: Verification | None = None
    screening: Screening | None = None

    def __post_init__(self) -> None:
        if self.keyed is not None and self.verification is None:
            raise ValueError("Capabilities: keyed candidates need a verification spec.")
        if (self.overlap is not None or self.statistics is not None
                or self.screening is not None) and self.keyed is None:
            raise ValueError("Capabilities: overlap scoring, corpus statistics and screening "
                             "need keyed candidates.")

    @property
    def reads(self) -> Verification:
        """The verification spec, or one that reads nothing."""
        return self.verification if self.verification is not None else _NOTHING

    @property
    def fixed_width(self) -> bool:
        """Keyed candidates verified from fixed-width arrays alone, keyed without corpus
        statistics: rows an executor ships as plain arrays (Ray's fixed-width path), the
        persistent index, and what rerank's keyed stage needs of its candidate method."""
        return (self.keyed is not None and self.reads.fixed_width
                and self.statistics is None)


_NOTHING = Verification()
