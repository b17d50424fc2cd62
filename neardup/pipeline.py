"""Compose the stages of a de-duplication run.

    read batches -> method.sketch (per batch) -> method.find_pairs (corpus) ->
    cluster_pairs -> choose representatives -> Result

The per-batch stage is a pure function of a :class:`~neardup.io.DocumentBatch`, so an
executor other than the local loop here (a process pool, Ray ``map_batches``) can run it
unchanged; only its outputs (sketches: fixed-size arrays per document) travel to the
corpus-wide stages. Raw text is never held beyond the batch being sketched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.engine import (
    CorpusStageConfig,
    run_corpus_stage,
    run_vector_stage,
)
from neardup.engine.facts import batch_identity, identity_pairs
from neardup.errors import check_choice
from neardup.graph.cluster import cluster_pairs
from neardup.graph.config import CLUSTER_ALGORITHMS, ClusterConfig
from neardup.params import ENGINES as EXECUTOR_NAMES
from neardup.graph.keep import KEEP_RULES, KeepKeys, KeepPolicy, choose_representatives
from neardup.graph.edges import Pairs, outside_time_window
from neardup.io.batch import DocumentBatch
from neardup.methods.base import Matches, Method, Sketch
from neardup.progress import StageTimer, timed_batches

__all__ = [
    "CLUSTER_ALGORITHMS",
    "ENGINES",
    "ClusterConfig",
    "CorpusSketch",
    "KEEP_RULES",
    "KeepPolicy",
    "Result",
    "result_from_stage",
    "run",
    "run_on_sketch",
    "sketch_corpus",
    "template_clusters",
]

#: "local": the keyed out-of-core corpus stage (:mod:`neardup.engine`) for methods that
#: have one, the out-of-core vector stage (:mod:`neardup.engine.vectors`) for the
#: embedding methods (exact search shard by shard), both clustered by connected
#: components; the in-memory stage otherwise.
#: "memory": always the in-memory stage (every candidate pair held and verified; needed
#: for community detection and HAC, and kept for comparison).
#: "ray": the same keyed stage distributed over a Ray cluster
#: (:mod:`neardup.engine.ray`; needs ``pip install 'neardup[ray]'``), same clusters
#: as "local"; only for methods with a keyed stage clustered by components.
ENGINES = EXECUTOR_NAMES

STATUS_OK = "ok"
STATUS_EMPTY = "empty"


@dataclass
class Result:
    """The outcome of a run, aligned with the input order.

    Attributes
    ----------
    ids : ndarray of object (str), shape (n_docs,)
    clusters : ndarray of int64, shape (n_docs,)
        Cluster id of each document; ids are 0..n_clusters-1, numbered by each cluster's
        first document in input order. Every document has exactly one.
    cluster_size : ndarray of int64, shape (n_docs,)
    representative : ndarray of bool, shape (n_docs,)
        Exactly one true per cluster: the document kept by de-duplication.
    status : ndarray of object (str), shape (n_docs,)
        "ok", or "empty" for documents with nothing to compare after normalization (they
        stay singletons).
    template : ndarray of bool, shape (n_docs,)
        Member of a cluster above ``max_cluster_size`` (likely template or boilerplate).
    pairs : Pairs
        Scored edges between document positions.
    method : str
    params : dict
        Method and clustering parameters, as written into output metadata.
    timings : dict of str -> float
        Seconds per stage.
    pair_types : ndarray of str, shape (n_pairs,), or None
        Duplicate type of each pair (``exact``, ``expanded``, ``corrected``, ``template``,
        ``near``; see :mod:`neardup.methods.pair_types`), when computed.
    template_groups : ndarray of int64, shape (n_docs,), or None
        The cluster each document had before oversized clusters were split (equal to
        ``clusters`` unless ``oversized="split"``); groups the template clusters in
        :meth:`template_clusters`.
    outside_window : Pairs
        Pairs the method matched but left out of the clustering because their dates
        differ by more than the time window (``ClusterConfig.time_window_hours``, or
        ``sanderson``'s own); reported separately.
    pruning : dict of str -> int
        What the method left out of its search that can cost recall (the method's
        ``pruning_``, e.g. ngram's ``max_df_shingles``, ``max_df_documents``), and
        ``documents_without_date`` when the input has dates; part of :meth:`summary`.
    """

    ids: np.ndarray
    clusters: np.ndarray
    cluster_size: np.ndarray
    representative: np.ndarray
    status: np.ndarray
    template: np.ndarray
    pairs: Pairs
    method: str
    params: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)
    pair_types: np.ndarray | None = None
    outside_window: Pairs = field(default_factory=Pairs.empty)
    template_groups: np.ndarray | None = None
    pruning: dict[str, int] = field(default_factory=dict)
    #: Whether any input document had a date (a time window could be used).
    has_dates: bool = False

    @property
    def n_docs(self) -> int:
        return int(self.clusters.shape[0])

    @property
    def n_clusters(self) -> int:
        return int(self.representative.sum())

    @property
    def representatives(self) -> np.ndarray:
        """Positions (int64) of the kept documents, in input order."""
        return np.flatnonzero(self.representative)

    def clusters_table(self) -> pa.Table:
        """One row per input document: id, cluster, cluster_size, representative, status,
        template."""
        return pa.table(
            {
                "id": pa.array(self.ids, pa.string()),
                "cluster": pa.array(self.clusters, pa.int64()),
                "cluster_size": pa.array(self.cluster_size, pa.int64()),
                "representative": pa.array(self.representative, pa.bool_()),
                "status": pa.array(self.status, pa.string()),
                "template": pa.array(self.template, pa.bool_()),
            }
        )

    def duplicate_of(self) -> np.ndarray:
        """Id of the kept member of each document's cluster (object, shape (n_docs,)),
        None for the kept members themselves."""
        kept = self.representatives
        kept_of = np.zeros(int(self.clusters.max()) + 1 if self.n_docs else 0, np.int64)
        kept_of[self.clusters[kept]] = kept
        out = np.asarray(self.ids, object)[kept_of[self.clusters]]
        out[self.representative] = None
        return out

    def annotations_table(self) -> pa.Table:
        """One row per input document, in input order: id and the columns ``--annotate``
        adds to each record (cluster, cluster_size, is_representative, duplicate_of)."""
        return pa.table({
            "id": pa.array(self.ids, pa.string()),
            "cluster": pa.array(self.clusters, pa.int64()),
            "cluster_size": pa.array(self.cluster_size, pa.int64()),
            "is_representative": pa.array(self.representative, pa.bool_()),
            "duplicate_of": pa.array(self.duplicate_of().tolist(), pa.string()),
        })

    def pairs_table(self) -> pa.Table:
        """One row per scored edge: id_a, id_b, score, method, type (when computed), and
        outside_window (true for date-window rejects, listed after the edges)."""
        p = Pairs.concat([self.pairs, self.outside_window])
        n_edges, n_outside = len(self.pairs), len(self.outside_window)
        columns = {
            "id_a": pa.array(self.ids[p.left], pa.string()),
            "id_b": pa.array(self.ids[p.right], pa.string()),
            "score": pa.array(p.score, pa.float32()),
            "method": pa.array([self.method] * len(p), pa.string()),
        }
        if self.pair_types is not None:
            columns["type"] = pa.array(self.pair_types.tolist(), pa.string())
        columns["outside_window"] = pa.array([False] * n_edges + [True] * n_outside, pa.bool_())
        return pa.table(columns)

    def template_clusters(self, examples: int = 3) -> list[dict[str, Any]]:
        """Clusters flagged as oversized (templates, boilerplate), largest first: ``cluster``,
        ``size`` and up to ``examples`` member ids. With ``oversized="split"`` the members
        are singletons in ``clusters`` but are still reported here, grouped as found."""
        if not self.template.any():
            return []
        return template_clusters(self.ids[self.template], self.template_groups[self.template],
                                 examples)

    def summary(self) -> dict[str, Any]:
        """Counts for the end-of-run report."""
        sizes = np.bincount(self.clusters) if self.n_docs else np.zeros(0, np.int64)
        return {
            "documents": self.n_docs,
            "clusters": self.n_clusters,
            "duplicates_removed": self.n_docs - self.n_clusters,
            "documents_in_duplicate_clusters": int((self.cluster_size > 1).sum()),
            "duplicate_clusters": int((sizes > 1).sum()),
            "largest_cluster": int(sizes.max()) if sizes.size else 0,
            "empty_documents": int((self.status == STATUS_EMPTY).sum()),
            "template_documents": int(self.template.sum()),
            "pairs": len(self.pairs),
            **({"pairs_outside_time_window": len(self.outside_window)} if len(self.outside_window) else {}),
            **(
                {f"pairs_{t}": int(n) for t, n in zip(*np.unique(self.pair_types, return_counts=True))}
                if self.pair_types is not None and self.pair_types.size
                else {}
            ),
            **self.pruning,
            **({"engine_fallback": self.params["engine_fallback"]}
               if "engine_fallback" in (self.params or {}) else {}),
        }



def template_clusters(ids: np.ndarray, groups: np.ndarray, examples: int = 3) -> list[dict[str, Any]]:
    """Flagged (oversized) clusters from their members' ids and groups, largest first:
    ``cluster``, ``size`` and up to ``examples`` member ids (first in input order). For
    :meth:`Result.template_clusters` and for outputs read back (a Ray run's directory)."""
    if not len(ids):
        return []
    order = np.argsort(groups, kind="stable")
    values, starts, counts = np.unique(groups[order], return_index=True, return_counts=True)
    out = [{"cluster": int(g), "size": int(n), "examples": ids[order[s:s + examples]].tolist()}
           for g, s, n in zip(values.tolist(), starts.tolist(), counts.tolist())]
    return sorted(out, key=lambda c: (-c["size"], c["cluster"]))


@dataclass
class CorpusSketch:
    """What the per-batch stage leaves of a corpus: no raw text.

    Attributes
    ----------
    ids : ndarray of object (str), shape (n_docs,)
    lengths : ndarray of int64, shape (n_docs,)
        Raw text length in characters (for choosing representatives).
    sources : ndarray of int32, shape (n_docs,)
        Index into ``source_names`` of the file each document came from.
    source_names : list of str
    sketch : Sketch
        The method's corpus sketch.
    dates : ndarray of datetime64[s], shape (n_docs,), or None
        Document dates (NaT where unknown); None when the input had none.
    identity : ndarray of uint64, shape (n_docs,), or None
        Each text's :func:`~neardup.text.identity.text_identity`: identical texts are
        always linked, and only they pass a time window. None: not kept (no such links).
    """

    ids: np.ndarray
    lengths: np.ndarray
    sources: np.ndarray
    source_names: list[str]
    sketch: Sketch
    dates: np.ndarray | None = None
    identity: np.ndarray | None = None

    @property
    def n_docs(self) -> int:
        return int(self.lengths.shape[0])


def sketch_corpus(
    batches: Iterable[DocumentBatch],
    method: Method,
    *,
    timer: StageTimer | None = None,
    progress: bool | None = None,
    total: int | None = None,
) -> CorpusSketch:
    """Run the per-batch stage (``method.sketch``) over every batch, in order."""
    timer = timer or StageTimer()
    ids: list[str] = []
    lengths: list[np.ndarray] = []
    sources: list[np.ndarray] = []
    dates: list[np.ndarray | None] = []
    source_names: dict[str, int] = {}
    sketches: list[Sketch] = []
    identity: list[np.ndarray] = []
    for batch in timed_batches(batches, timer, total=total, progress=progress):
        with timer.stage("sketch"):
            sketch = method.sketch(batch.texts)
            identity.append(batch_identity(batch, sketch))
            sketch.identity = None  # kept once, in the corpus sketch's own field
            sketches.append(sketch)
        n = len(batch)
        ids.extend(batch.ids)
        lengths.append(np.fromiter(map(len, batch.texts), np.int64, n))
        source = source_names.setdefault(batch.source, len(source_names))
        sources.append(np.full(n, source, dtype=np.int32))
        dates.append(batch.dates)
    sketch = Sketch.concat(sketches)
    corpus_dates = None
    if any(d is not None for d in dates):
        corpus_dates = np.concatenate(
            [d if d is not None else np.full(len(l), np.datetime64("NaT"), "datetime64[s]")
             for d, l in zip(dates, lengths)]
        ).astype("datetime64[s]")
    return CorpusSketch(
        ids=np.array(ids, dtype=object),
        lengths=np.concatenate(lengths) if lengths else np.zeros(0, np.int64),
        sources=np.concatenate(sources) if sources else np.zeros(0, np.int32),
        source_names=list(source_names),
        sketch=sketch,
        dates=corpus_dates,
        identity=np.concatenate(identity) if identity else np.zeros(0, np.uint64),
    )


def run(
    batches: Iterable[DocumentBatch],
    method: Method,
    *,
    cluster: ClusterConfig = ClusterConfig(),
    keep: str | KeepPolicy = "longest",
    keep_values: np.ndarray | None = None,
    progress: bool | None = None,
    total: int | None = None,
    reread: Callable[[], Iterable[DocumentBatch]] | None = None,
    engine: str = "local",
    corpus_stage: CorpusStageConfig | None = None,
    input_identity: Any = None,
    ray: Any = None,
) -> Result:
    """Run ``method`` over ``batches`` and cluster the result.

    Parameters
    ----------
    batches : iterable of DocumentBatch
        In input order; see :func:`neardup.io.read_corpus`.
    method : Method
    cluster : ClusterConfig
    keep : str or KeepPolicy, default "longest"
        Rule choosing each cluster's representative: one of :data:`KEEP_RULES`
        (:mod:`neardup.graph.keep` defines each), or a :class:`KeepPolicy`.
    keep_values : ndarray of float64, shape (n_docs,), or None
        Each document's value for a policy that reads one (a named field, or the filled
        fields of ``most-complete``: :func:`neardup.graph.keep.record_values`).
    progress : bool or None, default None
        Show a progress bar; None shows it when stderr is a terminal.
    total : int or None
        Number of documents, if known, for the progress bar.
    reread : callable or None, default None
        Returns the same batches again. When given, a second pass reads the texts of the
        paired documents (only those) to give every pair its duplicate type
        (``Result.pair_types``); raw text is never held for the whole corpus.
    engine : {"local", "memory"}, default "local"
        See :data:`ENGINES`. With "local", methods that have a keyed corpus stage
        (exact, minhash, simhash, ngram, rerank over MinHash) spill sketches and keys
        to a work directory and hold
        only per-document arrays, and the embedding methods (retsim, retsim-partial,
        biencoder with the flat or auto index) write their embeddings there and search
        them shard by shard; ``Result.pairs`` is then the spanning forest of verified
        edges that joined each cluster, not every matching pair (with ``cluster``
        Leiden, Louvain or HAC, which the keyed and vector stages run too: every accepted
        pair).
    corpus_stage : CorpusStageConfig or None
        Work directory, memory limit, partitions and resumption of that stage.
    input_identity : JSON-able, optional
        Identifies the input (e.g. file paths, sizes, modification times) so that a
        resumed work directory is refused for another input.
    ray : neardup.engine.ray.RayConfig or None
        Cluster address, partitions and shard size for ``engine="ray"``. With that engine
        ``batches`` may also be a :class:`~neardup.engine.ray.RayInputs` (files the
        workers read themselves); plain batches are shipped to the cluster one by one.
        ``reread`` (pair types) is not supported there.
    """
    from neardup.plan import RunSpec, plan, require

    keep = _policy("run", keep, keep_values)
    check_choice("run", "engine", engine, ENGINES)
    # One plan for every front door: which stage runs the method on this executor.
    planned = plan(RunSpec(method, cluster, engine, keep=keep))
    cluster, placed = planned.cluster, planned.placement
    timer = StageTimer()
    if engine == "ray":
        from neardup.engine.ray import RayConfig, run_ray_stage

        require(planned, "run")
        stage = run_ray_stage(batches, method, config=ray or RayConfig(),
                              time_window_hours=cluster.time_window_hours, timer=timer,
                              progress=progress, every_edge=cluster.needs_every_pair)
        return _result_from_stage(stage, method, cluster, keep, timer, engine="ray",
                                  keep_values=keep_values)
    # The out-of-core stages: keys for the lexical methods, shards of rows for embeddings.
    stage_runner = None
    if engine == "local" and placed.stage == "keyed":
        stage_runner = run_corpus_stage
    elif engine == "local" and placed.stage == "vector":
        stage_runner = run_vector_stage
    if stage_runner is not None:
        # Community detection needs every accepted pair, not the spanning forest.
        every_edge = {"every_edge": True} if cluster.needs_every_pair else {}
        stage = stage_runner(
            batches, method, config=corpus_stage or CorpusStageConfig(),
            time_window_hours=cluster.time_window_hours, input_identity=input_identity,
            timer=timer, progress=progress, total=total, **every_edge,
        )
        result = _result_from_stage(stage, method, cluster, keep, timer, keep_values=keep_values)
        if reread is not None:
            with timer.stage("pair types"):
                result.pair_types = pair_types(result, method, reread(), stage.dates,
                                               time_window_hours=cluster.time_window_hours)
        return result
    corpus = sketch_corpus(batches, method, timer=timer, progress=progress, total=total)
    result = run_on_sketch(corpus, method, cluster=cluster, keep=keep, keep_values=keep_values,
                           timer=timer)
    result.params["engine"] = "memory"
    if placed.fallback:
        # Not silent: the run summary and report say why the in-memory stage ran.
        result.params["engine_fallback"] = placed.reason
        import logging

        logging.getLogger("neardup").warning("engine 'local': %s", placed.reason)
    if reread is not None:
        with timer.stage("pair types"):
            result.pair_types = pair_types(result, method, reread(), corpus.dates,
                                           time_window_hours=cluster.time_window_hours)
    return result


def pair_types(
    result: Result,
    method: Method,
    batches: Iterable[DocumentBatch],
    dates: np.ndarray | None,
    *,
    time_window_hours: float | None = None,
) -> np.ndarray:
    """Duplicate type of each pair of ``result`` (edges first, then outside-window pairs),
    reading from ``batches`` only the texts of documents that appear in a pair. Pairs
    dated further apart than the run's ``time_window_hours`` (default: Sanderson's 48
    hours) are templates unless identical."""
    from neardup.methods.pair_types import classify_pairs
    from neardup.text import NormalizeConfig, normalize_batch

    pairs = Pairs.concat([result.pairs, result.outside_window])
    if len(pairs) == 0:
        return np.empty(0, dtype=object)
    needed = np.zeros(result.n_docs, dtype=bool)
    needed[pairs.left] = True
    needed[pairs.right] = True
    config = method.normalize or NormalizeConfig()
    texts: dict[int, str] = {}
    start = 0
    for batch in batches:
        positions = np.flatnonzero(needed[start : start + len(batch)])
        if positions.size:
            chosen = normalize_batch([batch.texts[i] for i in positions.tolist()], config)
            texts.update(zip((start + positions).tolist(), chosen))
        start += len(batch)
    window = {} if time_window_hours is None else {"time_window_hours": time_window_hours}
    types = classify_pairs(pairs, texts, dates=dates, cluster_sizes=result.cluster_size, **window)
    return np.asarray(types, dtype=object)


def _any_date(dates: np.ndarray | None) -> bool:
    if dates is None or not len(dates):
        return False
    values = np.asarray(dates)
    if np.issubdtype(values.dtype, np.datetime64):
        return bool((~np.isnat(values)).any())
    return True


def _policy(caller: str, keep: str | KeepPolicy, values: np.ndarray | None) -> KeepPolicy:
    """The checked :class:`KeepPolicy` of ``keep``, with the values it reads given."""
    if not isinstance(keep, KeepPolicy):
        check_choice(caller, "keep", keep, KEEP_RULES)
        keep = KeepPolicy(rule=keep)
    if keep.needs_values and values is None:
        raise ValueError(f"{caller}: keep policy {keep.name!r} needs keep_values (one value "
                         "per document, neardup.graph.keep.record_values)")
    return keep


def _representatives(labels: np.ndarray, lengths: np.ndarray, dates: np.ndarray | None,
                     keep: KeepPolicy, values: np.ndarray | None) -> np.ndarray:
    """The kept member of each cluster of a whole corpus (positions 0..n-1)."""
    keys = KeepKeys(positions=np.arange(labels.size, dtype=np.int64), lengths=lengths,
                    dates=dates, values=values)
    return choose_representatives(labels, keys, keep)


def _result_from_stage(stage, method: Method, cluster: ClusterConfig, keep: KeepPolicy, timer,
                       engine: str = "local", keep_values: np.ndarray | None = None) -> Result:
    with timer.stage("cluster"):
        from neardup.graph.cluster import canonical_labels, flag_oversized

        if cluster.algorithm == "components":
            clustering = flag_oversized(canonical_labels(stage.roots), cluster.max_cluster_size,
                                        cluster.oversized)
        else:  # the stage kept every accepted pair (every_edge)
            clustering = cluster_pairs(
                stage.pairs, len(stage.roots), method=cluster.algorithm,
                max_cluster_size=cluster.max_cluster_size, oversized=cluster.oversized,
                resolution=cluster.resolution, seed=cluster.seed, linkage=cluster.linkage,
                distance_threshold=cluster.distance_threshold)
        labels, sizes, oversized, groups = (clustering.labels, clustering.sizes,
                                            clustering.oversized, clustering.groups)
        representative = _representatives(labels, stage.lengths, stage.dates, keep, keep_values)
    status = np.where(stage.n_features > 0, STATUS_OK, STATUS_EMPTY).astype(object)
    return Result(
        ids=stage.ids,
        clusters=labels,
        cluster_size=sizes,
        representative=representative,
        status=status,
        template=oversized,
        template_groups=groups,
        pairs=stage.pairs,
        outside_window=stage.outside_window,
        has_dates=_any_date(stage.dates),
        method=method.name,
        params={"method": method.get_params(), "cluster": cluster.get_params(), "keep": keep.name,
                "engine": engine, "corpus_stage": stage.stats},
        timings=timer.seconds,
        pruning=_pruning(method.keyed_pruning(stage.stats), stage.dates),
    )


def result_from_stage(stage, method: Method, cluster: ClusterConfig, keep: KeepPolicy, timer,
                      engine: str = "local", keep_values: np.ndarray | None = None) -> Result:
    """The :class:`Result` of an out-of-core stage's output (local, or a Ray run's
    :meth:`~neardup.engine.ray.RayRun.stage_output`), clustered as ``cluster``
    (resolved) says."""
    return _result_from_stage(stage, method, cluster, keep, timer, engine=engine,
                              keep_values=keep_values)


def run_on_sketch(
    corpus: CorpusSketch,
    method: Method,
    *,
    cluster: ClusterConfig = ClusterConfig(),
    keep: str | KeepPolicy = "longest",
    keep_values: np.ndarray | None = None,
    timer: StageTimer | None = None,
) -> Result:
    """The corpus-wide stages of :func:`run` over an existing corpus sketch.

    ``corpus`` must come from :func:`sketch_corpus` with a method whose
    :meth:`~neardup.methods.Method.sketch_key` equals ``method``'s, so that sweeping
    pair-only parameters (thresholds) re-uses one sketch.
    """
    keep = _policy("run_on_sketch", keep, keep_values)
    cluster = cluster.resolved(method)
    timer = timer or StageTimer()
    n_docs = corpus.n_docs
    sketch = corpus.sketch
    if cluster.time_window_hours is not None and corpus.dates is None:
        # Before the pairs stage, which can be the longest (neural similarity search).
        raise ValueError(
            f"run: a time window (time_window_hours={cluster.time_window_hours!r}) needs "
            "document dates, and the input has none. Give the documents' dates "
            "(--date-field; date_field= in neardup.dedup) or drop the window."
        )
    with timer.stage("pairs"):
        matches = method.match(sketch, dates=corpus.dates) if n_docs else Matches(Pairs.empty())
        pairs, outside_window = matches.pairs, matches.outside_window
        if corpus.identity is not None:
            # Identical texts are linked whatever the method found (neardup.engine.facts).
            pairs = Pairs.concat([identity_pairs(corpus.identity), pairs]).canonical()
        if cluster.time_window_hours is not None:
            far = outside_time_window(pairs, corpus.dates, cluster.time_window_hours,
                                      corpus.identity)
            outside_window = Pairs.concat([outside_window, pairs.select(far)])
            pairs = pairs.select(~far)
    with timer.stage("cluster"):
        clustering = cluster_pairs(
            pairs,
            n_docs,
            method=cluster.algorithm,
            max_cluster_size=cluster.max_cluster_size,
            oversized=cluster.oversized,
            resolution=cluster.resolution,
            seed=cluster.seed,
            linkage=cluster.linkage,
            distance_threshold=cluster.distance_threshold,
        )
        representative = _representatives(clustering.labels, corpus.lengths, corpus.dates, keep,
                                          keep_values)
    status = np.where(sketch.n_features > 0, STATUS_OK, STATUS_EMPTY).astype(object)
    return Result(
        ids=corpus.ids,
        clusters=clustering.labels,
        cluster_size=clustering.sizes,
        representative=representative,
        status=status,
        template=clustering.oversized,
        template_groups=clustering.groups if clustering.groups is not None else clustering.labels,
        pairs=pairs,
        outside_window=outside_window,
        has_dates=_any_date(corpus.dates),
        method=method.name,
        params={"method": method.get_params(), "cluster": cluster.get_params(), "keep": keep.name},
        timings=timer.seconds,
        pruning=_pruning(matches.pruning, corpus.dates),
    )


def _pruning(pruning: dict, dates: np.ndarray | None) -> dict[str, int]:
    """The method's report of recall-costing pruning, plus the documents without a date
    when the input has dates (a time window never splits those)."""
    out = {k: int(v) for k, v in pruning.items()}
    if dates is not None:
        out["documents_without_date"] = int(np.isnat(dates).sum())
    return out
