"""The pair-count exchange (ngram, spotsigs: :mod:`neardup.engine.overlap`) on Ray: the
map side collected inside each link task, reduced per range of left documents."""

from __future__ import annotations

import time

import numpy as np

from neardup.engine.link import PartitionLinker
from neardup.engine.overlap import decide_pairs, sum_pair_counts
from neardup.graph.edges import code_pairs, pair_codes
from neardup.engine.ray.positions import range_of, split_by, unique_positions
from neardup.engine.ray.rows import shipped_rows, gather_task, verify_step
from neardup.engine.ray.shards import IDENTITY
from neardup.engine.sketching import SET_SIZES
from neardup.graph.edges import TimeWindow
from neardup.methods.base import Method

# -- the pair-count exchange (ngram, spotsigs: neardup.engine.overlap) on Ray -------------
#
# Map: each link task of a set-overlap method spills the counted pairs it did not settle
# (the local stage's PairSpill interface, collected in memory in global positions), cut
# by range of left document, and its unseen keys per document, cut by shard. Reduce, per
# range of left documents: sum the records by pair (overlap.sum_pair_counts), ask the
# shards for the set sizes, unseen counts (summed per shard) and dates of the pairs'
# documents, decide (overlap.decide_pairs: scored from counts, or bounded and verified),
# ask the shards for the sets to verify, and link.


class RecordCollector:
    """The exchange's map side inside one link task: the local stage's spill interface
    (``add``, ``set_unseen``), documents given in the task's local numbering (``local``:
    their global positions, ascending, so a pair keeps left < right)."""

    def __init__(self, local: np.ndarray) -> None:
        self.local = local
        self.codes: list[np.ndarray] = []
        self.shared: list[np.ndarray] = []
        self.unseen = (np.zeros(0, np.int64), np.zeros(0, np.int64))
        self.records = 0

    def add(self, left: np.ndarray, right: np.ndarray, shared: np.ndarray) -> None:
        if left.size == 0:
            return
        self.codes.append(pair_codes(self.local[left], self.local[right]))
        self.shared.append(np.asarray(shared, np.uint32))
        self.records += int(left.size)

    def set_unseen(self, docs: np.ndarray) -> None:
        found, counts = np.unique(docs, return_counts=True)
        self.unseen = (self.local[found], counts.astype(np.int64))

    def by_range(self, bounds: np.ndarray) -> list[dict]:
        codes = np.concatenate([np.zeros(0, np.uint64)] + self.codes)
        shared = np.concatenate([np.zeros(0, np.uint32)] + self.shared)
        self.codes, self.shared = [], []
        left, _ = code_pairs(codes)
        return split_by(range_of(left, bounds), bounds.size - 1, code=codes, shared=shared)

    def unseen_by_shard(self, shard_starts: np.ndarray) -> list[dict]:
        docs, counts = self.unseen
        return split_by(range_of(docs, shard_starts), shard_starts.size - 1, doc=docs, count=counts)


def pair_bounds(n_docs: int, ranges: int) -> np.ndarray:
    """Ranges of left documents for the exchange's reduce. A pair's left document is the
    earlier of two, so records thin out towards the end of the input (for pairs drawn
    uniformly, a density proportional to ``n - position``): bounds at ``n (1 - sqrt(1 -
    k / ranges))`` give the ranges about equal shares."""
    k = np.arange(ranges + 1, dtype=np.float64) / ranges
    bounds = np.floor(max(n_docs, 1) * (1.0 - np.sqrt(np.clip(1.0 - k, 0.0, 1.0)))).astype(np.int64)
    bounds[-1] = max(n_docs, 1)
    return np.maximum.accumulate(bounds)


def unseen_task(n_rows: int, offset: int, *parts: dict) -> np.ndarray:
    """One shard's unseen keys per document (int64, shard row order), summed over the key
    partitions."""
    unseen = np.zeros(n_rows, np.int64)
    for part in parts:
        np.add.at(unseen, part["doc"] - offset, part["count"])
    return unseen


def pair_facts_task(arrays: dict, unseen: np.ndarray, *requests: np.ndarray):
    """Set size, unseen keys and date of the shard rows each exchange range asked for."""
    out = [{"size": arrays[SET_SIZES][rows], "unseen": unseen[rows], "date": arrays["date"][rows],
            IDENTITY: arrays[IDENTITY][rows] if IDENTITY in arrays else np.zeros(rows.size, np.uint64)}
           for rows in requests]
    return tuple(out) if len(out) != 1 else out[0]


def pair_sum_task(offsets: np.ndarray, *parts: dict) -> tuple:
    """Reduce, first step: one range's records from every link task summed by pair; per
    shard, the rows whose facts the decision needs."""
    cpu = time.process_time()
    records = sum(int(p["code"].size) for p in parts)
    codes, total = sum_pair_counts(np.concatenate([np.zeros(0, np.uint64)] + [p["code"] for p in parts]),
                                   np.concatenate([np.zeros(0, np.uint32)] + [p["shared"] for p in parts]))
    left, right = code_pairs(codes)
    del codes
    need = unique_positions(np.concatenate((left, right)))
    bounds = np.searchsorted(need, np.append(offsets, np.iinfo(np.int64).max))
    requests = [need[bounds[s]:bounds[s + 1]] - offsets[s] for s in range(len(offsets))]
    state = {"left": left, "right": right, "total": total, "need": need, "records": records,
             "cpu_s": time.process_time() - cpu}
    return (state, *requests)


def pair_decide_task(state: dict, method: Method, offsets: np.ndarray, *facts: dict) -> tuple:
    """Reduce, second step: each pair scored from its counts, bounded, or sent to
    verification (overlap.decide_pairs); per shard, the rows to verify."""
    cpu = time.process_time()
    need, left, right, total = state["need"], state["left"], state["right"], state["total"]
    cat = {k: np.concatenate([np.zeros(0, np.int64)] + [f[k] for f in facts]) for k in ("size", "unseen", "date")}
    identity = np.concatenate([np.zeros(0, np.uint64)] + [f[IDENTITY] for f in facts])
    at_left, at_right = np.searchsorted(need, left), np.searchsorted(need, right)
    exact, score, accept, verify = decide_pairs(
        total, cat["size"][at_left], cat["size"][at_right], cat["unseen"][at_left], cat["unseen"][at_right],
        method.overlap_scores, method.overlap_bound)
    check = unique_positions(np.concatenate((left[verify], right[verify])))
    bounds = np.searchsorted(check, np.append(offsets, np.iinfo(np.int64).max))
    requests = [check[bounds[s]:bounds[s + 1]] - offsets[s] for s in range(len(offsets))]
    out = {"accept": (left[accept], right[accept], score[accept]), "verify": (left[verify], right[verify]),
           "check": check, "docs": need, "dates": cat["date"], IDENTITY: identity, "counts": {
               "exchange_records": state["records"], "exchange_pairs": int(left.size),
               "scored_from_counts": int(np.count_nonzero(exact)),
               "pruned_edges": int(np.count_nonzero(~exact & ~verify))},
           "cpu_s": state["cpu_s"] + time.process_time() - cpu}
    return (out, *requests)


def pair_link_task(state: dict, method: Method, window_hours: float | None, options: dict, *rows: dict) -> tuple:
    """Reduce, last step: one range's pairs linked as the local stage's reduce links them
    (those scored from counts first, then those to verify, each in pair order), with a
    union-find over the range's documents (none with ``options["every_edge"]``: every
    accepted pair is kept)."""
    cpu = time.process_time()
    accept_left, accept_right, accept_score = state["accept"]
    verify_left, verify_right = state["verify"]
    docs = state["docs"]
    store = shipped_rows(state["check"], rows, dates=method.capabilities.reads.dates and options["has_dates"])
    window = None
    if window_hours is not None:
        # The linker reads the window aligned with its sorted unique documents: those of its pairs.
        local = unique_positions(np.concatenate((accept_left, accept_right, verify_left, verify_right)))
        window = TimeWindow(float(window_hours), state["dates"], state[IDENTITY]).take(
            np.searchsorted(docs, local))
    linker = PartitionLinker(method, np.concatenate((accept_left, accept_right, verify_left, verify_right)),
                             store, window, uf=None, every_edge=options.get("every_edge", False))
    linker.step = verify_step(options, store.row_bytes)
    linker.consider(accept_left, accept_right, accept_score)
    linker.consider(verify_left, verify_right)
    forest, outside = linker.forest_pairs(), linker.outside_pairs().canonical()
    counts = {**state["counts"], "verified_edges": linker.counts["verified_edges"],
              "partition_forest_edges": len(forest), "outside_edges": len(outside),
              "exchange_cpu_s": state["cpu_s"] + time.process_time() - cpu}
    return counts, {"forest": (forest.left, forest.right, forest.score),
                    "outside": (outside.left, outside.right, outside.score)}


def reduce_exchange(ray, offsets: np.ndarray, counts: np.ndarray, arrays: list, names: tuple, options: dict,
                    method_ref, window_hours: float | None, n_ranges: int, record_parts: list,
                    unseen_parts: list) -> list:
    """The exchange's reduce (see :class:`RecordCollector`): per range of left
    documents, a sum task, a decide task and a link task, the shards answering for the
    facts and the sets they need (``arrays``: per shard its arrays; ``counts``: its
    documents). Returns the link tasks' (counts, result) refs."""
    n_shards = len(arrays)
    unseen = [ray.remote(unseen_task).remote(int(counts[s]), int(offsets[s]),
                                              *[u[s] for u in unseen_parts]) for s in range(n_shards)]
    sums = [ray.remote(pair_sum_task).options(num_returns=n_shards + 1).remote(
        offsets, *[r[c] for r in record_parts]) for c in range(n_ranges)]
    facts = [ray.remote(pair_facts_task).options(num_returns=n_ranges).remote(
        arrays[s], unseen[s], *[x[1 + s] for x in sums]) for s in range(n_shards)]
    facts = [f if isinstance(f, list) else [f] for f in facts]
    decided = [ray.remote(pair_decide_task).options(num_returns=n_shards + 1).remote(
        sums[c][0], method_ref, offsets, *[facts[s][c] for s in range(n_shards)]) for c in range(n_ranges)]
    del sums, facts, unseen
    gather = ray.remote(gather_task)
    rows = [gather.options(num_returns=n_ranges).remote(arrays[s], names, *[d[1 + s] for d in decided])
            for s in range(n_shards)]
    rows = [r if isinstance(r, list) else [r] for r in rows]
    link = ray.remote(pair_link_task).options(num_returns=2)
    return [link.remote(decided[c][0], method_ref, window_hours, options, *[rows[s][c] for s in range(n_shards)])
            for c in range(n_ranges)]
