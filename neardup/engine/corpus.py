"""The engine-independent corpus stage: keys -> buckets -> verified edges -> components.

No step holds all sketches or all pairs in memory:

1. **sketch** (streaming, per batch): ``method.sketch`` and ``method.candidate_keys``;
   what the method's verification spec (``method.capabilities.verification``) reads goes
   to the work directory: fixed-width ``arrays`` to raw files, ``sets`` to a ragged pair
   of files (set sizes, concatenated values; a third file of float64 element weights with
   ``set_weights``), the first ``text_chars`` of each text to an Arrow IPC file;
   document facts (id, length, date) go to Parquet, and keys are hashed into
   ``partitions`` files, spilled whenever the buffer passes a share of ``memory_limit``.
2. **buckets** (per key partition): rows grouped by key become a star plus a chain per
   bucket (:func:`~neardup.graph.buckets.bucket_edges`; all pairs up to the keyed spec's
   ``all_pairs_upto``, the chain alone over its ``star_upto``, ordered by the rows'
   payload when there is one), linear in the bucket's size, or the method's own in-bucket
   verification (``links_buckets``: :meth:`Method.link_bucket`).
   For set-overlap methods (ngram, spotsigs: :func:`exchanges_pair_counts`), a
   **prefix** stage first gives each document its prefix (its rarest keys, enough that a
   partner reaching the threshold shares one), then each all-pairs group's pairs of
   members whose prefixes hold its key are counted once per partition and go to the
   **pair-count exchange** (:mod:`neardup.engine.overlap`): spilled with their shared
   counts, then, in the **exchange** stage, summed over the partitions per range of left
   documents and bounded with the keys outside the prefixes, so a pair is scored once
   (from its counts when they are exact, else by merging its sets), whatever the number
   of partitions.
3. **components** (edges streamed in bounded batches): an edge whose documents are
   already connected is skipped; the others are verified against the stored data of
   their documents (memory-mapped and fetched per step of edges, so only the step's
   rows are resident; :meth:`~neardup.methods.Method.score_candidate_rows`), the window check
   applied, and joins recorded in a union-find over an int64 array. The joins form a
   spanning forest: the scored pairs written as the run's pairs.

Methods that weight features by whole-corpus statistics (wminhash, sanderson) run a
**statistics** stage first (:mod:`neardup.engine.statistics`): one pass counts the document
frequencies they declare, and the fitted method they return sketches and keys the batches.
sanderson, whose mutual retrieval ranks each query's whole result list, then runs the
postings and retrieval stages (:mod:`neardup.engine.retrieval`) instead of key groups.

Each stage leaves files and a marker in the work directory
(:class:`~neardup.engine.workdir.WorkDir`), so a killed run resumes from its completed
stages and produces the same outputs. The stages are functions of their inputs only, so
another executor (Ray) can run them partition by partition.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import resource
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from neardup.engine.rows import LazyTexts, RowSource, TextSource
from neardup.engine.buckets import concat_ranges, group_runs, overlap_pairs
from neardup.engine.facts import DOC_SCHEMA, document_facts, identity_pairs
from neardup.engine.overlap import (
    DF_CLASS_UPPER,
    add_key_classes,
    code_pairs,
    decide_pairs,
    df_classes,
    likely_pairs,
    pair_codes,
    pair_ranges,
    prefix_cuts,
    records_below,
    sum_pair_counts,
    uncounted_keys,
)
from neardup.engine.pairmemory import PairMemory
from neardup.engine.retrieval import retrieval_stages
from neardup.engine.sketching import sketch_batch
from neardup.engine.statistics import statistics_stage
from neardup.engine.unionfind import UnionFind
from neardup.engine.workdir import (
    WorkDir,
    atomic_write_text,
    read_arrow,
    stage_key,
    write_arrow,
)
from neardup.errors import check_int
from neardup.graph.buckets import bucket_edge_counts, bucket_edges, key_groups
from neardup.graph.edges import NO_DATE, Pairs, TimeWindow
from neardup.io.batch import DocumentBatch
from neardup.io.rowfile import read_rows, read_spans
from neardup.methods.base import SET_WEIGHTS, CandidateRows, Method
from neardup.progress import StageTimer, progress_bar, timed_batches
from neardup.text.shingle import ShingleSets

__all__ = [
    "CorpusStageConfig",
    "PartitionLinker",
    "TEXTS_FILE",
    "TextReader",
    "TextWriter",
    "default_memory_limit",
    "link_key_rows",
    "merge_forests",
    "parse_memory",
    "read_stage_output",
    "require_dates",
    "run_corpus_stage",
    "stage_key",
    "supports_corpus_stage",
]

def default_memory_limit() -> int:
    """An eighth of physical memory, between 256 MiB and 1 GiB: the stage's buffers
    (spilled keys, verification chunks). More buys fewer, larger files, not speed;
    the rest is left to per-document arrays, the OS page cache (which serves the
    spilled files back) and other work."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 8 << 30
    return int(min(max(total // 8, 256 << 20), 1 << 30))


_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40}


def parse_memory(text: str | int) -> int:
    """Bytes from ``"2GB"``, ``"512M"``, ``"1.5GiB"`` or a plain number of bytes."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(text))
        unit = match.group(2).lower() if match else None
        if match is None or unit not in _UNITS:
            raise ValueError(
                f"memory limit must be a size such as 4GB, 512MB or 1.5GiB; got {text!r}"
            )
        value = int(float(match.group(1)) * _UNITS[unit])
    if value < 1 << 20:
        raise ValueError(f"memory limit must be at least 1MB; got {text!r}")
    return value


@dataclass(frozen=True)
class CorpusStageConfig:
    """Where and within what memory the corpus stage runs.

    Parameters
    ----------
    work_dir : path or None, default None
        Directory for the spilled stages; None uses a temporary directory removed at the
        end. Give one to resume a killed run (``resume=True``).
    memory_limit : int (bytes) or None, default None
        Budget for the stage's buffers (key spill buffer, verification batches); None:
        :func:`default_memory_limit`. Per-document arrays (8 bytes each for the
        union-find, lengths and dates) come on top.
    partitions : int or None, default None
        Key partitions. Each is grouped in memory on its own, so a partition's keys
        (16-24 bytes each) should fit in a quarter of ``memory_limit``. None: from the
        number of documents when it is known (1 for a small corpus, up to 4096), else
        256 (enough for ~10^8 documents with the default memory limit).
    resume : bool, default False
        Reuse the completed stages found in ``work_dir``.
    expected_docs : int or None, default None
        Documents the caller expects (exact from Parquet footers, or an estimate; set by
        :meth:`resolve`). Sizes partitions when ``partitions`` is None, and tells whether
        an embedding method's exact out-of-core search fits its ``exact_limit``.
    """

    work_dir: str | None = None
    memory_limit: int | None = None
    partitions: int | None = None
    resume: bool = False
    expected_docs: int | None = None

    def __post_init__(self) -> None:
        if self.partitions is not None:
            check_int("CorpusStageConfig", "partitions", self.partitions, low=1, high=1 << 16)
        if self.memory_limit is not None:
            object.__setattr__(self, "memory_limit", parse_memory(self.memory_limit))

    @property
    def budget(self) -> int:
        return self.memory_limit or default_memory_limit()

    def resolve(self, n_docs: int | None, keys_per_doc: int = 40) -> CorpusStageConfig:
        """This config with ``expected_docs`` (if not set) and ``partitions`` fixed: enough
        partitions that one's keys (``keys_per_doc`` rows of 24 bytes per document, the
        keyed spec's ``keys_per_doc``; grouping doubles
        them) take an eighth of the budget, a power of two."""
        config = self
        if config.expected_docs is None and n_docs is not None:
            config = replace(config, expected_docs=int(n_docs))
        n_docs = config.expected_docs if n_docs is None else n_docs
        if config.partitions is not None:
            return config
        if n_docs is None:
            return replace(config, partitions=256)
        need = n_docs * keys_per_doc * 24 * 2 / max(self.budget // 8, 1)
        partitions = 1 << max(int(np.ceil(np.log2(max(need, 1.0)))), 0)
        return replace(config, partitions=min(partitions, 4096))


def supports_corpus_stage(method: Method, algorithm: str) -> bool:
    """Whether ``method`` with clustering ``algorithm`` runs through this stage: every
    method with the keyed contract, with any clustering. Connected components read a
    spanning forest; the others (community detection, HAC) read the pair graph the
    in-memory stage gives them, every accepted pair with its score, which the stage keeps
    in its ``every_edge`` mode: no candidate is skipped for joining documents already
    joined, neither in the key groups nor in the pair-count exchange, and mutual retrieval
    writes every mutual pair anyway."""
    return method.capabilities.keyed is not None


class _KeySpill:
    """Candidate-key rows hashed into partition files, flushed when the buffer is full."""

    def __init__(self, directory: Path, partitions: int, flush_bytes: int) -> None:
        self.directory = directory
        self.partitions = partitions
        self.flush_bytes = max(flush_bytes, 1 << 16)
        self.buffers: list[list[tuple[np.ndarray, ...]]] = [[] for _ in range(partitions)]
        self.buffered = 0
        self.chunk = 0
        self.rows = 0

    def add(self, docs: np.ndarray, keys: np.ndarray, payload: np.ndarray | None) -> None:
        if keys.size == 0:
            return
        # uint16 (partitions <= 65536): NumPy's stable sort is then a radix sort.
        part = (keys % np.uint64(self.partitions)).astype(np.uint16)
        order = np.argsort(part, kind="stable")
        bounds = np.concatenate(([0], np.cumsum(np.bincount(part, minlength=self.partitions))))
        docs, keys = docs[order], keys[order]
        payload = payload[order] if payload is not None else None
        for p in np.flatnonzero(np.diff(bounds)).tolist():
            s, e = bounds[p], bounds[p + 1]
            self.buffers[p].append((keys[s:e], docs[s:e]) + ((payload[s:e],) if payload is not None else ()))
        self.buffered += keys.nbytes + docs.nbytes + (payload.nbytes if payload is not None else 0)
        self.rows += int(keys.size)
        if self.buffered >= self.flush_bytes:
            self.flush()

    def flush(self) -> None:
        for p, parts in enumerate(self.buffers):
            if not parts:
                continue
            columns = {"key": np.concatenate([x[0] for x in parts]),
                       "doc": np.concatenate([x[1] for x in parts])}
            if len(parts[0]) == 3:
                columns["payload"] = np.concatenate([x[2] for x in parts])
            write_arrow(self.directory / f"p-{p:04d}-{self.chunk:05d}.arrow", pa.table(columns),
                        durable=False)
            self.buffers[p] = []
        self.chunk += 1
        self.buffered = 0


def _sketch_stage(wd: WorkDir, batches: Iterable[DocumentBatch], method: Method,
                  config: CorpusStageConfig, timer, progress, total,
                  statistics: str | None = None) -> dict[str, Any]:
    key = stage_key("sketch", method.name, method.get_params(), config.partitions, statistics)
    facts = wd.done("sketch", key)
    if facts is not None:
        return facts
    directory = wd.start("sketch")
    (directory / "keys").mkdir()
    (directory / "arrays").mkdir()
    reads = method.capabilities.reads
    names = reads.arrays
    spill = _KeySpill(directory / "keys", config.partitions, config.budget // 4)
    array_files = {name: open(directory / "arrays" / f"{name}.bin", "wb") for name in names}
    if reads.sets:
        # Ragged: one size per document and the concatenated values; offsets are rebuilt
        # from the sizes when read.
        array_files[_SET_SIZES] = open(directory / "arrays" / f"{_SET_SIZES}.bin", "wb")
        array_files[_SET_VALUES] = open(directory / "arrays" / f"{_SET_VALUES}.bin", "wb")
        if reads.set_weights:  # float64, aligned with the values
            array_files[_SET_WEIGHTS] = open(directory / "arrays" / f"{_SET_WEIGHTS}.bin", "wb")
    array_layout: dict[str, list] = {}
    text_writer = (TextWriter(directory / TEXTS_FILE, reads.text_chars)
                   if reads.text_chars is not None else None)
    cpu_start = time.process_time()
    writer = pq.ParquetWriter(directory / "docs.parquet", DOC_SCHEMA)
    n_docs, has_dates = 0, False
    try:
        for batch in timed_batches(batches, timer, total=total, progress=progress):
            n = len(batch)
            with timer.stage("sketch"):
                sketch, candidates = sketch_batch(method, batch.texts, n_docs)
                spill.add(candidates.docs, candidates.keys, candidates.payload)
            for name in names:
                values = np.ascontiguousarray(sketch.arrays[name])
                array_layout.setdefault(name, [values.dtype.str, list(values.shape[1:])])
                array_files[name].write(values.tobytes())
            if reads.sets:
                if reads.multisets:  # term multisets: repeats are counts
                    sets = ShingleSets(np.ascontiguousarray(sketch.sets.hashes, np.uint64),
                                       np.ascontiguousarray(sketch.sets.offsets, np.int64))
                else:
                    sets = sketch.require_sets("run_corpus_stage", "shingle",
                                               f"{method.name}.sketch")
                array_files[_SET_SIZES].write(sets.counts().astype(np.int64).tobytes())
                array_files[_SET_VALUES].write(sets.hashes.tobytes())
                if reads.set_weights:
                    weights = np.ascontiguousarray(sketch.ragged[SET_WEIGHTS], np.float64)
                    if weights.shape != sets.hashes.shape:
                        raise ValueError(
                            f"{method.name}.keyed_sketch: ragged[{SET_WEIGHTS!r}] must hold one "
                            f"weight per set element; got {weights.shape[0]} weights for "
                            f"{sets.hashes.shape[0]} elements."
                        )
                    array_files[_SET_WEIGHTS].write(weights.tobytes())
            if text_writer is not None:
                text_writer.write(batch.texts)
            has_dates = has_dates or batch.dates is not None
            writer.write_table(document_facts(batch, sketch))
            n_docs += n
        spill.flush()
    finally:
        writer.close()
        if text_writer is not None:
            text_writer.close()
        for handle in array_files.values():
            handle.close()
    facts = {"n_docs": n_docs, "n_keys": spill.rows, "arrays": array_layout, "has_dates": has_dates,
             "payload": None, "sets": reads.sets, "set_weights": reads.set_weights,
             "texts": text_writer is not None,
             **_process_usage(cpu_start)}
    wd.finish("sketch", key, facts)
    return facts


_NO_DATE = NO_DATE  # the executors' name for it


def _process_usage(cpu_start: float) -> dict[str, float]:
    """CPU seconds since ``cpu_start`` (``time.process_time``) and the process's peak RSS
    so far, recorded with a stage's or partition's results: a run resumed over several
    invocations can then be accounted for as a whole (``benchmarks/scale.py``)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"cpu_seconds": round(time.process_time() - cpu_start, 2),
            "peak_rss_mb": round(peak, 1)}


def _link_stage(wd: WorkDir, key: str, method: Method, sketch_facts: dict[str, Any],
                config: CorpusStageConfig, window_hours: float | None, timer,
                progress, every_edge: bool = False) -> dict[str, Any]:
    """Per key partition: verified edges that join documents (a partition-local
    spanning forest) and the verified pairs the time window keeps apart. One file per
    partition, written atomically, so an interrupted stage resumes at the first missing
    partition. With ``every_edge`` no candidate is skipped for joining documents already
    joined: the files hold every accepted pair (for community detection), at the cost of
    verifying every candidate pair once."""
    facts = wd.done("link", key)
    if facts is not None:
        return facts
    directory = wd.start_keyed("link", key)
    n_docs = sketch_facts["n_docs"]
    store, window = _open_store(wd, method, sketch_facts, window_hours)
    keys_dir = wd.stage_dir("sketch") / "keys"
    by_part = _key_files(keys_dir)
    # The edges of one chunk of buckets must fit in a quarter of the budget (16 bytes
    # each, plus masks): whole buckets are taken until their edge count reaches it.
    chunk_edges = int(max(config.budget // 4 // 64, 1 << 14))
    step = _verify_step(config, store)
    exchange = exchanges_pair_counts(method)
    totals = {"candidate_edges": 0, "verified_edges": 0, "capped_keys": 0, "pruned_edges": 0}
    prefix_cut = checked = None
    # Pairs a costly check rejected (8 bytes each, up to 1/16 of the budget), across
    # partitions: the keys two documents share land in different partitions.
    rejected = None
    if method.capabilities.reads.costly:
        rejected = PairMemory(config.budget // 16 // 8)
        totals["rescoring_skipped"] = 0
    if exchange:
        # Neighbour pairs already verified: 8 bytes each, up to 1/16 of the budget.
        checked = PairMemory(config.budget // 16 // 8)
        totals["exchange_records"] = 0
        # Each document's prefix (its last df class, 1 byte): groups are counted only
        # among the members whose prefix holds the key.
        prefix_cut = np.load(wd.stage_dir("prefix") / "cut.npy")
    # One union-find across partitions: a document joined in one partition is not
    # checked again in the next. Partitions are linked in order, so a resumed stage
    # replays the forests of the completed ones (a prefix) to get the same state.
    uf = NoJoins() if every_edge else UnionFind(n_docs)
    # Capped keys held per document (4 bytes each), for the method's pruning summary:
    # which documents share keys too common to be compared all-to-all.
    capping = method.capabilities.keyed.capped
    capped_per_doc = np.zeros(n_docs if capping else 0, np.int32)
    resuming = True
    with progress_bar("linking", total=config.partitions, unit="partitions",
                      enabled=progress) as advance, timer.stage("pairs"):
        for p in range(config.partitions):
            out = directory / f"p-{p:04d}.arrow"
            done = directory / f"p-{p:04d}.json"
            capped_file = directory / f"p-{p:04d}.capped.arrow"
            resuming = resuming and out.exists() and done.exists()
            if resuming:
                if capping:
                    _count_capped(capped_per_doc, read_arrow(capped_file).column("doc").to_numpy())
                _replay_forest(uf, out)
            else:
                cpu_start = time.process_time()
                tables = [read_arrow(keys_dir / name) for name in by_part.get(p, [])]
                spill = _PairSpill(directory, p) if exchange else None
                forest, outside, counts, capped_docs = link_partition(
                    method, tables, store, window, chunk_edges, uf, step=step,
                    exchange=spill, prefix_cut=prefix_cut, checked=checked, rejected=rejected)
                if spill is not None:
                    spill.commit()
                    counts["exchange_records"] = spill.records
                if capping:
                    _count_capped(capped_per_doc, capped_docs)
                    write_arrow(capped_file, pa.table({"doc": capped_docs}), durable=False)
                del capped_docs
                del tables
                _write_edges(out, forest, outside)
                # Kept with the partition (as the sketch stage's with its facts), so that
                # the CPU of a run resumed over several invocations can be added up.
                counts.update(_process_usage(cpu_start))
                atomic_write_text(done, json.dumps(counts))
            counts = json.loads(done.read_text())
            for name in totals:
                totals[name] += counts.get(name, 0)
            advance(1)
    if capping:
        sizes = pq.read_table(wd.stage_dir("sketch") / "docs.parquet",
                              columns=["n_features"]).column("n_features").to_numpy()
        totals["capped_documents"] = int(np.count_nonzero(capped_per_doc))
        totals["capped_only_documents"] = int(np.count_nonzero((capped_per_doc == sizes) & (sizes > 0)))
    wd.finish("link", key, totals)
    return totals


def _key_files(keys_dir: Path) -> dict[int, list[str]]:
    """The sketch stage's key files by partition."""
    by_part: dict[int, list[str]] = {}
    for name in sorted(os.listdir(keys_dir)):
        by_part.setdefault(int(name[2:6]), []).append(name)
    return by_part


def _prefix_stage(wd: WorkDir, key: str, method: Method, sketch_facts: dict[str, Any],
                  config: CorpusStageConfig, timer, progress) -> dict[str, Any]:
    """Each document's prefix for the pair-count exchange's filter
    (:mod:`neardup.engine.overlap`): one pass over the key partitions counts each key's
    df (its group's size) into per-document counts of compared keys by df class (uint16,
    32 bytes a document) and of keys in groups not compared all-to-all; then
    :func:`~neardup.engine.overlap.prefix_cuts` with the method's
    :meth:`~neardup.methods.Method.overlap_min_shared`. Writes ``cut.npy`` (int8: last
    df class of the prefix), ``suffix.npy`` and ``unseen.npy`` (int32)."""
    facts = wd.done("prefix", key)
    if facts is not None:
        return facts
    directory = wd.start("prefix")
    n_docs = sketch_facts["n_docs"]
    keys_dir = wd.stage_dir("sketch") / "keys"
    by_part = _key_files(keys_dir)
    counts = np.zeros((n_docs, DF_CLASS_UPPER.size), np.uint16)
    unseen = np.zeros(n_docs, np.int64)
    upto = method.capabilities.keyed.all_pairs_upto
    with progress_bar("counting key frequencies", total=config.partitions, unit="partitions",
                      enabled=progress) as advance, timer.stage("pairs"):
        for p in range(config.partitions):
            names = by_part.get(p, [])
            if names:
                table = pa.concat_tables([read_arrow(keys_dir / name).select(["key", "doc"])
                                          for name in names])
                keys = table.column("key").to_numpy()
                docs = table.column("doc").to_numpy()
                del table
                order = np.argsort(keys)
                _, df = group_runs(keys[order])
                del keys
                add_key_classes(counts, unseen, docs[order], np.repeat(df, df), upto)
                del order, docs
            advance(1)
        sizes = np.fromfile(wd.stage_dir("sketch") / "arrays" / f"{_SET_SIZES}.bin", np.int64)
        compared = counts.sum(axis=1, dtype=np.int64)
        overlap = method.capabilities.overlap
        cut, suffix = prefix_cuts(counts, unseen, method.overlap_min_shared(sizes)
                                  if overlap.prefix_filter else None)
        del counts
    np.save(directory / "cut.npy", cut)
    np.save(directory / "suffix.npy", suffix.astype(np.int32))
    np.save(directory / "unseen.npy", unseen.astype(np.int32))
    facts = {"prefix_compared_keys": int(compared.sum()),
             "prefix_keys": int(compared.sum() - suffix.sum())}
    wd.finish("prefix", key, facts)
    return facts


def _open_store(wd: WorkDir, method: Method, sketch_facts: dict[str, Any],
                window_hours: float | None) -> tuple[_ArrayStore, TimeWindow | None]:
    """The sketch stage's per-document data, and the time window (None without one)."""
    dates = None
    read_dates = method.capabilities.reads.dates
    if window_hours is not None or read_dates:
        date = pq.read_table(wd.stage_dir("sketch") / "docs.parquet", columns=["date"]).column("date")
        dates = date.cast(pa.timestamp("s")).cast(pa.int64()).fill_null(NO_DATE).to_numpy()
    # Dates reach the scorer only when the input has some (None means "no dates", as in
    # the in-memory stage).
    store = _ArrayStore(wd, sketch_facts,
                        dates if read_dates and sketch_facts["has_dates"] else None)
    window = None
    if window_hours is not None:
        identity = pq.read_table(wd.stage_dir("sketch") / "docs.parquet",
                                 columns=["identity"]).column("identity").to_numpy()
        window = TimeWindow(float(window_hours), dates, identity)
    return store, window


def _verify_step(config: CorpusStageConfig, store: _ArrayStore) -> int:
    return verify_step(config.budget, store.row_bytes)


def verify_step(budget: int, row_bytes: int) -> int:
    """Edges verified at once: the rows fetched for one step (two documents of
    ``row_bytes`` each) must fit in a quarter of ``budget`` (texts and long sets make a
    row large); every executor's linker steps by it."""
    return int(min(max(budget // 4 // (2 * row_bytes + 64), 64), PartitionLinker.step))


def exchanges_pair_counts(method: Method) -> bool:
    """Whether the method's all-pairs key groups go through the pair-count exchange
    (:mod:`neardup.engine.overlap`): set-overlap keys, scored from counts."""
    return method.capabilities.overlap is not None


class _PairSpill:
    """One key partition's exchange records, appended (ordered by left document) to
    ``p-PPPP.codes.bin`` (uint64 pair codes) and ``p-PPPP.shared.bin`` (uint32 shared
    counts) through temporary files moved into place by :meth:`commit`."""

    def __init__(self, directory: Path, partition: int) -> None:
        self.paths = [directory / f"p-{partition:04d}.{name}.bin" for name in ("codes", "shared")]
        self.handles = [open(path.with_name(path.name + ".tmp"), "wb") for path in self.paths]
        self.records = 0

    def add(self, left: np.ndarray, right: np.ndarray, shared: np.ndarray) -> None:
        if left.size == 0:
            return
        self.handles[0].write(pair_codes(left, right).tobytes())
        self.handles[1].write(np.asarray(shared, np.uint32).tobytes())
        self.records += int(left.size)

    def commit(self) -> None:
        for handle, path in zip(self.handles, self.paths):
            handle.close()
            os.replace(handle.name, path)


def _read_raw(path: Path, dtype) -> np.ndarray:
    """A raw file memory-mapped (an empty array for an empty file)."""
    if path.stat().st_size == 0:
        return np.zeros(0, dtype)
    return np.memmap(path, dtype=dtype, mode="r")


#: Memory of one record in the exchange's reduce: the record (12 bytes), its sort order,
#: the summed pairs and their sides' facts. A range of records takes half the budget.
EXCHANGE_BYTES_PER_RECORD = 64


def _exchange_stage(wd: WorkDir, key: str, method: Method, sketch_facts: dict[str, Any],
                    config: CorpusStageConfig, window_hours: float | None, timer,
                    progress, every_edge: bool = False) -> dict[str, Any]:
    """The reduce side of the pair-count exchange (:mod:`neardup.engine.overlap`): per
    range of left documents, the link stage's records of every key partition summed by
    pair; pairs whose intersection the counts give are scored without reading sets, the
    others bounded with the totals and their survivors verified. Joins continue the link
    stage's union-find (its forests replayed); with ``every_edge`` nothing counts as
    joined, and the files hold every accepted pair. One file per range, written
    atomically, so an interrupted stage resumes at the first missing range."""
    facts = wd.done("exchange", key)
    if facts is not None:
        return facts
    directory = wd.start_keyed("exchange", key)
    n_docs = sketch_facts["n_docs"]
    store, window = _open_store(wd, method, sketch_facts, window_hours)
    step = _verify_step(config, store)
    link_dir = wd.stage_dir("link")
    partitions = config.partitions
    uf = NoJoins() if every_edge else UnionFind(n_docs)
    if not every_edge:
        for p in range(partitions):
            _replay_forest(uf, link_dir / f"p-{p:04d}.arrow")
    prefix_dir = wd.stage_dir("prefix")
    prefix = tuple(np.load(prefix_dir / f"{name}.npy") for name in ("cut", "suffix", "unseen"))
    sizes = np.diff(store.set_offsets)
    code_paths = [link_dir / f"p-{p:04d}.codes.bin" for p in range(partitions)]
    shared_paths = [link_dir / f"p-{p:04d}.shared.bin" for p in range(partitions)]
    max_records = max(config.budget // 2 // EXCHANGE_BYTES_PER_RECORD, 1 << 10)
    ranges = pair_ranges([_read_raw(path, np.uint64) for path in code_paths], n_docs, max_records)
    totals = {"exchange_pairs": 0, "scored_from_counts": 0, "candidate_edges": 0,
              "verified_edges": 0, "pruned_edges": 0}
    resuming = True
    with progress_bar("exchanging", total=len(ranges), unit="ranges", enabled=progress) as advance, \
            timer.stage("pairs"):
        for r, (lo, hi) in enumerate(ranges):
            out = directory / f"r-{r:05d}.arrow"
            done = directory / f"r-{r:05d}.json"
            resuming = resuming and out.exists() and done.exists()
            if resuming:
                if not every_edge:
                    _replay_forest(uf, out)
            else:
                forest, outside, counts = _reduce_pair_range(
                    method, code_paths, shared_paths, lo, hi, sizes, prefix, store, window,
                    uf, step)
                _write_edges(out, forest, outside)
                atomic_write_text(done, json.dumps(counts))
            counts = json.loads(done.read_text())
            for name in totals:
                totals[name] += counts.get(name, 0)
            advance(1)
    totals["exchange_ranges"] = len(ranges)
    wd.finish("exchange", key, totals)
    return totals


def _reduce_pair_range(method: Method, code_paths: list[Path], shared_paths: list[Path], lo: int,
                       hi: int, sizes: np.ndarray, prefix: tuple[np.ndarray, ...],
                       store: _ArrayStore, window: TimeWindow | None, uf: UnionFind | NoJoins,
                       step: int) -> tuple[Pairs, Pairs, dict[str, int]]:
    """One range of left documents of the exchange: its forest, outside-window pairs and
    counts. ``prefix``: each document's prefix cut, suffix and unseen keys (the prefix
    stage's), which bound the keys a pair shares outside its count."""
    codes, shared = [], []
    for code_path, shared_path in zip(code_paths, shared_paths):
        file_codes = _read_raw(code_path, np.uint64)
        start, stop = records_below([file_codes], lo)[0], records_below([file_codes], hi)[0]
        if stop > start:
            codes.append(np.array(file_codes[start:stop]))
            shared.append(np.array(_read_raw(shared_path, np.uint32)[start:stop]))
        del file_codes
    records = sum(c.size for c in codes)
    codes, total = sum_pair_counts(np.concatenate(codes) if codes else np.zeros(0, np.uint64),
                                   np.concatenate(shared) if shared else np.zeros(0, np.uint32))
    del shared
    left, right = code_pairs(codes)
    del codes
    cut, suffix, unseen = prefix
    uncounted = uncounted_keys(cut[left], cut[right], suffix[left], suffix[right], unseen[left],
                               unseen[right]).astype(np.int64)
    # Both sides get the pair's uncounted keys as unseen: the bound adds their smaller.
    exact, score, accept, verify = decide_pairs(
        total, sizes[left], sizes[right], uncounted, uncounted, method.overlap_scores,
        method.overlap_bound)
    linker = PartitionLinker(method, np.zeros(0, np.int64), store, window, uf)
    linker.step = step
    # Pairs scored from counts first (no reads), then those to verify, each in pair order.
    linker.consider(left[accept], right[accept], score[accept])
    linker.consider(left[verify], right[verify])
    counts = dict(linker.counts)
    counts.update(exchange_records=int(records), exchange_pairs=int(left.size),
                  scored_from_counts=int(np.count_nonzero(exact)),
                  pruned_edges=int(np.count_nonzero(~exact & ~verify)))
    return linker.forest_pairs(), linker.outside_pairs().canonical(), counts


def _replay_forest(uf: UnionFind, path: Path) -> None:
    """Join the forest edges (not the outside-window ones) of an edge file."""
    table = read_arrow(path)
    away = table.column("outside_window").to_numpy(zero_copy_only=False)
    uf.union(table.column("left").to_numpy()[~away], table.column("right").to_numpy()[~away])


def _write_edges(path: Path, forest: Pairs, outside: Pairs) -> None:
    write_arrow(path, pa.table({
        "left": np.concatenate((forest.left, outside.left)),
        "right": np.concatenate((forest.right, outside.right)),
        "score": np.concatenate((forest.score, outside.score)),
        "outside_window": np.concatenate((np.zeros(len(forest), bool), np.ones(len(outside), bool))),
    }))


def _count_capped(per_doc: np.ndarray, docs: np.ndarray) -> None:
    if docs.size:
        found, counts = np.unique(docs, return_counts=True)
        per_doc[found] += counts.astype(np.int32)


_SET_SIZES, _SET_VALUES, _SET_WEIGHTS = "sets.sizes", "sets.values", "sets.weights"
#: The texts a scorer reads, in a stage's directory (:class:`TextWriter`).
TEXTS_FILE = "texts.bin"
_TEXT_OFFSETS = "texts.offsets.bin"


class TextWriter:
    """Raw texts cut to ``chars`` characters, appended batch by batch: their UTF-8 bytes
    concatenated in ``path`` and each document's end offset (int64, after a leading 0)
    beside it, read back by document with :class:`TextReader`."""

    def __init__(self, path: Path, chars: int) -> None:
        self.path, self.chars = path, chars
        self.data = open(path, "wb")
        self.offsets = open(path.with_name(_TEXT_OFFSETS), "wb")
        self.offsets.write(np.zeros(1, np.int64).tobytes())
        self.end = 0

    def write(self, texts) -> None:
        # Encoded with surrogatepass: a lone surrogate (valid in a Python str, not in
        # UTF-8) must reach the scorer unchanged rather than fail the run.
        cut = self.chars
        raw = [t[:cut].encode("utf-8", "surrogatepass") for t in texts]
        ends = self.end + np.cumsum(np.fromiter(map(len, raw), np.int64, len(raw)))
        self.data.write(b"".join(raw))
        self.offsets.write(ends.tobytes())
        self.end = int(ends[-1]) if ends.size else self.end

    def close(self) -> None:
        self.data.close()
        self.offsets.close()


class TextReader(TextSource):
    """The texts of a :class:`TextWriter` file, read by document with ``pread``
    (:mod:`neardup.io.rowfile`; a memory map put the file's pages in the process's
    resident memory as scattered documents were read, 1.2 GB at 1M documents): nothing
    is held in memory. Wrapped in :class:`~neardup.engine.rows.LazyTexts` for
    ``CandidateRows.texts``: only what the scorer takes is read and becomes Python strings."""

    def __init__(self, path: Path, n_docs: int) -> None:
        self.path, self.offsets_path = path, path.with_name(_TEXT_OFFSETS)
        #: Mean stored bytes per document (to size the batches whose texts are read).
        self.doc_bytes = int(path.stat().st_size // max(n_docs, 1))

    def texts(self, docs: np.ndarray) -> list[str]:
        """The texts of documents ``docs`` (any order, repeats allowed)."""
        # Each document read once, in file order (adjacent ones in one call).
        unique, inverse = np.unique(np.asarray(docs, np.int64), return_inverse=True)
        # Each document's start and end offsets: 16 adjacent bytes.
        bounds = read_spans(self.offsets_path, unique * 8, np.full(unique.size, 16, np.int64)) \
            .view(np.int64).reshape(-1, 2)
        sizes = bounds[:, 1] - bounds[:, 0]
        data = read_spans(self.path, bounds[:, 0], sizes).tobytes()
        ends = np.cumsum(sizes).tolist()
        texts = [data[a:b].decode("utf-8", "surrogatepass") for a, b in zip([0] + ends[:-1], ends)]
        return [texts[i] for i in inverse.tolist()]


class _ArrayStore(RowSource):
    """The per-document data of the sketch stage, read back by row: fixed-width arrays,
    ragged shingle sets (with their element weights), texts and dates (each only when the
    method reads it). Raw files are read with ``pread`` (:mod:`neardup.io.rowfile`: a memory map put the file's
    page-cache folios around each row in the process's RSS), so resident memory is the
    rows read, not the corpus. Set offsets (8 bytes per document) stay in memory; texts
    are read the same way (:class:`TextReader`), when the scorer takes them.
    """

    def __init__(self, wd: WorkDir, facts: dict[str, Any], dates: np.ndarray | None = None) -> None:
        layout, n_docs = facts["arrays"], facts["n_docs"]
        directory = wd.stage_dir("sketch")
        self.layout = {name: (np.dtype(d), tuple(tail)) for name, (d, tail) in layout.items()}
        self.paths = {name: directory / "arrays" / f"{name}.bin" for name in layout}
        self.n_docs = n_docs
        self.row_bytes = sum(d.itemsize * int(np.prod(t or (1,))) for d, t in self.layout.values())
        self.set_offsets = None
        if facts.get("sets"):
            sizes = np.fromfile(directory / "arrays" / f"{_SET_SIZES}.bin", np.int64)
            self.set_offsets = np.zeros(n_docs + 1, np.int64)
            np.cumsum(sizes, out=self.set_offsets[1:])
            self.set_path = directory / "arrays" / f"{_SET_VALUES}.bin"
            self.row_bytes += 8 * int(self.set_offsets[-1] // max(n_docs, 1))
        self.weight_path = None
        if facts.get("set_weights"):
            self.weight_path = directory / "arrays" / f"{_SET_WEIGHTS}.bin"
            self.row_bytes += 8 * int(self.set_offsets[-1] // max(n_docs, 1))
        self.texts = TextReader(directory / TEXTS_FILE, n_docs) if facts.get("texts") else None
        if self.texts is not None:
            self.row_bytes += self.texts.doc_bytes
        self.dates = dates

    def rows(self, docs: np.ndarray) -> CandidateRows:
        """The stored data of ``docs`` (corpus positions; ascending reads best)."""
        docs = np.asarray(docs, np.int64)
        out = CandidateRows(docs)
        for name, (dtype, tail) in self.layout.items():
            width = dtype.itemsize * int(np.prod(tail or (1,)))
            out.arrays[name] = read_rows(self.paths[name], docs, width).view(dtype) \
                .reshape(docs.shape[0], *tail)
        if self.set_offsets is not None:
            sizes = self.set_offsets[docs + 1] - self.set_offsets[docs]
            offsets = np.zeros(docs.shape[0] + 1, np.int64)
            np.cumsum(sizes, out=offsets[1:])
            values = read_spans(self.set_path, self.set_offsets[docs] * 8, sizes * 8).view(np.uint64)
            out.sets = ShingleSets(values, offsets)
            if self.weight_path is not None:
                out.set_weights = read_spans(self.weight_path, self.set_offsets[docs] * 8,
                                             sizes * 8).view(np.float64)
        if self.texts is not None:
            # Nothing is copied here: the scorer takes the texts of the edges that pass
            # its cheap check, and only those become Python strings.
            out.texts = LazyTexts(self.texts, docs)
        if self.dates is not None:
            out.dates = self.dates[docs].view("datetime64[s]")
        return out

    @property
    def holds_sets(self) -> bool:  # type: ignore[override]
        return self.set_offsets is not None

    def set_sizes(self, docs: np.ndarray) -> np.ndarray:
        """Shingle-set sizes of ``docs`` (from the offsets held in memory)."""
        return self.set_offsets[docs + 1] - self.set_offsets[docs]


class NoJoins:
    """Stands in for the link stage's union-find when every accepted pair is wanted
    (``every_edge``): nothing counts as joined, so no candidate is skipped, and every
    accepted pair is reported as a join (and so written to the partition's edges)."""

    def connected(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        return np.zeros(np.shape(left)[0], dtype=bool)

    def union(self, left: np.ndarray, right: np.ndarray, accept: np.ndarray | None = None) -> np.ndarray:
        if accept is None:
            return np.ones(np.shape(left)[0], dtype=bool)
        return np.asarray(accept, dtype=bool).copy()


class PartitionLinker:
    """Joins one partition's documents, skipping candidates already joined (by this
    partition or, on one machine, by the partitions before it: ``uf`` is then the run's
    union-find; none with ``every_edge`` and no ``uf``: every accepted pair is kept) and
    verifying the rest against ``store.rows(docs)`` (the work directory's memory-mapped
    arrays, or any :class:`~neardup.engine.rows.RowSource`), read only for the edges still to check. An executor
    that links partitions in parallel gives each its own union-find over the partition's
    documents; the global merge of the forests gives the same components either way. ``window``
    (:class:`~neardup.graph.edges.TimeWindow`) is indexed like the union-find: by global position, or with ``uf=None`` aligned with the
    partition's sorted unique documents. Results accumulate in ``forest`` and ``outside``
    (lists of (left, right, score) arrays) and ``counts``."""

    def __init__(self, method: Method, docs: np.ndarray, store: RowSource, window: TimeWindow | None,
                 uf: UnionFind | NoJoins | None = None,
                 rejected: PairMemory | None = None, every_edge: bool = False) -> None:
        self.method, self.store = method, store
        # Pairs the method rejected (only for a costly check): met again under another
        # key, they are not scored again.
        self.rejected = rejected if method.capabilities.reads.costly else None
        if uf is None:
            self.local_docs = np.unique(docs)
            self.uf = NoJoins() if every_edge else UnionFind(self.local_docs.size)
        else:
            self.local_docs = None
            self.uf = uf
        # Every accepted pair is kept (``NoJoins``): an accepted pair met again is done
        # too, so the memory of decided pairs holds both verdicts.
        self.remember_accepted = self.keeps_every_pair = isinstance(self.uf, NoJoins)
        self.window = window
        self.forest: list[tuple[np.ndarray, ...]] = []
        self.outside: list[tuple[np.ndarray, ...]] = []
        self.counts = {"candidate_edges": 0, "verified_edges": 0}
        if self.rejected is not None:
            self.counts["rescoring_skipped"] = 0

    #: Edges checked per step: after each step's joins, later edges between documents
    #: already joined are skipped, so a bucket of m copies costs about m checks, not the
    #: number of edges (2m per band) that reach it.
    step = 8192

    def consider(self, left, right, score=None) -> None:
        """Candidate edges (global positions). ``score`` given: already verified;
        otherwise verified against the store's rows of their documents."""
        self.counts["candidate_edges"] += int(left.size)
        for start in range(0, left.size, self.step):
            part = slice(start, start + self.step)
            self._consider(left[part], right[part], None if score is None else score[part])

    def _consider(self, left, right, score) -> None:
        if self.local_docs is None:
            ll, rl = left, right
        else:
            ll = np.searchsorted(self.local_docs, left)
            rl = np.searchsorted(self.local_docs, right)
        todo = ~self.uf.connected(ll, rl)
        left, right, ll, rl = left[todo], right[todo], ll[todo], rl[todo]
        if left.size == 0:
            return
        if score is None and self.rejected is not None:
            # Each pair once per step (the first time it comes), and not if rejected before.
            codes = pair_codes(np.minimum(left, right), np.maximum(left, right))
            _, first = np.unique(codes, return_index=True)
            fresh = np.zeros(codes.size, bool)
            fresh[first] = True
            fresh &= ~self.rejected.contains(codes)
            self.counts["rescoring_skipped"] += int(codes.size - np.count_nonzero(fresh))
            left, right, ll, rl, codes = left[fresh], right[fresh], ll[fresh], rl[fresh], codes[fresh]
            if left.size == 0:
                return
        if score is None:
            # Rows are read only for edges still to check: most candidates join documents
            # already joined, and reading every candidate's row made the reads (random
            # pages of a file larger than the page cache share) grow faster than the corpus.
            need = np.unique(np.concatenate((left, right)))
            rows = self.store.rows(need)
            score, accept = self.method.score_candidate_rows(
                rows, np.searchsorted(need, left), np.searchsorted(need, right))
            score, accept = np.asarray(score, np.float32), np.asarray(accept, bool)
            self.counts["verified_edges"] += int(left.size)
            if self.rejected is not None:
                self.rejected.add(codes if self.remember_accepted else codes[~accept])
        else:
            score, accept = score[todo], np.ones(left.size, dtype=bool)
        if self.window is not None:
            far = self.window.apart(ll, rl)
            if far.any():
                gone = accept & far
                self.outside.append((left[gone], right[gone], score[gone]))
                accept = accept & ~far
        merged = self.uf.union(ll, rl, accept)
        self.forest.append((left[merged], right[merged], score[merged]))

    def forest_pairs(self) -> Pairs:
        """The joins so far (in the order they were made)."""
        return _concat(self.forest)

    def outside_pairs(self) -> Pairs:
        """The accepted pairs the time window kept apart so far."""
        return _concat(self.outside)



def _link_overlap_groups(method: Method, linker: PartitionLinker, store, docs: np.ndarray,
                         starts: np.ndarray, sizes: np.ndarray, block_edges: int,
                         known_docs: np.ndarray, known: np.ndarray,
                         exchange: _PairSpill | None = None,
                         prefix_cut: np.ndarray | None = None) -> None:
    """A partition's all-pairs key groups, for keys that documents share many of
    (shingles): each pair once (:func:`~neardup.engine.buckets.overlap_pairs`, in blocks
    of documents, ordered by their first document, so a group of copies is joined by its
    first document's edges), dropped when even sharing every key not seen could not
    reach the method's threshold (:meth:`Method.overlap_bound`: ``shared`` keys of the
    pair in these groups, ``known`` being a document's keys in groups of at most
    ``all_pairs_upto`` documents, singletons included).

    With ``prefix_cut`` (the exchange's prefix filter: each document's last df class in
    its prefix, :mod:`neardup.engine.overlap`), a group keeps only the members whose
    prefix holds its key, so a pair is counted over the keys in both its prefixes; the
    partition's bound does not apply to those counts and is not used."""
    # Inside an all-pairs group, documents ascending (the payload order is for chains).
    rows = concat_ranges(starts, sizes)
    group = np.repeat(np.arange(starts.size), sizes)
    order = np.lexsort((docs[rows], group))
    member = docs[rows][order]
    del rows
    if prefix_cut is not None:
        group = group[order]
        inside = prefix_cut[member] >= df_classes(sizes)[group]
        sizes = np.bincount(group[inside], minlength=sizes.size)
        member = member[inside]
        pairs = sizes > 1
        member = member[np.repeat(pairs, sizes)]
        sizes = sizes[pairs]
        if member.size > 1:
            # A group whose members are all joined already (copies of one cluster, once
            # joined) has no pair to exchange: skip it before its pairs are listed.
            joined = linker.uf.connected(member[:-1], member[1:])
            within = np.ones(member.size - 1, bool)
            within[np.cumsum(sizes)[:-1] - 1] = False  # the last member of each group
            open_ = np.bincount(np.repeat(np.arange(sizes.size), sizes)[:-1][within & ~joined],
                                minlength=sizes.size) > 0
            member = member[np.repeat(open_, sizes)]
            sizes = sizes[open_]
    del group, order
    bounded = store.holds_sets and prefix_cut is None
    aligned = None
    for left, right, shared, group_docs, _, left_local, right_local in overlap_pairs(
            member, np.cumsum(sizes) - sizes, sizes, block_edges):
        if prefix_cut is not None:
            if exchange is not None and left.size:
                if aligned is None:
                    aligned = known[np.searchsorted(known_docs, group_docs)]
                _exchange_block(method, linker, exchange, left, right, shared,
                                aligned[left_local], aligned[right_local])
            continue
        if bounded and left.size:
            if aligned is None:  # the groups' documents' facts, looked up once
                aligned = (known[np.searchsorted(known_docs, group_docs)],
                           store.set_sizes(group_docs))
            known_left, known_right = aligned[0][left_local], aligned[0][right_local]
            # The bound with this partition's counts holds for the whole pair (a common
            # key not counted here is one of both sides' keys not seen here), so a pair
            # it drops is below the threshold: safe to leave out of the exchange too.
            keep = method.overlap_bound(shared, known_left, known_right,
                                        aligned[1][left_local], aligned[1][right_local])
            linker.counts["pruned_edges"] += int(keep.size - np.count_nonzero(keep))
            left, right, shared = left[keep], right[keep], shared[keep]
            known_left, known_right = known_left[keep], known_right[keep]
            if exchange is not None:
                _exchange_block(method, linker, exchange, left, right, shared, known_left,
                                known_right)
                continue
        linker.consider(left, right)


#: Shared keys (in one partition) a pair needs before its sets are merged at once.
LIKELY_MIN_SHARED = 3


def _exchange_block(method: Method, linker: PartitionLinker, exchange: _PairSpill,
                    left: np.ndarray, right: np.ndarray, shared: np.ndarray,
                    known_left: np.ndarray, known_right: np.ndarray) -> None:
    """A block of a partition's counted pairs, on the map side of the exchange: pairs whose
    documents are already joined are left out; likely matches
    (:func:`~neardup.engine.overlap.likely_pairs`) are verified now, so groups of copies
    are joined in the first partitions and their pairs left out of the later ones; the
    rest are spilled with their shared counts. A verified pair is left out whatever the
    verdict (joined, rejected by its exact similarity, or kept apart by the window and
    recorded as such). When the linker keeps every accepted pair, every record is
    spilled: the reduce then sums each pair's full count and scores it once, exactly."""
    if linker.keeps_every_pair:
        # Verifying early saves nothing when nothing is skipped for being joined.
        exchange.add(left, right, shared)
        return
    open_ = ~linker.uf.connected(left, right)
    left, right, shared = left[open_], right[open_], shared[open_]
    known_left, known_right = known_left[open_], known_right[open_]
    likely = likely_pairs(shared, known_left, known_right, method.overlap_scores,
                          LIKELY_MIN_SHARED)
    if likely.any():
        linker.consider(left[likely], right[likely])
        rest = ~likely
        left, right, shared = left[rest], right[rest], shared[rest]
        open_ = ~linker.uf.connected(left, right)
        left, right, shared = left[open_], right[open_], shared[open_]
    exchange.add(left, right, shared)



def link_partition(method: Method, tables: list[pa.Table], store: RowSource,
                    window: TimeWindow | None, chunk_edges: int, uf: UnionFind | None = None, step: int | None = None,
                    exchange: _PairSpill | None = None, prefix_cut: np.ndarray | None = None,
                    checked: PairMemory | None = None, rejected: PairMemory | None = None,
                    ) -> tuple[Pairs, Pairs, dict[str, int], np.ndarray]:
    """One key partition's forest, outside-window pairs, counts (``capped_keys``: key
    groups over the bucket rule's ``star_upto``, linked by their chain alone, or over
    its ``skip_over``, not linked) and the documents of those groups' rows (one
    entry per capped key a document holds). With ``exchange`` (and ``uf``, the run's
    union-find), the all-pairs groups' counted pairs go to the pair-count exchange
    instead of being verified here (:func:`_exchange_block`), after the larger groups
    are linked; ``prefix_cut`` (the prefix stage's) restricts them to prefix members, and
    ``checked`` (the stage's) holds the neighbour pairs verified in earlier partitions;
    ``rejected`` (the stage's, or one for this partition) the pairs a costly check
    rejected (``Verification.costly``)."""
    capped_docs = np.zeros(0, np.int64)
    if not tables:
        return Pairs.empty(), Pairs.empty(), {"candidate_edges": 0, "verified_edges": 0,
                                              "capped_keys": 0}, capped_docs
    table = pa.concat_tables(tables)
    keys = table.column("key").to_numpy()
    docs = table.column("doc").to_numpy()
    payload = table.column("payload").to_numpy() if "payload" in table.column_names else None
    del table
    if rejected is None:  # used only for a costly check (PartitionLinker decides)
        rejected = PairMemory(2 * chunk_edges)  # the bytes of one chunk's edges
    linker = PartitionLinker(method, docs, store, window, uf, rejected)
    linker.counts["capped_keys"] = 0
    if step is not None:
        linker.step = step
    caps = method.capabilities
    if caps.keyed.links_buckets:
        linked = method.link_bucket(keys, docs, payload)
        linker.consider(linked.left, linked.right, linked.score)
    else:
        # Inside a key group, the chain order every path follows (key_groups: by the
        # payload when there is one, documents with close payloads being likely matches).
        order, starts, sizes = key_groups(keys, docs, payload)
        keys, docs = keys[order], docs[order]
        # The exchange keeps the payload for its adjacent matches (below).
        payload = payload[order] if payload is not None and exchange is not None else None
        del order
        star_upto = caps.keyed.star_upto
        upto = caps.keyed.all_pairs_upto
        if star_upto is not None:
            capped = (sizes > star_upto) & (sizes > upto)
            linker.counts["capped_keys"] = int(np.count_nonzero(capped))
            capped_docs = docs[np.repeat(capped, sizes)]
        if caps.overlap is not None:
            # A document's keys in groups compared all-to-all, singletons included (a key
            # no other document has is seen not to be shared).
            seen = np.repeat(sizes <= upto, sizes)
            if prefix_cut is not None:  # keys in the document's prefix only
                seen &= prefix_cut[docs] >= np.repeat(df_classes(sizes), sizes)
            known_docs, known = np.unique(docs[seen], return_counts=True)
            del seen
        skip = caps.keyed.skip_over
        if skip is not None:
            over = sizes > skip
            linker.counts["capped_keys"] = int(np.count_nonzero(over))
            capped_docs = docs[np.repeat(over, sizes)]
            if over.any():  # not linked; their rows count as unseen keys for the bound
                starts, sizes = starts[~over], sizes[~over]
        starts, sizes = starts[sizes > 1], sizes[sizes > 1]
        if caps.overlap is not None:
            small = sizes <= upto
            linker.counts["pruned_edges"] = 0
            if exchange is not None:
                # Larger groups first: the copies they join are then left out of the
                # exchange.
                _link_chained_groups(linker, docs, starts[~small], sizes[~small], upto,
                                     star_upto, chunk_edges)
                if payload is not None and not linker.keeps_every_pair:
                    _link_adjacent_matches(linker, docs, payload, starts[small], sizes[small],
                                           checked)
                del payload
            _link_overlap_groups(method, linker, store, docs, starts[small], sizes[small],
                                 chunk_edges, known_docs, known, exchange, prefix_cut)
            starts, sizes = starts[~small], sizes[~small]
        if exchange is None:
            _link_chained_groups(linker, docs, starts, sizes, upto, star_upto, chunk_edges)
    return linker.forest_pairs(), linker.outside_pairs().canonical(), linker.counts, capped_docs


def _link_adjacent_matches(linker: PartitionLinker, docs: np.ndarray, payload: np.ndarray,
                           starts: np.ndarray, sizes: np.ndarray,
                           checked: PairMemory | None = None) -> None:
    """Verify, before the exchange counts them, the members of all-pairs groups that sit
    next to each other in the payload order with the same high 32 bits (ngram: the same
    MinHash value, equal with probability their Jaccard): likely copies, joined here so
    that their pairs are left out of the exchange. With many partitions a partition holds
    about one key of each pair, too few to tell copies from its counts
    (:func:`~neardup.engine.overlap.likely_pairs`), and a cluster of c copies would be
    c²/2 records in each. For speed only: every verdict is the exact check's."""
    if starts.size == 0:
        return
    rows = concat_ranges(starts, sizes)
    # A row and the next one in the same group: not the last row of its group.
    last = np.cumsum(sizes) - 1
    follows = np.ones(rows.size, bool)
    follows[last] = False
    follows = np.flatnonzero(follows[:-1])
    here, after = rows[follows], rows[follows + 1]
    high = np.uint64(0xFFFFFFFF00000000)
    same = (payload[here] & high) == (payload[after] & high)
    left, right = docs[here[same]], docs[after[same]]
    # Each pair once (it may sit next to its partner in several groups), in pair order,
    # and not again once verified in an earlier partition.
    codes = np.unique(pair_codes(np.minimum(left, right), np.maximum(left, right)))
    if checked is not None:
        codes = codes[~checked.contains(codes)]
        left, right = code_pairs(codes)
        codes = codes[~linker.uf.connected(left, right)]
        checked.add(codes)
    left, right = code_pairs(codes)
    linker.consider(left, right)


def _link_chained_groups(linker: PartitionLinker, docs: np.ndarray, starts: np.ndarray,
                         sizes: np.ndarray, upto: int, star_upto: int | None,
                         chunk_edges: int) -> None:
    """Key groups linked by :func:`~neardup.graph.buckets.bucket_edges` (all pairs, or
    star plus chain, or chain alone), in chunks of whole groups whose edges fit
    ``chunk_edges`` (at least one group)."""
    ends = np.cumsum(bucket_edge_counts(sizes, upto, star_upto))
    first = 0
    while first < starts.size:
        done = int(ends[first - 1]) if first else 0
        last = int(np.searchsorted(ends, done + chunk_edges, "right"))
        last = max(last, first + 1)
        left, right = bucket_edges(docs, starts[first:last], sizes[first:last], upto,
                                   star_upto)
        linker.consider(left, right)
        first = last


def link_key_rows(method: Method, keys: np.ndarray, docs: np.ndarray,
                  payload: np.ndarray | None, store: RowSource, uf: UnionFind, *,
                  chunk_rows: int = 1 << 20) -> Pairs:
    """Link one key partition's rows as the corpus stage does, for a caller that keeps
    its own spill (the index's bulk build): every row of a key must be in this call.

    Parameters
    ----------
    method : Method
    keys, docs, payload : ndarray
        Candidate-key rows (``method.candidate_keys`` output, docs as global positions).
    store : RowSource
        Reads the candidate rows of sorted, unique global positions.
    uf : UnionFind
        The run's union-find over global positions; updated in place.
    chunk_rows : int
        Candidate edges built at once (whole buckets; arrays are read per step of edges
        still to verify).

    Returns
    -------
    Pairs
        The verified edges that joined two sets (a spanning forest of this partition).
    """
    columns = {"key": keys, "doc": docs}
    if payload is not None:
        columns["payload"] = payload
    forest, _, _, _ = link_partition(method, [pa.table(columns)], store, None,
                                     max(int(chunk_rows), 1024), uf)
    return forest


def merge_forests(wd: WorkDir, key: str, n_docs: int, edge_files: list[Path], timer,
                  every_edge: bool = False, docs_stage: str | None = None) -> dict[str, Any]:
    """The "components" stage of the out-of-core stages: the global merge of the forests
    in ``edge_files`` (Arrow: left, right, score, outside_window; one per partition or
    shard), a union-find over their edges (nothing left to verify) whose joins form the
    run's forest. Identical texts (the ``identity`` of ``docs_stage``'s documents) are
    linked first, whatever the method found (:func:`~neardup.engine.facts.identity_pairs`).
    Writes forest.arrow, outside.arrow and roots.npy; with ``every_edge``
    (the files hold every accepted pair) also edges.arrow, those pairs once each (20
    bytes a pair in memory while it is written)."""
    key = stage_key("components", key)
    facts = wd.done("components", key)
    if facts is not None:
        return facts
    directory = wd.start("components")
    uf = UnionFind(n_docs)
    forest, outside, every = [], [], []
    with timer.stage("cluster"):
        tables = (read_arrow(path) for path in edge_files)
        if docs_stage is not None:
            identity = pq.read_table(wd.stage_dir(docs_stage) / "docs.parquet",
                                     columns=["identity"]).column("identity").to_numpy()
            same = identity_pairs(identity)
            tables = itertools.chain([pa.table({
                "left": same.left, "right": same.right, "score": same.score,
                "outside_window": np.zeros(len(same), bool)})], tables)
        for table in tables:
            left = table.column("left").to_numpy()
            right = table.column("right").to_numpy()
            score = table.column("score").to_numpy()
            away = table.column("outside_window").to_numpy(zero_copy_only=False)
            outside.append((left[away], right[away], score[away]))
            left, right, score = left[~away], right[~away], score[~away]
            if every_edge:
                every.append((left, right, score))
            merged = uf.union(left, right)
            forest.append((left[merged], right[merged], score[merged]))
        forest_pairs = _concat(forest).canonical()
        outside_pairs = _concat(outside).canonical()
        write_arrow(directory / "forest.arrow", _pairs_table(forest_pairs))
        write_arrow(directory / "outside.arrow", _pairs_table(outside_pairs))
        if every_edge:
            edges = _concat(every).canonical()
            write_arrow(directory / "edges.arrow", _pairs_table(edges))
        np.save(directory / "roots.npy", uf.roots())
    facts = {"forest_edges": len(forest_pairs), "outside_window": len(outside_pairs)}
    if every_edge:
        facts["accepted_edges"] = len(edges)
    wd.finish("components", key, facts)
    return facts


def require_dates(time_window_hours: float | None, has_dates: bool) -> None:
    """ValueError when a time window is asked for and the input has no dates."""
    if time_window_hours is not None and not has_dates:
        raise ValueError(time_window_without_dates(time_window_hours))


def time_window_without_dates(hours: float) -> str:
    """The message for a time window over an input without dates, in the front end's
    words (the CLI's flags inside :func:`neardup.errors.spelled_as`)."""
    from neardup.errors import setting

    flag = setting("time_window_hours", "")
    if flag:
        return (f"{flag} {hours:g} needs document dates, and the input has none. Give the "
                f"documents' dates with {setting('date_field', '--date-field')} (Reuters SGML "
                f"inputs have them), or drop {flag}.")
    return (f"run: a time window (time_window_hours={hours!r}) needs document dates, and "
            "the input has none. Give the documents' dates (date_field= in neardup.dedup) "
            "or drop the window (time_window_hours=None).")


def read_stage_output(wd: WorkDir, docs_stage: str, has_dates: bool,
                      stats: dict[str, Any]) -> CorpusStageOutput:
    """The stage's output from its work directory: documents' facts from
    ``docs_stage``/docs.parquet, components from the "components" stage."""
    columns = ["id", "length", "n_features"] + (["date"] if has_dates else [])
    docs = pq.read_table(wd.stage_dir(docs_stage) / "docs.parquet", columns=columns)
    comp = wd.stage_dir("components")
    return CorpusStageOutput(
        ids=string_array(docs.column("id")),
        lengths=docs.column("length").to_numpy(),
        n_features=docs.column("n_features").to_numpy(),
        dates=docs.column("date").to_numpy().astype("datetime64[s]") if has_dates else None,
        roots=np.load(comp / "roots.npy"),
        # Every accepted pair when the run kept them (community detection), else the forest.
        pairs=_pairs_from(comp / "edges.arrow" if (comp / "edges.arrow").exists()
                          else comp / "forest.arrow"),
        outside_window=_pairs_from(comp / "outside.arrow"),
        stats=stats,
    )


def _concat(parts: list[tuple[np.ndarray, ...]]) -> Pairs:
    if not parts:
        return Pairs.empty()
    return Pairs(*(np.concatenate([p[i] for p in parts]) for i in range(3)))


def _pairs_table(pairs: Pairs) -> pa.Table:
    return pa.table({"left": pairs.left, "right": pairs.right, "score": pairs.score})


def _pairs_from(path: Path) -> Pairs:
    table = read_arrow(path)
    return Pairs(table.column("left").to_numpy(), table.column("right").to_numpy(),
                 table.column("score").to_numpy())


@dataclass
class CorpusStageOutput:
    """What the corpus stage hands the pipeline: no raw text, no per-pair state beyond
    the forest.

    Attributes
    ----------
    ids : ndarray of StringDType, shape (n_docs,)
        Compact strings (16 bytes for an id of up to 15 bytes), not Python objects.
    lengths, n_features : ndarray of int64, shape (n_docs,)
    dates : ndarray of datetime64[s], shape (n_docs,), or None
    roots : ndarray of int64, shape (n_docs,)
        Smallest member position of each document's component.
    pairs : Pairs
        The spanning forest of verified edges that joined the components; with
        ``every_edge`` every accepted pair (once each).
    outside_window : Pairs
        Verified edges the time window kept apart.
    stats : dict
        Keys, edges, verified edges per run, for the summary.
    """

    ids: np.ndarray
    lengths: np.ndarray
    n_features: np.ndarray
    dates: np.ndarray | None
    roots: np.ndarray
    pairs: Pairs
    outside_window: Pairs
    stats: dict[str, Any]


def run_corpus_stage(
    batches: Iterable[DocumentBatch],
    method: Method,
    *,
    config: CorpusStageConfig = CorpusStageConfig(),
    time_window_hours: float | None = None,
    input_identity: Any = None,
    timer=None,
    progress: bool | None = None,
    total: int | None = None,
    every_edge: bool = False,
) -> CorpusStageOutput:
    """Run the three stages over ``batches`` (see the module docstring).

    ``input_identity`` (JSON-able; e.g. the input files' paths, sizes and modification
    times) is recorded in the work directory so that ``resume`` refuses a directory made
    from another input. ``every_edge``: keep every accepted pair, not only a spanning
    forest (``CorpusStageOutput.pairs``), for the clusterings other than connected
    components (:func:`supports_corpus_stage`).
    """
    if method.capabilities.keyed is None:
        raise ValueError(
            f"run_corpus_stage: method {method.name!r} with these parameters has no keyed "
            "corpus stage; run it through neardup.pipeline.run"
        )
    timer = timer or StageTimer()
    config = config.resolve(total, method.capabilities.keyed.keys_per_doc)
    _remove_stale_scratch()
    with tempfile.TemporaryDirectory(prefix=f"{_SCRATCH}{os.getpid()}-") as scratch:
        path = config.work_dir if config.work_dir is not None else scratch
        wd = WorkDir(path, {"method": method.name, "input": input_identity}, resume=config.resume)
        stats_facts = {}
        if method.capabilities.statistics is not None:
            # Weights from whole-corpus statistics: one pass counts them, then the
            # fitted copy keys the batches (read back from the stage's copy).
            stats_key = stage_key("statistics", method.name, method.get_params())
            method, batches, stats_facts = statistics_stage(
                wd, stats_key, batches, method, config.budget, timer, progress, total)
        statistics = method.statistics_digest()
        sketch_facts = _sketch_stage(wd, batches, method, config, timer, progress, total,
                                     statistics)
        require_dates(time_window_hours, sketch_facts["has_dates"])
        exchange = exchanges_pair_counts(method)
        link_key = stage_key("link", method.name, method.get_params(), config.partitions,
                             time_window_hours, statistics,
                             "exchange-prefix" if exchange else "verify",
                             *(("every-edge",) if every_edge else ()))
        last_key = link_key
        prefix_facts = {}
        if exchange:
            prefix_facts = _prefix_stage(wd, stage_key("prefix", link_key), method, sketch_facts,
                                         config, timer, progress)
        if method.capabilities.keyed.query_retrieval:
            # Mutual retrieval ranks each query's whole result list: an inverted index
            # on disk and blocks of queries, not key groups (neardup.engine.retrieval).
            dates = identity = None
            if sketch_facts["has_dates"]:
                docs = pq.read_table(wd.stage_dir("sketch") / "docs.parquet",
                                     columns=["date", "identity"])
                dates = docs.column("date").to_numpy().astype("datetime64[s]")
                identity = docs.column("identity").to_numpy()
            arrays = wd.stage_dir("sketch") / "arrays"
            edge_file, link_facts = retrieval_stages(
                wd, link_key, method, sketch_facts["n_docs"],
                (arrays / f"{_SET_SIZES}.bin", arrays / f"{_SET_VALUES}.bin"), dates,
                time_window_hours, config.budget, timer, progress, identity=identity)
            edge_files = [edge_file]
        else:
            link_facts = _link_stage(wd, link_key, method, sketch_facts, config,
                                     time_window_hours, timer, progress, every_edge)
            edge_files = [wd.stage_dir("link") / f"p-{p:04d}.arrow"
                          for p in range(config.partitions)]
            if exchange:
                # The range sizes depend on the budget: a resumed run with another one
                # redoes the stage.
                last_key = stage_key("exchange", link_key, config.budget)
                exchange_facts = _exchange_stage(wd, last_key, method, sketch_facts, config,
                                                 time_window_hours, timer, progress, every_edge)
                edge_files += sorted(wd.stage_dir("exchange").glob("r-*.arrow"))
                link_facts = dict(link_facts, **prefix_facts)
                for name, value in exchange_facts.items():
                    link_facts[name] = link_facts.get(name, 0) + value
        comp_facts = merge_forests(wd, last_key, sketch_facts["n_docs"], edge_files, timer,
                                   every_edge, docs_stage="sketch")
        with timer.stage("cluster"):
            output = read_stage_output(
                wd, "sketch", sketch_facts["has_dates"],
                {"candidate_keys": sketch_facts["n_keys"], **link_facts, **comp_facts,
                 **{f"statistics_{name}_kept": table["kept"]
                    for name, table in stats_facts.get("tables", {}).items()}})
    return output


def string_array(column: pa.ChunkedArray) -> np.ndarray:
    """A string column as a NumPy ``StringDType`` array, converted a chunk at a time so that
    only one chunk's Python strings exist at once (an object array of ten million ids
    costs ~80 bytes each, this ~16)."""
    parts = [chunk.to_numpy(zero_copy_only=False).astype(np.dtypes.StringDType())
             for chunk in column.chunks]
    return np.concatenate(parts) if parts else np.empty(0, np.dtypes.StringDType())


_SCRATCH = "neardup-work-"


def _remove_stale_scratch() -> None:
    """Delete default work directories left by killed runs (SIGKILL skips clean-up): their
    names carry the process id, and a directory whose process is gone is stale."""
    import shutil

    from neardup.io.outputs import process_alive

    root = Path(tempfile.gettempdir())
    for path in root.glob(f"{_SCRATCH}*-*"):
        pid = path.name[len(_SCRATCH):].split("-", 1)[0]
        if pid.isdigit() and not process_alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)
