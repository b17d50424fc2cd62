"""The link step on Ray: one key partition (or verify partition) linked by the local
engine's own linker, and link results merged on the driver."""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa

from neardup import faults
from neardup.engine.link import PartitionLinker
from neardup.engine.ray.exchange import RecordCollector
from neardup.engine.ray.positions import roots_of, unique_positions
from neardup.engine.ray.rows import shipped_rows, shipped_bytes, verify_step
from neardup.engine.ray.shards import IDENTITY
from neardup.engine.unionfind import UnionFind
from neardup.graph.edges import NO_DATE, Pairs, TimeWindow, code_pairs, pair_codes
from neardup.methods.base import Method


def link_task(edges: dict, method: Method, window_hours: float | None, options: dict, *rows: dict) -> tuple:
    """One key partition linked as the local engine links it (skip an edge whose documents
    are already joined, verify the others), with a union-find over the partition's
    documents seeded with the earlier wave's components (``edges["seed"]``). Returns its
    counts, then its result: forest edges, the pairs the time window kept apart, counts.
    With ``options["every_edge"]`` (community detection) nothing is skipped and the
    "forest" holds every accepted pair."""
    faults.checkpoint("ray-link")
    if "rows" in edges:
        return _link_rows(edges, method, window_hours, options, *rows)
    cpu = time.process_time()
    left, right, score, seed = edges["left"], edges["right"], edges["score"], edges["seed"]
    every_edge = options.get("every_edge", False)
    if every_edge and left.size:
        # Each candidate pair verified once here (a pair shares several keys: LSH bands);
        # pairs shared with other partitions are dropped at the merge.
        codes = pair_codes(np.minimum(left, right), np.maximum(left, right))
        first = np.sort(np.unique(codes, return_index=True)[1])
        left, right = left[first], right[first]
        score = score[first] if score is not None else None
    local = unique_positions(np.concatenate((left, right)))
    store = shipped_rows(local, rows, dates=method.capabilities.reads.dates and options["has_dates"])
    window = None
    if window_hours is not None and rows:
        window = TimeWindow.of(window_hours, np.concatenate([r["date"] for r in rows]),
                               np.concatenate([r[IDENTITY] for r in rows]))
    linker = PartitionLinker(method, local, store, window, uf=None, every_edge=every_edge)
    linker.step = verify_step(options, store.row_bytes)
    if seed is not None and local.size:
        # Documents of one earlier component start joined (not forest edges: the earlier
        # wave's forest holds them).
        roots = roots_of(local, seed)
        by = np.argsort(roots, kind="stable")
        same = np.flatnonzero(roots[by][1:] == roots[by][:-1])
        linker.uf.union(by[same], by[same + 1])
    linker.consider(left, right, score)
    forest, outside = linker.forest_pairs(), linker.outside_pairs()
    counts = {"bucket_cpu_s": edges["cpu_s"], "link_cpu_s": time.process_time() - cpu,
              "candidate_edges": edges["candidate_edges"], "edges_after_seed": int(left.size),
              "verified_edges": linker.counts["verified_edges"],
              "shared_key_rows": edges["shared_rows"], "linked_documents": int(local.size),
              "partition_forest_edges": int(forest.left.size), "outside_edges": int(outside.left.size),
              "gathered_row_bytes": shipped_bytes(rows),
              "edge_bytes": int(left.nbytes + right.nbytes + (score.nbytes if score is not None else 0))}
    return counts, {"forest": (forest.left, forest.right, forest.score),
                    "outside": (outside.left, outside.right, outside.score)}


def _partition_rows(edges: dict, method: Method, options: dict, rows: tuple) -> tuple:
    """A key partition's documents (global positions, ascending), its key rows as a table
    over their local positions 0..m-1 (in position order, so the order the linker's
    chains and overlap groups follow is unchanged), and the rows its shards shipped."""
    keys = edges["rows"]
    local = np.unique(keys["doc"])
    columns = {"key": keys["key"], "doc": np.searchsorted(local, keys["doc"])}
    if keys["payload"] is not None:
        columns["payload"] = keys["payload"]
    store = shipped_rows(np.searchsorted(local, edges["need"]), rows,
                         dates=method.capabilities.reads.dates and options["has_dates"])
    return local, columns, store


def _chunk_edges(options: dict) -> int:
    from neardup.engine.budget import default_memory_limit
    from neardup.engine.link import chunk_edges

    return chunk_edges(options["memory_limit"] or default_memory_limit())


def screen_task(edges: dict, method: Method, window_hours: float | None, options: dict, *rows: dict) -> tuple:
    """The Screen step over one key partition (:func:`~neardup.engine.link.screen_partition`,
    the local engine's own): its counts, then its low-estimate pairs that passed the
    screen (global positions), for the driver's
    :class:`~neardup.graph.partners.PartnerTable`."""
    from neardup.engine.link import screen_partition

    faults.checkpoint("ray-link")
    cpu = time.process_time()
    local, columns, store = _partition_rows(edges, method, options, rows)
    low, counts = screen_partition(method, [pa.table(columns)], store, _chunk_edges(options))
    counts = dict(counts, bucket_cpu_s=edges["cpu_s"], screen_cpu_s=time.process_time() - cpu,
                  low_estimate_pairs=len(low))
    return counts, (local[low.left], local[low.right], low.score)


def _local_selection(selected: np.ndarray, local: np.ndarray) -> np.ndarray:
    """The Screen step's selected pair codes (global positions) whose documents are both
    in ``local`` (ascending), in local positions (renumbering keeps their order)."""
    left, right = code_pairs(selected)
    inside = np.isin(left, local) & np.isin(right, local)
    return pair_codes(np.searchsorted(local, left[inside]), np.searchsorted(local, right[inside]))


def _link_rows(edges: dict, method: Method, window_hours: float | None, options: dict, *rows: dict) -> tuple:
    """A key partition of a method that verifies from shingle sets or texts, linked by the
    local stage's own partition linker over the partition's key rows and the rows its
    shards shipped (a union-find over the partition's documents, seeded in later waves with
    the earlier waves' components: their documents' edges are skipped, not verified)."""
    from neardup.engine.link import NoJoins, link_partition

    cpu = time.process_time()
    # The linker's union-find is the partition's, over its local positions, seeded with
    # the earlier wave's components: it skips what they already joined.
    local, columns, store = _partition_rows(edges, method, options, rows)
    need = edges["need"]
    selected = None
    if options.get("selected") is not None:  # a screening method: the Screen step's pairs
        import ray

        selected = _local_selection(ray.get(options["selected"]), local)
    uf = NoJoins() if options.get("every_edge", False) else UnionFind(local.size)
    seed = edges["seed"]
    if seed is not None and local.size:
        roots = roots_of(local, seed)
        by = np.argsort(roots, kind="stable")
        same = np.flatnonzero(roots[by][1:] == roots[by][:-1])
        uf.union(by[same], by[same + 1])
    window = None
    if window_hours is not None:
        # Documents of no shared key never meet an edge: their dates are never read.
        dates = np.full(local.size, NO_DATE, np.int64)
        identity = np.zeros(local.size, np.uint64)
        at = np.searchsorted(local, need)
        dates[at] = np.concatenate([np.zeros(0, np.int64)] + [r["date"] for r in rows])
        identity[at] = np.concatenate([np.zeros(0, np.uint64)] + [r[IDENTITY] for r in rows])
        window = TimeWindow(float(window_hours), dates, identity)
    step = verify_step(options, store.row_bytes)
    exchange = RecordCollector(local) if options.get("exchange") is not None else None
    forest, outside, counts, _capped = link_partition(method, [pa.table(columns)], store, window,
                                                       _chunk_edges(options), uf, step=step,
                                                       exchange=exchange, selected=selected)
    forest = Pairs(local[forest.left], local[forest.right], forest.score)
    outside = Pairs(local[outside.left], local[outside.right], outside.score)
    counts = {"bucket_cpu_s": edges["cpu_s"], "link_cpu_s": time.process_time() - cpu,
              "candidate_edges": counts["candidate_edges"], "edges_after_seed": counts["candidate_edges"],
              "verified_edges": counts["verified_edges"], "capped_keys": counts.get("capped_keys", 0),
              "screened_out_edges": counts.get("screened_out_edges", 0),
              "pruned_edges": counts.get("pruned_edges", 0), "shared_key_rows": edges["shared_rows"],
              "linked_documents": int(need.size), "partition_forest_edges": len(forest),
              "outside_edges": len(outside), "gathered_row_bytes": shipped_bytes(rows)}
    result = {"forest": (forest.left, forest.right, forest.score),
              "outside": (outside.left, outside.right, outside.score)}
    if exchange is None:
        return counts, result
    counts["exchange_records"] = exchange.records
    # A document's keys in groups not compared all-to-all: a pair may share some of them
    # besides its count, so the reduce scores it from its count only when one side has
    # none (overlap.decide_pairs), else bounds and verifies it.
    _, group, df = np.unique(columns["key"], return_inverse=True, return_counts=True)
    exchange.set_unseen(columns["doc"][df[group] > method.capabilities.keyed.all_pairs_upto])
    pair_bounds, shard_starts = options["exchange"]
    return (counts, result, *exchange.by_range(pair_bounds), *exchange.unseen_by_shard(shard_starts))


def merge_link_results(*results: dict, every_edge: bool = False) -> tuple[Pairs, Pairs]:
    """Link results as one (the Python API's driver, which holds every document anyway): a
    spanning forest of their forests' union (a union-find over the documents in them, edges
    sorted by (left, right), so the forest is deterministic), or with ``every_edge`` every
    accepted pair once, and the pairs the time window kept apart."""
    def cat(part: str, i: int, dtype) -> np.ndarray:
        return np.concatenate([np.zeros(0, dtype)] + [r[part][i] for r in results]).astype(dtype)

    forest = Pairs(cat("forest", 0, np.int64), cat("forest", 1, np.int64), cat("forest", 2, np.float32))
    outside = Pairs(cat("outside", 0, np.int64), cat("outside", 1, np.int64), cat("outside", 2, np.float32))
    if every_edge:
        return forest.canonical(), outside.canonical()
    return spanning_forest(forest.left, forest.right, forest.score), outside.canonical()


def spanning_forest(left: np.ndarray, right: np.ndarray, score: np.ndarray) -> Pairs:
    """The edges a union-find keeps joining, taken in (left, right) order; of a pair met
    more than once (a method's edge and the identity edge of identical texts), its
    highest score, as :meth:`Pairs.canonical` keeps it and the in-memory engine reports."""
    order = np.lexsort((-score, right, left))
    left, right, score = left[order], right[order], score[order]
    nodes = np.unique(np.concatenate((left, right)))
    uf = UnionFind(nodes.size)
    joined = uf.union(np.searchsorted(nodes, left), np.searchsorted(nodes, right))
    return Pairs(left[joined], right[joined], score[joined])
