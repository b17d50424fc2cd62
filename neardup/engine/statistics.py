"""The statistics stage of the corpus stage, for methods that weight features by
whole-corpus statistics (the ``statistics`` spec of :attr:`~neardup.methods.Method.capabilities`).

One streaming pass over the input, before the sketch stage:

1. each batch is sketched and its share of the statistics taken
   (:meth:`~neardup.methods.Method.statistics_partial`: each document's distinct
   features, and additive totals); the batch's features are reduced to (hash, count) and
   buffered, and the buffer is written as one sorted *run* per table whenever it passes a
   quarter of the memory limit;
2. the batches themselves are copied to an Arrow IPC file (``input.arrow``: ids, texts as
   UTF-8 bytes, dates, sources, rows), which the sketch stage reads instead of the input,
   so a generator of batches is read once and a resumed run needs no second pass over it;
3. after the pass, each table is counted by ranges of the hash space small enough that a
   range's rows from every run fit the budget (hashes are uniform, so equal ranges hold
   about equal rows): the runs are memory-mapped and each range's slice found by binary
   search. Only features with a document frequency of at least the method's
   :meth:`~neardup.methods.Method.statistics_min_df` are kept (a feature in one document
   reads as df 1 without being stored; wminhash keeps only the phrases common enough to
   be boilerplate), and the runs are deleted.

Resident memory is the buffer, one range of counts and the kept tables (the weights'
statistics, which the fitted method holds anyway), never the whole vocabulary. The stage
is complete when its marker is written; a killed stage is redone from the start and gives
the same tables.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from neardup.engine.workdir import MappedArray, WorkDir
from neardup.io.batch import DocumentBatch
from neardup.methods.base import FeatureStatistics, Method
from neardup.progress import timed_batches

__all__ = ["batch_statistics", "hash_range_bounds", "split_by_range", "statistics_stage",
           "sum_counts", "table_min_df"]

_SPOOL = "input.arrow"
_SPOOL_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("text", pa.large_binary()),
        ("date", pa.timestamp("s")),
        ("dated", pa.bool_()),
        ("source", pa.string()),
        ("row", pa.int64()),
    ]
)
# Bytes a counted row costs while a range is merged: hash and count, and the sort's copies.
_ROW_BYTES = 48


def statistics_stage(wd: WorkDir, key: str, batches: Iterable[DocumentBatch], method: Method,
                     budget: int, timer, progress, total) -> tuple[Method, Iterable[DocumentBatch],
                                                                    dict[str, Any]]:
    """Count ``method``'s corpus statistics over ``batches`` (see the module docstring).

    Returns the fitted method (:meth:`~neardup.methods.Method.with_statistics`), the
    batches again (read from the stage's copy) and the stage's facts."""
    directory = wd.stage_dir("statistics")
    facts = wd.done("statistics", key)
    if facts is None:
        directory = wd.start("statistics")
        facts = _count(directory, batches, method, budget, timer, progress, total)
        wd.finish("statistics", key, facts)
    stats = FeatureStatistics(
        totals=dict(facts["totals"]),
        tables={name: (np.load(directory / f"{name}.hashes.npy"),
                       np.load(directory / f"{name}.df.npy"))
                for name in facts["tables"]},
    )
    return method.with_statistics(stats), _SpooledBatches(directory / _SPOOL), facts


def _count(directory: Path, batches: Iterable[DocumentBatch], method: Method, budget: int,
           timer, progress, total) -> dict[str, Any]:
    tables = method.capabilities.statistics.tables
    runs_dir = directory / "runs"
    runs_dir.mkdir()
    flush_bytes = max(budget // 4, 1 << 16)
    buffers: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {name: [] for name in tables}
    runs: dict[str, list[Path]] = {name: [] for name in tables}
    buffered, n_docs = 0, 0
    totals: dict[str, int] = {}
    writer = ipc.new_file(str(directory / _SPOOL), _SPOOL_SCHEMA)
    try:
        for batch in timed_batches(batches, timer, total=total, progress=progress):
            with timer.stage("statistics"):
                counted, batch_totals = batch_statistics(method, batch.texts)
                for name in tables:
                    buffers[name].append(counted[name])
                    buffered += counted[name][0].nbytes * 2
                for name, value in batch_totals.items():
                    totals[name] = totals.get(name, 0) + int(value)
                if buffered >= flush_bytes:
                    _flush(buffers, runs, runs_dir)
                    buffered = 0
            writer.write_batch(_spool_batch(batch))
            n_docs += len(batch)
        _flush(buffers, runs, runs_dir)
    finally:
        writer.close()
    kept = {}
    with timer.stage("statistics"):
        for name in tables:
            min_df = table_min_df(method, name, totals)
            hashes, df = _merge_runs(runs[name], min_df, budget)
            np.save(directory / f"{name}.hashes.npy", hashes)
            np.save(directory / f"{name}.df.npy", df)
            kept[name] = {"kept": int(hashes.size), "min_df": min_df,
                          "counted_rows": sum(MappedArray(p).count for p in runs[name])}
            for path in runs[name]:
                path.unlink()
                path.with_suffix(".df.npy").unlink()
    runs_dir.rmdir()
    return {"n_docs": n_docs, "totals": totals, "tables": kept}


def batch_statistics(method: Method, texts) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]],
                                                     dict[str, int]]:
    """One batch's share of ``method``'s corpus statistics: per table, its distinct feature
    hashes (sorted uint64) and in how many of the batch's documents each occurs (int64),
    and the additive totals. The step every executor runs per batch."""
    partial = method.statistics_partial(method.sketch(texts))
    counted = {}
    for name in method.capabilities.statistics.tables:
        hashes, counts = np.unique(np.asarray(partial.features[name], np.uint64), return_counts=True)
        counted[name] = (hashes, counts.astype(np.int64))
    return counted, {name: int(value) for name, value in partial.totals.items()}


def table_min_df(method: Method, table: str, totals: dict[str, int]) -> int:
    """The smallest document frequency of ``table`` kept: the method's, and at least 2 (a
    feature in one document reads as the absent default, df 1)."""
    return max(int(method.statistics_min_df(table, totals)), 2)


def sum_counts(hashes: list[np.ndarray], counts: list[np.ndarray], min_df: int = 1
               ) -> tuple[np.ndarray, np.ndarray]:
    """The (hash, count) parts summed per hash: sorted distinct hashes and their summed
    counts, only those reaching ``min_df``."""
    if not hashes:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    unique, inverse = np.unique(np.concatenate(hashes), return_inverse=True)
    summed = np.bincount(inverse, weights=np.concatenate(counts), minlength=unique.size)
    summed = summed.astype(np.int64)
    keep = summed >= min_df
    return unique[keep], summed[keep]


def hash_range_bounds(ranges: int) -> list[int]:
    """Bounds of ``ranges`` equal ranges of the 64-bit hash space (hashes are uniform, so
    each holds about the same share of the rows): range ``k`` is ``[b[k], b[k + 1])``."""
    return [(k << 64) // ranges for k in range(ranges + 1)]


def split_by_range(hashes: np.ndarray, bounds: list[int]) -> list[slice]:
    """Slices of sorted ``hashes`` falling in each range of ``bounds``."""
    cuts = [0] + [int(np.searchsorted(hashes, np.uint64(b))) for b in bounds[1:-1]] + [hashes.size]
    return [slice(a, b) for a, b in zip(cuts, cuts[1:])]


def _flush(buffers, runs, runs_dir: Path) -> None:
    """Each table's buffer as one sorted run of (hash, count)."""
    for name, parts in buffers.items():
        if not parts:
            continue
        unique, summed = sum_counts([p[0] for p in parts], [p[1] for p in parts])
        parts.clear()
        path = runs_dir / f"{name}-{len(runs[name]):05d}.npy"
        np.save(path, unique)
        np.save(path.with_suffix(".df.npy"), summed)
        runs[name].append(path)


def _merge_runs(paths: list[Path], min_df: int, budget: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted hashes whose summed counts over the runs reach ``min_df``, and the sums,
    merged by ranges of the hash space that fit a quarter of ``budget``."""
    if not paths:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    runs = [(MappedArray(path), MappedArray(path.with_suffix(".df.npy"))) for path in paths]
    rows = sum(hashes.count for hashes, _ in runs)
    ranges = max(int(np.ceil(rows * _ROW_BYTES / max(budget // 4, 1))), 1)
    bounds = hash_range_bounds(ranges)
    kept_hashes, kept_df = [], []
    for k in range(ranges):
        lo, hi = bounds[k], bounds[k + 1]
        parts_h, parts_c = [], []
        for hashes_file, df_file in runs:
            run = hashes_file.read()
            a = int(np.searchsorted(run, np.uint64(lo)))
            b = run.shape[0] if hi >= 1 << 64 else int(np.searchsorted(run, np.uint64(hi)))
            if b > a:
                parts_h.append(np.array(run[a:b]))
                parts_c.append(np.array(df_file.read()[a:b]))
            del run
        if not parts_h:
            continue
        unique, df = sum_counts(parts_h, parts_c, min_df)
        kept_hashes.append(unique)
        kept_df.append(df)
    if not kept_hashes:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    return np.concatenate(kept_hashes), np.concatenate(kept_df)


def _spool_batch(batch: DocumentBatch) -> pa.RecordBatch:
    n = len(batch)
    dated = batch.dates is not None
    dates = (batch.dates.astype("datetime64[s]") if dated
             else np.full(n, np.datetime64("NaT"), "datetime64[s]"))
    return pa.RecordBatch.from_arrays(
        [
            pa.array(batch.ids, pa.string()),
            # Bytes with surrogatepass: a lone surrogate (valid in str, not in UTF-8)
            # comes back unchanged.
            pa.array([t.encode("utf-8", "surrogatepass") for t in batch.texts], pa.large_binary()),
            pa.array(dates, pa.timestamp("s")),
            pa.array(np.full(n, dated)),
            pa.array([batch.source] * n, pa.string()),
            pa.array(np.asarray(batch.rows, np.int64)),
        ],
        schema=_SPOOL_SCHEMA,
    )


class _SpooledBatches:
    """The batches copied by the statistics stage, read back in order. Read, not
    memory-mapped: pages of a mapping stay in the process's resident set while it lives,
    and the copy is as large as the input's texts."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __iter__(self) -> Iterator[DocumentBatch]:
        reader = ipc.open_file(pa.OSFile(str(self.path)))
        for i in range(reader.num_record_batches):
            rb = reader.get_batch(i)
            n = rb.num_rows
            dated = n > 0 and bool(rb.column(3)[0].as_py())
            dates = rb.column(2).to_numpy(zero_copy_only=False).astype("datetime64[s]") if dated else None
            yield DocumentBatch(
                ids=rb.column(0).to_pylist(),
                texts=[b.decode("utf-8", "surrogatepass") for b in rb.column(1).to_pylist()],
                dates=dates,
                source=rb.column(4)[0].as_py() if n else "",
                rows=rb.column(5).to_numpy(),
            )
