"""The CLI's outputs written from the workers: clusters, pairs and kept records cut by
shard and by range of component root; the driver gets counts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.engine.ray.link import spanning_forest
from neardup.engine.ray.positions import range_of, split_by, sum_count_dicts
from neardup.engine.ray.run import RayRun
from neardup.engine.ray.shards import SHARDED, RayInputs, Shard, ids_of, plan_shards
from neardup.engine.ray.tasks import completed, traced
from neardup.graph.edges import NO_DATE, Pairs
from neardup.graph.keep import KeepPolicy
from neardup.io.locations import Location
from neardup.io.outputs import OutputDirectory, write_part
from neardup.io.readers import ReaderConfig, kept_batches, part_record_batches, part_records

# -- distributed outputs (the CLI's --engine ray) -----------------------------------------


def _lookup(nodes: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index in sorted ``nodes`` of each of ``docs``, and whether it is there."""
    if nodes.size == 0:
        return np.zeros(docs.size, np.int64), np.zeros(docs.size, bool)
    at = np.minimum(np.searchsorted(nodes, docs), nodes.size - 1)
    return at, nodes[at] == docs


def _duplicate_facts_task(block: pa.Table, offsets: np.ndarray, bounds: np.ndarray,
                          keep_values: np.ndarray | None, *labels: dict) -> tuple:
    """One shard's documents that joined another (``labels``: the label ranges overlapping
    the shard) with their root, id and keep keys (length, date, and the keep policy's
    value from ``keep_values``, indexed by position, when it reads one), cut by range of
    the root (the assign tasks'). Returns the shard's count of empty documents first."""
    doc = offsets[block.column("shard").to_numpy()] + block.column("row").to_numpy()
    nodes = np.concatenate([np.zeros(0, np.int64)] + [x["node"] for x in labels])
    roots = np.concatenate([np.zeros(0, np.int64)] + [x["root"] for x in labels])
    at, inside = _lookup(nodes, doc)
    rows = np.flatnonzero(inside)
    root = roots[at[inside]]
    empty = int((block.column("n_features").to_numpy() == 0).sum())
    ids = ids_of(block.take(pa.array(rows)), doc[rows])
    value = (np.asarray(keep_values, np.float64)[doc[rows]] if keep_values is not None
             else np.full(rows.size, np.nan))
    return (empty, *split_by(range_of(root, bounds), bounds.size - 1, doc=doc[rows], root=root, id=ids,
                              length=block.column("length").to_numpy()[rows].astype(np.int64),
                              date=block.column("date").to_numpy()[rows].astype(np.int64), value=value))


def _forest_by_left_task(bounds: np.ndarray, result: dict) -> tuple:
    """A link result's forest edges cut by range of their left document."""
    left, right, score = (np.asarray(x) for x in result["forest"])
    return (int(left.size), *split_by(range_of(left, bounds), bounds.size - 1, left=left, right=right,
                                      score=score.astype(np.float32)))


def _forest_by_root_task(bounds: np.ndarray, labels: dict, *parts: dict) -> tuple:
    """One range's forest edges (by left document) cut by range of their component's root."""
    cat = {k: np.concatenate([np.zeros(0, t)] + [p[k] for p in parts])
           for k, t in (("left", np.int64), ("right", np.int64), ("score", np.float32))}
    at, _ = _lookup(labels["node"], cat["left"])
    root = labels["root"][at] if labels["node"].size else cat["left"]
    return (int(root.size), *split_by(range_of(root, bounds), bounds.size - 1, **cat))


@traced
def _assign_task(shard_starts: np.ndarray, clustering: dict, keep: KeepPolicy, pairs_path: Location | None,
                 method_name: str, n_facts: int, *parts: dict) -> tuple:
    """Cluster, size, representative and template flag of the joined documents whose root
    lies in one range (whole components: ``parts`` are their facts from every shard, then
    their forest edges), with the local engine's rules (graph.cluster.cluster_pairs with
    ``clustering``'s algorithm, resolution, seed, linkage, distance_threshold,
    max_cluster_size and oversized;
    graph.cluster.choose_representatives) and each cluster's smallest position as its id;
    writes the range's pairs (a spanning forest of the components' verified edges; every
    accepted pair for community detection, whose link results hold them all) to
    ``pairs_path``. Returns counts, then per shard the table of its joined documents."""
    from neardup.graph.cluster import canonical_labels, cluster_pairs, flag_oversized
    from neardup.graph.keep import KeepKeys, choose_representatives

    facts, edges = parts[:n_facts], parts[n_facts:]
    nodes = np.concatenate([np.zeros(0, np.int64)] + [f["doc"] for f in facts])
    by = np.argsort(nodes, kind="stable")
    nodes = nodes[by]
    roots = np.concatenate([np.zeros(0, np.int64)] + [f["root"] for f in facts])[by]
    lengths = np.concatenate([np.zeros(0, np.int64)] + [f["length"] for f in facts])[by]
    seconds = np.concatenate([np.zeros(0, np.int64)] + [f["date"] for f in facts])[by]
    keys = KeepKeys(positions=nodes, lengths=lengths,
                    dates=np.where(seconds == NO_DATE, np.datetime64("NaT"),
                                   seconds.astype("datetime64[s]")).astype("datetime64[s]"),
                    values=np.concatenate([np.zeros(0)] + [f["value"] for f in facts])[by])
    ids = np.concatenate([np.zeros(0, object)] + [f["id"] for f in facts])[by]
    edges = Pairs(*(np.concatenate([np.zeros(0, t)] + [e[k] for e in edges])
                    for k, t in (("left", np.int64), ("right", np.int64), ("score", np.float32))))
    algorithm = clustering["algorithm"]
    limits = {"max_cluster_size": clustering["max_cluster_size"], "oversized": clustering["oversized"]}
    if algorithm == "components":
        result = flag_oversized(canonical_labels(roots), **limits)
        pairs = spanning_forest(edges.left, edges.right, edges.score)
    else:
        # Whole components, numbered in position order as in the corpus-wide run: each
        # component's graph (and so its communities) is the one the local engine builds.
        pairs = edges.canonical()
        local = Pairs(np.searchsorted(nodes, pairs.left), np.searchsorted(nodes, pairs.right), pairs.score)
        result = cluster_pairs(local, nodes.size, method=algorithm, resolution=clustering["resolution"],
                               seed=clustering["seed"], linkage=clustering["linkage"],
                               distance_threshold=clustering["distance_threshold"], **limits)
    # A cluster's id is its smallest position (its component's root for components).
    smallest = np.full(int(result.labels.max()) + 1 if nodes.size else 0, np.iinfo(np.int64).max)
    np.minimum.at(smallest, result.labels, nodes)
    cluster_of, size, template = smallest[result.labels], result.sizes, result.oversized
    # The keys hold global positions, so every rule (and its tie-break) is the local one.
    representative = choose_representatives(cluster_of, keys, keep)
    # The id of each cluster's kept member, for --annotate's duplicate_of.
    reps = np.flatnonzero(representative)
    reps = reps[np.argsort(cluster_of[reps], kind="stable")]
    kept_of = ids[reps][np.searchsorted(cluster_of[reps], cluster_of)] if nodes.size else ids
    if pairs_path is not None and (len(pairs) or pairs_path.name == "part-00000.parquet"):
        write_part(pairs_path, pa.table({
            "id_a": pa.array(ids[np.searchsorted(nodes, pairs.left)].tolist(), pa.string()),
            "id_b": pa.array(ids[np.searchsorted(nodes, pairs.right)].tolist(), pa.string()),
            "score": pa.array(pairs.score, pa.float32()),
            "method": pa.array([method_name] * len(pairs), pa.string()),
            "outside_window": pa.array(np.zeros(len(pairs), bool)),
        }))
    cluster_sizes = np.unique(cluster_of, return_counts=True)[1] if nodes.size else np.zeros(0, np.int64)
    counts = {"dropped": int((~representative).sum()),
              "documents_in_duplicate_clusters": int((size > 1).sum()),
              "duplicate_clusters": int((cluster_sizes > 1).sum()),
              "largest_cluster": int(cluster_sizes.max()) if cluster_sizes.size else 0,
              "template_documents": int(template.sum()), "pairs": len(pairs), "documents": int(nodes.size)}
    by_shard = split_by(range_of(nodes, shard_starts), shard_starts.size - 1, doc=nodes, cluster=cluster_of,
                         size=size, representative=representative, template=template, kept=kept_of)
    return (counts, *by_shard)


def _joined_table(parts: Sequence[dict]) -> dict:
    """One shard's joined documents from every assign task, sorted by position."""
    table = {k: np.concatenate([np.zeros(0, t)] + [p[k] for p in parts])
             for k, t in (("doc", np.int64), ("cluster", np.int64), ("size", np.int64),
                          ("representative", bool), ("template", bool), ("kept", object))}
    order = np.argsort(table["doc"], kind="stable")
    return {k: v[order] for k, v in table.items()}


def _write_clusters_task(block: pa.Table, offsets: np.ndarray, path: Location, *parts: dict) -> int:
    """One shard's rows of the clusters table, written to ``path``."""
    table = _joined_table(parts)
    doc = offsets[block.column("shard").to_numpy()] + block.column("row").to_numpy()
    n = doc.size
    cluster, size = doc.copy(), np.ones(n, np.int64)
    representative, template = np.ones(n, bool), np.zeros(n, bool)
    index, dup = _lookup(table["doc"], doc)
    for name, out in (("cluster", cluster), ("size", size), ("representative", representative),
                      ("template", template)):
        out[dup] = table[name][index[dup]]
    status = np.where(block.column("n_features").to_numpy() > 0, "ok", "empty")
    write_part(path, pa.table({
        "id": pa.array(ids_of(block, doc).tolist(), pa.string()), "cluster": pa.array(cluster),
        "cluster_size": pa.array(size), "representative": pa.array(representative),
        "status": pa.array(status.tolist(), pa.string()), "template": pa.array(template)}))
    return n


def _write_kept_task(shard: Shard, reader: ReaderConfig, base: int, path: Location, annotate: bool,
                     *parts: dict) -> int:
    """One shard's kept documents (full records, re-read from the input) written to
    ``path``; nothing written when it keeps none. ``annotate``: every record, with its
    cluster, cluster_size, is_representative and duplicate_of (neardup.io.writers)."""
    from contextlib import closing

    from neardup.io.writers import annotated_records, annotation_columns

    table = _joined_table(parts)
    dropped = table["doc"][~table["representative"]]
    sharded = shard.kind in SHARDED
    if shard.kind == "parquet" and not annotate:  # Arrow in, Arrow out: the columns' types kept
        doc = base + np.arange(shard.stop - shard.start, dtype=np.int64)
        kept = list(kept_batches(part_record_batches(shard.path, reader, start=shard.start,
                                                     stop=shard.stop), ~np.isin(doc, dropped)))
        if kept:
            write_part(path, pa.Table.from_batches(kept))
        return sum(batch.num_rows for batch in kept)
    stream = part_records(shard.path, shard.kind, reader, start=shard.start if sharded else 0,
                          stop=shard.stop if sharded else None, full=True)
    records, position = [], 0
    with closing(stream):
        for _row, _line, record in stream:
            doc = base + position
            position += 1
            at = np.searchsorted(dropped, doc)
            if not annotate and at < dropped.size and dropped[at] == doc:
                continue
            records.append(record)
    if annotate and records:
        doc = base + np.arange(len(records), dtype=np.int64)
        index, joined = _lookup(table["doc"], doc)
        cluster, size = doc.copy(), np.ones(doc.size, np.int64)
        representative = np.ones(doc.size, bool)
        kept = np.full(doc.size, None, object)
        for name, out in (("cluster", cluster), ("size", size), ("representative", representative),
                          ("kept", kept)):
            out[joined] = table[name][index[joined]]
        kept[representative] = None
        records = list(annotated_records(records, annotation_columns(cluster, size, representative, kept)))
    if records:
        write_part(path, pa.Table.from_pylist(records))
    return len(records)


def _outside_by_shard_task(shard_starts: np.ndarray, side: str, *sources: dict) -> tuple:
    """Time-window rejects (``sources``: link results, or earlier outputs of this task)
    cut by the shard of their ``side`` document."""
    cat = {}
    for k, i, t in (("left", 0, np.int64), ("right", 1, np.int64), ("score", 2, np.float32)):
        cat[k] = np.concatenate([np.zeros(0, t)] + [np.asarray(s["outside"][i] if "outside" in s else s[k], t)
                                                    for s in sources])
    if any("id_a" in s for s in sources):
        cat["id_a"] = np.concatenate([np.zeros(0, object)] + [s["id_a"] for s in sources])
    return (int(cat["left"].size), *split_by(range_of(cat[side], shard_starts), shard_starts.size - 1, **cat))


def _outside_ids_task(block: pa.Table | None, offsets: np.ndarray, shard_starts: np.ndarray,
                      path: Location | None, method_name: str, *parts: dict) -> tuple:
    """Ids of one shard's documents on the time-window rejects that name them: the left
    ids first (then the rejects go on, cut by shard of the right document), the right ids
    second (``path`` given: the rejects are written there, sorted)."""
    side = "left" if path is None else "right"
    cat = {k: np.concatenate([np.zeros(0, t)] + [p[k] for p in parts])
           for k, t in (("left", np.int64), ("right", np.int64), ("score", np.float32))}
    if side == "right":
        cat["id_a"] = np.concatenate([np.zeros(0, object)] + [p["id_a"] for p in parts])
    found = np.zeros(0, object)
    if block is not None:
        doc = offsets[block.column("shard").to_numpy()] + block.column("row").to_numpy()
        order = np.argsort(doc, kind="stable")
        at = np.searchsorted(doc[order], cat[side])
        found = ids_of(block, doc)[order][at] if cat[side].size else found
    if side == "left":
        cat["id_a"] = found
        return (0, *split_by(range_of(cat["right"], shard_starts), shard_starts.size - 1, **cat))
    if cat["left"].size:
        order = np.lexsort((cat["right"], cat["left"]))
        write_part(path, pa.table({
            "id_a": pa.array(cat["id_a"][order].tolist(), pa.string()),
            "id_b": pa.array(found[order].tolist(), pa.string()),
            "score": pa.array(cat["score"][order], pa.float32()),
            "method": pa.array([method_name] * order.size, pa.string()),
            "outside_window": pa.array(np.ones(order.size, bool))}))
    return (int(cat["left"].size), None)


def write_outputs(run: RayRun, *, clusters_out=None, pairs_out=None, out=None,
                  max_cluster_size: int | None = None, oversized: str = "flag",
                  keep: str | KeepPolicy = "longest", algorithm: str = "components", resolution: float = 1.0,
                  seed: int = 0, linkage: str = "average", distance_threshold: float = 0.2,
                  keep_values: np.ndarray | None = None,
                  annotate: bool = False, storage_options: dict | None = None) -> dict[str, Any]:
    """Write a finished Ray run's outputs as directories of Parquet files, from the
    workers: ``clusters_out`` (id, cluster, cluster_size, representative, status,
    template; one row per document, one file per shard; ``cluster`` is the input position
    of the cluster's first document), ``pairs_out`` (id_a, id_b, score, method,
    outside_window: a spanning forest of the verified edges, or every accepted pair when
    ``algorithm`` is not "components", one file per range of component roots, then
    the time-window rejects, one file per shard) and ``out`` (the
    kept documents' full records, one file per shard). Each directory is written beside
    its final path and renamed into place (an :class:`~neardup.io.outputs.OutputDirectory`;
    paths may be URLs, written by the workers with ``storage_options``). No process holds every joined document: the
    components' labels, facts and forest edges are cut by range of root, one assign
    task per range (:func:`_assign_task`); the driver receives only counts. Returns the
    run summary (as :meth:`neardup.pipeline.Result.summary`).

    ``algorithm``, ``resolution``, ``seed``, ``linkage``, ``distance_threshold``,
    ``max_cluster_size`` and ``oversized`` are those of :func:`neardup.graph.cluster_pairs`;
    community detection and HAC run per component inside the assign tasks (neither joins
    two components), and need a run made with ``every_edge=True``. ``keep``: the
    keep policy (:mod:`neardup.graph.keep`), whose values per document, if it reads any,
    are ``keep_values`` (by input position). ``annotate``: ``out`` holds every record with
    its cluster columns (:func:`neardup.io.writers.annotation_columns`), none removed."""
    import ray

    keep = keep if isinstance(keep, KeepPolicy) else KeepPolicy(rule=keep)
    values_ref = ray.put(np.asarray(keep_values, np.float64)) if keep_values is not None else None

    if not isinstance(run.source, RayInputs):
        raise ValueError("write_outputs: the run must read its inputs from files (RayInputs)")
    if (algorithm != "components") != run.every_edge:
        raise ValueError(
            f"write_outputs: algorithm={algorithm!r} needs a run made with every_edge="
            f"{algorithm != 'components'} (community detection and HAC read every accepted pair, "
            "components a spanning forest); got a run with every_edge="
            f"{run.every_edge}.")
    clustering = {"algorithm": algorithm, "resolution": resolution, "seed": seed, "linkage": linkage,
                  "distance_threshold": distance_threshold, "max_cluster_size": max_cluster_size,
                  "oversized": oversized}
    bounds, labels = run.bounds, run.label_refs
    ranges = len(labels)
    shards = plan_shards(run.source, run.config.shard_rows)
    n_shards = len(shards)
    shard_starts = np.append(run.offsets, run.n_docs).astype(np.int64)
    live = [s for s in range(n_shards) if run.fact_refs[s] is not None]
    # The label ranges that hold each shard's positions.
    lo = np.searchsorted(bounds, run.offsets, side="right") - 1
    hi = np.searchsorted(bounds, shard_starts[1:], side="left")
    facts_task = ray.remote(_duplicate_facts_task).options(num_returns=ranges + 1)
    facts = {s: facts_task.remote(run.fact_refs[s], run.offsets, bounds, values_ref,
                                  *labels[max(lo[s], 0):max(hi[s], lo[s] + 1)]) for s in live}
    by_left = ray.remote(_forest_by_left_task).options(num_returns=ranges + 1)
    by_root = ray.remote(_forest_by_root_task).options(num_returns=ranges + 1)
    left_parts = [by_left.remote(bounds, r)[1:] for r in run.link_refs]
    root_parts = [by_root.remote(bounds, labels[c], *[p[c] for p in left_parts])[1:] for c in range(ranges)]
    del left_parts
    tmp_of = {}
    for name, path in (("clusters", clusters_out), ("pairs", pairs_out), ("out", out)):
        if path is not None:
            tmp_of[name] = OutputDirectory(name, path, storage_options)
            tmp_of[name].prepare()
    try:
        assign = ray.remote(_assign_task).options(num_returns=n_shards + 1)
        assigned = [assign.remote(run.config.trace_memory, shard_starts, clustering, keep,
                                  tmp_of["pairs"].part(f"part-{a:05d}.parquet") if "pairs" in tmp_of else None,
                                  run.method.name, len(live), *[facts[s][1 + a] for s in live],
                                  *[p[a] for p in root_parts])
                    for a in range(ranges)]
        del root_parts
        pending = []
        if "clusters" in tmp_of:
            write = ray.remote(_write_clusters_task)
            pending += [write.remote(run.fact_refs[s], run.offsets, tmp_of["clusters"].part(f"part-{s:05d}.parquet"),
                                     *[x[1 + s] for x in assigned]) for s in live]
            if not live:  # an empty corpus: an empty table
                write_part(tmp_of["clusters"].part("part-00000.parquet"), _empty_clusters())
        if "out" in tmp_of:
            kept = ray.remote(_write_kept_task)
            pending += [kept.remote(shards[s], run.source.reader, int(run.offsets[s]),
                                    tmp_of["out"].part(f"part-{s:05d}.parquet"), annotate,
                                    *[x[1 + s] for x in assigned])
                        for s in live]
        if "pairs" in tmp_of and run.outside_edges:
            # Time-window rejects: ids from the shards of their left, then right documents.
            cut = ray.remote(_outside_by_shard_task).options(num_returns=n_shards + 1)
            ids = ray.remote(_outside_ids_task)
            by_left = [cut.remote(shard_starts, "left", r)[1:] for r in run.link_refs]
            named = [ids.options(num_returns=n_shards + 1).remote(
                run.fact_refs[s], run.offsets, shard_starts, None, run.method.name, *[p[s] for p in by_left])[1:]
                for s in range(n_shards)]
            pending += [ids.options(num_returns=2).remote(
                run.fact_refs[s], run.offsets, shard_starts,
                tmp_of["pairs"].part(f"outside-{s:05d}.parquet"), run.method.name, *[p[s] for p in named])[0]
                for s in range(n_shards)]
            del by_left, named
        with run.bar("writing", len(assigned) + len(live) + len(pending), "tasks") as advance:
            assign_counts = completed(ray, [x[0] for x in assigned], advance)
            empty = sum(completed(ray, [facts[s][0] for s in live], advance))
            completed(ray, pending, advance)
        counts = sum_count_dicts(assign_counts)
        largest = max([c["largest_cluster"] for c in assign_counts], default=0)
        run.stats["assign"] = {"ranges": ranges, "peak_task_bytes": max(c["peak_bytes"] for c in assign_counts),
                               "largest_range_documents": max(c["documents"] for c in assign_counts)}
        for directory in tmp_of.values():  # all written: now move them into place
            directory.commit()
    except BaseException:
        for directory in tmp_of.values():  # a failed run leaves no temporary part behind
            directory.discard()
        raise
    n_clusters = run.n_docs - int(counts.get("dropped", 0))
    return {
        "documents": run.n_docs,
        "clusters": n_clusters,
        "duplicates_removed": run.n_docs - n_clusters,
        "documents_in_duplicate_clusters": int(counts.get("documents_in_duplicate_clusters", 0)),
        "duplicate_clusters": int(counts.get("duplicate_clusters", 0)),
        "largest_cluster": largest or min(run.n_docs, 1),
        "empty_documents": int(empty),
        "template_documents": int(counts.get("template_documents", 0)),
        "pairs": int(counts.get("pairs", 0)) if run.every_edge else run.forest_edges,
        **({"pairs_outside_time_window": run.outside_edges} if run.outside_edges else {}),
    }


def _empty_clusters() -> pa.Table:
    return pa.table({"id": pa.array([], pa.string()), "cluster": pa.array([], pa.int64()),
                     "cluster_size": pa.array([], pa.int64()), "representative": pa.array([], pa.bool_()),
                     "status": pa.array([], pa.string()), "template": pa.array([], pa.bool_())})
