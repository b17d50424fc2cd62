"""The corpus stage on a Ray cluster (``engine="ray"``): the local engine's stages as Ray
tasks over numpy arrays, so a corpus larger than one machine is de-duplicated with the
same clusters.

Dataflow (S shards, P key partitions; each ``->`` an all-to-all exchange of objects
through the object store, S x P of them, as in Ray Data's pull-based shuffle; with the
CLI's outputs nothing but counts reaches the driver)::

    sketch task per shard (files cut into row ranges): read + method.sketch +
        method.candidate_keys --> facts (Arrow: id, length, date, ...), arrays (numpy:
        the method's verification arrays, date), key rows hashed into P parts
        (key uint64, shard row uint32: 12 B per key row)
    waves of key partitions, each as large as all the earlier ones (1, 1, 2, 4, ...):
      (later waves) bucket-keys task per partition: its key rows (of shared keys only,
           for fixed-width methods) sorted; asks each range of the earlier waves' labels
           for the roots of its documents (lookup task per range)
      -> bucket task per partition: the partition's key rows from every shard, grouped
           by key: a star plus chain per shared key (the local engine's bucket_edges),
           minus (later waves) the edges whose documents earlier waves joined; asks each
           shard for the rows of the documents left
      -> gather task per shard: those rows of its arrays, one object per partition
      -> link task per partition: the local engine's PartitionLinker (skip an edge whose
           documents are joined, verify the others) with a union-find over the
           partition's documents, seeded (later waves) with the earlier roots of them;
           for ngram/spotsigs also the map of the pair-count exchange (records by range
           of left document, reduced after the last wave: _RecordCollector)
           --> partition forest (<= one edge per document of the partition)
      connected components (after each wave, over the earlier labels and the new forests):
           C ranges of document positions (C from RayConfig.components_memory); rounds of
           large-star and small-star tasks, one per range (Kiveris et al. 2014), until
           every component is a star on its smallest position --> labels per range
           (joined document, root)
    --> outputs (write_outputs): per shard, its joined documents' facts cut by range of
        root; per range of roots, an assign task: sizes, representatives, template flags,
        a spanning forest of its components' edges (the pairs table); per shard, the
        clusters table and the kept records. The driver gets counts.

Only documents of shared keys travel past the sketch task, and only their verification
arrays (a MinHash signature: 4 bytes per permutation), once per partition that verifies
one of their edges. Waves, because partitions linked in parallel cannot skip a
document that another partition joins: with one wave a near-copy found in most of the 25
bands is verified in most partitions (11.3M verifications at 1M documents against the
local engine's 1.13M; two waves 2.65M; doubling waves 1.20M); a wave skips, before any
array moves, the edges whose documents the earlier waves already joined. Document positions are global input order (a shard's offset
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

import contextlib
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from neardup import faults
from neardup.engine.buckets import concat_ranges, group_runs
from neardup.engine.corpus import (
    CorpusStageOutput,
    PartitionLinker,
    exchanges_pair_counts,
    supports_corpus_stage,
)
from neardup.engine.facts import batch_identity, identity_pairs
from neardup.engine.statistics import batch_statistics, hash_range_bounds, split_by_range, sum_counts, table_min_df
from neardup.engine.overlap import code_pairs, decide_pairs, pair_codes, sum_pair_counts
from neardup.engine.unionfind import UnionFind
from neardup.errors import InputError, check_int
from neardup.graph.buckets import bucket_edge_counts, bucket_edges
from neardup.graph.edges import NO_DATE, Pairs, TimeWindow
from neardup.graph.keep import KeepPolicy
from neardup.io.batch import DocumentBatch
from neardup.io.locations import Location, locate
from neardup.io.outputs import OutputDirectory, write_part
from neardup.io.readers import ReaderConfig, input_files, part_records, read_part
from neardup.methods.base import CandidateRows, FeatureStatistics, Method
from neardup.progress import StageTimer, progress_bar
from neardup.text.shingle import ShingleSets

__all__ = ["INSTALL_HINT", "RUNTIME_ENV_ENV", "RayConfig", "RayInputs", "RayRun", "connect", "import_ray",
           "run_ray_stage", "worker_env", "worker_runtime_env", "write_outputs"]

INSTALL_HINT = "pip install 'neardup[ray]'"
_NO_DATE = NO_DATE
#: The shipped per-document array of text identities (the time window's).
IDENTITY = "identity"
_SHARDED = ("parquet",)  # formats cut into row ranges; others are one shard per file
#: Names of the ragged per-document data in a shard's arrays (methods whose verification
#: reads shingle sets or texts).
SET_SIZES, SET_VALUES, TEXTS = "sets.sizes", "sets.values", "texts"


def import_ray():
    """The ``ray`` module, or an ImportError naming the extra to install. (Ray Data is not
    imported: the engine runs plain tasks, and importing it costs CPU in every process;
docs/decisions/0005-ray-engine-on-tasks.md.)"""
    try:
        import ray
    except ImportError:
        raise ImportError(
            f"engine='ray' needs Ray, which is not installed. Install it with {INSTALL_HINT} "
            "(or use engine='local')."
        ) from None
    return ray


#: Connecting to an existing cluster: set to ``0`` to send no ``runtime_env`` (the nodes
#: already import neardup and were started with ``NUMBA_NUM_THREADS=1``), which saves each
#: node its runtime-env set-up and the worker processes Ray would start for the job's own
#: environment (docs/scale-out.md, "Ray's own costs").
RUNTIME_ENV_ENV = "NEARDUP_RAY_RUNTIME_ENV"


def worker_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment variables the workers need: this copy of neardup's parent directory
    first on their PYTHONPATH (workers on other machines need neardup installed at the
    same version, or the same path on a shared file system), one numba thread per task
    (Ray runs one task per CPU; more threads per task only oversubscribe the node's
    cores), then ``extra``."""
    root = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "NUMBA_NUM_THREADS": "1", **(extra or {})}


def worker_runtime_env(extra: dict[str, str] | None = None) -> dict[str, Any]:
    """:func:`worker_env` as a Ray ``runtime_env`` (for a cluster started elsewhere)."""
    return {"env_vars": worker_env(extra)}


def connect(address: str | None = None, *, env: dict[str, str] | None = None, **init_options: Any) -> None:
    """Connect to the Ray cluster at ``address`` (``"auto"``, ``"ray://host:10001"``,
    ``"host:6379"``), or start a local one when None and ``RAY_ADDRESS`` is unset (never
    joining a cluster that someone else started on this machine unasked).
    Does nothing when Ray is already initialized in this process.

    A local cluster's daemons are started with :func:`worker_env` (and ``env``) in their
    environment, which its workers inherit: no ``runtime_env``, so the workers Ray
    prestarts at node start run the job's tasks (with a ``runtime_env`` they cannot, and
    Ray starts others) and no worker passes through the runtime-env set-up. An existing
    cluster gets them as the job's ``runtime_env`` unless :data:`RUNTIME_ENV_ENV` is
    ``0``. ``init_options`` go to ``ray.init`` (``num_cpus``, ``object_store_memory``
    for a local cluster)."""
    ray = import_ray()
    if ray.is_initialized():
        return
    address = address or os.environ.get("RAY_ADDRESS")
    options = {"include_dashboard": False, "logging_level": "WARNING", "log_to_driver": False, **init_options}
    if address is None:
        # Set in os.environ for the block only: the processes ray.init starts inherit them.
        with _environ(worker_env(env)):
            ray.init(address="local", **options)
        return
    if os.environ.get(RUNTIME_ENV_ENV, "1") != "0":
        options["runtime_env"] = worker_runtime_env(env)
    ray.init(address=address, **options)


@contextlib.contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    """``values`` set in ``os.environ`` for the block, then the previous values restored."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


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
        documents, about 200,000 per partition for methods verifying fixed-width arrays
        (minhash, simhash, exact), 100,000 for set and text methods, at least 8, a power
        of two.
    shard_rows : int, default 25_000
        Parquet files are read in runs of whole row groups of up to this many documents
        (one task each; a larger row group is one task); other formats are read one file
        per task.
    first_wave : int or None, default None
        Key partitions linked in the first wave; then each wave links as many partitions
        as all the earlier ones together (the last one the rest), minus the candidate
        edges between documents the earlier waves already joined. None: a 64th of the
        partitions (at least one). ``partitions``: one wave (every partition verifies
        its candidates on its own, as many times as partitions find the same
        duplicate).
    memory_limit : int or None, default None
        Embedding methods: bytes a search task may use for a query batch's candidates and
        the IVF training sample, as the local stage's ``--memory-limit`` (the same value
        gives the same IVF centroids); rerank over their candidates: a verify partition's
        pairs and texts take at most a quarter of it. None: the local engine's default.
    components_memory : int or None, default None
        Bytes a connected-components task may hold (about 64 per edge end in its range of
        documents): the verified forests are joined into components by ranges of document
        positions, as many ranges (a power of two, at most 4,096) as this budget needs;
        the assign tasks that pick representatives use the same ranges (of component
        roots). None: 1 GiB (one range up to ~8 million forest edges).
    trace_memory : bool, default False
        Benchmarks: the components and assign tasks trace their peak Python/numpy
        allocation (tracemalloc, which slows them) and report it (``peak_bytes``, the
        run's ``peak_task_bytes``); 0 when False.
    """

    address: str | None = None
    partitions: int | None = None
    shard_rows: int = 25_000
    first_wave: int | None = None
    memory_limit: int | None = None
    components_memory: int | None = None
    trace_memory: bool = False

    def __post_init__(self) -> None:
        if self.partitions is not None:
            check_int("RayConfig", "partitions", self.partitions, low=1, high=1 << 16)
        check_int("RayConfig", "shard_rows", self.shard_rows, low=1)
        if self.first_wave is not None:
            check_int("RayConfig", "first_wave", self.first_wave, low=1)
        if self.memory_limit is not None:
            check_int("RayConfig", "memory_limit", self.memory_limit, low=1 << 20)
        if self.components_memory is not None:
            check_int("RayConfig", "components_memory", self.components_memory, low=1 << 10)
        if not isinstance(self.trace_memory, bool):
            raise ValueError(f"RayConfig: parameter 'trace_memory' must be True or False; "
                             f"got {self.trace_memory!r}.")


@dataclass(frozen=True)
class RayInputs:
    """Input files read by the workers themselves (no document passes through the driver).

    Parameters
    ----------
    paths : sequence of paths or URLs
        Files (Parquet, JSONL, CSV/TSV, SGML) or directories, as
        :func:`neardup.io.readers.input_files` expands them (a saved Hugging Face
        dataset, a directory of Parquet or JSONL shards, else a directory of ``.txt``
        files); URLs are read by the workers with ``reader.storage_options``.
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


def _row_groups(path: str, reader: ReaderConfig) -> list[int]:
    """Rows per row group (an unreadable file raises InputError naming it)."""
    from neardup.io._formats import parquet_row_groups

    return parquet_row_groups(path, reader.storage_options)


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
    for path, kind in input_files(inputs.paths, inputs.reader.storage_options):
        if kind in _SHARDED:
            start = stop = 0
            for rows in _row_groups(path, inputs.reader):
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


def _cut_texts(method: Method, texts: Sequence[str]) -> pa.Array:
    """The texts a scorer reads, cut to its verification's ``text_chars`` characters:
    bytes, as the local stage stores them (a lone surrogate reaches the scorer)."""
    cut = method.capabilities.reads.text_chars
    return pa.array([t[:cut].encode("utf-8", "surrogatepass") for t in texts], pa.large_binary())


def _sketch_task(index: int, shard: _Shard, method: Method, reader: ReaderConfig, memory: list | None,
                 partitions: int) -> tuple:
    """Read and sketch one shard. Returns ``partitions + 3`` objects: a count (documents,
    key rows), the shard's facts (Arrow, :data:`_FACTS`), its per-document arrays (the
    method's verification arrays and ``date``, numpy, shard row order), then per key
    partition ``p`` (``key % partitions == p``) the shard's key rows: ``key`` (uint64),
    ``row`` (int64 shard row), ``payload`` when the method has one."""
    cpu = time.process_time()
    facts, arrays, keys, rows, payload, offset = [], {}, [], [], [], 0
    reads = method.capabilities.reads
    for batch in _shard_batches(shard, reader, memory):
        n = len(batch)
        sketch = method.keyed_sketch(method.sketch(batch.texts))
        found = method.candidate_keys(sketch)
        dates, table = _batch_facts(index, offset, batch, sketch.n_features)
        facts.append(table)
        for name in reads.arrays:
            arrays.setdefault(name, []).append(np.ascontiguousarray(sketch.arrays[name]))
        arrays.setdefault("date", []).append(dates)
        arrays.setdefault(IDENTITY, []).append(batch_identity(batch, sketch))
        if reads.sets:  # ragged: sizes and the concatenated hashes
            sets = sketch.require_sets("engine='ray'", "shingle", f"{method.name}.sketch")
            arrays.setdefault(SET_SIZES, []).append(sets.counts().astype(np.int64))
            arrays.setdefault(SET_VALUES, []).append(np.asarray(sets.hashes, np.uint64))
        if reads.text_chars is not None:
            arrays.setdefault(TEXTS, []).append(_cut_texts(method, batch.texts))
        keys.append(np.asarray(found.keys, np.uint64))
        rows.append(np.asarray(found.docs, np.int64) + offset)
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
    table = pa.concat_tables(facts) if facts else _FACTS.empty_table()
    key_bytes = key.nbytes + row.nbytes + (pay.nbytes if pay is not None else 0)
    return ((offset, int(key.size), time.process_time() - cpu, key_bytes), table, arrays, *out)


def _statistics_task(shard: _Shard, method: Method, reader: ReaderConfig, memory: list | None,
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
    for batch in _shard_batches(shard, reader, memory):
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


def _statistics_sum_task(min_df: int, *parts: dict) -> dict:
    """One hash range of one table: the shards' counts summed, those reaching ``min_df``."""
    h, c = sum_counts([p["hashes"] for p in parts], [p["counts"] for p in parts], min_df)
    return {"hashes": h, "counts": c}


def _roots_of(docs: np.ndarray, seed: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
    """Component root of each document after the earlier waves (itself if it joined none)."""
    if seed is None or seed[0].size == 0:
        return docs.copy()
    nodes, roots = seed
    at = np.minimum(np.searchsorted(nodes, docs), nodes.size - 1)
    return np.where(nodes[at] == docs, roots[at], docs)


def _unique_positions(values: np.ndarray) -> np.ndarray:
    """Distinct int64 positions, ascending (a sort and a neighbour test: faster here than
    ``np.unique``'s hash table)."""
    values = np.sort(values)
    keep = np.ones(values.size, bool)
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def _sorted_key_rows(offsets: np.ndarray, parts: Sequence[dict], shared_only: bool = False) -> dict:
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


def _bucket_keys_task(offsets: np.ndarray, bounds: np.ndarray, shared_only: bool, *parts: dict) -> tuple:
    """A later wave's first half of a bucket task: the partition's key rows sorted (only
    those of shared keys with ``shared_only``), and per range of the earlier waves' labels
    the documents of shared keys to look up there (sorted)."""
    cpu = time.process_time()
    rows = _sorted_key_rows(offsets, parts, shared_only)
    if shared_only:
        shared = _unique_positions(rows["doc"])
    else:
        starts, sizes = group_runs(rows["key"])
        shared = _unique_positions(rows["doc"][np.repeat(sizes > 1, sizes)])
    requests = _split_by(_range_of(shared, bounds), bounds.size - 1, doc=shared)
    rows["cpu_s"] = time.process_time() - cpu
    return (rows, *[r["doc"] for r in requests])


def _lookup_task(labels: dict, *requests: np.ndarray) -> tuple:
    """Roots (one range of an earlier wave's labels) of the documents each partition asked
    for; documents that joined nothing are left out."""
    nodes, roots = labels["node"], labels["root"]
    out = []
    for docs in requests:
        at = np.minimum(np.searchsorted(nodes, docs), max(nodes.size - 1, 0))
        hit = nodes[at] == docs if nodes.size else np.zeros(docs.size, bool)
        out.append({"node": docs[hit], "root": roots[at[hit]]})
    return (len(out), *out)


def _bucket_task(offsets: np.ndarray, method: Method, rows: dict | None, *parts: dict) -> tuple:
    """One key partition's candidate edges (all shards' key rows of the partition, in
    shard order): a star plus chain per shared key (or the method's ``link_bucket``),
    minus the edges whose documents an earlier wave already joined. Wave 1: ``rows`` is
    None and ``parts`` are the shards' key rows; later waves: ``rows`` are the sorted key rows
    (:func:`_bucket_keys_task`) and ``parts`` the roots the earlier wave's label ranges
    gave its documents (:func:`_lookup_task`). Returns ``1 + len(offsets)`` objects: the
    edges with counts (and the seed for the link task), then per shard the sorted shard
    rows whose arrays the partition needs."""
    cpu = time.process_time()
    seed = None
    caps = method.capabilities
    if rows is None:
        rows = _sorted_key_rows(offsets, parts, shared_only=caps.fixed_width)
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
        need = _unique_positions(docs[np.repeat(multi, sizes)])
        requests = _requests_of(need, offsets)
        edges = {"rows": rows, "need": need, "seed": seed, "candidate_edges": 0, "shared_rows": shared_rows,
                 "documents": int(need.size), "cpu_s": time.process_time() - cpu + prep_cpu}
        return (edges, *requests)
    if caps.keyed.links_buckets:
        linked = method.link_bucket(keys, docs, payload)
        left, right, score = linked.left, linked.right, np.asarray(linked.score, np.float32)
        candidates = int(left.size)
        if seed is not None:
            keep = _roots_of(left, seed) != _roots_of(right, seed)
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
            roots = _roots_of(docs, seed)
            open_ = multi.copy()
            if starts.size:
                open_ &= np.minimum.reduceat(roots, starts) != np.maximum.reduceat(roots, starts)
            row_left, row_right = bucket_edges(np.arange(docs.size, dtype=np.int64), starts[open_],
                                               sizes[open_], upto, star_upto)
            keep = roots[row_left] != roots[row_right]
            left, right = docs[row_left[keep]], docs[row_right[keep]]
            del roots, row_left, row_right, keep
    del keys, docs, payload, rows
    need = _unique_positions(np.concatenate((left, right)))
    requests = _requests_of(need, offsets)
    edges = {"left": left, "right": right, "score": score, "candidate_edges": candidates,
             "cpu_s": time.process_time() - cpu + prep_cpu, "seed": seed,
             "shared_rows": shared_rows, "documents": int(need.size)}
    return (edges, *requests)



def _requests_of(need: np.ndarray, offsets: np.ndarray) -> list[np.ndarray]:
    """Documents ``need`` (sorted positions) cut by shard: per shard, its rows to gather."""
    bounds = np.searchsorted(need, np.append(offsets, np.iinfo(np.int64).max))
    return [need[bounds[s]:bounds[s + 1]] - offsets[s] for s in range(len(offsets))]


def _gathered_names(method: Method, window_hours: float | None) -> tuple[str, ...]:
    """The per-document arrays a link task asks the shards for: the method's verification
    arrays, dates (time window, or a scorer that reads them) and text identities (time
    window), shingle sets, texts."""
    reads = method.capabilities.reads
    return reads.arrays + (
        ("date", IDENTITY) if window_hours is not None else
        ("date",) if reads.dates else ()) + (
        (SET_SIZES, SET_VALUES) if reads.sets else ()) + (
        (TEXTS,) if reads.text_chars is not None else ())


def _gather_task(arrays: dict, names: tuple[str, ...], *requests: np.ndarray):
    """The rows of one shard's arrays (``names``; ragged shingle sets and texts included)
    that each partition asked for."""
    offsets = None
    if SET_SIZES in names:
        offsets = np.zeros(arrays[SET_SIZES].size + 1, np.int64)
        np.cumsum(arrays[SET_SIZES], out=offsets[1:])
    out = []
    for rows in requests:
        got = {name: arrays[name][rows] for name in names if name not in (SET_VALUES, TEXTS)}
        if offsets is not None:
            got[SET_VALUES] = arrays[SET_VALUES][concat_ranges(offsets[rows], got[SET_SIZES])]
        if TEXTS in names:
            got[TEXTS] = arrays[TEXTS].take(pa.array(rows))
        out.append(got)
    return tuple(out) if len(out) != 1 else out[0]



class _ShippedTexts:
    """Texts of some documents (UTF-8 bytes, Arrow), decoded only when taken."""

    def __init__(self, column: pa.Array, index: np.ndarray) -> None:
        self.column, self.index = column, index

    def __len__(self) -> int:
        return int(self.index.size)

    def take(self, positions) -> list[str]:
        raw = self.column.take(pa.array(self.index[np.asarray(positions, np.int64)])).to_pylist()
        return [b.decode("utf-8", "surrogatepass") for b in raw]


class _ShippedRows:
    """The rows one link task gathered from the shards (``docs``: sorted positions), read
    as the local stage's work-directory store reads its files: fixed-width arrays, ragged
    shingle sets (and their sizes, for the overlap bound), texts, dates."""

    def __init__(self, docs: np.ndarray, rows: Sequence[dict], dates: bool) -> None:
        self.docs = docs
        names = rows[0].keys() if rows else ()
        self.arrays = {name: np.concatenate([r[name] for r in rows]) for name in names
                       if name not in (SET_SIZES, SET_VALUES, TEXTS, "date", IDENTITY)}
        self.dates = np.concatenate([r["date"] for r in rows]) if dates and rows else None
        self.set_offsets = self.values = self.texts = None
        if SET_SIZES in names:
            self.sizes = np.concatenate([r[SET_SIZES] for r in rows])
            self.set_offsets = np.zeros(self.sizes.size + 1, np.int64)
            np.cumsum(self.sizes, out=self.set_offsets[1:])
            self.values = np.concatenate([r[SET_VALUES] for r in rows])
        if TEXTS in names:
            self.texts = pa.concat_arrays([r[TEXTS] for r in rows])
        self.row_bytes = (sum(a.nbytes for a in self.arrays.values())
                          + (self.values.nbytes if self.values is not None else 0)
                          + (self.texts.nbytes if self.texts is not None else 0)) // max(docs.size, 1)

    def rows(self, docs: np.ndarray) -> CandidateRows:
        index = np.searchsorted(self.docs, docs)
        out = CandidateRows(docs, {name: values[index] for name, values in self.arrays.items()})
        if self.set_offsets is not None:
            sizes = self.sizes[index]
            offsets = np.zeros(docs.size + 1, np.int64)
            np.cumsum(sizes, out=offsets[1:])
            out.sets = ShingleSets(self.values[concat_ranges(self.set_offsets[index], sizes)], offsets)
        if self.texts is not None:
            out.texts = _ShippedTexts(self.texts, index)
        if self.dates is not None:
            out.dates = self.dates[index].view("datetime64[s]")
        return out

    def set_sizes(self, docs: np.ndarray) -> np.ndarray:
        return self.sizes[np.searchsorted(self.docs, docs)]


def _shipped_bytes(rows: Sequence[dict]) -> int:
    """Bytes of the rows a link task received from the shards (the gather exchange)."""
    return int(sum(getattr(v, "nbytes", 0) for r in rows for v in r.values()))


def _verify_step(options: dict, row_bytes: int) -> int:
    """Edges verified at once by a link task: their two documents' rows (``row_bytes``
    each, as shipped) within a quarter of the memory limit, at most the linker's step."""
    from neardup.engine.corpus import default_memory_limit

    budget = options["memory_limit"] or default_memory_limit()
    return int(min(max(budget // 4 // (2 * row_bytes + 64), 64), PartitionLinker.step))


def _link_task(edges: dict, method: Method, window_hours: float | None, options: dict, *rows: dict) -> tuple:
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
    local = _unique_positions(np.concatenate((left, right)))
    store = _ShippedRows(local, rows, dates=method.capabilities.reads.dates and options["has_dates"])
    window = None
    if window_hours is not None and rows:
        window = TimeWindow.of(window_hours, np.concatenate([r["date"] for r in rows]),
                               np.concatenate([r[IDENTITY] for r in rows]))
    linker = PartitionLinker(method, local, store, window, uf=None, every_edge=every_edge)
    linker.step = _verify_step(options, store.row_bytes)
    if seed is not None and local.size:
        # Documents of one earlier component start joined (not forest edges: the earlier
        # wave's forest holds them).
        roots = _roots_of(local, seed)
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
              "gathered_row_bytes": _shipped_bytes(rows),
              "edge_bytes": int(left.nbytes + right.nbytes + (score.nbytes if score is not None else 0))}
    return counts, {"forest": (forest.left, forest.right, forest.score),
                    "outside": (outside.left, outside.right, outside.score)}


def _link_rows(edges: dict, method: Method, window_hours: float | None, options: dict, *rows: dict) -> tuple:
    """A key partition of a method that verifies from shingle sets or texts, linked by the
    local stage's own partition linker over the partition's key rows and the rows its
    shards shipped (a union-find over the partition's documents, seeded in later waves with
    the earlier waves' components: their documents' edges are skipped, not verified)."""
    from neardup.engine.corpus import NoJoins, default_memory_limit, link_partition

    cpu = time.process_time()
    keys = edges["rows"]
    # Documents renumbered 0..m-1 in position order (the order the linker's chains and
    # overlap groups follow is unchanged), so the linker's union-find is the partition's,
    # seeded with the earlier wave's components: it skips what they already joined.
    local = np.unique(keys["doc"])
    columns = {"key": keys["key"], "doc": np.searchsorted(local, keys["doc"])}
    if keys["payload"] is not None:
        columns["payload"] = keys["payload"]
    need = edges["need"]
    store = _ShippedRows(np.searchsorted(local, need), rows,
                         dates=method.capabilities.reads.dates and options["has_dates"])
    uf = NoJoins() if options.get("every_edge", False) else UnionFind(local.size)
    seed = edges["seed"]
    if seed is not None and local.size:
        roots = _roots_of(local, seed)
        by = np.argsort(roots, kind="stable")
        same = np.flatnonzero(roots[by][1:] == roots[by][:-1])
        uf.union(by[same], by[same + 1])
    window = None
    if window_hours is not None:
        # Documents of no shared key never meet an edge: their dates are never read.
        dates = np.full(local.size, _NO_DATE, np.int64)
        identity = np.zeros(local.size, np.uint64)
        at = np.searchsorted(local, need)
        dates[at] = np.concatenate([np.zeros(0, np.int64)] + [r["date"] for r in rows])
        identity[at] = np.concatenate([np.zeros(0, np.uint64)] + [r[IDENTITY] for r in rows])
        window = TimeWindow(float(window_hours), dates, identity)
    budget = options["memory_limit"] or default_memory_limit()
    chunk_edges = int(max(budget // 4 // 64, 1 << 14))
    step = _verify_step(options, store.row_bytes)
    exchange = _RecordCollector(local) if options.get("exchange") is not None else None
    forest, outside, counts, _capped = link_partition(method, [pa.table(columns)], store, window,
                                                       chunk_edges, uf, step=step, exchange=exchange)
    forest = Pairs(local[forest.left], local[forest.right], forest.score)
    outside = Pairs(local[outside.left], local[outside.right], outside.score)
    counts = {"bucket_cpu_s": edges["cpu_s"], "link_cpu_s": time.process_time() - cpu,
              "candidate_edges": counts["candidate_edges"], "edges_after_seed": counts["candidate_edges"],
              "verified_edges": counts["verified_edges"], "capped_keys": counts.get("capped_keys", 0),
              "pruned_edges": counts.get("pruned_edges", 0), "shared_key_rows": edges["shared_rows"],
              "linked_documents": int(need.size), "partition_forest_edges": len(forest),
              "outside_edges": len(outside), "gathered_row_bytes": _shipped_bytes(rows)}
    result = {"forest": (forest.left, forest.right, forest.score),
              "outside": (outside.left, outside.right, outside.score)}
    if exchange is None:
        return counts, result
    counts["exchange_records"] = exchange.records
    pair_bounds, shard_starts = options["exchange"]
    return (counts, result, *exchange.by_range(pair_bounds), *exchange.unseen_by_shard(shard_starts))


# -- the pair-count exchange (ngram, spotsigs: neardup.engine.overlap) on Ray -------------
#
# Map: each link task of a set-overlap method spills the counted pairs it did not settle
# (the local stage's _PairSpill interface, collected in memory in global positions), cut
# by range of left document, and its unseen keys per document, cut by shard. Reduce, per
# range of left documents: sum the records by pair (overlap.sum_pair_counts), ask the
# shards for the set sizes, unseen counts (summed per shard) and dates of the pairs'
# documents, decide (overlap.decide_pairs: scored from counts, or bounded and verified),
# ask the shards for the sets to verify, and link.


class _RecordCollector:
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
        return _split_by(_range_of(left, bounds), bounds.size - 1, code=codes, shared=shared)

    def unseen_by_shard(self, shard_starts: np.ndarray) -> list[dict]:
        docs, counts = self.unseen
        return _split_by(_range_of(docs, shard_starts), shard_starts.size - 1, doc=docs, count=counts)


def _pair_bounds(n_docs: int, ranges: int) -> np.ndarray:
    """Ranges of left documents for the exchange's reduce. A pair's left document is the
    earlier of two, so records thin out towards the end of the input (for pairs drawn
    uniformly, a density proportional to ``n - position``): bounds at ``n (1 - sqrt(1 -
    k / ranges))`` give the ranges about equal shares."""
    k = np.arange(ranges + 1, dtype=np.float64) / ranges
    bounds = np.floor(max(n_docs, 1) * (1.0 - np.sqrt(np.clip(1.0 - k, 0.0, 1.0)))).astype(np.int64)
    bounds[-1] = max(n_docs, 1)
    return np.maximum.accumulate(bounds)


def _unseen_task(n_rows: int, offset: int, *parts: dict) -> np.ndarray:
    """One shard's unseen keys per document (int64, shard row order), summed over the key
    partitions."""
    unseen = np.zeros(n_rows, np.int64)
    for part in parts:
        np.add.at(unseen, part["doc"] - offset, part["count"])
    return unseen


def _pair_facts_task(arrays: dict, unseen: np.ndarray, *requests: np.ndarray):
    """Set size, unseen keys and date of the shard rows each exchange range asked for."""
    out = [{"size": arrays[SET_SIZES][rows], "unseen": unseen[rows], "date": arrays["date"][rows],
            IDENTITY: arrays[IDENTITY][rows] if IDENTITY in arrays else np.zeros(rows.size, np.uint64)}
           for rows in requests]
    return tuple(out) if len(out) != 1 else out[0]


def _pair_sum_task(offsets: np.ndarray, *parts: dict) -> tuple:
    """Reduce, first step: one range's records from every link task summed by pair; per
    shard, the rows whose facts the decision needs."""
    cpu = time.process_time()
    records = sum(int(p["code"].size) for p in parts)
    codes, total = sum_pair_counts(np.concatenate([np.zeros(0, np.uint64)] + [p["code"] for p in parts]),
                                   np.concatenate([np.zeros(0, np.uint32)] + [p["shared"] for p in parts]))
    left, right = code_pairs(codes)
    del codes
    need = _unique_positions(np.concatenate((left, right)))
    bounds = np.searchsorted(need, np.append(offsets, np.iinfo(np.int64).max))
    requests = [need[bounds[s]:bounds[s + 1]] - offsets[s] for s in range(len(offsets))]
    state = {"left": left, "right": right, "total": total, "need": need, "records": records,
             "cpu_s": time.process_time() - cpu}
    return (state, *requests)


def _pair_decide_task(state: dict, method: Method, offsets: np.ndarray, *facts: dict) -> tuple:
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
    check = _unique_positions(np.concatenate((left[verify], right[verify])))
    bounds = np.searchsorted(check, np.append(offsets, np.iinfo(np.int64).max))
    requests = [check[bounds[s]:bounds[s + 1]] - offsets[s] for s in range(len(offsets))]
    out = {"accept": (left[accept], right[accept], score[accept]), "verify": (left[verify], right[verify]),
           "check": check, "docs": need, "dates": cat["date"], IDENTITY: identity, "counts": {
               "exchange_records": state["records"], "exchange_pairs": int(left.size),
               "scored_from_counts": int(np.count_nonzero(exact)),
               "pruned_edges": int(np.count_nonzero(~exact & ~verify))},
           "cpu_s": state["cpu_s"] + time.process_time() - cpu}
    return (out, *requests)


def _pair_link_task(state: dict, method: Method, window_hours: float | None, options: dict, *rows: dict) -> tuple:
    """Reduce, last step: one range's pairs linked as the local stage's reduce links them
    (those scored from counts first, then those to verify, each in pair order), with a
    union-find over the range's documents."""
    from neardup.engine.corpus import default_memory_limit

    cpu = time.process_time()
    accept_left, accept_right, accept_score = state["accept"]
    verify_left, verify_right = state["verify"]
    docs = state["docs"]
    store = _ShippedRows(state["check"], rows, dates=method.capabilities.reads.dates and options["has_dates"])
    window = None
    if window_hours is not None:
        # The linker reads the window aligned with its sorted unique documents: those of its pairs.
        local = _unique_positions(np.concatenate((accept_left, accept_right, verify_left, verify_right)))
        window = TimeWindow(float(window_hours), state["dates"], state[IDENTITY]).take(
            np.searchsorted(docs, local))
    budget = options["memory_limit"] or default_memory_limit()
    linker = PartitionLinker(method, np.concatenate((accept_left, accept_right, verify_left, verify_right)),
                             store, window, uf=None)
    linker.step = int(min(max(budget // 4 // (2 * store.row_bytes + 64), 64), PartitionLinker.step))
    linker.consider(accept_left, accept_right, accept_score)
    linker.consider(verify_left, verify_right)
    forest, outside = linker.forest_pairs(), linker.outside_pairs().canonical()
    counts = {**state["counts"], "verified_edges": linker.counts["verified_edges"],
              "partition_forest_edges": len(forest), "outside_edges": len(outside),
              "exchange_cpu_s": state["cpu_s"] + time.process_time() - cpu}
    return counts, {"forest": (forest.left, forest.right, forest.score),
                    "outside": (outside.left, outside.right, outside.score)}


def _merge_forests(*results: dict, every_edge: bool = False) -> tuple[Pairs, Pairs]:
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
    return _spanning_forest(forest.left, forest.right, forest.score), outside.canonical()


def _spanning_forest(left: np.ndarray, right: np.ndarray, score: np.ndarray) -> Pairs:
    """The edges a union-find keeps joining, taken in (left, right) order; of a pair met
    more than once (a method's edge and the identity edge of identical texts), its
    highest score, as :meth:`Pairs.canonical` keeps it and the in-memory engine reports."""
    order = np.lexsort((-score, right, left))
    left, right, score = left[order], right[order], score[order]
    nodes = np.unique(np.concatenate((left, right)))
    uf = UnionFind(nodes.size)
    joined = uf.union(np.searchsorted(nodes, left), np.searchsorted(nodes, right))
    return Pairs(left[joined], right[joined], score[joined])


def _sum_counts(counts: Iterable[dict]) -> dict:
    total: dict[str, float] = {}
    for c in counts:
        for k, v in c.items():
            total[k] = total.get(k, 0) + v
    return total


# -- distributed connected components ---------------------------------------------------
#
# The forests of the link tasks are joined into components by large-star / small-star
# (Kiveris et al., "Connected components in MapReduce and beyond", SoCC 2014): O(log^2 n)
# rounds, O(log n) in practice, whatever the components' diameter (a chain of bucket
# edges needs no more rounds than a star), never more edges than it started with.
# Documents are cut into C ranges of positions (C from RayConfig.components_memory); a
# task holds one range's edges. The graph converges to stars, each centred on its
# component's smallest position: the local engine's root.

#: Bytes a components task holds per directed edge of its range (two int64 arrays, the
#: sort order, the grouped copies).
_CC_BYTES_PER_EDGE = 64
_COMPONENTS_MEMORY = 1 << 30


def _identity_split_task(arrays: dict, offset: int, ranges: int):
    """One shard's non-blank documents (global positions) and their text identities, split
    by range (``identity % ranges``) for :func:`_identity_link_task`."""
    identity = np.asarray(arrays[IDENTITY], np.uint64)
    docs = np.flatnonzero(identity != 0)
    identity = identity[docs]
    part = (identity % np.uint64(ranges)).astype(np.int64)
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(ranges + 1))
    docs, identity = docs[order] + offset, identity[order]
    out = [{"doc": docs[bounds[r]:bounds[r + 1]], IDENTITY: identity[bounds[r]:bounds[r + 1]]}
           for r in range(ranges)]
    return tuple(out) if ranges > 1 else out[0]


def _identity_link_task(*parts: dict) -> tuple:
    """One range's identical texts linked (:func:`~neardup.engine.facts.identity_pairs`),
    as a link result (no pair outside a time window): its pair count, the result."""
    same = identity_pairs(np.concatenate([np.zeros(0, np.uint64)] + [p[IDENTITY] for p in parts]),
                          np.concatenate([np.zeros(0, np.int64)] + [p["doc"] for p in parts]))
    none = np.zeros(0, np.int64)
    return len(same), {"forest": (same.left, same.right, same.score),
                       "outside": (none, none, np.zeros(0, np.float32))}


def _component_partitions(edges: int, budget: int) -> int:
    """Ranges of documents for ``edges`` undirected edges (each held twice, once per
    endpoint's range), a power of two, each range's edges within ``budget`` bytes."""
    need = max(2 * edges * _CC_BYTES_PER_EDGE / budget, 1.0)
    return int(min(1 << int(np.ceil(np.log2(need))), 1 << 12))


def _range_bounds(n_docs: int, parts: int) -> np.ndarray:
    """Bounds of ``parts`` ranges of positions: range ``c`` is ``[bounds[c], bounds[c+1])``."""
    return np.linspace(0, max(n_docs, 1), parts + 1).astype(np.int64)


def _range_of(nodes: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    return np.searchsorted(bounds, nodes, side="right") - 1


def _split_by(part: np.ndarray, parts: int, **arrays: np.ndarray) -> list[dict]:
    """``arrays`` cut by ``part`` (values 0..parts-1) into ``parts`` dicts, order kept
    within each."""
    order = np.argsort(part, kind="stable")
    bounds = np.zeros(parts + 1, np.int64)
    np.cumsum(np.bincount(part, minlength=parts), out=bounds[1:])
    cut = {name: a[order] for name, a in arrays.items()}
    return [{name: a[bounds[c]:bounds[c + 1]] for name, a in cut.items()} for c in range(parts)]


def _edges_of(source: dict) -> tuple[np.ndarray, np.ndarray]:
    """Undirected edges of a link result (its forest) or of a range's labels (node -> root
    stars)."""
    if "forest" in source:
        return np.asarray(source["forest"][0], np.int64), np.asarray(source["forest"][1], np.int64)
    joined = source["node"] != source["root"]
    return source["root"][joined], source["node"][joined]


def _directed(a: np.ndarray, b: np.ndarray, bounds: np.ndarray) -> list[dict]:
    """Each edge both ways, ``src -> dst``, in the range of ``src``."""
    src, dst = np.concatenate((a, b)), np.concatenate((b, a))
    return _split_by(_range_of(src, bounds), bounds.size - 1, src=src, dst=dst)


def _scatter_task(bounds: np.ndarray, source: dict) -> tuple:
    """One link result's forest (or one range's labels) as the first large-star round's
    input: per range, the directed edges leaving its documents."""
    a, b = _edges_of(source)
    return (int(a.size), *_directed(a, b, bounds))


def _traced(task):
    """``task`` taking first whether to trace (``RayConfig.trace_memory``), and reporting
    its peak traced allocation in its first output (a dict) as ``peak_bytes`` when it
    does (0 otherwise)."""
    import functools

    @functools.wraps(task)
    def run(trace: bool, *args):
        if not trace:
            out = task(*args)
            out[0]["peak_bytes"] = 0
            return out
        import tracemalloc

        tracemalloc.start()
        try:
            out = task(*args)
            out[0]["peak_bytes"] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        return out
    return run


@_traced
def _large_star_task(bounds: np.ndarray, *parts: dict) -> tuple:
    """Large-star over one range: each document ``u`` links its larger neighbours to
    ``m(u)``, the smallest of ``u`` and its neighbours. Also checks whether the range is
    already converged (every document a centre with only larger neighbours, or a leaf with
    one smaller neighbour and no other: the graph is stars centred on their minimum) and
    returns the range's labels (document, root) valid once every range is. Returns the
    info, the labels, then per range the new edges ``(a < b)`` whose ``b`` lies in it."""
    faults.checkpoint("ray-components")
    cpu = time.process_time()
    src = np.concatenate([np.zeros(0, np.int64)] + [p["src"] for p in parts])
    dst = np.concatenate([np.zeros(0, np.int64)] + [p["dst"] for p in parts])
    order = np.lexsort((dst, src))
    src, dst = src[order], dst[order]
    first = np.ones(src.size, bool)
    first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
    src, dst = src[first], dst[first]
    del order, first
    starts, sizes = group_runs(src)
    nodes = src[starts]
    if src.size:
        smallest = np.minimum(nodes, np.minimum.reduceat(dst, starts))
        smaller = np.add.reduceat((dst < src).astype(np.int64), starts)
    else:
        smallest = smaller = np.zeros(0, np.int64)
    centre = smaller == 0
    star = bool(np.all(centre | ((smaller == 1) & (sizes == 1))))
    labels = {"node": nodes, "root": np.where(centre, nodes, smallest)}
    up = dst > src
    a, b = np.repeat(smallest, sizes)[up], dst[up]
    out = _split_by(_range_of(b, bounds), bounds.size - 1, a=a, b=b)
    info = {"star": star, "edges": int(src.size), "nodes": int(nodes.size),
            "centres": int(centre.sum()), "cpu_s": time.process_time() - cpu}
    return (info, labels, *out)


@_traced
def _small_star_task(bounds: np.ndarray, *parts: dict) -> tuple:
    """Small-star over one range: each document ``u`` links itself and its smaller
    neighbours to the smallest of them. Returns the info, then per range the directed
    edges leaving its documents (the next large-star's input)."""
    cpu = time.process_time()
    a = np.concatenate([np.zeros(0, np.int64)] + [p["a"] for p in parts])
    b = np.concatenate([np.zeros(0, np.int64)] + [p["b"] for p in parts])
    order = np.lexsort((a, b))
    a, b = a[order], b[order]
    first = np.ones(a.size, bool)
    first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    a, b = a[first], b[first]
    starts, sizes = group_runs(b)
    smallest = np.repeat(a[starts], sizes)  # a is sorted within each b: its first is the min
    others = a != smallest
    lo = np.concatenate((smallest[starts] if b.size else np.zeros(0, np.int64), smallest[others]))
    hi = np.concatenate((b[starts], a[others]))
    return ({"edges": int(lo.size), "cpu_s": time.process_time() - cpu}, *_directed(lo, hi, bounds))


# -- embedding methods: the vector stage as tasks ---------------------------------------


def _embed_task(index: int, shard: _Shard, method: Method, reader: ReaderConfig,
                memory: list | None) -> tuple:
    """Read and embed one shard. Returns five objects: counts (documents, rows, row
    dimension, largest deviation of a row norm from 1, CPU seconds, bytes of texts), the
    shard's facts (Arrow, :data:`_FACTS`), its rows (float32, document order), the rows
    each document owns (int64) and its per-document arrays: dates (``date``: int64
    seconds, NaT as int64 min) and text identities (``identity``), for the time window,
    and for a method that scores its candidates their texts (:data:`TEXTS`, cut as the
    sketch task cuts them), which the shard ships to the link tasks that verify them."""
    from neardup.graph.similarity import check_unit_rows

    cpu = time.process_time()
    facts, rows, owned, dates, identity, offset, deviation = [], [], [], [], [], 0, 0.0
    texts = [pa.array([], pa.large_binary())] if method.capabilities.reads.text_chars is not None else None
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
        identity.append(batch_identity(batch, sketch))
        if texts is not None:
            texts.append(_cut_texts(method, batch.texts))
        offset += n
    rows = np.concatenate(rows) if rows else np.zeros((0, 0), np.float32)
    owned = np.concatenate(owned) if owned else np.zeros(0, np.int64)
    arrays = {"date": np.concatenate(dates) if dates else np.zeros(0, np.int64),
              IDENTITY: np.concatenate(identity) if identity else np.zeros(0, np.uint64)}
    if texts is not None:
        arrays[TEXTS] = pa.concat_arrays(texts)
    table = pa.concat_tables(facts) if facts else _FACTS.empty_table()
    info = (offset, int(rows.shape[0]), int(rows.shape[1]), deviation, time.process_time() - cpu,
            arrays[TEXTS].nbytes if texts is not None else 0)
    return info, table, rows, owned, arrays


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
    the documents): counts, then its forest and the pairs the time window kept apart.

    A method that scores its candidates (verification ``text_chars``: rerank over
    vector candidates) is verified by link tasks instead (:meth:`RayRun._verify_candidates`):
    the result is then every document pair above the vector threshold (``left < right``),
    none skipped, since a candidate joins nothing until the scorer accepts it."""
    import ray

    from neardup.engine.corpus import NoJoins
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
    joins = NoJoins() if scored else UnionFind(offsets.size - 1)
    linker = ShardLinker(method, joins, offsets, search.threshold, window)
    faiss = import_faiss()
    store = _ObjectRows(shards, row_refs, 0)
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


def _verify_partitions(pairs: int, doc_text_bytes: float, budget: int) -> int:
    """Verify partitions for ``pairs`` candidate pairs: each one's pairs and the texts of
    their documents (at most two a pair, ``doc_text_bytes`` each on average) within a
    quarter of ``budget``; at most 4,096."""
    need = pairs * (_VERIFY_BYTES_PER_PAIR + 2 * doc_text_bytes) / max(budget // 4, 1)
    return int(min(max(np.ceil(need), 1), 1 << 12))


def _split_pairs_task(parts: int, pairs: dict):
    """One search task's candidate pairs cut into ``parts`` verify partitions by a hash
    of the pair."""
    left, right = pairs["left"], pairs["right"]
    spread = (pair_codes(left, right) * _SPREAD) >> np.uint64(32)
    out = _split_by((spread % np.uint64(parts)).astype(np.int64), parts, left=left, right=right)
    return tuple(out) if parts > 1 else out[0]


def _candidate_pairs_task(offsets: np.ndarray, *parts: dict) -> tuple:
    """One verify partition: the search tasks' pairs of the partition, each once (kNN
    finds a pair from both ends, maybe in two search tasks; verified once here, no
    memory of rejected pairs is needed), as a bucket task returns edges: the edges for
    :func:`_link_task`, then per shard the rows whose texts it needs."""
    cpu = time.process_time()
    codes = np.unique(np.concatenate([np.zeros(0, np.uint64)]
                                     + [pair_codes(p["left"], p["right"]) for p in parts]))
    left, right = code_pairs(codes)
    del codes
    need = _unique_positions(np.concatenate((left, right)))
    edges = {"left": left, "right": right, "score": None, "candidate_edges": int(left.size),
             "cpu_s": time.process_time() - cpu, "seed": None, "shared_rows": 0,
             "documents": int(need.size)}
    return (edges, *_requests_of(need, offsets))


# -- driver ------------------------------------------------------------------------------


def _completed(ray, refs: list, advance) -> list:
    """``ray.get(refs)``, calling ``advance(n)`` as tasks finish so that a progress bar
    moves while they run (the driver polls twice a second)."""
    waiting = list(refs)
    while waiting:
        done, waiting = ray.wait(waiting, num_returns=len(waiting), timeout=0.5)
        if done:
            advance(len(done))
    return ray.get(list(refs))


def _no_progress(n: int, status: str | None = None) -> None:
    return None


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


def _estimate_docs(shards: list[_Shard], memory: list | None, reader: ReaderConfig) -> int:
    """Documents in the input, before reading it (it sets the number of key partitions):
    exact for Parquet row ranges and in-memory batches, one per kilobyte of other files."""
    total = 0
    for shard in shards:
        if shard.kind in _SHARDED or shard.kind == "memory":
            total += max(shard.stop - shard.start, 0) if shard.kind in _SHARDED else shard.stop
        else:
            total += max(locate(shard.path, reader.storage_options).size() // 1000, 1)
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


def _collect(refs: list, columns: list[str]) -> pa.Table:
    """``columns`` of the tables ``refs`` (None: no table), projected where they live."""
    import ray

    project = ray.remote(_project)
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
    keep every accepted pair (for Leiden or Louvain), not only a spanning forest.
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

    ``every_edge`` (community detection: Leiden, Louvain): the link tasks skip no
    candidate for joining documents already joined and keep every accepted pair (the
    local engine's ``every_edge``), all partitions in one wave (later waves would only
    skip what earlier ones joined); ``forest`` is then every accepted pair, and
    :func:`write_outputs` clusters each component from them.
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
        if every_edge and not supports_corpus_stage(method, "leiden"):
            raise ValueError(
                f"run: engine='ray' clusters method {method.name!r} by connected components only "
                "(Leiden and Louvain need every accepted pair, which its vector stage or "
                "pair-count exchange does not keep). Use engine='local' or 'memory' for them.")

    def execute(self) -> None:
        ray = import_ray()
        connect(self.config.address)
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
            from neardup.engine.corpus import time_window_without_dates

            raise ValueError(time_window_without_dates(self.window))
        self.n_shards = len(shards)
        self._fetched = None
        self.components_stats: list[dict] = []
        if method.capabilities.statistics is not None:  # wminhash: keys weighted by corpus-wide counts
            method = self.method = self._fit_statistics(ray, shards, memory, reader)
        if method.capabilities.keyed is None:  # an embedding method: the vector stage
            self._execute_vector(ray, shards, memory, reader)
            return
        partitions = self.config.partitions or _default_partitions(_estimate_docs(shards, memory, reader),
                                                                   method.capabilities.fixed_width)
        self.partitions = partitions
        method_ref = ray.put(method)
        sketch = ray.remote(_sketch_task).options(num_returns=partitions + 3)
        with timer.stage("sketch"), self._bar("sketching", len(shards), "shards") as advance:
            out = [sketch.remote(i, shard, method_ref, reader, memory, partitions)
                   for i, shard in enumerate(shards)]
            sizes = np.array(_completed(ray, [o[0] for o in out], advance), np.float64).reshape(-1, 4)
        counts = sizes[:, 0].astype(np.int64)
        self.n_keys = int(sizes[:, 1].sum())
        self.sketch_cpu = float(sizes[:, 2].sum())
        self.key_row_bytes = int(sizes[:, 3].sum())
        self._set_shards(counts, [o[1] for o in out])
        arrays = [o[2] for o in out]
        keys = [list(o[3:]) for o in out]
        del out
        names = _gathered_names(method, self.window)
        options = {"memory_limit": self.config.memory_limit, "has_dates": self.has_dates,
                   "every_edge": self.every_edge}
        bucket = ray.remote(_bucket_task).options(num_returns=len(shards) + 1)
        # Set-overlap methods (ngram, spotsigs) through the pair-count exchange: each link
        # task also returns its records per range of left documents and its unseen keys
        # per shard; the ranges are reduced after the last wave.
        exchange = exchanges_pair_counts(method)
        n_ranges = partitions if exchange else 0
        if exchange:
            options["exchange"] = (_pair_bounds(self.n_docs, n_ranges), np.append(self.offsets, self.n_docs))
        record_parts, unseen_parts = [], []
        link = ray.remote(_link_task).options(num_returns=2 + (n_ranges + len(shards) if exchange else 0))
        waves = [list(range(partitions))] if self.every_edge else _waves(partitions, self.config.first_wave)
        labels = None  # (bounds, per range the labels) of the waves so far
        totals: dict[str, float] = {}
        self.wave_stats, self.link_refs, self.exchange_stats = [], [], None
        with timer.stage("pairs"), self._bar("linking", partitions + n_ranges, "partitions") as advance:
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
                    prep = ray.remote(_bucket_keys_task).options(num_returns=len(label_refs) + 1)
                    lookup = ray.remote(_lookup_task).options(num_returns=len(wave) + 1)
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
                wave_counts = _sum_counts(_completed(ray, [out[0] for out in linked], advance))
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
                totals = _sum_counts([totals, wave_counts])
            if exchange and self.n_docs:
                reduced = self._reduce_exchange(ray, counts, arrays, names, options, method_ref, n_ranges,
                                                record_parts, unseen_parts)
                del record_parts, unseen_parts
                reduce_counts = _sum_counts(_completed(ray, [out[0] for out in reduced], advance))
                results = [out[1] for out in reduced]
                self.link_refs.extend(results)
                edges = int(reduce_counts.get("partition_forest_edges", 0)) + self.components_stats[-1][
                    "joined_documents"]
                labels = self._components(ray, labels[1] + results, edges, advance)
                self.exchange_stats = {"ranges": n_ranges, **{k: round(v, 3) for k, v in reduce_counts.items()}}
                totals = _sum_counts([totals, reduce_counts])
            if self.n_docs:
                same, n_same = self._identity_links(ray, arrays)
                self.link_refs.extend(same)
                earlier = labels[1] if labels is not None else []
                edges = n_same + (self.components_stats[-1]["joined_documents"] if labels is not None else 0)
                labels = self._components(ray, earlier + same, edges, advance)
        with timer.stage("cluster"):
            if labels is None:
                labels = self._components(ray, [], 0, _no_progress)
            self.bounds, self.label_refs = labels
            self._finish(totals, partitions)

    def _gather_and_link(self, ray, link, arrays: list, names: tuple, buckets: list, method_ref,
                         options: dict) -> list:
        """Partitions linked by ``link`` (a link task each): ``buckets`` holds per partition
        the refs a bucket task returns (its edges, then per shard the rows it needs); a
        gather task per shard (``arrays``: its per-document arrays) ships each partition
        those rows of ``names``. Returns the link tasks' refs."""
        gather = ray.remote(_gather_task).options(num_returns=len(buckets))
        rows = [gather.remote(arrays[s], names, *[b[1 + s] for b in buckets]) for s in range(len(arrays))]
        rows = [r if isinstance(r, list) else [r] for r in rows]
        return [link.remote(b[0], method_ref, self.window, options, *[r[j] for r in rows])
                for j, b in enumerate(buckets)]

    def _verify_candidates(self, ray, pair_refs: list, n_pairs: int, arrays: list, method_ref,
                           text_bytes: int) -> tuple[list, dict]:
        """The search tasks' candidate pairs (``pair_refs``, ``n_pairs`` in all, repeats
        included) of a method that scores them, verified as the keyed stage verifies its
        edges (see :func:`_candidate_pairs_task`): as many verify partitions as the memory
        limit needs for a partition's pairs and texts (``text_bytes``: the shards' texts
        in all), the shards (``arrays``) shipping each the texts of its documents.
        Returns the link tasks' results (forests, pairs the time window kept apart) and
        their counts."""
        from neardup.engine.corpus import default_memory_limit

        budget = self.config.memory_limit or default_memory_limit()
        parts = self.partitions = _verify_partitions(n_pairs, text_bytes / max(self.n_docs, 1), budget)
        split = ray.remote(_split_pairs_task).options(num_returns=parts)
        cut = [split.remote(parts, ref) for ref in pair_refs]
        cut = [c if isinstance(c, list) else [c] for c in cut]
        prepare = ray.remote(_candidate_pairs_task).options(num_returns=len(arrays) + 1)
        buckets = [prepare.remote(self.offsets, *[c[p] for c in cut]) for p in range(parts)]
        del cut
        options = {"memory_limit": self.config.memory_limit, "has_dates": self.has_dates}
        link = ray.remote(_link_task).options(num_returns=2)
        with self._bar("verifying", parts, "partitions") as advance:
            linked = self._gather_and_link(ray, link, arrays, _gathered_names(self.method, self.window),
                                           buckets, method_ref, options)
            del buckets
            counts = _sum_counts(_completed(ray, [c for c, _ in linked], advance))
        return [r for _, r in linked], counts

    def _fit_statistics(self, ray, shards: list[_Shard], memory: list | None,
                        reader: ReaderConfig) -> Method:
        """The statistics stage as tasks: each shard counts its share by hash range, a task
        per range sums the shards' counts; the fitted method keys the sketch stage (as the
        local engine's statistics stage, :mod:`neardup.engine.statistics`)."""
        method = self.method
        tables = method.capabilities.statistics.tables
        ranges = max(self.config.partitions or len(shards), 1)
        bounds = hash_range_bounds(ranges)
        method_ref = ray.put(method)
        count = ray.remote(_statistics_task).options(num_returns=1 + len(tables) * ranges)
        summed = ray.remote(_statistics_sum_task)
        with self.timer.stage("statistics"), \
                self._bar("counting statistics", len(shards), "shards") as advance:
            out = [count.remote(shard, method_ref, reader, memory, bounds) for shard in shards]
            totals: dict[str, int] = {}
            for part in _completed(ray, [o[0] for o in out], advance):
                for name, value in part.items():
                    totals[name] = totals.get(name, 0) + int(value)
            counted = {}
            for t, name in enumerate(tables):
                min_df = table_min_df(method, name, totals)
                pieces = ray.get([summed.remote(min_df, *[o[1 + t * ranges + r] for o in out])
                                  for r in range(ranges)])
                counted[name] = (np.concatenate([p["hashes"] for p in pieces]),
                                 np.concatenate([p["counts"] for p in pieces]))
            del out
        return method.with_statistics(FeatureStatistics(totals=totals, tables=counted))

    def _reduce_exchange(self, ray, counts: np.ndarray, arrays: list, names: tuple, options: dict, method_ref,
                         n_ranges: int, record_parts: list, unseen_parts: list) -> list:
        """The exchange's reduce (see :class:`_RecordCollector`): per range of left
        documents, a sum task, a decide task and a link task, the shards answering for the
        facts and the sets they need. Returns the link tasks' (counts, result) refs."""
        n_shards = len(arrays)
        unseen = [ray.remote(_unseen_task).remote(int(counts[s]), int(self.offsets[s]),
                                                  *[u[s] for u in unseen_parts]) for s in range(n_shards)]
        sums = [ray.remote(_pair_sum_task).options(num_returns=n_shards + 1).remote(
            self.offsets, *[r[c] for r in record_parts]) for c in range(n_ranges)]
        facts = [ray.remote(_pair_facts_task).options(num_returns=n_ranges).remote(
            arrays[s], unseen[s], *[x[1 + s] for x in sums]) for s in range(n_shards)]
        facts = [f if isinstance(f, list) else [f] for f in facts]
        decided = [ray.remote(_pair_decide_task).options(num_returns=n_shards + 1).remote(
            sums[c][0], method_ref, self.offsets, *[facts[s][c] for s in range(n_shards)]) for c in range(n_ranges)]
        del sums, facts, unseen
        gather = ray.remote(_gather_task)
        rows = [gather.options(num_returns=n_ranges).remote(arrays[s], names, *[d[1 + s] for d in decided])
                for s in range(n_shards)]
        rows = [r if isinstance(r, list) else [r] for r in rows]
        link = ray.remote(_pair_link_task).options(num_returns=2)
        return [link.remote(decided[c][0], method_ref, self.window, options, *[rows[s][c] for s in range(n_shards)])
                for c in range(n_ranges)]

    def _identity_links(self, ray, identity_refs: list) -> tuple[list, int]:
        """Link results that join the documents of identical texts, whatever the method
        found (as every engine does): the shards' identities (``identity_refs``: per
        shard, a dict holding them) exchanged by range, each range's groups chained.
        Returns the results and their pair count."""
        budget = self.config.components_memory or _COMPONENTS_MEMORY
        ranges = int(min(max(-(-self.n_docs * 32 // budget), 1), 1 << 12))  # 16 bytes a row, twice
        split = ray.remote(_identity_split_task).options(num_returns=ranges)
        parts = [split.remote(ref, int(self.offsets[s]), ranges)
                 for s, ref in enumerate(identity_refs) if self.shard_docs[s]]
        parts = [p if isinstance(p, list) else [p] for p in parts]
        link = ray.remote(_identity_link_task).options(num_returns=2)
        out = [link.remote(*[p[r] for p in parts]) for r in range(ranges)]
        return [o[1] for o in out], int(sum(ray.get([o[0] for o in out])))

    def _set_shards(self, counts: np.ndarray, fact_refs: list) -> None:
        self.shard_docs = counts
        self.offsets = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
        self.n_docs = int(counts.sum())
        self.fact_refs = [ref if n else None for ref, n in zip(fact_refs, counts)]

    def _bar(self, description: str, total: int | None, unit: str):
        return progress_bar(description, total=total, unit=unit, enabled=self.progress)

    def _components(self, ray, sources: list, edges: int, advance) -> tuple[np.ndarray, list]:
        """Connected components of the edges in ``sources`` (link results' forests, earlier
        labels' stars; ``edges`` of them in all) by large-star / small-star rounds over
        ranges of documents sized from ``RayConfig.components_memory``, each round shown
        as ``advance``'s status. Returns the ranges' bounds and per range an object: its
        joined documents (sorted) and their roots."""
        budget = self.config.components_memory or _COMPONENTS_MEMORY
        ranges = _component_partitions(edges, budget)
        bounds = _range_bounds(self.n_docs, ranges)
        scatter = ray.remote(_scatter_task).options(num_returns=ranges + 1)
        large = ray.remote(_large_star_task).options(num_returns=ranges + 2)
        small = ray.remote(_small_star_task).options(num_returns=ranges + 1)
        parts = [scatter.remote(bounds, source)[1:] for source in sources]
        rounds, cpu, small_infos = 0, 0.0, []
        while True:
            trace = self.config.trace_memory
            out = [large.remote(trace, bounds, *[p[c] for p in parts]) for c in range(ranges)]
            infos = ray.get([o[0] for o in out])
            rounds += 1
            advance(0, status=f"components: round {rounds}")
            cpu += sum(i["cpu_s"] for i in infos)
            if all(i["star"] for i in infos):
                break
            smalls = [small.remote(trace, bounds, *[o[2 + c] for o in out]) for c in range(ranges)]
            small_infos.extend(s[0] for s in smalls)
            parts = [s[1:] for s in smalls]
            del out, smalls
        small_infos = ray.get(small_infos)
        cpu += sum(i["cpu_s"] for i in small_infos)
        peak = max([i["peak_bytes"] for i in small_infos + infos], default=0)
        joined = sum(i["nodes"] for i in infos)
        self.components_stats.append({
            "ranges": ranges, "rounds": rounds, "input_edges": int(edges), "joined_documents": int(joined),
            "components": int(sum(i["centres"] for i in infos)),
            "largest_range_edges": int(max(i["edges"] for i in infos)), "cpu_s": round(cpu, 3),
            "peak_task_bytes": int(peak)})
        return bounds, [o[1] for o in out]

    def _execute_vector(self, ray, shards: list[_Shard], memory: list | None, reader: ReaderConfig) -> None:
        """The vector stage on Ray: one embed task per input shard (its rows stay in the
        object store as one row shard), the shared IVF centroids and per-shard IVF
        indexes when the index is approximate, one search task per row shard, and the
        keyed stage's distributed components over their forests. A method that scores its
        candidates has them verified by the keyed stage's link tasks between the search
        and the components (:meth:`_verify_candidates`)."""
        from neardup.engine.corpus import default_memory_limit
        from neardup.engine.vectors import resolve_index
        from neardup.graph.similarity import ivf_nlist, search_margin

        method, timer = self.method, self.timer
        search = method.capabilities.vectors
        budget = self.config.memory_limit or default_memory_limit()
        method_ref = ray.put(method)
        embed = ray.remote(_embed_task).options(num_returns=5)
        with timer.stage("sketch"), self._bar("embedding", len(shards), "shards") as advance:
            out = [embed.remote(i, shard, method_ref, reader, memory) for i, shard in enumerate(shards)]
            info = _completed(ray, [o[0] for o in out], advance)
        counts = np.array([x[0] for x in info], np.int64)
        row_counts = np.array([x[1] for x in info], np.int64)
        dim = max([x[2] for x in info], default=0)
        deviation = max([x[3] for x in info], default=0.0)
        self.sketch_cpu = float(sum(x[4] for x in info))
        text_bytes = int(sum(x[5] for x in info))
        self.n_keys, self.wave_stats, self.partitions = 0, [], 0
        self._set_shards(counts, [o[1] for o in out])
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
        with timer.stage("pairs"), self._bar("searching", len(row_shards), "shards") as advance:
            if n_rows >= 2:
                if kind == "ivf":
                    nlist = ivf_nlist(n_rows, search.nlist)
                    trained = ray.remote(_train_ivf_task).remote(row_shards, row_refs, n_rows, dim,
                                                                 nlist, search, budget)
                    build = ray.remote(_build_ivf_task)
                    ivf_refs = [build.remote(trained, row_refs[j], row_shards[j][0], search.threads)
                                for j in range(len(row_shards))]
                    extra = {"nlist": nlist, "nprobe": min(search.nprobe, nlist)}
                task = ray.remote(_vector_search_task).options(num_returns=2)
                results = [task.remote(i, row_shards, row_refs, owned_refs, date_refs, method_ref, k, floor,
                                       self.window, trained, ivf_refs, budget)
                           for i in range(len(row_shards))]
                totals = _sum_counts(_completed(ray, [c for c, _ in results], advance))
                self.link_refs = [r for _, r in results]
        if scored:  # the search found candidates, not joins
            pair_refs, self.link_refs = self.link_refs, []
            if totals.get("vector_pairs", 0):
                with timer.stage("pairs"):
                    self.link_refs, verified = self._verify_candidates(
                        ray, pair_refs, int(totals["vector_pairs"]), array_refs, method_ref, text_bytes)
                totals = _sum_counts([totals, verified])
            del pair_refs
        with timer.stage("cluster"), self._bar("components", None, "") as advance:
            same, n_same = self._identity_links(ray, array_refs) if self.n_docs else ([], 0)
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
            forest, outside = _merge_forests(*ray.get(self.link_refs), every_edge=self.every_edge)
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
        facts = _collect([r for r in self.fact_refs if r is not None],
                         ["shard", "row", "id", "length", "date", "n_features"])
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


def _waves(partitions: int, first: int | None) -> list[list[int]]:
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


def _default_partitions(n_docs: int, fixed_width: bool = False) -> int:
    """Key partitions for ``n_docs`` documents: a power of two, at least 8, about 200,000
    documents each for a method verifying fixed-width arrays (MinHash signatures), 100,000
    otherwise (set and text methods: a link task holds its partition's key rows and sets).
    Fewer partitions ship fewer gathered rows: a document is shipped to every partition
    that verifies one of its edges (measured at 1M documents: docs/scale-out.md, "Ray's own
    costs")."""
    need = max(n_docs / (200_000 if fixed_width else 100_000), 1.0)
    return int(max(8, 1 << int(np.ceil(np.log2(need)))))


# -- distributed outputs (the CLI's --engine ray) -----------------------------------------


def _ids_of(block: pa.Table, doc: np.ndarray) -> np.ndarray:
    """The block's ids (object array), positions as text where the input had none."""
    ids = np.array(block.column("id").to_pylist(), dtype=object)
    missing = np.array([i is None for i in ids], bool) if ids.size else np.zeros(0, bool)
    if missing.any():
        ids[missing] = doc[missing].astype(str).astype(object)
    return ids


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
    ids = _ids_of(block.take(pa.array(rows)), doc[rows])
    value = (np.asarray(keep_values, np.float64)[doc[rows]] if keep_values is not None
             else np.full(rows.size, np.nan))
    return (empty, *_split_by(_range_of(root, bounds), bounds.size - 1, doc=doc[rows], root=root, id=ids,
                              length=block.column("length").to_numpy()[rows].astype(np.int64),
                              date=block.column("date").to_numpy()[rows].astype(np.int64), value=value))


def _forest_by_left_task(bounds: np.ndarray, result: dict) -> tuple:
    """A link result's forest edges cut by range of their left document."""
    left, right, score = (np.asarray(x) for x in result["forest"])
    return (int(left.size), *_split_by(_range_of(left, bounds), bounds.size - 1, left=left, right=right,
                                      score=score.astype(np.float32)))


def _forest_by_root_task(bounds: np.ndarray, labels: dict, *parts: dict) -> tuple:
    """One range's forest edges (by left document) cut by range of their component's root."""
    cat = {k: np.concatenate([np.zeros(0, t)] + [p[k] for p in parts])
           for k, t in (("left", np.int64), ("right", np.int64), ("score", np.float32))}
    at, _ = _lookup(labels["node"], cat["left"])
    root = labels["root"][at] if labels["node"].size else cat["left"]
    return (int(root.size), *_split_by(_range_of(root, bounds), bounds.size - 1, **cat))


@_traced
def _assign_task(shard_starts: np.ndarray, clustering: dict, keep: KeepPolicy, pairs_path: Location | None,
                 method_name: str, n_facts: int, *parts: dict) -> tuple:
    """Cluster, size, representative and template flag of the joined documents whose root
    lies in one range (whole components: ``parts`` are their facts from every shard, then
    their forest edges), with the local engine's rules (graph.cluster.cluster_pairs with
    ``clustering``'s algorithm, resolution, seed, max_cluster_size and oversized;
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
                    dates=np.where(seconds == _NO_DATE, np.datetime64("NaT"),
                                   seconds.astype("datetime64[s]")).astype("datetime64[s]"),
                    values=np.concatenate([np.zeros(0)] + [f["value"] for f in facts])[by])
    ids = np.concatenate([np.zeros(0, object)] + [f["id"] for f in facts])[by]
    edges = Pairs(*(np.concatenate([np.zeros(0, t)] + [e[k] for e in edges])
                    for k, t in (("left", np.int64), ("right", np.int64), ("score", np.float32))))
    algorithm = clustering["algorithm"]
    limits = {"max_cluster_size": clustering["max_cluster_size"], "oversized": clustering["oversized"]}
    if algorithm == "components":
        result = flag_oversized(canonical_labels(roots), **limits)
        pairs = _spanning_forest(edges.left, edges.right, edges.score)
    else:
        # Whole components, numbered in position order as in the corpus-wide run: each
        # component's graph (and so its communities) is the one the local engine builds.
        pairs = edges.canonical()
        local = Pairs(np.searchsorted(nodes, pairs.left), np.searchsorted(nodes, pairs.right), pairs.score)
        result = cluster_pairs(local, nodes.size, method=algorithm, resolution=clustering["resolution"],
                               seed=clustering["seed"], **limits)
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
    by_shard = _split_by(_range_of(nodes, shard_starts), shard_starts.size - 1, doc=nodes, cluster=cluster_of,
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
        "id": pa.array(_ids_of(block, doc).tolist(), pa.string()), "cluster": pa.array(cluster),
        "cluster_size": pa.array(size), "representative": pa.array(representative),
        "status": pa.array(status.tolist(), pa.string()), "template": pa.array(template)}))
    return n


def _write_kept_task(shard: _Shard, reader: ReaderConfig, base: int, path: Location, annotate: bool,
                     *parts: dict) -> int:
    """One shard's kept documents (full records, re-read from the input) written to
    ``path``; nothing written when it keeps none. ``annotate``: every record, with its
    cluster, cluster_size, is_representative and duplicate_of (neardup.io.writers)."""
    from contextlib import closing

    from neardup.io.writers import annotated_records, annotation_columns

    table = _joined_table(parts)
    dropped = table["doc"][~table["representative"]]
    sharded = shard.kind in _SHARDED
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
    return (int(cat["left"].size), *_split_by(_range_of(cat[side], shard_starts), shard_starts.size - 1, **cat))


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
        found = _ids_of(block, doc)[order][at] if cat[side].size else found
    if side == "left":
        cat["id_a"] = found
        return (0, *_split_by(_range_of(cat["right"], shard_starts), shard_starts.size - 1, **cat))
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
                  seed: int = 0, keep_values: np.ndarray | None = None,
                  annotate: bool = False, storage_options: dict | None = None) -> dict[str, Any]:
    """Write a finished Ray run's outputs as directories of Parquet files, from the
    workers: ``clusters_out`` (id, cluster, cluster_size, representative, status,
    template; one row per document, one file per shard; ``cluster`` is the input position
    of the cluster's first document), ``pairs_out`` (id_a, id_b, score, method,
    outside_window: a spanning forest of the verified edges, or every accepted pair when
    ``algorithm`` is "leiden" or "louvain", one file per range of component roots, then
    the time-window rejects, one file per shard) and ``out`` (the
    kept documents' full records, one file per shard). Each directory is written beside
    its final path and renamed into place (an :class:`~neardup.io.outputs.OutputDirectory`;
    paths may be URLs, written by the workers with ``storage_options``). No process holds every joined document: the
    components' labels, facts and forest edges are cut by range of root, one assign
    task per range (:func:`_assign_task`); the driver receives only counts. Returns the
    run summary (as :meth:`neardup.pipeline.Result.summary`).

    ``algorithm``, ``resolution``, ``seed``, ``max_cluster_size`` and ``oversized`` are
    those of :func:`neardup.graph.cluster_pairs`; community detection runs per component
    inside the assign tasks, and needs a run made with ``every_edge=True``. ``keep``: the
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
            f"{algorithm != 'components'} (community detection reads every accepted pair, "
            "components a spanning forest); got a run with every_edge="
            f"{run.every_edge}.")
    clustering = {"algorithm": algorithm, "resolution": resolution, "seed": seed,
                  "max_cluster_size": max_cluster_size, "oversized": oversized}
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
        with progress_bar("writing", total=len(assigned) + len(live) + len(pending), unit="tasks",
                          enabled=run.progress) as advance:
            assign_counts = _completed(ray, [x[0] for x in assigned], advance)
            empty = sum(_completed(ray, [facts[s][0] for s in live], advance))
            _completed(ray, pending, advance)
        counts = _sum_counts(assign_counts)
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
