"""Mutual retrieval (the keyed spec's ``query_retrieval``: sanderson) on Ray, with the
local stage's own steps (:mod:`neardup.engine.retrieval`): each shard's token multisets
weighted into posting rows, the rows cut by range of term hash and merged into one
inverted-index object per range (sorted by term, then document: the local range files),
each shard's queries scored against the ranges their terms fall in, and the directed
retrievals paired by the method's ``mutual`` in one task.

That last task holds every document's retrievals (at most ``top_k`` each) and dates, as
the local stage's process does: mutual pairs need both directions of a pair, which any
split of the queries would separate.
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa

from neardup.engine.ray.positions import range_of, split_by
from neardup.engine.ray.tasks import completed
from neardup.engine.ray.shards import (
    FACTS,
    IDENTITY,
    Shard,
    batch_facts,
    digested,
    shard_batches,
)
from neardup.engine.facts import batch_identity
from neardup.engine.sketching import SET_SIZES, SET_VALUES
from neardup.io.identity import TextsDigest
from neardup.engine.retrieval import (
    block_tokens,
    mutual_edges,
    posting_range_lows,
    posting_rows,
    retrieve_block,
    token_blocks,
)
from neardup.io.readers import ReaderConfig
from neardup.methods.base import Method
from neardup.text.shingle import ShingleSets

__all__ = ["mutual_retrieval", "token_sketch_task"]

#: A retrieve task's directed retrievals: query, partner, normalized score.
_RETRIEVAL_COLUMNS = (("src", np.int64), ("dst", np.int64), ("norm", np.float64))


def _shard_blocks(arrays: dict, budget: int):
    """A shard's token multisets in the local stage's blocks of documents: ``(d0, sets)``
    with ``d0`` the block's first shard row."""
    offsets = np.zeros(arrays[SET_SIZES].size + 1, np.int64)
    np.cumsum(arrays[SET_SIZES], out=offsets[1:])
    values = arrays[SET_VALUES]
    return token_blocks(offsets, lambda o0, o1: values[o0:o1], block_tokens(budget))


def token_sketch_task(index: int, shard: Shard, method: Method, reader: ReaderConfig,
                      memory: list | None, budget: int) -> tuple:
    """Read and sketch one shard as the local sketch stage does for a method of term
    multisets. Returns four objects: counts (documents, posting rows, CPU seconds, the
    digest of the shard's texts), the
    shard's facts (:data:`~neardup.engine.ray.shards.FACTS`), its arrays (dates, text
    identities, token multisets) and its posting rows (term hash, shard row, weight) in
    document then term order."""
    cpu = time.process_time()
    facts, dates, identity, sizes, values, offset = [], [], [], [], [], 0
    digest = TextsDigest()
    for batch in digested(shard_batches(shard, reader, memory), digest):
        sketch = method.keyed_sketch(method.sketch(batch.texts))
        sets = ShingleSets(np.ascontiguousarray(sketch.sets.hashes, np.uint64),
                           np.ascontiguousarray(sketch.sets.offsets, np.int64))
        date, table = batch_facts(index, offset, batch, sketch.n_features)
        facts.append(table)
        dates.append(date)
        identity.append(batch_identity(batch, sketch))
        sizes.append(sets.counts().astype(np.int64))
        values.append(sets.hashes)
        offset += len(batch)
    arrays = {"date": np.concatenate([np.zeros(0, np.int64)] + dates),
              IDENTITY: np.concatenate([np.zeros(0, np.uint64)] + identity),
              SET_SIZES: np.concatenate([np.zeros(0, np.int64)] + sizes),
              SET_VALUES: np.concatenate([np.zeros(0, np.uint64)] + values)}
    rows = [posting_rows(method, block, d0) for d0, block in _shard_blocks(arrays, budget)]
    postings = {name: np.concatenate([np.zeros(0, dtype)] + [r[i] for r in rows])
                for i, (name, dtype) in enumerate((("hash", np.uint64), ("doc", np.int64),
                                                   ("weight", np.float64)))}
    table = pa.concat_tables(facts) if facts else FACTS.empty_table()
    return ((offset, int(postings["hash"].size), time.process_time() - cpu, digest.hexdigest()),
            table, arrays, postings)


def _split_postings_task(postings: dict, offset: int, lows: np.ndarray):
    """One shard's posting rows in global positions, cut by range of term hash (the
    document-then-term order kept within each range)."""
    owner = range_of(postings["hash"], lows)
    out = split_by(owner, lows.size, hash=postings["hash"], doc=postings["doc"] + offset,
                   weight=postings["weight"])
    return tuple(out) if lows.size > 1 else out[0]


def _merge_postings_task(*parts: dict) -> dict:
    """One range of the inverted index: the shards' rows (in shard order, so documents
    ascend) sorted by term hash, stably: the local stage's range file."""
    cat = {name: np.concatenate([np.zeros(0, dtype)] + [p[name] for p in parts])
           for name, dtype in (("hash", np.uint64), ("doc", np.int64), ("weight", np.float64))}
    order = np.argsort(cat["hash"], kind="stable")
    return {name: values[order] for name, values in cat.items()}


def _retrieve_task(arrays: dict, offset: int, method: Method, n_docs: int, lows: np.ndarray,
                   range_refs: list, budget: int) -> dict:
    """One shard's queries scored against the inverted index's ranges (fetched from the
    object store as its sub-blocks need them) by the local stage's block step."""
    import ray

    cpu = time.process_time()
    found, scores = [], 0

    def postings_of(k: int):
        part = ray.get(range_refs[k])
        return part["hash"], part["doc"], part["weight"]

    for d0, block in _shard_blocks(arrays, budget):
        block_found, block_scores = retrieve_block(method, block, offset + d0, n_docs, lows, postings_of,
                                                   budget)
        found += block_found
        scores += block_scores
    out = {name: np.concatenate([np.zeros(0, dtype)] + [f[i] for f in found])
           for i, (name, dtype) in enumerate(_RETRIEVAL_COLUMNS)}
    return {**out, "scores": scores, "cpu_s": time.process_time() - cpu}


def _mutual_task(method: Method, n_docs: int, window_hours: float | None, has_dates: bool, ranges: int,
                 array_refs: list, *retrievals: dict) -> tuple:
    """The shards' retrievals paired by the method's ``mutual`` and the time windows
    (the local stage's step), as a link result: its counts (with the index's ``ranges``),
    then its edges."""
    import ray

    cpu = time.process_time()
    dates = identity = None
    if has_dates:
        arrays = ray.get(list(array_refs))
        dates = np.concatenate([np.zeros(0, np.int64)] + [a["date"] for a in arrays]).view("datetime64[s]")
        identity = np.concatenate([np.zeros(0, np.uint64)] + [a[IDENTITY] for a in arrays])
        del arrays
    joined = tuple(np.concatenate([np.zeros(0, dtype)] + [r[name] for r in retrievals])
                   for name, dtype in _RETRIEVAL_COLUMNS)
    inside, away, counts = mutual_edges(method, joined, n_docs, dates, window_hours, identity)
    counts = {**counts, "index_ranges": ranges, "partition_forest_edges": len(inside), "outside_edges": len(away),
              "scores": sum(r["scores"] for r in retrievals),
              "retrieval_cpu_s": sum(r["cpu_s"] for r in retrievals) + time.process_time() - cpu}
    return counts, {"forest": (inside.left, inside.right, inside.score.astype(np.float32)),
                    "outside": (away.left, away.right, away.score.astype(np.float32))}


def mutual_retrieval(ray, method_ref, sketched: list, offsets: np.ndarray, n_docs: int, n_postings: int,
                     budget: int, window_hours: float | None, has_dates: bool, advance) -> tuple:
    """The retrieval after :func:`token_sketch_task` (``sketched``: its four refs per
    shard; ``n_postings``: their posting rows in all): the inverted index in ranges sized
    from ``budget``, a retrieve task per shard
    (``advance`` as each finishes), the mutual task. Returns the link result's ref and
    its counts' ref."""
    lows = np.array(posting_range_lows(n_postings, budget), np.uint64)
    ranges = lows.size
    shards = range(len(sketched))
    split = ray.remote(_split_postings_task).options(num_returns=ranges)
    parts = [split.remote(sketched[s][3], int(offsets[s]), lows) for s in shards]
    parts = [p if isinstance(p, list) else [p] for p in parts]
    merge = ray.remote(_merge_postings_task)
    range_refs = [merge.remote(*[p[k] for p in parts]) for k in range(ranges)]
    del parts
    retrieve = ray.remote(_retrieve_task)
    retrieved = [retrieve.remote(sketched[s][2], int(offsets[s]), method_ref, n_docs, lows, range_refs, budget)
                 for s in shards]
    completed(ray, retrieved, advance)
    mutual = ray.remote(_mutual_task).options(num_returns=2)
    counts, result = mutual.remote(method_ref, n_docs, window_hours, has_dates, ranges,
                                   [sketched[s][2] for s in shards], *retrieved)
    return result, counts
