"""The Ray driver: :class:`RayRun` plans the tasks of each stage, waits for them and
keeps the distributed results; :func:`run_ray_stage` is the corpus stage's entry point."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa

from neardup.engine.components import CorpusStageOutput
from neardup.engine.link import exchanges_pair_counts
from neardup.engine.local import supports_corpus_stage
from neardup.engine.ray.components import COMPONENTS_MEMORY, identity_links, join_components
from neardup.engine.ray.connection import RayConfig, connect, import_ray
from neardup.engine.ray.exchange import pair_bounds, reduce_exchange
from neardup.engine.ray.keyed import (
    bucket_keys_task,
    bucket_task,
    default_partitions,
    fit_statistics,
    label_lookup_task,
    sketch_task,
    wave_plan,
)
from neardup.engine.ray.link import link_task, merge_link_results, screen_task
from neardup.engine.ray.positions import sum_count_dicts
from neardup.engine.ray.retrieval import mutual_retrieval, token_sketch_task
from neardup.engine.ray.rows import gather_task, gathered_names
from neardup.engine.ray.shards import SHARDED, ids_of, RayInputs, Shard, estimate_docs, memory_shards, plan_shards
from neardup.engine.ray.tasks import collect_tables, completed, no_progress, ray_error
from neardup.engine.ray.vectors import (
    build_ivf_task,
    candidate_pairs_task,
    embed_task,
    split_pairs_task,
    train_ivf_task,
    vector_search_task,
    verify_partitions,
)
from neardup.engine.vectors import supports_vector_stage
from neardup.graph.edges import NO_DATE
from neardup.graph.partners import PartnerTable
from neardup.io.batch import DocumentBatch
from neardup.io.readers import ReaderConfig
from neardup.methods.base import Method
from neardup.progress import StageTimer, progress_bar


def run_ray_stage(
    source: RayInputs | Iterable[DocumentBatch],
    method: Method,
    *,
    config: RayConfig = RayConfig(),
    time_window_hours: float | None = None,
    timer: StageTimer | None = None,
    progress: bool | None = None,
    every_edge: bool = False,
) -> CorpusStageOutput:
    """The corpus stage on Ray (see the module docstring).

    ``source`` is either :class:`RayInputs` (the workers read the files) or document
    batches from this process (shipped to the cluster's object store batch by batch, for
    the in-memory API). Returns what :func:`~neardup.engine.run_corpus_stage` returns;
    collecting its per-document facts (ids, lengths, dates, roots) is the only step
    proportional to the corpus, and :func:`write_outputs` avoids even that. ``progress``
    as the local engine's: bars on stderr (None: when it is a terminal) for the sketch
    tasks, the link (or search) tasks with the components rounds as their status, and
    the components of a run without waves, advanced as the tasks finish. ``every_edge``:
    keep every accepted pair (for Leiden, Louvain or HAC), not only a spanning forest.
    """
    run = RayRun(source, method, config=config, time_window_hours=time_window_hours,
                 timer=timer, progress=progress, every_edge=every_edge)
    run.execute()
    return run.stage_output()


class RayRun:
    """One Ray de-duplication: the distributed datasets and the driver's merge state.

    After :meth:`execute`: ``docs`` (the sketch tasks' per-document facts as a materialized
    Ray dataset, None for an empty corpus; ``fact_refs`` the same per shard), ``offsets``
    (global position of each shard's first document), ``stats``, ``link_refs`` (each
    link or search task's forest and time-window rejects) and the components:
    ``bounds`` (C ranges of positions) and ``label_refs`` (per range, its documents that
    joined another, sorted, and their roots: the component's smallest position). The
    driver fetches those only when asked (``nodes``, ``node_roots``, ``forest``,
    ``outside``: the Python API's :meth:`stage_output`); :func:`write_outputs` leaves
    them in the cluster.

    ``every_edge`` (community detection, HAC): the link tasks and the exchange's reduce
    skip no candidate for joining documents already joined and keep every accepted pair
    (the local engine's ``every_edge``), all partitions in one wave (later waves would
    only skip what earlier ones joined); ``forest`` is then every accepted pair (mutual
    retrieval's pairs are all of them anyway), and :func:`write_outputs` clusters each
    component from them.
    """

    def __init__(self, source, method: Method, *, config: RayConfig = RayConfig(),
                 time_window_hours: float | None = None, timer: StageTimer | None = None,
                 progress: bool | None = None, every_edge: bool = False) -> None:
        caps = method.capabilities
        if caps.keyed is None and caps.vectors is None:
            raise ValueError(
                f"run: method {method.name!r} with these parameters has neither a keyed corpus "
                "stage nor a vector stage, which engine='ray' needs; supported: exact, minhash, "
                "simhash, ngram, spotsigs, rerank, and retsim, retsim-partial, biencoder with "
                "index 'auto', 'flat' or 'ivf' (not 'hnsw'), clustered by components. Use "
                "engine='local' or 'memory'."
            )
        self.source, self.method, self.config = source, method, config
        self.window = time_window_hours
        self.timer = timer or StageTimer()
        self.progress = progress
        self.every_edge = every_edge
        #: Per shard of an input file, in input order: ``source``, ``first`` (its first row
        #: in the file), ``documents`` and ``digest`` (:class:`~neardup.io.identity.TextsDigest`).
        self.input_texts: list[dict] = []
        if every_edge and not (supports_corpus_stage(method, "leiden")
                               or supports_vector_stage(method, "leiden")):
            raise ValueError(
                f"run: engine='ray' clusters method {method.name!r} by connected components only "
                "(the other clusterings need every accepted pair, which its out-of-core stage "
                "does not keep). Use engine='local' or 'memory' for them.")

    def execute(self) -> None:
        ray = import_ray()
        connect(self.config.address)
        try:
            self._execute(ray)
        except Exception as exc:  # a worker's InputError comes back wrapped by Ray
            error = ray_error(exc)
            if error is exc:
                raise
            raise error from None

    def _execute(self, ray) -> None:
        method, timer = self.method, self.timer
        memory = None
        if isinstance(self.source, RayInputs):
            shards = plan_shards(self.source, self.config.shard_rows)
            reader = self.source.reader
            self.has_dates = reader.date_field is not None or any(s.kind == "reuters" for s in shards)
        else:
            shards, memory, self.has_dates = memory_shards(self.source)
            reader = ReaderConfig()
        if self.window is not None and not self.has_dates:
            from neardup.engine.facts import time_window_without_dates

            raise ValueError(time_window_without_dates(self.window))
        self.n_shards = len(shards)
        self._fetched = None
        self.components_stats: list[dict] = []
        if method.capabilities.statistics is not None:  # wminhash: keys weighted by corpus-wide counts
            with timer.stage("statistics"), self.bar("counting statistics", len(shards), "shards") as advance:
                method = self.method = fit_statistics(ray, method, shards, memory, reader,
                                                      max(self.config.partitions or len(shards), 1), advance)
        if method.capabilities.keyed is None:  # an embedding method: the vector stage
            self._execute_vector(ray, shards, memory, reader)
            return
        if method.capabilities.keyed.query_retrieval:  # sanderson: mutual retrieval
            self._execute_retrieval(ray, shards, memory, reader)
            return
        partitions = self.config.partitions or default_partitions(estimate_docs(shards, memory, reader),
                                                                   method.capabilities.fixed_width)
        self.partitions = partitions
        method_ref = ray.put(method)
        sketch = ray.remote(sketch_task).options(num_returns=partitions + 3)
        with timer.stage("sketch"), self.bar("sketching", len(shards), "shards") as advance:
            out = [sketch.remote(i, shard, method_ref, reader, memory, partitions)
                   for i, shard in enumerate(shards)]
            done = completed(ray, [o[0] for o in out], advance)
        sizes = np.array([x[:4] for x in done], np.float64).reshape(-1, 4)
        counts = sizes[:, 0].astype(np.int64)
        self.n_keys = int(sizes[:, 1].sum())
        self.sketch_cpu = float(sizes[:, 2].sum())
        self.key_row_bytes = int(sizes[:, 3].sum())
        self._set_shards(shards, counts, [o[1] for o in out], [x[4] for x in done])
        arrays = [o[2] for o in out]
        keys = [list(o[3:]) for o in out]
        del out
        names = gathered_names(method, self.window)
        options = {"memory_limit": self.config.memory_limit, "has_dates": self.has_dates,
                   "every_edge": self.every_edge}
        bucket = ray.remote(bucket_task).options(num_returns=len(shards) + 1)
        # Set-overlap methods (ngram, spotsigs) through the pair-count exchange: each link
        # task also returns its records per range of left documents and its unseen keys
        # per shard; the ranges are reduced after the last wave.
        exchange = exchanges_pair_counts(method)
        n_ranges = partitions if exchange else 0
        if exchange:
            options["exchange"] = (pair_bounds(self.n_docs, n_ranges), np.append(self.offsets, self.n_docs))
        if method.capabilities.screening is not None and self.n_docs:
            # Every partition screened before any is linked: the selection needs each
            # document's pairs from all of them. The link tasks read the selection from
            # the object store.
            options["selected"] = ray.put(self._screen(ray, keys, arrays, names, method_ref, options))
        record_parts, unseen_parts = [], []
        link = ray.remote(link_task).options(num_returns=2 + (n_ranges + len(shards) if exchange else 0))
        waves = [list(range(partitions))] if self.every_edge else wave_plan(partitions, self.config.first_wave)
        labels = None  # (bounds, per range the labels) of the waves so far
        totals: dict[str, float] = {}
        self.wave_stats, self.link_refs, self.exchange_stats = [], [], None
        with timer.stage("pairs"), self.bar("linking", partitions + n_ranges, "partitions") as advance:
            for wave in waves if self.n_docs else []:
                if not wave:
                    continue
                parts = [[keys[s][p] for s in range(len(shards))] for p in wave]
                for part in keys:  # the tasks hold them now; freed as they finish
                    for p in wave:
                        part[p] = None
                if labels is None:
                    buckets = [bucket.remote(self.offsets, method_ref, None, *rows) for rows in parts]
                else:
                    # The earlier wave's roots of each partition's documents, looked up in
                    # the label ranges that hold them (no task holds them all).
                    bounds, label_refs = labels
                    prep = ray.remote(bucket_keys_task).options(num_returns=len(label_refs) + 1)
                    lookup = ray.remote(label_lookup_task).options(num_returns=len(wave) + 1)
                    preps = [prep.remote(self.offsets, bounds, method.capabilities.fixed_width, *rows)
                             for rows in parts]
                    answers = [lookup.remote(ref, *[pr[1 + c] for pr in preps])[1:]
                               for c, ref in enumerate(label_refs)]
                    buckets = [bucket.remote(self.offsets, method_ref, pr[0], *[a[j] for a in answers])
                               for j, pr in enumerate(preps)]
                    del preps, answers
                del parts
                linked = self._gather_and_link(ray, link, arrays, names, buckets, method_ref, options)
                del buckets
                wave_counts = sum_count_dicts(completed(ray, [out[0] for out in linked], advance))
                results = [out[1] for out in linked]
                if exchange:
                    record_parts += [out[2:2 + n_ranges] for out in linked]
                    unseen_parts += [out[2 + n_ranges:] for out in linked]
                self.link_refs.extend(results)
                # The components so far: the earlier waves' (as stars) and this wave's forests.
                sources = (labels[1] if labels is not None else []) + results
                edges = int(wave_counts.get("partition_forest_edges", 0)) + (
                    self.components_stats[-1]["joined_documents"] if labels is not None else 0)
                labels = self._components(ray, sources, edges, advance)
                self.wave_stats.append({"partitions": len(wave), **{
                    k: round(v, 3) for k, v in wave_counts.items()}})
                totals = sum_count_dicts([totals, wave_counts])
            if exchange and self.n_docs:
                reduced = reduce_exchange(ray, self.offsets, counts, arrays, names, options, method_ref, self.window,
                                          n_ranges, record_parts, unseen_parts)
                del record_parts, unseen_parts
                reduce_counts = sum_count_dicts(completed(ray, [out[0] for out in reduced], advance))
                results = [out[1] for out in reduced]
                self.link_refs.extend(results)
                edges = int(reduce_counts.get("partition_forest_edges", 0)) + self.components_stats[-1][
                    "joined_documents"]
                labels = self._components(ray, labels[1] + results, edges, advance)
                self.exchange_stats = {"ranges": n_ranges, **{k: round(v, 3) for k, v in reduce_counts.items()}}
                totals = sum_count_dicts([totals, reduce_counts])
            if self.n_docs:
                same, n_same = identity_links(ray, arrays, self.offsets, self.shard_docs, self._components_budget())
                self.link_refs.extend(same)
                earlier = labels[1] if labels is not None else []
                edges = n_same + (self.components_stats[-1]["joined_documents"] if labels is not None else 0)
                labels = self._components(ray, earlier + same, edges, advance)
        with timer.stage("cluster"):
            if labels is None:
                labels = self._components(ray, [], 0, no_progress)
            self.bounds, self.label_refs = labels
            self._finish(totals, partitions)

    def _screen(self, ray, keys: list, arrays: list, names: tuple, method_ref, options: dict) -> np.ndarray:
        """The Screen step (:mod:`neardup.graph.partners`): a bucket task and a screen task
        per key partition (``keys``: per shard, its key rows' refs by partition), their
        low-estimate pairs offered to one
        :class:`~neardup.graph.partners.PartnerTable` on the driver (12 bytes a partner
        a document) as the tasks finish; the selected pair codes."""
        shards, partitions = len(keys), len(keys[0]) if keys else 0
        bucket = ray.remote(bucket_task).options(num_returns=shards + 1)
        screen = ray.remote(screen_task).options(num_returns=2)
        buckets = [bucket.remote(self.offsets, method_ref, None, *[keys[s][p] for s in range(shards)])
                   for p in range(partitions)]
        screened = self._gather_and_link(ray, screen, arrays, names, buckets, method_ref, options)
        del buckets
        table = PartnerTable(self.n_docs, self.method.capabilities.screening.keep)
        with self.bar("screening", partitions, "partitions") as advance:
            self.screen_stats = sum_count_dicts(completed(ray, [c for c, _ in screened], advance))
            for _, low in screened:
                table.offer(*ray.get(low))
        return table.selected_codes()

    def _gather_and_link(self, ray, link, arrays: list, names: tuple, buckets: list, method_ref,
                         options: dict) -> list:
        """Partitions linked by ``link`` (a link task each): ``buckets`` holds per partition
        the refs a bucket task returns (its edges, then per shard the rows it needs); a
        gather task per shard (``arrays``: its per-document arrays) ships each partition
        those rows of ``names``. Returns the link tasks' refs."""
        gather = ray.remote(gather_task).options(num_returns=len(buckets))
        rows = [gather.remote(arrays[s], names, *[b[1 + s] for b in buckets]) for s in range(len(arrays))]
        rows = [r if isinstance(r, list) else [r] for r in rows]
        return [link.remote(b[0], method_ref, self.window, options, *[r[j] for r in rows])
                for j, b in enumerate(buckets)]

    def _verify_candidates(self, ray, pair_refs: list, n_pairs: int, arrays: list, method_ref,
                           text_bytes: int) -> tuple[list, dict]:
        """The search tasks' candidate pairs (``pair_refs``, ``n_pairs`` in all, repeats
        included) of a method that scores them, verified as the keyed stage verifies its
        edges (see :func:`candidate_pairs_task`): as many verify partitions as the memory
        limit needs for a partition's pairs and texts (``text_bytes``: the shards' texts
        in all), the shards (``arrays``) shipping each the texts of its documents.
        Returns the link tasks' results (forests, pairs the time window kept apart) and
        their counts."""
        from neardup.engine.budget import default_memory_limit

        budget = self.config.memory_limit or default_memory_limit()
        parts = self.partitions = verify_partitions(n_pairs, text_bytes / max(self.n_docs, 1), budget)
        split = ray.remote(split_pairs_task).options(num_returns=parts)
        cut = [split.remote(parts, ref) for ref in pair_refs]
        cut = [c if isinstance(c, list) else [c] for c in cut]
        prepare = ray.remote(candidate_pairs_task).options(num_returns=len(arrays) + 1)
        buckets = [prepare.remote(self.offsets, *[c[p] for c in cut]) for p in range(parts)]
        del cut
        options = {"memory_limit": self.config.memory_limit, "has_dates": self.has_dates,
                   "every_edge": self.every_edge}
        link = ray.remote(link_task).options(num_returns=2)
        with self.bar("verifying", parts, "partitions") as advance:
            linked = self._gather_and_link(ray, link, arrays, gathered_names(self.method, self.window),
                                           buckets, method_ref, options)
            del buckets
            counts = sum_count_dicts(completed(ray, [c for c, _ in linked], advance))
        return [r for _, r in linked], counts

    def _set_shards(self, shards: list[Shard], counts: np.ndarray, fact_refs: list,
                    digests: list[str]) -> None:
        # What each shard of an input file held, for the report (in-memory batches: none).
        self.input_texts = [
            {"source": shard.path, "first": shard.start if shard.kind in SHARDED else 0,
             "documents": int(n), "digest": digest}
            for shard, n, digest in zip(shards, counts, digests) if shard.kind != "memory"]
        self.shard_docs = counts
        self.offsets = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
        self.n_docs = int(counts.sum())
        self.fact_refs = [ref if n else None for ref, n in zip(fact_refs, counts)]

    def _components(self, ray, sources: list, edges: int, advance) -> tuple[np.ndarray, list]:
        """:func:`~neardup.engine.ray.components.join_components` with this run's budget, its
        statistics kept."""
        bounds, labels, stats = join_components(
            ray, sources, edges, self.n_docs, self._components_budget(), self.config.trace_memory, advance)
        self.components_stats.append(stats)
        return bounds, labels

    def _components_budget(self) -> int:
        return self.config.components_memory or COMPONENTS_MEMORY

    def bar(self, description: str, total: int | None, unit: str):
        """A progress bar of this run (shown as ``progress`` says)."""
        return progress_bar(description, total=total, unit=unit, enabled=self.progress)

    def _execute_retrieval(self, ray, shards: list[Shard], memory: list | None, reader: ReaderConfig) -> None:
        """Mutual retrieval on Ray (:mod:`neardup.engine.ray.retrieval`): sketch tasks that
        keep each shard's token multisets and posting rows, the inverted index by range of
        term, a retrieve task per shard, one mutual task; then identity links and the
        distributed components over its pairs."""
        from neardup.engine.budget import default_memory_limit

        budget = self.config.memory_limit or default_memory_limit()
        method_ref = ray.put(self.method)
        sketch = ray.remote(token_sketch_task).options(num_returns=4)
        with self.timer.stage("sketch"), self.bar("sketching", len(shards), "shards") as advance:
            out = [sketch.remote(i, shard, method_ref, reader, memory, budget) for i, shard in enumerate(shards)]
            done = completed(ray, [o[0] for o in out], advance)
        info = np.array([x[:3] for x in done], np.float64).reshape(-1, 3)
        self.sketch_cpu, self.n_keys, self.wave_stats, self.partitions = float(info[:, 2].sum()), 0, [], 0
        self._set_shards(shards, info[:, 0].astype(np.int64), [o[1] for o in out], [x[3] for x in done])
        with self.timer.stage("pairs"), self.bar("retrieving", len(shards), "shards") as advance:
            result, counts = mutual_retrieval(ray, method_ref, out, self.offsets, self.n_docs, int(info[:, 1].sum()),
                                              budget, self.window, self.has_dates, advance)
            totals = ray.get(counts)
        with self.timer.stage("cluster"), self.bar("components", None, "") as advance:
            same, n_same = identity_links(ray, [o[2] for o in out], self.offsets, self.shard_docs,
                                          self._components_budget())
            self.link_refs = [result, *same]
            self.bounds, self.label_refs = self._components(
                ray, self.link_refs, int(totals["partition_forest_edges"]) + n_same, advance)
            self._finish(totals, 0)
        self.stats["retrieval"] = {k: int(v) for k, v in totals.items() if k != "retrieval_cpu_s"}
        self.stats["task_cpu_s"]["retrieval"] = round(totals["retrieval_cpu_s"], 2)

    def _execute_vector(self, ray, shards: list[Shard], memory: list | None, reader: ReaderConfig) -> None:
        """The vector stage on Ray: one embed task per input shard (its rows stay in the
        object store as one row shard), the shared IVF centroids and per-shard IVF
        indexes when the index is approximate, one search task per row shard, and the
        keyed stage's distributed components over their forests. A method that scores its
        candidates has them verified by the keyed stage's link tasks between the search
        and the components (:meth:`_verify_candidates`)."""
        from neardup.engine.budget import default_memory_limit
        from neardup.engine.vectors import resolve_index
        from neardup.graph.similarity import ivf_nlist, search_margin

        method, timer = self.method, self.timer
        search = method.capabilities.vectors
        budget = self.config.memory_limit or default_memory_limit()
        method_ref = ray.put(method)
        embed = ray.remote(embed_task).options(num_returns=5)
        with timer.stage("sketch"), self.bar("embedding", len(shards), "shards") as advance:
            out = [embed.remote(i, shard, method_ref, reader, memory) for i, shard in enumerate(shards)]
            info = completed(ray, [o[0] for o in out], advance)
        counts = np.array([x[0] for x in info], np.int64)
        row_counts = np.array([x[1] for x in info], np.int64)
        dim = max([x[2] for x in info], default=0)
        deviation = max([x[3] for x in info], default=0.0)
        self.sketch_cpu = float(sum(x[4] for x in info))
        text_bytes = int(sum(x[5] for x in info))
        self.n_keys, self.wave_stats, self.partitions = 0, [], 0
        self._set_shards(shards, counts, [o[1] for o in out], [x[6] for x in info])
        row_starts = np.concatenate(([0], np.cumsum(row_counts))).astype(np.int64)
        live = np.flatnonzero(row_counts > 0).tolist()
        row_shards = [(int(row_starts[s]), int(row_starts[s + 1])) for s in live]
        row_refs = [out[s][2] for s in live]
        owned_refs = [o[3] for o in out]
        array_refs = [o[4] for o in out]  # per shard: dates, text identities (and texts)
        scored = method.capabilities.reads.text_chars is not None
        date_refs = array_refs if self.window is not None and not scored else None
        del out
        n_rows = int(row_counts.sum())
        kind, k = resolve_index(search, n_rows)
        k = None if k is None else min(k, max(n_rows - 1, 1))
        floor = search.threshold - search_margin(max(dim, 1), deviation)
        trained, ivf_refs, extra = None, None, {}
        self.link_refs, totals, verified = [], {}, {}
        with timer.stage("pairs"), self.bar("searching", len(row_shards), "shards") as advance:
            if n_rows >= 2:
                if kind == "ivf":
                    nlist = ivf_nlist(n_rows, search.nlist)
                    trained = ray.remote(train_ivf_task).remote(row_shards, row_refs, n_rows, dim,
                                                                 nlist, search, budget)
                    build = ray.remote(build_ivf_task)
                    ivf_refs = [build.remote(trained, row_refs[j], row_shards[j][0], search.threads)
                                for j in range(len(row_shards))]
                    extra = {"nlist": nlist, "nprobe": min(search.nprobe, nlist)}
                task = ray.remote(vector_search_task).options(num_returns=2)
                results = [task.remote(i, row_shards, row_refs, owned_refs, date_refs, method_ref, k, floor,
                                       self.window, trained, ivf_refs, budget, self.every_edge)
                           for i in range(len(row_shards))]
                totals = sum_count_dicts(completed(ray, [c for c, _ in results], advance))
                self.link_refs = [r for _, r in results]
        if scored:  # the search found candidates, not joins
            pair_refs, self.link_refs = self.link_refs, []
            if totals.get("vector_pairs", 0):
                with timer.stage("pairs"):
                    self.link_refs, verified = self._verify_candidates(
                        ray, pair_refs, int(totals["vector_pairs"]), array_refs, method_ref, text_bytes)
                totals = sum_count_dicts([totals, verified])
            del pair_refs
        with timer.stage("cluster"), self.bar("components", None, "") as advance:
            same, n_same = identity_links(ray, array_refs, self.offsets, self.shard_docs,
                                                  self._components_budget()) if self.n_docs else ([], 0)
            self.link_refs = self.link_refs + same
            self.bounds, self.label_refs = self._components(
                ray, self.link_refs, int(totals.get("partition_forest_edges", 0)) + n_same, advance)
            self._finish(totals, 0)
        self.stats = {
            "rows": n_rows, "index": kind, "k": k, **extra, "shards": self.n_shards,
            "row_shards": len(row_shards), "candidate_pairs": totals.get("candidate_pairs", 0),
            "scored_pairs": totals.get("scored_pairs", 0), "forest_edges": self.forest_edges,
            "outside_window": self.outside_edges, "components": self.components_stats,
            "task_cpu_s": {"embed": round(self.sketch_cpu, 2),
                           "search": round(totals.get("search_cpu_s", 0.0), 2),
                           "components": round(sum(c["cpu_s"] for c in self.components_stats), 2)},
        }
        if scored:  # as the local stage counts them, and the verify partitions
            self.stats.update(verified_pairs=int(totals.get("verified_edges", 0)),
                              verify_partitions=self.partitions,
                              gathered_row_bytes=int(totals.get("gathered_row_bytes", 0)))
            self.stats["task_cpu_s"]["verify"] = round(totals.get("bucket_cpu_s", 0.0)
                                                       + totals.get("link_cpu_s", 0.0), 2)

    def _fetch(self) -> tuple:
        """The components and forests on the driver (once): nodes, roots, forest, outside."""
        if self._fetched is None:
            import ray

            labels = ray.get(self.label_refs)
            nodes = np.concatenate([np.zeros(0, np.int64)] + [x["node"] for x in labels])
            roots = np.concatenate([np.zeros(0, np.int64)] + [x["root"] for x in labels])
            forest, outside = merge_link_results(*ray.get(self.link_refs), every_edge=self.every_edge)
            self._fetched = (nodes, roots, forest, outside)
        return self._fetched

    nodes = property(lambda self: self._fetch()[0], doc="Sorted positions of joined documents.")
    node_roots = property(lambda self: self._fetch()[1], doc="Component root of each of ``nodes``.")
    forest = property(lambda self: self._fetch()[2],
                      doc="Verified edges joining components (Pairs); every accepted pair with every_edge.")
    outside = property(lambda self: self._fetch()[3], doc="Pairs the time window kept apart (Pairs).")

    def _finish(self, counts: dict, partitions: int) -> None:
        last = self.components_stats[-1]
        # A spanning forest joins each component with one edge fewer than its documents.
        self.forest_edges = last["joined_documents"] - last["components"]
        self.outside_edges = int(counts.get("outside_edges", 0))
        self.stats = {
            "candidate_keys": self.n_keys, "candidate_edges": counts.get("candidate_edges", 0),
            "verified_edges": counts.get("verified_edges", 0), "forest_edges": self.forest_edges,
            "shared_key_rows": counts.get("shared_key_rows", 0), "outside_window": self.outside_edges,
            "partitions": partitions, "shards": self.n_shards, "waves": self.wave_stats,
            "components": self.components_stats,
            # Bytes through the object store: key rows (sketch -> bucket), edges (bucket ->
            # link) and gathered rows (shards -> link); on a cluster of N nodes about
            # (N-1)/N of them move between nodes.
            "exchanged_bytes": {"key_rows": getattr(self, "key_row_bytes", 0),
                                "edges": int(counts.get("edge_bytes", 0)),
                                "gathered_rows": int(counts.get("gathered_row_bytes", 0))},
            # Key groups linked by their chain alone or not linked (the method's pruning
            # summary), summed over partitions as the local stage sums them.
            **({name: int(counts[name]) for name in ("capped_keys", "pruned_edges") if name in counts}),
            **({"exchange": self.exchange_stats} if getattr(self, "exchange_stats", None) else {}),
            **({"screen": {k: round(v, 3) for k, v in self.screen_stats.items()}}
               if getattr(self, "screen_stats", None) else {}),
            # CPU seconds inside the tasks (not their start-up, transfers or Ray's daemons).
            "task_cpu_s": {"sketch": round(self.sketch_cpu, 2),
                           "bucket": round(counts.get("bucket_cpu_s", 0.0), 2),
                           "link": round(counts.get("link_cpu_s", 0.0), 2),
                           "exchange": round(counts.get("exchange_cpu_s", 0.0), 2),
                           "components": round(sum(c["cpu_s"] for c in self.components_stats), 2)},
        }

    def roots(self) -> np.ndarray:
        """Root of every document (int64, shape (n_docs,)): a driver-side array."""
        roots = np.arange(self.n_docs, dtype=np.int64)
        roots[self.nodes] = self.node_roots
        return roots

    def stage_output(self) -> CorpusStageOutput:
        """Collect the per-document facts to the driver, in input order."""
        facts = collect_tables([r for r in self.fact_refs if r is not None],
                         ["shard", "row", "id", "length", "date", "n_features"])
        position = self.offsets[facts.column("shard").to_numpy()] + facts.column("row").to_numpy()
        order = np.argsort(position, kind="stable")
        facts = facts.take(pa.array(order))
        ids = ids_of(facts, np.arange(self.n_docs))
        dates = None
        if self.has_dates:
            seconds = facts.column("date").to_numpy()
            dates = np.where(seconds == NO_DATE, np.datetime64("NaT"),
                             seconds.astype("datetime64[s]")).astype("datetime64[s]")
        return CorpusStageOutput(
            ids=ids, lengths=facts.column("length").to_numpy().astype(np.int64),
            n_features=facts.column("n_features").to_numpy().astype(np.int64), dates=dates,
            roots=self.roots(), pairs=self.forest, outside_window=self.outside, stats=self.stats,
        )
