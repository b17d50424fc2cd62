"""The local out-of-core executor of the keyed corpus stage: keys -> buckets -> verified
edges -> components, in a work directory on this machine.

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
stages and produces the same outputs. What this module holds is the executor: the work
directory's stages, their markers and resume. The steps it runs are functions of their
inputs, which another executor (Ray) runs partition by partition: the sketch of a batch
(:mod:`neardup.engine.sketching`), the link of a key partition and the exchange's reduce
(:mod:`neardup.engine.link`), the merge of forests (:mod:`neardup.engine.components`);
the files they read and write are :mod:`neardup.engine.stores`'.
"""

from __future__ import annotations

import itertools
import json
import os
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

from neardup.engine.budget import default_memory_limit, parse_memory
from neardup.engine.buckets import group_runs
from neardup.engine.components import CorpusStageOutput, merge_forests, read_stage_output
from neardup.engine.facts import DOC_SCHEMA, document_facts, require_dates
from neardup.engine.link import (
    NoJoins,
    chunk_edges,
    exchanges_pair_counts,
    link_partition,
    reduce_pair_range,
    screen_partition,
    verify_step,
)
from neardup.engine.overlap import DF_CLASS_UPPER, add_key_classes, pair_ranges, prefix_cuts
from neardup.engine.pairmemory import PairMemory
from neardup.engine.retrieval import retrieval_stages
from neardup.engine.sketching import (
    SET_SIZES,
    SET_VALUES,
    sketch_batch,
    verification_names,
    verification_rows,
)
from neardup.engine.statistics import statistics_stage
from neardup.engine.stores import (
    TEXTS_FILE,
    ArrayStore,
    KeySpill,
    PairSpill,
    TextWriter,
    read_raw,
)
from neardup.engine.unionfind import UnionFind
from neardup.engine.workdir import WorkDir, atomic_write_text, read_arrow, stage_key, write_arrow
from neardup.errors import check_int
from neardup.graph.edges import NO_DATE, Pairs, TimeWindow
from neardup.graph.partners import PartnerTable
from neardup.io.batch import DocumentBatch
from neardup.methods.base import Method
from neardup.progress import StageTimer, progress_bar, timed_batches

__all__ = ["EXCHANGE_BYTES_PER_RECORD", "CorpusStageConfig", "run_corpus_stage",
           "supports_corpus_stage"]


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
    spill = KeySpill(directory / "keys", config.partitions, config.budget // 4)
    # One raw file per verification row (verification_rows); ragged sets as their sizes
    # and concatenated values, offsets rebuilt from the sizes when read.
    array_files = {name: open(directory / "arrays" / f"{name}.bin", "wb")
                   for name in verification_names(method)}
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
            for name, values in verification_rows(method, sketch, "run_corpus_stage").items():
                if name in reads.arrays:
                    array_layout.setdefault(name, [values.dtype.str, list(values.shape[1:])])
                array_files[name].write(values.tobytes())
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


def _process_usage(cpu_start: float) -> dict[str, float]:
    """CPU seconds since ``cpu_start`` (``time.process_time``) and the process's peak RSS
    so far, recorded with a stage's or partition's results: a run resumed over several
    invocations can then be accounted for as a whole (``benchmarks/scale.py``)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"cpu_seconds": round(time.process_time() - cpu_start, 2),
            "peak_rss_mb": round(peak, 1)}


def _screen_stage(wd: WorkDir, key: str, method: Method, sketch_facts: dict[str, Any],
                  config: CorpusStageConfig, timer, progress) -> tuple[np.ndarray, dict[str, Any]]:
    """The Screen step over every key partition (a method declaring
    :class:`~neardup.methods.capabilities.Screening`): each partition's low-estimate pairs
    offered to one :class:`~neardup.graph.partners.PartnerTable` (12 bytes a partner a
    document), then the selected pairs' codes, written to ``selected.npy`` (8 bytes a
    pair, at most ``keep`` a document) for the Link step. A stage of its own: a resumed
    run reads the file back."""
    facts = wd.done("screen", key)
    if facts is not None:  # without the usage recorded beside them
        facts = {k: v for k, v in facts.items() if k not in ("cpu_seconds", "peak_rss_mb")}
        return np.load(wd.stage_dir("screen") / "selected.npy"), facts
    directory = wd.start("screen")
    screening = method.capabilities.screening
    store, _ = _open_store(wd, method, sketch_facts, None, config.budget)
    keys_dir = wd.stage_dir("sketch") / "keys"
    by_part = _key_files(keys_dir)
    table = PartnerTable(sketch_facts["n_docs"], screening.keep)
    facts = {"screened_edges": 0, "low_estimate_pairs": 0}
    cpu_start = time.process_time()
    with progress_bar("screening", total=config.partitions, unit="partitions",
                      enabled=progress) as advance, timer.stage("pairs"):
        for p in range(config.partitions):
            tables = [read_arrow(keys_dir / name) for name in by_part.get(p, [])]
            low, counts = screen_partition(method, tables, store, chunk_edges(config.budget))
            del tables
            table.offer(low.left, low.right, low.score)
            facts["screened_edges"] += counts["screened_edges"]
            facts["low_estimate_pairs"] += len(low)
            advance(1)
    selected = table.selected_codes()
    facts["selected_low_pairs"] = int(selected.size)
    np.save(directory / "selected.npy", selected)
    # Recorded as the sketch stage's and each link partition's are (benchmarks/scale.py
    # adds them up for a run resumed over several invocations).
    screen_usage = _process_usage(cpu_start)
    wd.finish("screen", key, dict(facts, **screen_usage))
    return selected, facts


def _link_stage(wd: WorkDir, key: str, method: Method, sketch_facts: dict[str, Any],
                config: CorpusStageConfig, window_hours: float | None, timer,
                progress, every_edge: bool = False,
                selected: np.ndarray | None = None) -> dict[str, Any]:
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
    store, window = _open_store(wd, method, sketch_facts, window_hours, config.budget)
    keys_dir = wd.stage_dir("sketch") / "keys"
    by_part = _key_files(keys_dir)
    chunk = chunk_edges(config.budget)
    step = _verify_step(config, store)
    exchange = exchanges_pair_counts(method)
    totals = {"candidate_edges": 0, "verified_edges": 0, "capped_keys": 0, "pruned_edges": 0}
    if selected is not None:
        totals["screened_out_edges"] = 0
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
                spill = PairSpill(directory, p) if exchange else None
                forest, outside, counts, capped_docs = link_partition(
                    method, tables, store, window, chunk, uf, step=step,
                    exchange=spill, prefix_cut=prefix_cut, checked=checked, rejected=rejected,
                    selected=selected)
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
        sizes = np.fromfile(wd.stage_dir("sketch") / "arrays" / f"{SET_SIZES}.bin", np.int64)
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
                window_hours: float | None, budget: int) -> tuple[ArrayStore, TimeWindow | None]:
    """The sketch stage's per-document data, and the time window (None without one).
    Fixed-width rows are read into memory whole when they fit in an eighth of the
    ``budget``."""
    dates = None
    read_dates = method.capabilities.reads.dates
    if window_hours is not None or read_dates:
        date = pq.read_table(wd.stage_dir("sketch") / "docs.parquet", columns=["date"]).column("date")
        dates = date.cast(pa.timestamp("s")).cast(pa.int64()).fill_null(NO_DATE).to_numpy()
    # Dates reach the scorer only when the input has some (None means "no dates", as in
    # the in-memory stage).
    store = ArrayStore(wd, sketch_facts,
                        dates if read_dates and sketch_facts["has_dates"] else None,
                        resident_bytes=budget // 8)
    window = None
    if window_hours is not None:
        identity = pq.read_table(wd.stage_dir("sketch") / "docs.parquet",
                                 columns=["identity"]).column("identity").to_numpy()
        window = TimeWindow(float(window_hours), dates, identity)
    return store, window


def _verify_step(config: CorpusStageConfig, store: ArrayStore) -> int:
    return verify_step(config.budget, store.row_bytes)


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
    store, window = _open_store(wd, method, sketch_facts, window_hours, config.budget)
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
    # Mapped once for every range (a range reads only its records of each file).
    code_files = [read_raw(path, np.uint64) for path in code_paths]
    shared_files = [read_raw(path, np.uint32) for path in shared_paths]
    ranges = pair_ranges(code_files, n_docs, max_records)
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
                forest, outside, counts = reduce_pair_range(
                    method, code_files, shared_files, lo, hi, sizes, prefix, store, window,
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


def _total_of_one_batch(batches: Iterable[DocumentBatch]) -> tuple[Iterable[DocumentBatch], int | None]:
    """``batches`` unchanged, and their number of documents when they are a single batch.

    Partitions are sized from the number of documents; an input of unknown length (a JSONL
    file read as a stream) gets 256, whose hundreds of spill files cost a small input more
    than its own work. One batch read ahead tells a small input by its end."""
    iterator = iter(batches)
    ahead = list(itertools.islice(iterator, 2))
    if len(ahead) == 1:
        return ahead, len(ahead[0])
    return itertools.chain(ahead, iterator), None


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
    if total is None and config.partitions is None and config.expected_docs is None:
        batches, total = _total_of_one_batch(batches)
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
        # The facts of the stages before the Link step (Screen, or the exchange's prefix).
        before_link = {}
        selected = None
        if method.capabilities.screening is not None:
            selected, before_link = _screen_stage(wd, stage_key("screen", link_key), method,
                                                   sketch_facts, config, timer, progress)
        if exchange:
            before_link = _prefix_stage(wd, stage_key("prefix", link_key), method, sketch_facts,
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
                (arrays / f"{SET_SIZES}.bin", arrays / f"{SET_VALUES}.bin"), dates,
                time_window_hours, config.budget, timer, progress, identity=identity)
            edge_files = [edge_file]
        else:
            link_facts = _link_stage(wd, link_key, method, sketch_facts, config,
                                     time_window_hours, timer, progress, every_edge, selected)
            link_facts = dict(link_facts, **before_link)
            edge_files = [wd.stage_dir("link") / f"p-{p:04d}.arrow"
                          for p in range(config.partitions)]
            if exchange:
                # The range sizes depend on the budget: a resumed run with another one
                # redoes the stage.
                last_key = stage_key("exchange", link_key, config.budget)
                exchange_facts = _exchange_stage(wd, last_key, method, sketch_facts, config,
                                                 time_window_hours, timer, progress, every_edge)
                edge_files += sorted(wd.stage_dir("exchange").glob("r-*.arrow"))
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
