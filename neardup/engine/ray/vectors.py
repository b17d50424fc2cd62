"""The vector stage (embedding methods) as tasks: embed a shard, train and build IVF
indexes, search a row shard, and cut a scorer's candidate pairs into verify
partitions."""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa

from neardup.engine.facts import batch_identity
from neardup.graph.edges import code_pairs, pair_codes
from neardup.engine.ray.positions import requests_of, split_by, unique_positions
from neardup.engine.rows import VectorShards
from neardup.engine.ray.shards import (FACTS, IDENTITY, TEXTS, Shard, batch_facts, cut_texts, digested,
                                       shard_batches)
from neardup.engine.unionfind import UnionFind
from neardup.io.identity import TextsDigest
from neardup.graph.edges import TimeWindow
from neardup.io.readers import ReaderConfig
from neardup.methods.base import Method

# -- embedding methods: the vector stage as tasks ---------------------------------------


def embed_task(index: int, shard: Shard, method: Method, reader: ReaderConfig,
                memory: list | None) -> tuple:
    """Read and embed one shard. Returns five objects: counts (documents, rows, row
    dimension, largest deviation of a row norm from 1, CPU seconds, bytes of texts, the
    digest of the shard's texts), the
    shard's facts (Arrow, :data:`FACTS`), its rows (float32, document order), the rows
    each document owns (int64) and its per-document arrays: dates (``date``: int64
    seconds, NaT as int64 min) and text identities (``identity``), for the time window,
    and for a method that scores its candidates their texts (:data:`TEXTS`, cut as the
    sketch task cuts them), which the shard ships to the link tasks that verify them."""
    from neardup.graph.similarity import check_unit_rows

    cpu = time.process_time()
    facts, rows, owned, dates, identity, offset, deviation = [], [], [], [], [], 0, 0.0
    texts = [pa.array([], pa.large_binary())] if method.capabilities.reads.text_chars is not None else None
    digest = TextsDigest()
    for batch in digested(shard_batches(shard, reader, memory), digest):
        n = len(batch)
        sketch = method.sketch(batch.texts)
        found, counts = method.vector_rows(sketch)
        found = np.asarray(found, np.float32)
        if found.shape[0]:
            # Norms as the local stage checks them (its float32 storage reads the same).
            found, norms = check_unit_rows(method.name, "embeddings", found)
            deviation = max(deviation, float(np.abs(norms - 1.0).max()))
            rows.append(found)
        date, table = batch_facts(index, offset, batch, sketch.n_features)
        facts.append(table)
        owned.append(np.asarray(counts, np.int64))
        dates.append(date)
        identity.append(batch_identity(batch, sketch))
        if texts is not None:
            texts.append(cut_texts(method, batch.texts))
        offset += n
    rows = np.concatenate(rows) if rows else np.zeros((0, 0), np.float32)
    owned = np.concatenate(owned) if owned else np.zeros(0, np.int64)
    arrays = {"date": np.concatenate(dates) if dates else np.zeros(0, np.int64),
              IDENTITY: np.concatenate(identity) if identity else np.zeros(0, np.uint64)}
    if texts is not None:
        arrays[TEXTS] = pa.concat_arrays(texts)
    table = pa.concat_tables(facts) if facts else FACTS.empty_table()
    info = (offset, int(rows.shape[0]), int(rows.shape[1]), deviation, time.process_time() - cpu,
            arrays[TEXTS].nbytes if texts is not None else 0, digest.hexdigest())
    return info, table, rows, owned, arrays


class _VectorObjects(VectorShards):
    """The embed tasks' rows, one object per row shard, read as the local stage's row
    store reads its file (float32 rows and their float64 norms)."""

    def __init__(self, shards: list[tuple[int, int]], refs: list, dim: int) -> None:
        self.starts = {start: j for j, (start, _) in enumerate(shards)}
        self.refs, self.dim = refs, dim

    def read(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        import ray

        rows = ray.get(self.refs[self.starts[start]])
        norms = np.sqrt(np.einsum("ij,ij->i", rows, rows, dtype=np.float64))
        return rows, norms


def train_ivf_task(shards: list[tuple[int, int]], refs: list, n_rows: int, dim: int, nlist: int,
                    search, budget: int) -> np.ndarray:
    """The shared IVF centroids, trained as the local stage trains them (the same rows,
    seed and thread count), serialized."""
    import ray

    from neardup.engine.vectors import training_positions
    from neardup.graph.similarity import import_faiss, omp_threads, train_ivf

    positions = training_positions(n_rows, dim, nlist, search.seed, budget)
    parts = []
    for (start, stop), ref in zip(shards, refs):
        rows = ray.get(ref)
        if positions is None:
            parts.append(rows)
        else:
            inside = positions[(positions >= start) & (positions < stop)]
            parts.append(rows[inside - start])
        del rows
    sample = np.ascontiguousarray(np.concatenate(parts))
    del parts
    faiss = import_faiss()
    with omp_threads(faiss, search.threads or 1):
        trained = train_ivf(faiss, sample, nlist, search.seed, search.nprobe)
    return faiss.serialize_index(trained)


def build_ivf_task(trained: np.ndarray, rows: np.ndarray, start: int, threads: int | None) -> np.ndarray:
    """One row shard's IVF index on the shared centroids (lists hold global row numbers),
    serialized."""
    from neardup.graph.similarity import import_faiss, omp_threads

    faiss = import_faiss()
    index = faiss.deserialize_index(np.array(trained))
    with omp_threads(faiss, threads or 1):
        index.add_with_ids(rows, np.arange(start, start + rows.shape[0], dtype=np.int64))
    return faiss.serialize_index(index)


class _ObjectIvf:
    """Per-shard IVF indexes from the object store, for the local stage's shard search."""

    def __init__(self, faiss, trained: np.ndarray, refs: list, nprobe: int) -> None:
        self.faiss, self.refs = faiss, refs
        self.trained = faiss.deserialize_index(np.array(trained))  # owns the quantizer
        self.nprobe = min(nprobe, self.trained.nlist)
        self.quantizer = faiss.downcast_index(self.trained.quantizer)

    def probes(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.quantizer.search(queries, self.nprobe)

    def index(self, j: int):
        import ray

        index = self.faiss.deserialize_index(np.array(ray.get(self.refs[j])))
        index.nprobe = self.nprobe
        return index


def vector_search_task(i: int, shards: list[tuple[int, int]], row_refs: list, owned_refs: list,
                        date_refs: list | None, method: Method, k: int | None, floor: float,
                        window_hours: float | None, trained: np.ndarray | None,
                        ivf_refs: list | None, budget: int, every_edge: bool = False) -> dict:
    """Row shard ``i`` searched against the shards it must meet, exactly as the local
    vector stage searches it (the same candidates, float64 rescoring and union-find over
    the documents): counts, then its forest and the pairs the time window kept apart.

    A method that scores its candidates (verification ``text_chars``: rerank over
    vector candidates) is verified by link tasks instead (:meth:`RayRun._verify_candidates`):
    the result is then every document pair above the vector threshold (``left < right``),
    none skipped, since a candidate joins nothing until the scorer accepts it. With
    ``every_edge`` (Leiden, Louvain, HAC) nothing is skipped either: the "forest" holds
    every accepted pair the shard's search meets, as the local stage's ``every_edge``."""
    import ray

    from neardup.engine.link import NoJoins
    from neardup.engine.vectors import QueryBatchSize, ShardLinker, search_shard
    from neardup.graph.similarity import import_faiss, omp_threads

    cpu = time.process_time()
    search = method.capabilities.vectors
    scored = method.capabilities.reads.text_chars is not None
    owned = np.concatenate([ray.get(r) for r in owned_refs])
    offsets = np.zeros(owned.size + 1, np.int64)
    np.cumsum(owned, out=offsets[1:])
    del owned
    window = None
    if window_hours is not None and not scored:  # int64 min is NaT's own representation
        parts = [ray.get(r) for r in date_refs]
        window = TimeWindow(float(window_hours), np.concatenate([p["date"] for p in parts]),
                            np.concatenate([p[IDENTITY] for p in parts]))
    joins = NoJoins() if scored or every_edge else UnionFind(offsets.size - 1)
    linker = ShardLinker(method, joins, offsets, search.threshold, window)
    faiss = import_faiss()
    store = _VectorObjects(shards, row_refs, 0)
    with omp_threads(faiss, search.threads or 1):
        ivf = _ObjectIvf(faiss, trained, ivf_refs, search.nprobe) if trained is not None else None
        store.dim = int(ray.get(row_refs[i]).shape[1])
        search_shard(faiss, store, shards, i, k, floor, linker, QueryBatchSize(budget // 4 // 40), ivf)
    forest, outside = linker.results()
    if scored:
        return ({**linker.counts, "search_cpu_s": time.process_time() - cpu, "vector_pairs": len(forest)},
                {"left": forest.left, "right": forest.right})
    counts = {**linker.counts, "search_cpu_s": time.process_time() - cpu,
              "partition_forest_edges": len(forest), "outside_edges": len(outside)}
    return counts, {"forest": (forest.left, forest.right, forest.score),
                    "outside": (outside.left, outside.right, outside.score)}


# A method that scores its vector candidates (rerank over RETSim or bi-encoder candidates)
# verifies them as the keyed stage verifies its edges: the search tasks' candidate pairs
# are cut into verify partitions by a hash of the pair (so a pair found from both ends is
# in one partition), each partition's pairs taken once, the texts of their documents
# gathered from the shards, and linked by the keyed stage's link task.

#: Bytes a verify partition holds per candidate pair besides its texts: its positions,
#: pair code and their sorts, the linker's arrays.
_VERIFY_BYTES_PER_PAIR = 64
#: Fibonacci hashing's multiplier: a pair's code times it (mod 2**64), high bits kept,
#: spreads the pairs evenly over partitions whatever their positions.
_SPREAD = np.uint64(0x9E3779B97F4A7C15)


def verify_partitions(pairs: int, doc_text_bytes: float, budget: int) -> int:
    """Verify partitions for ``pairs`` candidate pairs: each one's pairs and the texts of
    their documents (at most two a pair, ``doc_text_bytes`` each on average) within a
    quarter of ``budget``; at most 4,096."""
    need = pairs * (_VERIFY_BYTES_PER_PAIR + 2 * doc_text_bytes) / max(budget // 4, 1)
    return int(min(max(np.ceil(need), 1), 1 << 12))


def split_pairs_task(parts: int, pairs: dict):
    """One search task's candidate pairs cut into ``parts`` verify partitions by a hash
    of the pair."""
    left, right = pairs["left"], pairs["right"]
    spread = (pair_codes(left, right) * _SPREAD) >> np.uint64(32)
    out = split_by((spread % np.uint64(parts)).astype(np.int64), parts, left=left, right=right)
    return tuple(out) if parts > 1 else out[0]


def candidate_pairs_task(offsets: np.ndarray, *parts: dict) -> tuple:
    """One verify partition: the search tasks' pairs of the partition, each once (kNN
    finds a pair from both ends, maybe in two search tasks; verified once here, no
    memory of rejected pairs is needed), as a bucket task returns edges: the edges for
    :func:`link_task`, then per shard the rows whose texts it needs."""
    cpu = time.process_time()
    codes = np.unique(np.concatenate([np.zeros(0, np.uint64)]
                                     + [pair_codes(p["left"], p["right"]) for p in parts]))
    left, right = code_pairs(codes)
    del codes
    need = unique_positions(np.concatenate((left, right)))
    edges = {"left": left, "right": right, "score": None, "candidate_edges": int(left.size),
             "cpu_s": time.process_time() - cpu, "seed": None, "shared_rows": 0,
             "documents": int(need.size)}
    return (edges, *requests_of(need, offsets))
