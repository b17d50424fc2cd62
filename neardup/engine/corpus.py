"""The engine-independent corpus stage: keys -> buckets -> verified edges -> components.

No step holds all sketches or all pairs in memory:

1. **sketch** (streaming, per batch): ``method.sketch`` and ``method.candidate_keys``;
   the per-document arrays the method verifies with (``method.candidate_arrays``) go to
   raw files, document facts (id, length, date) to Parquet, and keys are hashed into
   ``partitions`` files, spilled whenever the buffer passes a share of ``memory_limit``.
2. **buckets** (per key partition): rows grouped by key become a star plus a chain per
   bucket (:func:`~neardup.engine.buckets.star_chain_edges`), linear in the bucket's
   size, or the method's own in-bucket verification (:meth:`Method.link_bucket`).
3. **components** (edges streamed in bounded batches): an edge whose documents are
   already connected is skipped; the others are verified against the stored arrays
   (memory-mapped per batch, so only the batch's rows are resident), the window check
   applied, and joins recorded in a union-find over an int64 array. The joins form a
   spanning forest: the scored pairs written as the run's pairs.

Each stage leaves files and a marker in the work directory
(:class:`~neardup.engine.workdir.WorkDir`), so a killed run resumes from its completed
stages and produces the same outputs. The stages are functions of their inputs only, so
another executor (Ray) can run them partition by partition.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from neardup.engine.buckets import star_chain_edges
from neardup.engine.unionfind import UnionFind
from neardup.engine.workdir import WorkDir, read_arrow, write_arrow
from neardup.errors import check_int
from neardup.graph.cluster import canonical_labels
from neardup.graph.edges import Pairs
from neardup.io.batch import DocumentBatch
from neardup.methods.base import Method
from neardup.progress import StageTimer, progress_bar

__all__ = [
    "CorpusStageConfig",
    "default_memory_limit",
    "parse_memory",
    "run_corpus_stage",
    "supports_corpus_stage",
]

_DOC_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("length", pa.int64()),
        ("source", pa.string()),
        ("date", pa.timestamp("s")),
        ("n_features", pa.int64()),
    ]
)


def default_memory_limit() -> int:
    """A quarter of physical memory, at least 256 MiB: the share the stage's buffers may
    use, leaving the rest to per-document arrays, the OS page cache and other work."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 8 << 30
    return max(total // 4, 256 << 20)


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
    if value < 16 << 20:
        raise ValueError(f"memory limit must be at least 16MB; got {text!r}")
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
    partitions : int, default 256
        Key partitions. Each is grouped in memory on its own, so a partition's keys
        (16-24 bytes each) should fit in a quarter of ``memory_limit``: raise it for
        corpora beyond ~10^8 documents.
    resume : bool, default False
        Reuse the completed stages found in ``work_dir``.
    """

    work_dir: str | None = None
    memory_limit: int | None = None
    partitions: int = 256
    resume: bool = False

    def __post_init__(self) -> None:
        check_int("CorpusStageConfig", "partitions", self.partitions, low=1, high=1 << 16)
        if self.memory_limit is not None:
            object.__setattr__(self, "memory_limit", parse_memory(self.memory_limit))

    @property
    def budget(self) -> int:
        return self.memory_limit or default_memory_limit()


def supports_corpus_stage(method: Method, algorithm: str) -> bool:
    """Whether ``method`` with clustering ``algorithm`` runs through this stage: methods
    with the keyed contract, clustered by connected components (community detection and
    HAC need every pair and run in memory)."""
    return method.candidate_arrays is not None and algorithm == "components"


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
        part = (keys % np.uint64(self.partitions)).astype(np.int64)
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
            write_arrow(self.directory / f"p-{p:04d}-{self.chunk:05d}.arrow", pa.table(columns))
            self.buffers[p] = []
        self.chunk += 1
        self.buffered = 0


def _stage_key(*parts: Any) -> str:
    return json.dumps(parts, sort_keys=True, default=str)


def _sketch_stage(wd: WorkDir, batches: Iterable[DocumentBatch], method: Method,
                  config: CorpusStageConfig, timer, progress, total) -> dict[str, Any]:
    key = _stage_key("sketch", method.name, method.get_params(), config.partitions)
    facts = wd.done("sketch", key)
    if facts is not None:
        return facts
    directory = wd.start("sketch")
    (directory / "keys").mkdir()
    (directory / "arrays").mkdir()
    names = method.candidate_arrays
    spill = _KeySpill(directory / "keys", config.partitions, config.budget // 4)
    array_files = {name: open(directory / "arrays" / f"{name}.bin", "wb") for name in names}
    array_layout: dict[str, list] = {}
    writer = pq.ParquetWriter(directory / "docs.parquet", _DOC_SCHEMA)
    n_docs, has_dates = 0, False
    try:
        with progress_bar("sketching", total=total, unit="docs", enabled=progress) as advance:
            iterator = iter(batches)
            while True:
                with timer.stage("read"):
                    batch = next(iterator, None)
                if batch is None:
                    break
                n = len(batch)
                with timer.stage("sketch"):
                    sketch = method.sketch(batch.texts)
                    candidates = method.candidate_keys(sketch)
                    spill.add(candidates.docs.astype(np.int64) + n_docs, candidates.keys,
                              candidates.payload)
                for name, handle in array_files.items():
                    values = np.ascontiguousarray(sketch.arrays[name])
                    array_layout.setdefault(name, [values.dtype.str, list(values.shape[1:])])
                    handle.write(values.tobytes())
                has_dates = has_dates or batch.dates is not None
                dates = (batch.dates.astype("datetime64[s]") if batch.dates is not None
                         else np.full(n, np.datetime64("NaT"), "datetime64[s]"))
                writer.write_table(pa.table(
                    {
                        "id": pa.array(batch.ids, pa.string()),
                        "length": pa.array(np.fromiter(map(len, batch.texts), np.int64, n)),
                        "source": pa.array([batch.source] * n, pa.string()),
                        "date": pa.array(dates, pa.timestamp("s")),
                        "n_features": pa.array(np.asarray(sketch.n_features, np.int64)),
                    },
                    schema=_DOC_SCHEMA,
                ))
                n_docs += n
                advance(n)
        spill.flush()
    finally:
        writer.close()
        for handle in array_files.values():
            handle.close()
    facts = {"n_docs": n_docs, "n_keys": spill.rows, "arrays": array_layout, "has_dates": has_dates,
             "payload": None}
    wd.finish("sketch", key, facts)
    return facts


def _edges_stage(wd: WorkDir, method: Method, config: CorpusStageConfig, timer,
                 progress) -> dict[str, Any]:
    key = _stage_key("edges", method.name, method.get_params(), config.partitions)
    facts = wd.done("edges", key)
    if facts is not None:
        return facts
    directory = wd.stage_dir("edges")
    stamp = directory / "_KEY"
    # Partition files of an interrupted run with the same parameters are kept.
    same = stamp.exists() and stamp.read_text() == key
    directory = wd.start("edges", keep_files=same)
    stamp.write_text(key)
    keys_dir = wd.stage_dir("sketch") / "keys"
    files = sorted(os.listdir(keys_dir))
    by_part: dict[int, list[str]] = {}
    for name in files:
        by_part.setdefault(int(name[2:6]), []).append(name)
    n_edges, verified = 0, None
    with progress_bar("bucketing", total=config.partitions, unit="partitions",
                      enabled=progress) as advance, timer.stage("pairs"):
        for p in range(config.partitions):
            out = directory / f"p-{p:04d}.arrow"
            if out.exists():
                n_edges += read_arrow(out).num_rows
                advance(1)
                continue
            tables = [read_arrow(keys_dir / name) for name in by_part.get(p, [])]
            if tables:
                table = pa.concat_tables(tables)
                keys = table.column("key").to_numpy()
                docs = table.column("doc").to_numpy()
                payload = table.column("payload").to_numpy() if "payload" in table.column_names else None
                del tables, table
                linked = method.link_bucket(keys, docs, payload)
            else:
                keys = docs = payload = linked = None
            if linked is not None:
                pairs = linked.canonical()
                left, right, score = pairs.left, pairs.right, pairs.score
                verified = True
            elif keys is not None:
                left, right = star_chain_edges(keys, docs)
                score = np.full(left.size, np.nan, np.float32)
            else:
                left = right = np.empty(0, np.int64)
                score = np.empty(0, np.float32)
            write_arrow(out, pa.table({"left": left, "right": right, "score": score}))
            n_edges += int(left.size)
            advance(1)
    facts = {"n_edges": n_edges}
    wd.finish("edges", key, facts)
    return facts


def _components_stage(wd: WorkDir, method: Method, sketch_facts: dict[str, Any],
                      config: CorpusStageConfig, window_hours: float | None, timer,
                      progress) -> dict[str, Any]:
    key = _stage_key("components", method.name, method.get_params(), config.partitions,
                     window_hours)
    facts = wd.done("components", key)
    if facts is not None:
        return facts
    directory = wd.start("components")
    n_docs = sketch_facts["n_docs"]
    uf = UnionFind(n_docs)
    dates = None
    if window_hours is not None:
        date = pq.read_table(wd.stage_dir("sketch") / "docs.parquet", columns=["date"]).column("date")
        dates = date.cast(pa.int64()).fill_null(np.iinfo(np.int64).min).to_numpy()
    layout = sketch_facts["arrays"]
    row_bytes = sum(np.dtype(d).itemsize * int(np.prod(tail or [1])) for d, tail in layout.values())
    batch_edges = int(min(max(config.budget // 4 // (2 * row_bytes + 64), 1024), 1 << 20))
    forest: list[tuple[np.ndarray, ...]] = []
    outside: list[tuple[np.ndarray, ...]] = []
    checked = 0
    edge_dir = wd.stage_dir("edges")
    with progress_bar("linking", total=config.partitions, unit="partitions",
                      enabled=progress) as advance, timer.stage("pairs"):
        for p in range(config.partitions):
            table = read_arrow(edge_dir / f"p-{p:04d}.arrow")
            left_all = table.column("left").to_numpy()
            right_all = table.column("right").to_numpy()
            score_all = table.column("score").to_numpy()
            for start in range(0, left_all.size, batch_edges):
                left = left_all[start:start + batch_edges]
                right = right_all[start:start + batch_edges]
                score = score_all[start:start + batch_edges]
                todo = ~uf.connected(left, right)
                left, right, score = left[todo], right[todo], score[todo]
                if left.size == 0:
                    continue
                if np.isnan(score).any():
                    score, accept = _verify(wd, method, layout, n_docs, left, right)
                    checked += int(left.size)
                else:
                    accept = np.ones(left.size, dtype=bool)
                if dates is not None:
                    far = _far_apart(dates, left, right, window_hours)
                    if far.any():
                        gone = accept & far
                        outside.append((left[gone], right[gone], score[gone]))
                        accept = accept & ~far
                merged = uf.union(left, right, accept)
                forest.append((left[merged], right[merged], score[merged]))
            advance(1)
    forest_pairs = _concat(forest).canonical()
    outside_pairs = _concat(outside).canonical()
    write_arrow(directory / "forest.arrow", _pairs_table(forest_pairs))
    write_arrow(directory / "outside.arrow", _pairs_table(outside_pairs))
    np.save(directory / "roots.npy", uf.roots())
    facts = {"verified_edges": checked, "forest_edges": len(forest_pairs),
             "outside_window": len(outside_pairs)}
    wd.finish("components", key, facts)
    return facts


def _verify(wd: WorkDir, method: Method, layout: dict, n_docs: int, left: np.ndarray,
            right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Score edges against the stored arrays. The files are mapped for this batch only, so
    the pages read leave the process when it ends (they stay in the OS cache)."""
    lefts, rights = {}, {}
    for name, (dtype, tail) in layout.items():
        path = wd.stage_dir("sketch") / "arrays" / f"{name}.bin"
        mapped = np.memmap(path, dtype=np.dtype(dtype), mode="r", shape=(n_docs, *tail))
        lefts[name] = np.asarray(mapped[left])
        rights[name] = np.asarray(mapped[right])
        del mapped
    score, accept = method.score_candidates(lefts, rights)
    return np.asarray(score, np.float32), np.asarray(accept, bool)


def _far_apart(dates: np.ndarray, left: np.ndarray, right: np.ndarray, hours: float) -> np.ndarray:
    unknown = np.iinfo(np.int64).min
    a, b = dates[left], dates[right]
    known = (a != unknown) & (b != unknown)
    return known & (np.abs(a - b) > hours * 3600.0)


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
    ids : ndarray of object (str), shape (n_docs,)
    lengths, n_features : ndarray of int64, shape (n_docs,)
    dates : ndarray of datetime64[s], shape (n_docs,), or None
    roots : ndarray of int64, shape (n_docs,)
        Smallest member position of each document's component.
    pairs : Pairs
        The spanning forest of verified edges that joined the components.
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
) -> CorpusStageOutput:
    """Run the three stages over ``batches`` (see the module docstring).

    ``input_identity`` (JSON-able; e.g. the input files' paths, sizes and modification
    times) is recorded in the work directory so that ``resume`` refuses a directory made
    from another input.
    """
    if method.candidate_arrays is None:
        raise ValueError(
            f"run_corpus_stage: method {method.name!r} with these parameters has no keyed "
            "corpus stage; run it through neardup.pipeline.run"
        )
    timer = timer or StageTimer()
    with tempfile.TemporaryDirectory(prefix="neardup-work-") as scratch:
        path = config.work_dir if config.work_dir is not None else scratch
        wd = WorkDir(path, {"method": method.name, "input": input_identity}, resume=config.resume)
        sketch_facts = _sketch_stage(wd, batches, method, config, timer, progress, total)
        if time_window_hours is not None and not sketch_facts["has_dates"]:
            raise ValueError(
                f"run: a time window (time_window_hours={time_window_hours!r}) needs "
                "document dates, and the input has none. Give the documents' dates "
                "(--date-field; date_field= in neardup.dedup) or drop the window."
            )
        edge_facts = _edges_stage(wd, method, config, timer, progress)
        comp_facts = _components_stage(wd, method, sketch_facts, config, time_window_hours,
                                       timer, progress)
        with timer.stage("cluster"):
            columns = ["id", "length", "n_features"] + (["date"] if sketch_facts["has_dates"] else [])
            docs = pq.read_table(wd.stage_dir("sketch") / "docs.parquet", columns=columns)
            comp = wd.stage_dir("components")
            output = CorpusStageOutput(
                ids=np.array(docs.column("id").to_pylist(), dtype=object),
                lengths=docs.column("length").to_numpy(),
                n_features=docs.column("n_features").to_numpy(),
                dates=(docs.column("date").to_numpy().astype("datetime64[s]")
                       if sketch_facts["has_dates"] else None),
                roots=np.load(comp / "roots.npy"),
                pairs=_pairs_from(comp / "forest.arrow"),
                outside_window=_pairs_from(comp / "outside.arrow"),
                stats={"candidate_keys": sketch_facts["n_keys"],
                       "candidate_edges": edge_facts["n_edges"], **comp_facts},
            )
    return output


def labels_from_roots(roots: np.ndarray) -> np.ndarray:
    """Canonical cluster labels (numbered by first document) from union-find roots."""
    return canonical_labels(roots)
