"""The corpus stage on a Ray cluster (``engine="ray"``): the local engine's stages as Ray
tasks over numpy arrays, so a corpus larger than one machine is de-duplicated with the
same clusters.

Dataflow (S shards, P key partitions; each ``->`` an all-to-all exchange of objects
through the object store, S x P of them, as in Ray Data's pull-based shuffle; with the
CLI's outputs nothing but counts reaches the driver)::

    sketch task per shard (files cut into row ranges): read + method.sketch +
        method.candidate_keys --> facts (Arrow: id, length, date, ...), arrays (numpy:
        the method's verification arrays, date), key rows hashed into P parts
        (key uint64, shard row int64: 16 B per key row)
    wave 1 (the first P/8 partitions), then wave 2 (the others):
      -> bucket task per partition: the partition's key rows from every shard, grouped
           by key: a star plus chain per shared key (the local engine's bucket_edges),
           minus (wave 2) the edges whose documents wave 1 joined; asks each shard for
           the rows of the documents left
      -> gather task per shard: those rows of its arrays, one object per partition
      -> link task per partition: the local engine's PartitionLinker (skip an edge whose
           documents are joined, verify the others) with a union-find over the
           partition's documents, seeded (wave 2) with wave 1's components
           --> partition forest (<= one edge per document of the partition)
      merge tree (tasks, fan-in 8): a union-find over the forests' edges -> one forest
    --> assign task: roots, sizes, representatives of the joined documents (about 40 B
        per duplicate document, in one worker), the pairs table
    --> clusters and kept records written by tasks per shard; the driver gets counts.

Only documents of shared keys travel past the sketch task, and only their verification
arrays (a MinHash signature: 4 bytes per permutation), once per partition that verifies
one of their edges. Two waves, because partitions linked in parallel cannot skip a
document that another partition joins: with one wave a near-copy found in most of the 25
bands is verified in most partitions (11.3M verifications at 1M documents against the
local engine's 1.07M); wave 2 skips, before any array moves, the edges whose documents
wave 1 already joined. Document positions are global input order (a shard's offset
plus its row), so roots, labels and representatives are those of the local engine: the
components of the accepted candidate edges do not depend on which edges were skipped as
already joined, nor on how keys are partitioned.

Ray retries a task whose worker dies, and rebuilds a lost object from the task that
made it; a task's output counts only once it completes, so a killed worker loses or
duplicates nothing. Errors raised in workers while reading (a malformed record) come
back as the same :class:`~neardup.errors.InputError` naming the file and line, before
anything is written.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.engine.buckets import bucket_edges, group_runs
from neardup.engine.corpus import ArrayRows, CorpusStageOutput, PartitionLinker
from neardup.engine.unionfind import UnionFind
from neardup.errors import InputError, check_int
from neardup.graph.edges import Pairs
from neardup.io import parquet_num_rows
from neardup.io.batch import DocumentBatch
from neardup.io.readers import ReaderConfig, detect_format, part_records, read_part
from neardup.methods.base import Method
from neardup.progress import StageTimer

__all__ = ["INSTALL_HINT", "RayConfig", "RayInputs", "RayRun", "connect", "import_ray", "ray_supports",
           "run_ray_stage", "worker_runtime_env", "write_outputs"]

INSTALL_HINT = "pip install 'neardup[ray]'"
#: Fault-injection drill (tests, chaos runs): when this environment variable names a path
#: and ``PATH.armed`` exists, the first linking task to run creates ``PATH`` and kills its
#: own worker process with SIGKILL; Ray must retry the task.
FAULT_ENV = "NEARDUP_RAY_FAULT_ONCE"
_NO_DATE = np.iinfo(np.int64).min
_SHARDED = ("parquet",)  # formats cut into row ranges; others are one shard per file


def import_ray():
    """The ``ray`` module with Ray Data, or an ImportError naming the extra to install."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise ImportError(
            f"engine='ray' needs Ray Data, which is not installed. Install it with {INSTALL_HINT} "
            "(or use engine='local')."
        ) from None
    return ray


def worker_runtime_env() -> dict[str, Any]:
    """Runtime environment making workers import this copy of neardup: its parent directory
    is put first on their PYTHONPATH (workers on other machines need neardup installed at
    the same version, or the same path on a shared file system)."""
    root = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    # One numba thread per task: Ray runs one task per CPU, and more threads per task
    # only oversubscribe the node's cores.
    return {"env_vars": {"PYTHONPATH": path, "NUMBA_NUM_THREADS": "1"}}


def connect(address: str | None = None) -> None:
    """Connect to the Ray cluster at ``address`` (``"auto"``, ``"ray://host:10001"``,
    ``"host:6379"``), or start a local one when None and ``RAY_ADDRESS`` is unset (never
    joining a cluster that someone else started on this machine unasked).
    Does nothing when Ray is already initialized in this process."""
    ray = import_ray()
    if ray.is_initialized():
        return
    ray.init(address=address or os.environ.get("RAY_ADDRESS") or "local", runtime_env=worker_runtime_env(), include_dashboard=False,
             logging_level="WARNING", log_to_driver=False)


@dataclass(frozen=True)
class RayConfig:
    """How the Ray engine runs.

    Parameters
    ----------
    address : str or None, default None
        Cluster address (``ray start --head`` prints it; ``"auto"`` finds a local one).
        None: the cluster this process is connected to, else ``RAY_ADDRESS``, else a new
        single-machine cluster.
    partitions : int or None, default None
        Key partitions (groups linked by one task each). None: from the number of
        documents, about 100,000 per partition, at least 8, a power of two.
    shard_rows : int, default 25_000
        Parquet files are read in runs of whole row groups of up to this many documents
        (one task each; a larger row group is one task); other formats are read one file
        per task.
    first_wave : int or None, default None
        Key partitions linked in the first wave; the others are linked afterwards, minus
        the candidate edges between documents the first wave already joined. None: an
        eighth of the partitions (at least one). ``partitions``: one wave (every
        partition verifies its candidates on its own, as many times as partitions find
        the same duplicate).
    memory_limit : int or None, default None
        Embedding methods: bytes a search task may use for a query batch's candidates and
        the IVF training sample, as the local stage's ``--memory-limit`` (the same value
        gives the same IVF centroids). None: the local engine's default.
    """

    address: str | None = None
    partitions: int | None = None
    shard_rows: int = 25_000
    first_wave: int | None = None
    memory_limit: int | None = None

    def __post_init__(self) -> None:
        if self.partitions is not None:
            check_int("RayConfig", "partitions", self.partitions, low=1, high=1 << 16)
        check_int("RayConfig", "shard_rows", self.shard_rows, low=1)
        if self.first_wave is not None:
            check_int("RayConfig", "first_wave", self.first_wave, low=1)
        if self.memory_limit is not None:
            check_int("RayConfig", "memory_limit", self.memory_limit, low=1 << 20)


@dataclass(frozen=True)
class RayInputs:
    """Input files read by the workers themselves (no document passes through the driver).

    Parameters
    ----------
    paths : sequence of paths
        Files (Parquet, JSONL, CSV/TSV, SGML) or directories; a directory that holds
        Parquet or JSONL files stands for them, sorted by path (a *sharded* corpus),
        otherwise it is a directory of ``.txt`` files as for the local engine.
    reader : ReaderConfig
    """

    paths: tuple[str, ...]
    reader: ReaderConfig = field(default_factory=ReaderConfig)


@dataclass(frozen=True)
class _Shard:
    path: str
    kind: str
    start: int  # first row (Parquet) or the index of an in-memory batch
    stop: int  # end row (Parquet), the batch's size (memory); -1: to the end of the file


def expand_inputs(paths: Sequence[str | os.PathLike]) -> list[tuple[str, str]]:
    """(path, format) of every input file, directories of shards expanded in path order."""
    files = []
    for path in paths:
        path = Path(path)
        if path.is_dir():
            inside = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")
                            and _kind_or_none(p) in ("parquet", "jsonl"))
            if inside:
                files.extend((str(p), _kind_or_none(p)) for p in inside)
                continue
        files.append((os.fspath(path), detect_format(path)))
    return files


def _kind_or_none(path: Path) -> str | None:
    try:
        return detect_format(path)
    except InputError:
        return None


def _row_groups(path: str) -> list[int]:
    import pyarrow.parquet as pq

    parquet_num_rows(path)  # an unreadable file raises InputError naming it
    with pq.ParquetFile(path) as handle:
        return [handle.metadata.row_group(g).num_rows for g in range(handle.metadata.num_row_groups)]


def plan_shards(inputs: RayInputs, shard_rows: int) -> list[_Shard]:
    """Cut the inputs into read tasks: Parquet by whole row groups (from the file footers:
    consecutive groups up to ``shard_rows`` rows, or one larger group, so each group is
    decoded once), other formats one per file."""
    if inputs.reader.limit is not None:
        raise ValueError(
            "run: parameter 'limit' of the reader is not supported by engine='ray'; got "
            f"{inputs.reader.limit!r}. Cut the input instead, or use engine='local'."
        )
    shards = []
    for path, kind in expand_inputs(inputs.paths):
        if kind in _SHARDED:
            start = stop = 0
            for rows in _row_groups(path):
                if stop > start and stop - start + rows > shard_rows:
                    shards.append(_Shard(path, kind, start, stop))
                    start = stop
                stop += rows
            if stop > start:
                shards.append(_Shard(path, kind, start, stop))
        else:
            shards.append(_Shard(path, kind, 0, -1))
    return shards


# -- workers: read and sketch ------------------------------------------------------------


def _shard_batches(shard: _Shard, reader: ReaderConfig, memory: list | None) -> Iterator[DocumentBatch]:
    """The shard's documents in batches of ``reader.batch_size``; ids None when documents
    are numbered by global position (assigned once shard offsets are known)."""
    if shard.kind == "memory":
        import ray

        yield ray.get(memory[shard.start])
        return
    sharded = shard.kind in _SHARDED
    yield from read_part(shard.path, shard.kind, reader, start=shard.start if sharded else 0,
                         stop=shard.stop if sharded else None)


_FACTS = pa.schema([("shard", pa.int32()), ("row", pa.int64()), ("id", pa.string()),
                    ("length", pa.int64()), ("date", pa.int64()), ("n_features", pa.int64())])


def _batch_facts(index: int, offset: int, batch: DocumentBatch, n_features) -> tuple:
    """A batch's dates (int64 seconds, NaT as :data:`_NO_DATE`) and its facts table
    (:data:`_FACTS`; ``offset``: the batch's first shard row)."""
    n = len(batch)
    dates = (batch.dates.astype("datetime64[s]").astype(np.int64) if batch.dates is not None
             else np.full(n, _NO_DATE, np.int64))
    return dates, pa.table({
        "shard": pa.array(np.full(n, index, np.int32)),
        "row": pa.array(np.arange(offset, offset + n, dtype=np.int64)),
        "id": pa.array(batch.ids if batch.ids is not None else [None] * n, pa.string()),
        "length": pa.array(np.fromiter(map(len, batch.texts), np.int64, n)),
        "date": pa.array(dates),
        "n_features": pa.array(np.asarray(n_features, np.int64)),
    }, schema=_FACTS)


def _sketch_task(index: int, shard: _Shard, method: Method, reader: ReaderConfig, memory: list | None,
                 partitions: int) -> tuple:
    """Read and sketch one shard. Returns ``partitions + 3`` objects: a count (documents,
    key rows), the shard's facts (Arrow, :data:`_FACTS`), its per-document arrays (the
    method's verification arrays and ``date``, numpy, shard row order), then per key
    partition ``p`` (``key % partitions == p``) the shard's key rows: ``key`` (uint64),
    ``row`` (int64 shard row), ``payload`` when the method has one."""
    cpu = time.process_time()
    facts, arrays, keys, rows, payload, offset = [], {}, [], [], [], 0
    for batch in _shard_batches(shard, reader, memory):
        n = len(batch)
        sketch = method.sketch(batch.texts)
        found = method.candidate_keys(sketch)
        dates, table = _batch_facts(index, offset, batch, sketch.n_features)
        facts.append(table)
        for name in method.candidate_arrays:
            arrays.setdefault(name, []).append(np.ascontiguousarray(sketch.arrays[name]))
        arrays.setdefault("date", []).append(dates)
        keys.append(np.asarray(found.keys, np.uint64))
        rows.append(np.asarray(found.docs, np.int64) + offset)
        if found.payload is not None:
            payload.append(np.asarray(found.payload, np.uint64))
        offset += n
    arrays = {name: np.concatenate(parts) for name, parts in arrays.items()}
    key = np.concatenate(keys) if keys else np.zeros(0, np.uint64)
    row = np.concatenate(rows) if rows else np.zeros(0, np.int64)
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
    table = pa.concat_tables(facts) if facts else _FACTS.empty_table()
    return ((offset, int(key.size), time.process_time() - cpu), table, arrays, *out)


def _concat_pairs(parts: list[tuple[np.ndarray, ...]]) -> Pairs:
    if not parts:
        return Pairs.empty()
    return Pairs(*(np.concatenate([p[i] for p in parts]) for i in range(3)))


def _roots_of(docs: np.ndarray, seed: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
    """Component root of each document after the earlier waves (itself if it joined none)."""
    if seed is None or seed[0].size == 0:
        return docs.copy()
    nodes, roots = seed
    at = np.minimum(np.searchsorted(nodes, docs), nodes.size - 1)
    return np.where(nodes[at] == docs, roots[at], docs)


def _bucket_task(offsets: np.ndarray, method: Method, seed, *parts: dict) -> tuple:
    """One key partition's candidate edges (all shards' key rows of the partition, in
    shard order): a star plus chain per shared key (or the method's ``link_bucket``),
    minus the edges whose documents an earlier wave already joined (``seed``: sorted
    positions of joined documents and their roots). Returns ``1 + len(offsets)`` objects:
    the edges with counts, then per shard the sorted shard rows whose arrays the
    partition needs."""
    cpu = time.process_time()
    keys = np.concatenate([p["key"] for p in parts])
    docs = np.concatenate([offsets[s] + p["row"] for s, p in enumerate(parts)])
    payload = np.concatenate([p["payload"] for p in parts]) if "payload" in parts[0] else None
    order = np.lexsort((docs, keys))
    keys, docs = keys[order], docs[order]
    payload = payload[order] if payload is not None else None
    starts, sizes = group_runs(keys)
    multi = sizes > 1
    shared_rows = int(sizes[multi].sum())
    linked = method.link_bucket(keys, docs, payload)
    if linked is not None:
        left, right, score = linked.left, linked.right, np.asarray(linked.score, np.float32)
        keep = None if seed is None else _roots_of(left, seed) != _roots_of(right, seed)
    else:
        upto = method.bucket_all_pairs_upto
        left, right = bucket_edges(docs, starts[multi], sizes[multi], upto)
        score, keep = None, None
        if seed is not None:
            # Roots looked up once per shared key row, not twice per edge: the same buckets
            # over the rows' roots give each edge's two roots.
            shared = np.repeat(multi, sizes)
            roots = docs.copy()
            roots[shared] = _roots_of(docs[shared], seed)
            root_left, root_right = bucket_edges(roots, starts[multi], sizes[multi], upto)
            keep = root_left != root_right
            del roots, root_left, root_right
    del keys, docs, payload, order
    candidates = int(left.size)
    if keep is not None:
        left, right = left[keep], right[keep]
        score = score[keep] if score is not None else None
    need = np.unique(np.concatenate((left, right)))
    bounds = np.searchsorted(need, np.append(offsets, np.iinfo(np.int64).max))
    requests = [need[bounds[s]:bounds[s + 1]] - offsets[s] for s in range(len(offsets))]
    edges = {"left": left, "right": right, "score": score, "candidate_edges": candidates,
             "cpu_s": time.process_time() - cpu,
             "shared_rows": shared_rows, "documents": int(need.size)}
    return (edges, *requests)


def _gather_task(arrays: dict[str, np.ndarray], names: tuple[str, ...], *requests: np.ndarray):
    """The rows of one shard's arrays (``names``) that each partition asked for."""
    out = tuple({name: arrays[name][rows] for name in names} for rows in requests)
    return out if len(out) != 1 else out[0]


def _maybe_fail_once() -> None:
    marker = os.environ.get(FAULT_ENV)
    if not marker or not os.path.exists(marker + ".armed"):
        return
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return
    os.kill(os.getpid(), signal.SIGKILL)


def _link_task(edges: dict, method: Method, window_hours: float | None, seed, *rows: dict) -> dict:
    """One key partition linked as the local engine links it (skip an edge whose documents
    are already joined, verify the others), with a union-find over the partition's
    documents seeded with the earlier waves' components: its forest edges, the pairs the
    time window kept apart, and counts."""
    _maybe_fail_once()
    cpu = time.process_time()
    left, right, score = edges["left"], edges["right"], edges["score"]
    local = np.unique(np.concatenate((left, right)))
    arrays = {name: np.concatenate([r[name] for r in rows]) for name in rows[0]} if rows else {}
    dates = arrays.pop("date", None) if window_hours is not None else None
    arrays.pop("date", None)
    linker = PartitionLinker(method, local, ArrayRows(local, arrays), dates, window_hours, uf=None)
    if seed is not None and local.size:
        # Documents of one earlier component start joined (not forest edges: the earlier
        # wave's forest holds them).
        roots = _roots_of(local, seed)
        by = np.argsort(roots, kind="stable")
        same = np.flatnonzero(roots[by][1:] == roots[by][:-1])
        linker.uf.union(by[same], by[same + 1])
    linker.consider(left, right, score)
    forest, outside = _concat_pairs(linker.forest), _concat_pairs(linker.outside)
    return {"forest": (forest.left, forest.right, forest.score),
            "outside": (outside.left, outside.right, outside.score),
            "counts": {"bucket_cpu_s": edges["cpu_s"], "link_cpu_s": time.process_time() - cpu,
                       "candidate_edges": edges["candidate_edges"], "edges_after_seed": int(left.size),
                       "verified_edges": linker.counts["verified_edges"],
                       "shared_key_rows": edges["shared_rows"], "linked_documents": int(local.size)}}


def _merge_forests(*results: dict) -> tuple[dict, tuple[np.ndarray, np.ndarray], dict]:
    """Link results (or merges of them) as one: a spanning forest of their forests' union
    (a union-find over the documents in them, edges in a fixed order so the forest is
    deterministic), the pairs the time window kept apart, summed counts; then the seed of
    the next wave (sorted joined documents, the root of each: its component's smallest
    position) and the counts alone."""
    def cat(part: str, i: int, dtype) -> np.ndarray:
        return np.concatenate([np.zeros(0, dtype)] + [r[part][i] for r in results]).astype(dtype)

    left, right, score = cat("forest", 0, np.int64), cat("forest", 1, np.int64), cat("forest", 2, np.float32)
    order = np.lexsort((right, left))
    left, right, score = left[order], right[order], score[order]
    nodes = np.unique(np.concatenate((left, right)))
    uf = UnionFind(nodes.size)
    joined = uf.union(np.searchsorted(nodes, left), np.searchsorted(nodes, right))
    counts: dict[str, int] = {}
    for r in results:
        for k, v in r["counts"].items():
            counts[k] = counts.get(k, 0) + v
    merged = {"forest": (left[joined], right[joined], score[joined]),
              "outside": tuple(cat("outside", i, t) for i, t in enumerate((np.int64, np.int64, np.float32))),
              "counts": counts}
    return merged, (nodes, nodes[uf.roots()]), counts


def _forest_sizes(merged: dict) -> tuple[int, int]:
    return int(merged["forest"][0].size), int(merged["outside"][0].size)


def _reduce_forests(refs: list, fan_in: int = 8):
    """A tree of merge tasks over link results: object references to the merged result,
    the seed and the counts. Each merge holds at most ``fan_in`` forests, each of at most
    one edge per joined document, so no process, the driver included, holds every
    partition's forest."""
    import ray

    merge = ray.remote(_merge_forests).options(num_returns=3)
    while True:
        out = [merge.remote(*refs[i:i + fan_in]) for i in range(0, len(refs), fan_in)]
        if len(out) == 1:
            return out[0]
        refs = [o[0] for o in out]


# -- embedding methods: the vector stage as tasks ---------------------------------------


def ray_supports(method: Method, algorithm: str) -> bool:
    """Whether ``engine="ray"`` runs ``method`` clustered by ``algorithm``: the keyed
    corpus stage's methods, and the embedding methods the local vector stage runs."""
    from neardup.engine.corpus import supports_corpus_stage
    from neardup.engine.vectors import supports_vector_stage

    return ((supports_corpus_stage(method, algorithm) and method.candidate_fixed_width)
            or supports_vector_stage(method, algorithm))


def _embed_task(index: int, shard: _Shard, method: Method, reader: ReaderConfig,
                memory: list | None) -> tuple:
    """Read and embed one shard. Returns five objects: counts (documents, rows, row
    dimension, largest deviation of a row norm from 1, CPU seconds), the shard's facts
    (Arrow, :data:`_FACTS`), its rows (float32, document order), the rows each document
    owns (int64) and the documents' dates (int64 seconds, NaT as int64 min)."""
    from neardup.graph.similarity import check_unit_rows

    cpu = time.process_time()
    facts, rows, owned, dates, offset, deviation = [], [], [], [], 0, 0.0
    for batch in _shard_batches(shard, reader, memory):
        n = len(batch)
        sketch = method.sketch(batch.texts)
        found, counts = method.vector_rows(sketch)
        found = np.asarray(found, np.float32)
        if found.shape[0]:
            # Norms as the local stage checks them (its float32 storage reads the same).
            found, norms = check_unit_rows(method.name, "embeddings", found)
            deviation = max(deviation, float(np.abs(norms - 1.0).max()))
            rows.append(found)
        date, table = _batch_facts(index, offset, batch, sketch.n_features)
        facts.append(table)
        owned.append(np.asarray(counts, np.int64))
        dates.append(date)
        offset += n
    rows = np.concatenate(rows) if rows else np.zeros((0, 0), np.float32)
    owned = np.concatenate(owned) if owned else np.zeros(0, np.int64)
    dates = np.concatenate(dates) if dates else np.zeros(0, np.int64)
    table = pa.concat_tables(facts) if facts else _FACTS.empty_table()
    info = (offset, int(rows.shape[0]), int(rows.shape[1]), deviation, time.process_time() - cpu)
    return info, table, rows, owned, dates


class _ObjectRows:
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


def _train_ivf_task(shards: list[tuple[int, int]], refs: list, n_rows: int, dim: int, nlist: int,
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


def _build_ivf_task(trained: np.ndarray, rows: np.ndarray, start: int, threads: int | None) -> np.ndarray:
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


def _vector_search_task(i: int, shards: list[tuple[int, int]], row_refs: list, owned_refs: list,
                        date_refs: list | None, method: Method, k: int | None, floor: float,
                        window_hours: float | None, trained: np.ndarray | None,
                        ivf_refs: list | None, budget: int) -> dict:
    """Row shard ``i`` searched against the shards it must meet, exactly as the local
    vector stage searches it (the same candidates, float64 rescoring and union-find over
    the documents): its forest, the pairs the time window kept apart, counts."""
    import ray

    from neardup.engine.vectors import _QueryBatchSize, _search_shard, _ShardLinker
    from neardup.graph.similarity import import_faiss, omp_threads

    cpu = time.process_time()
    search = method.vector_search
    owned = np.concatenate([ray.get(r) for r in owned_refs])
    offsets = np.zeros(owned.size + 1, np.int64)
    np.cumsum(owned, out=offsets[1:])
    del owned
    dates = None
    if window_hours is not None:  # int64 min is NaT's own representation
        dates = np.concatenate([ray.get(r) for r in date_refs]).astype("datetime64[s]")
    linker = _ShardLinker(method, UnionFind(offsets.size - 1), offsets, search.threshold, dates,
                          window_hours)
    faiss = import_faiss()
    store = _ObjectRows(shards, row_refs, 0)
    with omp_threads(faiss, search.threads or 1):
        ivf = _ObjectIvf(faiss, trained, ivf_refs, search.nprobe) if trained is not None else None
        store.dim = int(ray.get(row_refs[i]).shape[1])
        _search_shard(faiss, store, shards, i, k, floor, linker, _QueryBatchSize(budget // 4 // 40), ivf)
    forest, outside = Pairs.concat(linker.forest), Pairs.concat(linker.outside)
    return {"forest": (forest.left, forest.right, forest.score),
            "outside": (outside.left, outside.right, outside.score),
            "counts": {**linker.counts, "search_cpu_s": time.process_time() - cpu}}


# -- driver ------------------------------------------------------------------------------


def _ray_error(exc: BaseException) -> BaseException:
    """The neardup InputError inside a Ray task failure, as raised in the worker (its
    message names the file and record), or the failure unchanged."""
    seen, stack = set(), [exc]
    while stack:
        error = stack.pop()
        if error is None or id(error) in seen:
            continue
        seen.add(id(error))
        if type(error) is InputError:
            return error
        stack.extend([error.__cause__, error.__context__, getattr(error, "cause", None)])
    return exc


def _estimate_docs(shards: list[_Shard], memory: list | None) -> int:
    """Documents in the input, before reading it (it sets the number of key partitions):
    exact for Parquet row ranges and in-memory batches, one per kilobyte of other files."""
    total = 0
    for shard in shards:
        if shard.kind in _SHARDED or shard.kind == "memory":
            total += max(shard.stop - shard.start, 0) if shard.kind in _SHARDED else shard.stop
        else:
            total += max(os.path.getsize(shard.path) // 1000, 1)
    return total


def _memory_shards(batches: Iterable[DocumentBatch]) -> tuple[list[_Shard], list, bool]:
    import ray

    shards, refs, has_dates = [], [], False
    for batch in batches:
        has_dates = has_dates or batch.dates is not None
        shards.append(_Shard("<memory>", "memory", len(refs), len(batch)))
        refs.append(ray.put(batch))
    return shards, refs, has_dates


def _project(block: pa.Table, columns: list[str]) -> pa.Table:
    if block.num_rows == 0:
        return pa.table({c: pa.array([], pa.int64()) for c in columns})
    return block.select(columns)


def _collect(dataset, columns: list[str]) -> pa.Table:
    """``columns`` of a materialized dataset's blocks, projected where the blocks live."""
    import ray

    project = ray.remote(_project)
    refs = dataset.to_arrow_refs() if dataset is not None else []
    tables = ray.get([project.remote(ref, columns) for ref in refs])
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return pa.table({c: pa.array([], pa.int64()) for c in columns})
    return pa.concat_tables(tables)


def run_ray_stage(
    source: RayInputs | Iterable[DocumentBatch],
    method: Method,
    *,
    config: RayConfig = RayConfig(),
    time_window_hours: float | None = None,
    timer: StageTimer | None = None,
    progress: bool | None = None,
) -> CorpusStageOutput:
    """The corpus stage on Ray (see the module docstring).

    ``source`` is either :class:`RayInputs` (the workers read the files) or document
    batches from this process (shipped to the cluster's object store batch by batch, for
    the in-memory API). Returns what :func:`~neardup.engine.run_corpus_stage` returns;
    collecting its per-document facts (ids, lengths, dates, roots) is the only step
    proportional to the corpus, and :func:`write_outputs` avoids even that.
    """
    run = RayRun(source, method, config=config, time_window_hours=time_window_hours,
                 timer=timer, progress=progress)
    run.execute()
    return run.stage_output()


class RayRun:
    """One Ray de-duplication: the distributed datasets and the driver's merge state.

    After :meth:`execute`: ``docs`` (the sketch tasks' per-document facts as a materialized
    Ray dataset, None for an empty corpus), ``offsets`` (global position of each shard's
    first document), ``stats``, and object references to the merge tree's result:
    ``merged_ref`` (forest and outside-window pairs) and ``seed_ref`` (sorted positions
    of every document that joined another, and its component root: the smallest member).
    The driver fetches those only when asked (``nodes``, ``node_roots``, ``forest``,
    ``outside``: the Python API's :meth:`stage_output`); :func:`write_outputs` leaves
    them in the cluster.
    """

    def __init__(self, source, method: Method, *, config: RayConfig = RayConfig(),
                 time_window_hours: float | None = None, timer: StageTimer | None = None,
                 progress: bool | None = None) -> None:
        if not method.candidate_fixed_width and method.vector_search is None:
            # The Ray shuffle carries fixed-width arrays only (no ragged sets, texts, dates).
            raise ValueError(
                f"run: method {method.name!r} with these parameters has no keyed corpus stage "
                "that verifies from fixed-width rows nor a vector stage, which engine='ray' "
                "needs (ngram, spotsigs and rerank read shingle sets or texts the Ray shuffle "
                "does not carry); supported: exact, minhash (verify='signature' or 'none'), "
                "simhash, and retsim, retsim-partial, biencoder with index 'auto', 'flat' or "
                "'ivf' (not 'hnsw'), clustered by components. Use engine='local' or 'memory'."
            )
        self.source, self.method, self.config = source, method, config
        self.window = time_window_hours
        self.timer = timer or StageTimer()
        self.progress = progress

    def execute(self) -> None:
        ray = import_ray()
        connect(self.config.address)
        context = ray.data.DataContext.get_current()  # Ray Data writes the outputs
        context.enable_progress_bars = bool(self.progress) if self.progress is not None else sys.stderr.isatty()
        try:
            self._execute(ray)
        except Exception as exc:  # a worker's InputError comes back wrapped by Ray
            error = _ray_error(exc)
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
            shards, memory, self.has_dates = _memory_shards(self.source)
            reader = ReaderConfig()
        if self.window is not None and not self.has_dates:
            raise ValueError(
                f"run: a time window (time_window_hours={self.window!r}) needs document dates, "
                "and the input has none. Give the documents' dates (--date-field; date_field= "
                "in neardup.dedup) or drop the window."
            )
        self.n_shards = len(shards)
        if method.candidate_arrays is None:  # an embedding method: the vector stage
            self._execute_vector(ray, shards, memory, reader)
            return
        partitions = self.config.partitions or _default_partitions(_estimate_docs(shards, memory))
        self.partitions = partitions
        method_ref = ray.put(method)
        sketch = ray.remote(_sketch_task).options(num_returns=partitions + 3)
        with timer.stage("sketch"):
            out = [sketch.remote(i, shard, method_ref, reader, memory, partitions)
                   for i, shard in enumerate(shards)]
            sizes = np.array(ray.get([o[0] for o in out]), np.float64).reshape(-1, 3)
        counts = sizes[:, 0].astype(np.int64)
        self.n_keys = int(sizes[:, 1].sum())
        self.sketch_cpu = float(sizes[:, 2].sum())
        self.offsets = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
        self.n_docs = int(counts.sum())
        facts = [o[1] for o, n in zip(out, counts) if n]
        self.docs = ray.data.from_arrow_refs(facts) if facts else None
        arrays = [o[2] for o in out]
        keys = [list(o[3:]) for o in out]
        del out
        names = tuple(method.candidate_arrays) + (("date",) if self.window is not None else ())
        bucket = ray.remote(_bucket_task).options(num_returns=len(shards) + 1)
        gather = ray.remote(_gather_task)
        link = ray.remote(_link_task)
        first = min(self.config.first_wave or max(1, partitions // 8), partitions)
        waves = [list(range(first)), list(range(first, partitions))]
        merged = seed = None
        totals: dict[str, int] = {}
        self.wave_stats = []
        with timer.stage("pairs"):
            for wave in waves if self.n_docs else []:
                if not wave:
                    continue
                buckets = [bucket.remote(self.offsets, method_ref, seed,
                                         *[keys[s][p] for s in range(len(shards))]) for p in wave]
                for part in keys:  # the bucket tasks hold them now; freed as they finish
                    for p in wave:
                        part[p] = None
                rows = [gather.options(num_returns=len(wave)).remote(arrays[s], names,
                                                                     *[b[1 + s] for b in buckets])
                        for s in range(len(shards))]
                rows = [r if isinstance(r, list) else [r] for r in rows]
                linked = [link.remote(b[0], method_ref, self.window, seed, *[r[j] for r in rows])
                          for j, b in enumerate(buckets)]
                del buckets, rows
                merged, seed, counts = _reduce_forests(([merged] if merged is not None else []) + linked)
                counts = ray.get(counts)  # the wave is done: its seed is ready for the next
                self.wave_stats.append({"partitions": len(wave), **{
                    k: round(v - totals.get(k, 0), 3) for k, v in counts.items()}})
                totals = counts
        with timer.stage("cluster"):
            if merged is None:
                final, seed_arrays, totals = _merge_forests()
                merged, seed = ray.put(final), ray.put(seed_arrays)
            self.merged_ref, self.seed_ref = merged, seed
            self._fetched = None
            # Only two counts come back: the forest stays in the cluster.
            forest_edges, outside = ray.get(ray.remote(_forest_sizes).remote(merged))
            self._finish(totals, forest_edges, outside, partitions)

    def _execute_vector(self, ray, shards: list[_Shard], memory: list | None, reader: ReaderConfig) -> None:
        """The vector stage on Ray: one embed task per input shard (its rows stay in the
        object store as one row shard), the shared IVF centroids and per-shard IVF
        indexes when the index is approximate, one search task per row shard, and the
        keyed stage's merge tree over their forests."""
        from neardup.engine.corpus import default_memory_limit
        from neardup.engine.vectors import resolve_index
        from neardup.graph.similarity import ivf_nlist, search_margin

        method, timer = self.method, self.timer
        search = method.vector_search
        budget = self.config.memory_limit or default_memory_limit()
        method_ref = ray.put(method)
        embed = ray.remote(_embed_task).options(num_returns=5)
        with timer.stage("sketch"):
            out = [embed.remote(i, shard, method_ref, reader, memory) for i, shard in enumerate(shards)]
            info = ray.get([o[0] for o in out])
        counts = np.array([x[0] for x in info], np.int64)
        row_counts = np.array([x[1] for x in info], np.int64)
        dim = max([x[2] for x in info], default=0)
        deviation = max([x[3] for x in info], default=0.0)
        self.sketch_cpu = float(sum(x[4] for x in info))
        self.n_keys, self.wave_stats, self.partitions = 0, [], 0
        self.offsets = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
        self.n_docs = int(counts.sum())
        facts = [o[1] for o, n in zip(out, counts) if n]
        self.docs = ray.data.from_arrow_refs(facts) if facts else None
        row_starts = np.concatenate(([0], np.cumsum(row_counts))).astype(np.int64)
        live = np.flatnonzero(row_counts > 0).tolist()
        row_shards = [(int(row_starts[s]), int(row_starts[s + 1])) for s in live]
        row_refs = [out[s][2] for s in live]
        owned_refs = [o[3] for o in out]
        date_refs = [o[4] for o in out] if self.window is not None else None
        del out
        n_rows = int(row_counts.sum())
        kind, k = resolve_index(search, n_rows)
        k = None if k is None else min(k, max(n_rows - 1, 1))
        floor = search.threshold - search_margin(max(dim, 1), deviation)
        trained, ivf_refs, extra = None, None, {}
        merged = None
        with timer.stage("pairs"):
            if n_rows >= 2:
                if kind == "ivf":
                    nlist = ivf_nlist(n_rows, search.nlist)
                    trained = ray.remote(_train_ivf_task).remote(row_shards, row_refs, n_rows, dim,
                                                                 nlist, search, budget)
                    build = ray.remote(_build_ivf_task)
                    ivf_refs = [build.remote(trained, row_refs[j], row_shards[j][0], search.threads)
                                for j in range(len(row_shards))]
                    extra = {"nlist": nlist, "nprobe": min(search.nprobe, nlist)}
                task = ray.remote(_vector_search_task)
                results = [task.remote(i, row_shards, row_refs, owned_refs, date_refs, method_ref, k, floor,
                                       self.window, trained, ivf_refs, budget)
                           for i in range(len(row_shards))]
                merged, seed, counts = _reduce_forests(results)
        with timer.stage("cluster"):
            if merged is None:
                final, seed_arrays, totals = _merge_forests()
                merged, seed = ray.put(final), ray.put(seed_arrays)
            else:
                totals = ray.get(counts)
            self.merged_ref, self.seed_ref, self._fetched = merged, seed, None
            forest_edges, outside = ray.get(ray.remote(_forest_sizes).remote(merged))
            self._finish(totals, forest_edges, outside, 0)
        self.stats = {
            "rows": n_rows, "index": kind, "k": k, **extra, "shards": self.n_shards,
            "row_shards": len(row_shards), "candidate_pairs": totals.get("candidate_pairs", 0),
            "scored_pairs": totals.get("scored_pairs", 0), "forest_edges": forest_edges,
            "outside_window": outside,
            "task_cpu_s": {"embed": round(self.sketch_cpu, 2),
                           "search": round(totals.get("search_cpu_s", 0.0), 2)},
        }

    def _fetch(self) -> tuple:
        """The merge tree's result on the driver (once): nodes, roots, forest, outside."""
        if self._fetched is None:
            import ray

            final, (nodes, roots) = ray.get([self.merged_ref, self.seed_ref])
            self._fetched = (nodes, roots, Pairs(*final["forest"]).canonical(),
                             Pairs(*final["outside"]).canonical())
        return self._fetched

    nodes = property(lambda self: self._fetch()[0], doc="Sorted positions of joined documents.")
    node_roots = property(lambda self: self._fetch()[1], doc="Component root of each of ``nodes``.")
    forest = property(lambda self: self._fetch()[2], doc="Verified edges joining components (Pairs).")
    outside = property(lambda self: self._fetch()[3], doc="Pairs the time window kept apart (Pairs).")

    def _finish(self, counts: dict, forest_edges: int, outside: int, partitions: int) -> None:
        self.forest_edges, self.outside_edges = forest_edges, outside
        self.stats = {
            "candidate_keys": self.n_keys, "candidate_edges": counts.get("candidate_edges", 0),
            "verified_edges": counts.get("verified_edges", 0), "forest_edges": forest_edges,
            "shared_key_rows": counts.get("shared_key_rows", 0), "outside_window": outside,
            "partitions": partitions, "shards": self.n_shards, "waves": self.wave_stats,
            # CPU seconds inside the tasks (not their start-up, transfers or Ray's daemons).
            "task_cpu_s": {"sketch": round(self.sketch_cpu, 2),
                           "bucket": round(counts.get("bucket_cpu_s", 0.0), 2),
                           "link": round(counts.get("link_cpu_s", 0.0), 2)},
        }

    def roots(self) -> np.ndarray:
        """Root of every document (int64, shape (n_docs,)): a driver-side array."""
        roots = np.arange(self.n_docs, dtype=np.int64)
        roots[self.nodes] = self.node_roots
        return roots

    def stage_output(self) -> CorpusStageOutput:
        """Collect the per-document facts to the driver, in input order."""
        facts = _collect(self.docs, ["shard", "row", "id", "length", "date", "n_features"])
        position = self.offsets[facts.column("shard").to_numpy()] + facts.column("row").to_numpy()
        order = np.argsort(position, kind="stable")
        facts = facts.take(pa.array(order))
        ids = np.array(facts.column("id").to_pylist(), dtype=object)
        missing = np.array([i is None for i in ids], bool) if ids.size else np.zeros(0, bool)
        if missing.any():
            ids[missing] = np.arange(self.n_docs)[missing].astype(str).astype(object)
        dates = None
        if self.has_dates:
            seconds = facts.column("date").to_numpy()
            dates = np.where(seconds == _NO_DATE, np.datetime64("NaT"),
                             seconds.astype("datetime64[s]")).astype("datetime64[s]")
        return CorpusStageOutput(
            ids=ids, lengths=facts.column("length").to_numpy().astype(np.int64),
            n_features=facts.column("n_features").to_numpy().astype(np.int64), dates=dates,
            roots=self.roots(), pairs=self.forest, outside_window=self.outside, stats=self.stats,
        )


def _default_partitions(n_docs: int) -> int:
    need = max(n_docs / 100_000, 1.0)
    return int(max(8, 1 << int(np.ceil(np.log2(need)))))


# -- distributed outputs (the CLI's --engine ray) -----------------------------------------


def _resolved(value):
    """A value passed to a task, fetched if it came as an object reference (Ray resolves
    references only when they are a task's own arguments)."""
    import ray

    return ray.get(value) if isinstance(value, ray.ObjectRef) else value


def _duplicate_facts(block: pa.Table, seed_ref, offsets: np.ndarray) -> pa.Table:
    """Position, id and length of the block's documents that joined another."""
    nodes = _resolved(seed_ref)[0]
    doc = offsets[block.column("shard").to_numpy()] + block.column("row").to_numpy()
    inside = np.isin(doc, nodes)
    rows = block.filter(pa.array(inside))
    return pa.table({"doc": doc[inside], "id": rows.column("id"), "length": rows.column("length")})


def _assign_clusters(seed: tuple[np.ndarray, np.ndarray], merged: dict, max_cluster_size: int | None,
                     oversized: str, keep: str, pairs_dir: str | None, method_name: str,
                     *facts: pa.Table) -> tuple[dict, np.ndarray, dict]:
    """Cluster, size, representative and template flag of every document that joined
    another (the others are singletons, their own representatives), with the local
    engine's rules (graph.cluster.flag_oversized, pipeline.choose_representatives) and
    root positions as cluster ids; writes the pairs table into ``pairs_dir`` when given.
    One task holds the duplicates' facts (about 40 bytes per duplicate document), as the
    root of the merge tree does; the driver receives only the counts. Returns the
    per-duplicate table, the sorted positions of the documents ``out`` drops, counts."""
    nodes, roots = seed
    facts = [t for t in facts if t.num_rows]
    facts = pa.concat_tables(facts) if facts else pa.table({
        "doc": pa.array([], pa.int64()), "id": pa.array([], pa.string()), "length": pa.array([], pa.int64())})
    facts = facts.take(pa.array(np.argsort(facts.column("doc").to_numpy(), kind="stable")))
    lengths = facts.column("length").to_numpy().astype(np.int64)
    cluster_of = roots.copy()
    _, inverse, sizes = np.unique(roots, return_inverse=True, return_counts=True)
    size = sizes[inverse]
    template = np.zeros(nodes.size, bool)
    if max_cluster_size is not None:
        template = size > max_cluster_size
        if oversized == "split":
            cluster_of = np.where(template, nodes, cluster_of)
            size = np.where(template, 1, size)
    primary = -lengths if keep == "longest" else np.zeros(nodes.size, np.int64)
    by = np.lexsort((nodes, primary, cluster_of))
    first = np.ones(nodes.size, bool)
    first[1:] = cluster_of[by][1:] != cluster_of[by][:-1]
    representative = np.zeros(nodes.size, bool)
    representative[by[first]] = True
    if pairs_dir is not None:
        import pyarrow.parquet as pq

        ids = facts.column("id").to_pylist()
        ids = np.array([str(d) if i is None else i for i, d in zip(ids, nodes.tolist())], dtype=object)
        forest, outside = Pairs(*merged["forest"]).canonical(), Pairs(*merged["outside"]).canonical()
        pairs = Pairs.concat([forest, outside])
        pq.write_table(pa.table({
            "id_a": pa.array(ids[np.searchsorted(nodes, pairs.left)].tolist(), pa.string()),
            "id_b": pa.array(ids[np.searchsorted(nodes, pairs.right)].tolist(), pa.string()),
            "score": pa.array(pairs.score, pa.float32()),
            "method": pa.array([method_name] * len(pairs), pa.string()),
            "outside_window": pa.array([False] * len(forest) + [True] * len(outside)),
        }), Path(pairs_dir) / "part-00000.parquet")
    cluster_sizes = np.unique(cluster_of, return_counts=True)[1] if nodes.size else np.zeros(0, np.int64)
    counts = {"dropped": int((~representative).sum()),
              "documents_in_duplicate_clusters": int((size > 1).sum()),
              "duplicate_clusters": int((cluster_sizes > 1).sum()),
              "largest_cluster": int(cluster_sizes.max()) if cluster_sizes.size else 0,
              "template_documents": int(template.sum())}
    table = {"doc": nodes, "cluster": cluster_of, "size": size, "representative": representative,
             "template": template}
    return table, np.sort(nodes[~representative]), counts


def _empty_count(block: pa.Table) -> int:
    return int((block.column("n_features").to_numpy() == 0).sum())


def _cluster_rows(batch: pa.Table, *, clusters_ref, offsets: np.ndarray) -> pa.Table:
    table = _resolved(clusters_ref)
    doc = offsets[batch.column("shard").to_numpy()] + batch.column("row").to_numpy()
    n = doc.size
    cluster, size = doc.copy(), np.ones(n, np.int64)
    representative, template = np.ones(n, bool), np.zeros(n, bool)
    nodes = table["doc"]
    index = np.searchsorted(nodes, doc)
    index[index >= nodes.size] = 0
    dup = nodes[index] == doc if nodes.size else np.zeros(n, bool)
    for name, out in (("cluster", cluster), ("size", size), ("representative", representative),
                      ("template", template)):
        out[dup] = table[name][index[dup]]
    ids = batch.column("id").to_pylist()
    ids = [str(d) if i is None else i for i, d in zip(ids, doc.tolist())]
    status = np.where(batch.column("n_features").to_numpy() > 0, "ok", "empty")
    return pa.table({"id": pa.array(ids, pa.string()), "cluster": pa.array(cluster),
                     "cluster_size": pa.array(size), "representative": pa.array(representative),
                     "status": pa.array(status.tolist(), pa.string()), "template": pa.array(template)})


def _kept_records(items: pa.Table, *, shards: list, reader: ReaderConfig, dropped_ref,
                  offsets: np.ndarray) -> Iterator[pa.Table]:
    from contextlib import closing

    dropped = _resolved(dropped_ref)
    for index in items.column("shard").to_pylist():
        shard = shards[index]
        sharded = shard.kind in _SHARDED
        stream = part_records(shard.path, shard.kind, reader, start=shard.start if sharded else 0,
                              stop=shard.stop if sharded else None, full=True)
        base, records, position = offsets[index], [], 0
        with closing(stream):
            for _row, _line, record in stream:
                doc = base + position
                position += 1
                at = np.searchsorted(dropped, doc)
                if at < dropped.size and dropped[at] == doc:
                    continue
                records.append(record)
                if len(records) == reader.batch_size:
                    yield pa.Table.from_pylist(records)
                    records = []
        if records:
            yield pa.Table.from_pylist(records)


def _replace_dir(tmp: Path, final: Path) -> None:
    import shutil

    if final.exists():
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old) if old.is_dir() else old.unlink()
    else:
        os.replace(tmp, final)


def write_outputs(run: RayRun, *, clusters_out=None, pairs_out=None, out=None,
                  max_cluster_size: int | None = None, oversized: str = "flag",
                  keep: str = "longest") -> dict[str, Any]:
    """Write a finished Ray run's outputs as directories of Parquet files, from the
    workers: ``clusters_out`` (id, cluster, cluster_size, representative, status,
    template; one row per document; ``cluster`` is the input position of the cluster's
    first document), ``pairs_out`` (id_a, id_b, score, method, outside_window: the
    forest of verified edges, then the time-window rejects) and ``out`` (the kept
    documents' full records). Each directory is written beside its final path and
    renamed into place. The driver holds only counts (the duplicates' facts meet in one
    task, :func:`_assign_clusters`). Returns the run summary (as :meth:`neardup.pipeline.Result.summary`)."""
    import ray

    if not isinstance(run.source, RayInputs):
        raise ValueError("write_outputs: the run must read its inputs from files (RayInputs)")
    fetch = ray.remote(_duplicate_facts)
    count = ray.remote(_empty_count)
    refs = run.docs.to_arrow_refs() if run.docs is not None else []
    facts = [fetch.remote(r, run.seed_ref, run.offsets) for r in refs]
    empty = sum(ray.get([count.remote(r) for r in refs]))
    pairs_tmp = None
    if pairs_out is not None:
        pairs_tmp = Path(pairs_out).with_name(f".{Path(pairs_out).name}.tmp-{os.getpid()}")
        pairs_tmp.mkdir(parents=True)
    assign = ray.remote(_assign_clusters).options(num_returns=3)
    clusters_ref, dropped, counts = assign.remote(
        run.seed_ref, run.merged_ref, max_cluster_size, oversized, keep,
        str(pairs_tmp) if pairs_tmp is not None else None, run.method.name, *facts)
    counts = ray.get(counts)
    shards = plan_shards(run.source, run.config.shard_rows)
    written = {}
    if clusters_out is not None:
        final = Path(clusters_out)
        tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}")
        if run.docs is not None:
            run.docs.map_batches(_cluster_rows, batch_format="pyarrow",
                                 fn_kwargs={"clusters_ref": clusters_ref, "offsets": run.offsets}
                                 ).write_parquet(str(tmp))
        else:  # an empty corpus: an empty table
            import pyarrow.parquet as pq

            tmp.mkdir(parents=True)
            no_docs = _FACTS.empty_table().select(["shard", "row", "id", "n_features"])
            pq.write_table(_cluster_rows(no_docs, clusters_ref=clusters_ref, offsets=np.zeros(1, np.int64)),
                           tmp / "part-00000.parquet")
        written["clusters"] = (tmp, final)
    if pairs_out is not None:
        written["pairs"] = (pairs_tmp, Path(pairs_out))
    if out is not None:
        final = Path(out)
        tmp = final.with_name(f".{final.name}.tmp-{os.getpid()}")
        items = ray.data.from_items([{"shard": i} for i in range(len(shards))],
                                    override_num_blocks=max(len(shards), 1))
        items.map_batches(_kept_records, batch_size=1, batch_format="pyarrow",
                          fn_kwargs={"shards": shards, "reader": run.source.reader,
                                     "dropped_ref": dropped, "offsets": run.offsets}
                          ).write_parquet(str(tmp))
        written["out"] = (tmp, final)
    for tmp, final in written.values():  # all written: now move them into place
        _replace_dir(tmp, final)
    n_clusters = run.n_docs - counts["dropped"]
    return {
        "documents": run.n_docs,
        "clusters": n_clusters,
        "duplicates_removed": run.n_docs - n_clusters,
        "documents_in_duplicate_clusters": counts["documents_in_duplicate_clusters"],
        "duplicate_clusters": counts["duplicate_clusters"],
        "largest_cluster": counts["largest_cluster"] or min(run.n_docs, 1),
        "empty_documents": int(empty),
        "template_documents": counts["template_documents"],
        "pairs": run.forest_edges,
        **({"pairs_outside_time_window": run.outside_edges} if run.outside_edges else {}),
    }
