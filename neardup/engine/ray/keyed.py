"""The keyed stage's tasks: read and sketch a shard, count its corpus statistics, sort
a key partition's rows and turn them into candidate edges (a star plus chain per shared
key, less what earlier waves joined), and plan the waves of key partitions."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.engine.buckets import group_runs
from neardup.engine.facts import batch_identity
from neardup.engine.sketching import sketch_batch, verification_rows
from neardup.engine.ray.positions import range_of, requests_of, roots_of, split_by, unique_positions
from neardup.engine.ray.shards import (
    FACTS,
    IDENTITY,
    TEXTS,
    Shard,
    batch_facts,
    cut_texts,
    digested,
    shard_batches,
)
from neardup.engine.ray.tasks import completed
from neardup.engine.statistics import batch_statistics, hash_range_bounds, split_by_range, sum_counts, table_min_df
from neardup.graph.buckets import bucket_edge_counts, bucket_edges
from neardup.io.identity import TextsDigest
from neardup.io.readers import ReaderConfig
from neardup.methods.base import FeatureStatistics, Method


def sketch_task(index: int, shard: Shard, method: Method, reader: ReaderConfig, memory: list | None,
                 partitions: int) -> tuple:
    """Read and sketch one shard. Returns ``partitions + 3`` objects: counts (documents,
    key rows, CPU seconds, key bytes, the digest of the shard's texts), the shard's facts
    (Arrow, :data:`FACTS`), its per-document arrays (the
    method's verification arrays and ``date``, numpy, shard row order), then per key
    partition ``p`` (``key % partitions == p``) the shard's key rows: ``key`` (uint64),
    ``row`` (int64 shard row), ``payload`` when the method has one."""
    cpu = time.process_time()
    facts, arrays, keys, rows, payload, offset = [], {}, [], [], [], 0
    reads = method.capabilities.reads
    digest = TextsDigest()
    for batch in digested(shard_batches(shard, reader, memory), digest):
        n = len(batch)
        sketch, found = sketch_batch(method, batch.texts, offset)
        dates, table = batch_facts(index, offset, batch, sketch.n_features)
        facts.append(table)
        for name, values in verification_rows(method, sketch, "engine='ray'").items():
            arrays.setdefault(name, []).append(values)
        arrays.setdefault("date", []).append(dates)
        arrays.setdefault(IDENTITY, []).append(batch_identity(batch, sketch))
        if reads.text_chars is not None:
            arrays.setdefault(TEXTS, []).append(cut_texts(method, batch.texts))
        keys.append(np.asarray(found.keys, np.uint64))
        rows.append(found.docs)
        if found.payload is not None:
            payload.append(np.asarray(found.payload, np.uint64))
        offset += n
    arrays = {name: pa.concat_arrays(parts) if name == TEXTS else np.concatenate(parts)
              for name, parts in arrays.items()}
    key = np.concatenate(keys) if keys else np.zeros(0, np.uint64)
    # Shard rows as uint32 when they fit (always, but for a shard of 2**32 rows): 12 bytes
    # a key row instead of 16, the largest exchange (every key row moves to its partition).
    row_type = np.uint32 if offset <= np.iinfo(np.uint32).max else np.int64
    row = np.concatenate(rows).astype(row_type, copy=False) if rows else np.zeros(0, row_type)
    pay = np.concatenate(payload) if payload else None
    part = (key % np.uint64(partitions)).astype(np.uint16 if partitions <= 1 << 16 else np.int64)
    order = np.argsort(part, kind="stable")  # a radix sort on uint16
    bounds = np.zeros(partitions + 1, np.int64)
    np.cumsum(np.bincount(part, minlength=partitions), out=bounds[1:])
    key, row = key[order], row[order]
    pay = pay[order] if pay is not None else None
    out = []
    for p in range(partitions):
        s, e = bounds[p], bounds[p + 1]
        out.append({"key": key[s:e], "row": row[s:e], **({"payload": pay[s:e]} if pay is not None else {})})
    table = pa.concat_tables(facts) if facts else FACTS.empty_table()
    key_bytes = key.nbytes + row.nbytes + (pay.nbytes if pay is not None else 0)
    return ((offset, int(key.size), time.process_time() - cpu, key_bytes, digest.hexdigest()),
            table, arrays, *out)


def statistics_task(shard: Shard, method: Method, reader: ReaderConfig, memory: list | None,
                     bounds: list[int]) -> tuple:
    """Read one shard and count its share of the method's corpus statistics (the local
    engine's per-batch step, :func:`~neardup.engine.statistics.batch_statistics`).
    Returns ``1 + tables * ranges`` objects: the additive totals, then per table (in
    the statistics spec's order) and per hash range of ``bounds``, the shard's
    distinct hashes in that range and their document counts."""
    tables = method.capabilities.statistics.tables
    hashes: dict[str, list[np.ndarray]] = {name: [] for name in tables}
    counts: dict[str, list[np.ndarray]] = {name: [] for name in tables}
    totals: dict[str, int] = {}
    for batch in shard_batches(shard, reader, memory):
        counted, batch_totals = batch_statistics(method, batch.texts)
        for name, (h, c) in counted.items():
            hashes[name].append(h)
            counts[name].append(c)
        for name, value in batch_totals.items():
            totals[name] = totals.get(name, 0) + value
    out: list[Any] = [totals]
    for name in tables:
        h, c = sum_counts(hashes.pop(name), counts.pop(name))
        out += [{"hashes": h[part], "counts": c[part]} for part in split_by_range(h, bounds)]
    return tuple(out)


def statistics_sum_task(min_df: int, *parts: dict) -> dict:
    """One hash range of one table: the shards' counts summed, those reaching ``min_df``."""
    h, c = sum_counts([p["hashes"] for p in parts], [p["counts"] for p in parts], min_df)
    return {"hashes": h, "counts": c}


def sorted_key_rows(offsets: np.ndarray, parts: Sequence[dict], shared_only: bool = False) -> dict:
    """All shards' key rows of one partition (shard order) sorted by (key, document);
    with ``shared_only``, only the rows of keys that two or more rows hold (a method that
    links key groups of two or more needs nothing else: most rows are of keys no other
    document has, and finding them takes a fast unstable sort of the keys alone)."""
    keys = np.concatenate([np.zeros(0, np.uint64)] + [p["key"] for p in parts])
    docs = np.concatenate([np.zeros(0, np.int64)] + [np.add(p["row"], offsets[s], dtype=np.int64)
                                                    for s, p in enumerate(parts)])
    payload = np.concatenate([p["payload"] for p in parts]) if parts and "payload" in parts[0] else None
    if shared_only and keys.size:
        by_key = np.argsort(keys)
        same = keys[by_key]
        same = same[1:] == same[:-1]
        shared = np.zeros(keys.size, bool)
        shared[1:] = same
        shared[:-1] |= same
        pick = by_key[shared]
        del by_key, same, shared
        keys, docs = keys[pick], docs[pick]
        payload = payload[pick] if payload is not None else None
    order = np.lexsort((docs, keys))
    return {"key": keys[order], "doc": docs[order], "payload": payload[order] if payload is not None else None}


def bucket_keys_task(offsets: np.ndarray, bounds: np.ndarray, shared_only: bool, *parts: dict) -> tuple:
    """A later wave's first half of a bucket task: the partition's key rows sorted (only
    those of shared keys with ``shared_only``), and per range of the earlier waves' labels
    the documents of shared keys to look up there (sorted)."""
    cpu = time.process_time()
    rows = sorted_key_rows(offsets, parts, shared_only)
    if shared_only:
        shared = unique_positions(rows["doc"])
    else:
        starts, sizes = group_runs(rows["key"])
        shared = unique_positions(rows["doc"][np.repeat(sizes > 1, sizes)])
    requests = split_by(range_of(shared, bounds), bounds.size - 1, doc=shared)
    rows["cpu_s"] = time.process_time() - cpu
    return (rows, *[r["doc"] for r in requests])


def label_lookup_task(labels: dict, *requests: np.ndarray) -> tuple:
    """Roots (one range of an earlier wave's labels) of the documents each partition asked
    for; documents that joined nothing are left out."""
    nodes, roots = labels["node"], labels["root"]
    out = []
    for docs in requests:
        at = np.minimum(np.searchsorted(nodes, docs), max(nodes.size - 1, 0))
        hit = nodes[at] == docs if nodes.size else np.zeros(docs.size, bool)
        out.append({"node": docs[hit], "root": roots[at[hit]]})
    return (len(out), *out)


def bucket_task(offsets: np.ndarray, method: Method, rows: dict | None, *parts: dict) -> tuple:
    """One key partition's candidate edges (all shards' key rows of the partition, in
    shard order): a star plus chain per shared key (or the method's ``link_bucket``),
    minus the edges whose documents an earlier wave already joined. Wave 1: ``rows`` is
    None and ``parts`` are the shards' key rows; later waves: ``rows`` are the sorted key rows
    (:func:`bucket_keys_task`) and ``parts`` the roots the earlier wave's label ranges
    gave its documents (:func:`label_lookup_task`). Returns ``1 + len(offsets)`` objects: the
    edges with counts (and the seed for the link task), then per shard the sorted shard
    rows whose arrays the partition needs."""
    cpu = time.process_time()
    seed = None
    caps = method.capabilities
    if rows is None:
        rows = sorted_key_rows(offsets, parts, shared_only=caps.fixed_width)
    else:
        seed = (np.concatenate([np.zeros(0, np.int64)] + [p["node"] for p in parts]),
                np.concatenate([np.zeros(0, np.int64)] + [p["root"] for p in parts]))
    keys, docs, payload = rows["key"], rows["doc"], rows["payload"]
    prep_cpu = rows.get("cpu_s", 0.0)
    starts, sizes = group_runs(keys)
    multi = sizes > 1
    shared_rows = int(sizes[multi].sum())
    if not caps.fixed_width:
        # Shingle sets or texts: the link task links the key rows as the local stage does
        # (its overlap groups and bounds need every row); it needs the rows of documents
        # of shared keys that it may compare.
        if caps.keyed.skip_over is not None:
            multi &= sizes <= caps.keyed.skip_over
        need = unique_positions(docs[np.repeat(multi, sizes)])
        requests = requests_of(need, offsets)
        edges = {"rows": rows, "need": need, "seed": seed, "candidate_edges": 0, "shared_rows": shared_rows,
                 "documents": int(need.size), "cpu_s": time.process_time() - cpu + prep_cpu}
        return (edges, *requests)
    if caps.keyed.links_buckets:
        linked = method.link_bucket(keys, docs, payload)
        left, right, score = linked.left, linked.right, np.asarray(linked.score, np.float32)
        candidates = int(left.size)
        if seed is not None:
            keep = roots_of(left, seed) != roots_of(right, seed)
            left, right, score = left[keep], right[keep], score[keep]
    else:
        upto, star_upto = caps.keyed.all_pairs_upto, caps.keyed.star_upto
        candidates = int(bucket_edge_counts(sizes[multi], upto, star_upto).sum())
        score = None
        if seed is None:
            left, right = bucket_edges(docs, starts[multi], sizes[multi], upto, star_upto)
        else:
            # Roots looked up once per key row. A group whose members all have one root
            # (joined by the earlier waves: most groups of copies) makes no edge to check;
            # the others' edges are made once over row numbers, giving both documents and
            # both roots.
            roots = roots_of(docs, seed)
            open_ = multi.copy()
            if starts.size:
                open_ &= np.minimum.reduceat(roots, starts) != np.maximum.reduceat(roots, starts)
            row_left, row_right = bucket_edges(np.arange(docs.size, dtype=np.int64), starts[open_],
                                               sizes[open_], upto, star_upto)
            keep = roots[row_left] != roots[row_right]
            left, right = docs[row_left[keep]], docs[row_right[keep]]
            del roots, row_left, row_right, keep
    del keys, docs, payload, rows
    need = unique_positions(np.concatenate((left, right)))
    requests = requests_of(need, offsets)
    edges = {"left": left, "right": right, "score": score, "candidate_edges": candidates,
             "cpu_s": time.process_time() - cpu + prep_cpu, "seed": seed,
             "shared_rows": shared_rows, "documents": int(need.size)}
    return (edges, *requests)


def wave_plan(partitions: int, first: int | None) -> list[list[int]]:
    """Key partitions linked wave after wave: ``first`` (None: a 64th of the partitions,
    at least one), then each wave as many as all the earlier ones together (1, 1, 2, 4,
    ...), the last one the rest. A wave skips the candidate edges whose documents the
    earlier ones joined, so the verifications stay near the local engine's (which skips
    across every partition) in about log2(partitions / first) waves, each one barrier and
    one round of connected components. (Measured at 1M, 16 partitions: 1.20M
    verifications with 1, 1, 2, 4, 8; 1.64M with 1, 3, 12; 2.65M with 2, 14; local 1.13M.)"""
    first = min(first or max(1, partitions // 64), partitions)
    waves, done = [], 0
    size = first
    while done < partitions:
        size = min(size, partitions - done)
        waves.append(list(range(done, done + size)))
        done += size
        size = done
    return waves


def default_partitions(n_docs: int, fixed_width: bool = False) -> int:
    """Key partitions for ``n_docs`` documents: a power of two, at least 8, about 200,000
    documents each for a method verifying fixed-width arrays (MinHash signatures), 100,000
    otherwise (set and text methods: a link task holds its partition's key rows and sets).
    Fewer partitions ship fewer gathered rows: a document is shipped to every partition
    that verifies one of its edges (measured at 1M documents: docs/scale-out.md, "Ray's own
    costs")."""
    need = max(n_docs / (200_000 if fixed_width else 100_000), 1.0)
    return int(max(8, 1 << int(np.ceil(np.log2(need)))))


def fit_statistics(ray, method: Method, shards: list[Shard], memory: list | None, reader: ReaderConfig,
                   ranges: int, advance) -> Method:
    """The statistics stage as tasks: each shard counts its share by hash range, a task
    per range sums the shards' counts; the fitted method keys the sketch stage (as the
    local engine's statistics stage, :mod:`neardup.engine.statistics`), in ``ranges``
    ranges of the hash space, ``advance`` called as shards finish."""
    tables = method.capabilities.statistics.tables
    bounds = hash_range_bounds(ranges)
    method_ref = ray.put(method)
    count = ray.remote(statistics_task).options(num_returns=1 + len(tables) * ranges)
    summed = ray.remote(statistics_sum_task)
    out = [count.remote(shard, method_ref, reader, memory, bounds) for shard in shards]
    totals: dict[str, int] = {}
    for part in completed(ray, [o[0] for o in out], advance):
        for name, value in part.items():
            totals[name] = totals.get(name, 0) + int(value)
    counted = {}
    for t, name in enumerate(tables):
        min_df = table_min_df(method, name, totals)
        pieces = ray.get([summed.remote(min_df, *[o[1 + t * ranges + r] for o in out])
                          for r in range(ranges)])
        counted[name] = (np.concatenate([p["hashes"] for p in pieces]),
                         np.concatenate([p["counts"] for p in pieces]))
    return method.with_statistics(FeatureStatistics(totals=totals, tables=counted))
