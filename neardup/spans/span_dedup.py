"""Span-level de-duplication: repeated lines, paragraphs or sentence windows across a corpus.

Definitions (the tests check them against a brute-force reference):

* A span (:mod:`neardup.spans.units`) is *eligible* when its normalized text has at least
  ``min_length`` characters. Shorter spans are never matched and never removed.
* An eligible span is *repeated* when its normalized text occurs in at least
  ``min_repeats`` distinct documents. Occurrences are not documents: a line repeated ten
  times inside one document, and nowhere else, counts 1.
* Of each repeated span one occurrence is kept: ``keep="first"`` the first in input
  order (document, then position), ``"last"`` the last, ``"none"`` none. Every other
  occurrence is removed, its extent (the span and the separator after it) cut out.
  Overlapping extents (sentence windows) are cut once.

Two passes over the corpus, each a sequence of pure steps an executor can run:

1. :func:`span_records` per batch (split, normalize, hash to 64 bits) into a
   :class:`~neardup.spans.spill.PartitionedSpill` (in memory while it fits the memory
   limit, else hash-partitioned files); then :func:`decide_partition` per partition (count
   distinct documents, choose the kept occurrence, list the removed ones, sorted by
   document), saved as ``.npy`` files in the work directory.
2. :meth:`SpanDecisions.removed_in` for each batch's document range (memory-mapped,
   binary search), and :func:`neardup.spans.ranges.apply_ranges` to cut them.

Memory: one batch plus the spill buffers (a quarter of the limit) in pass 1, one
partition's records (40 bytes per span occurrence, sorted) when deciding, and one
batch's removed ranges in pass 2. Hashes are 64-bit: two different spans share one with
probability about n^2 / 2^65 for n distinct spans (1e-4 for 10^8 spans).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from neardup.errors import check_choice, check_int
from neardup.spans.executors import Executor, local_executor
from neardup.spans.ranges import BatchRemoval, apply_ranges
from neardup.spans.spill import PartitionedSpill, partition_count
from neardup.spans.units import SpanUnit, span_table

__all__ = ["KEEP_POLICIES", "OCCURRENCE", "PartitionDecision", "SpanDecisions", "SpanDedupConfig",
           "collect_decisions", "decide_partition", "find_repeated_spans", "remove_spans",
           "span_records"]

KEEP_POLICIES = ("first", "last", "none")

#: One span occurrence: its hash, global document number, match range and extent end.
OCCURRENCE = np.dtype([("hash", "<u8"), ("doc", "<i8"), ("start", "<i8"), ("end", "<i8"),
                       ("stop", "<i8")])


@dataclass(frozen=True)
class SpanDedupConfig:
    """Parameters of span de-duplication.

    Parameters
    ----------
    unit : SpanUnit or str, default "line"
        ``"line"``, ``"paragraph"`` or ``"sentences:N"``.
    min_length : int, default 20
        Shortest span matched, in characters of its normalized text. Short lines
        ("Yes.", "Chapter 1", list numbers) repeat across unrelated documents by chance;
        boilerplate (navigation, disclaimers, bylines) is longer. 20-50 is sensible.
    min_repeats : int, default 2
        A span is repeated when it occurs in at least this many distinct documents.
    keep : {"first", "last", "none"}, default "first"
        Which occurrence of a repeated span stays.
    top : int, default 20
        How many of the most repeated spans the summary lists.
    """

    unit: SpanUnit | str = "line"
    min_length: int = 20
    min_repeats: int = 2
    keep: str = "first"
    top: int = 20

    def __post_init__(self) -> None:
        if not isinstance(self.unit, SpanUnit):
            object.__setattr__(self, "unit", SpanUnit.parse(self.unit))
        check_int("spans", "min_length", self.min_length, low=1)
        check_int("spans", "min_repeats", self.min_repeats, low=2)
        check_choice("spans", "keep", self.keep, KEEP_POLICIES)
        check_int("spans", "top", self.top, low=0)


def span_records(texts: Sequence[str], first_doc: int, config: SpanDedupConfig) -> np.ndarray:
    """Step 1 (per batch): the eligible span occurrences of ``texts`` as
    :data:`OCCURRENCE` records; documents are numbered from ``first_doc``."""
    table = span_table(texts, config.unit, config.min_length)
    records = np.empty(len(table), dtype=OCCURRENCE)
    records["hash"] = table.hash
    records["doc"] = table.doc + first_doc
    records["start"] = table.start
    records["end"] = table.end
    records["stop"] = table.stop
    return records


@dataclass
class PartitionDecision:
    """What :func:`decide_partition` found in one partition.

    ``removed``: the removed occurrences (doc, start, stop), sorted by doc then start.
    ``top``: the partition's most repeated spans (hash, docs, occurrences, keeper doc,
    start and end). Counts: ``distinct`` spans, ``repeated`` distinct spans,
    ``occurrences`` of repeated spans, and span occurrences ``seen``.
    """

    removed: dict[str, np.ndarray]
    top: dict[str, np.ndarray]
    distinct: int
    repeated: int
    occurrences: int
    seen: int = 0


def decide_partition(records: np.ndarray, config: SpanDedupConfig) -> PartitionDecision:
    """Step 2 (per partition): count each span's distinct documents and choose the
    occurrences to remove."""
    order = np.lexsort((records["start"], records["doc"], records["hash"]))
    rec = records[order]
    n = rec.shape[0]
    if n == 0:
        empty = np.empty(0, np.int64)
        return PartitionDecision({"doc": empty, "start": empty, "stop": empty},
                                 {k: empty for k in ("hash", "docs", "occurrences", "doc", "start",
                                                     "end")}, 0, 0, 0, 0)
    hashes, docs = rec["hash"], rec["doc"]
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = hashes[1:] != hashes[:-1]
    new_doc = new_group.copy()
    new_doc[1:] |= docs[1:] != docs[:-1]
    starts = np.flatnonzero(new_group)
    ends = np.append(starts[1:], n)
    doc_counts = np.add.reduceat(new_doc.astype(np.int64), starts)
    repeated = doc_counts >= config.min_repeats
    group_of = np.cumsum(new_group) - 1
    in_repeated = repeated[group_of]
    removed = in_repeated.copy()
    if config.keep == "first":
        removed[starts[repeated]] = False
    elif config.keep == "last":
        removed[ends[repeated] - 1] = False
    out = rec[removed]
    by_doc = np.lexsort((out["start"], out["doc"]))
    out = out[by_doc]
    sizes = ends - starts
    rep = np.flatnonzero(repeated)
    top = rep[np.lexsort((hashes[starts[rep]], -sizes[rep], -doc_counts[rep]))][:config.top]
    first = starts[top]
    return PartitionDecision(
        removed={"doc": out["doc"].copy(), "start": out["start"].copy(), "stop": out["stop"].copy()},
        top={"hash": hashes[first], "docs": doc_counts[top], "occurrences": sizes[top],
             "doc": docs[first], "start": rec["start"][first], "end": rec["end"][first]},
        distinct=int(starts.shape[0]),
        repeated=int(rep.shape[0]),
        occurrences=int(sizes[rep].sum()),
        seen=n,
    )


@dataclass
class SpanDecisions:
    """The removed occurrences of every partition (memory-mapped ``.npy`` files) and the
    corpus-wide counts and most repeated spans."""

    directory: Path
    partitions: int
    documents: int
    spans: int
    distinct: int
    repeated: int
    occurrences: int
    removed: int
    top: list[dict] = field(default_factory=list)
    spilled: bool = False

    def removed_in(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The removed occurrences of documents ``lo`` to ``hi - 1`` (doc relative to
        ``lo``, start, stop)."""
        docs, starts, stops = [], [], []
        for p in range(self.partitions):
            path = self.directory / f"removed-{p:04d}"
            if not (path / "doc.npy").exists():
                continue
            doc = np.load(path / "doc.npy", mmap_mode="r")
            a, b = np.searchsorted(doc, [lo, hi])
            if b > a:
                docs.append(np.asarray(doc[a:b]) - lo)
                starts.append(np.asarray(np.load(path / "start.npy", mmap_mode="r")[a:b]))
                stops.append(np.asarray(np.load(path / "stop.npy", mmap_mode="r")[a:b]))
        if not docs:
            empty = np.empty(0, np.int64)
            return empty, empty, empty
        return np.concatenate(docs), np.concatenate(starts), np.concatenate(stops)


def find_repeated_spans(batches: Iterable[Sequence[str]], config: SpanDedupConfig, *,
                        work_dir: str | Path, memory_limit: int,
                        expected_bytes: int | None = None, partitions: int | None = None,
                        executor: Executor = local_executor) -> SpanDecisions:
    """Pass 1 and the decision: read every batch of texts once, then decide per partition.

    Parameters
    ----------
    batches : iterable of sequences of str
        The corpus in input order (documents are numbered from 0 across batches).
    config : SpanDedupConfig
    work_dir : path
        An existing directory for the spilled partitions and the decisions.
    memory_limit : int
        Bytes for the spill buffers (a quarter) and one partition's reduction.
    expected_bytes : int, optional
        The inputs' size on disk, to choose the partitions (default: one partition,
        spilled to a file if it outgrows the buffers).
    partitions : int, optional
        Hash partitions (a power of two), instead of the ones ``expected_bytes`` gives.
    executor : callable
        Runs :func:`span_records` per batch and :func:`decide_partition` per partition
        (:mod:`neardup.spans.executors`: in process, or as Ray tasks); the result does
        not depend on it.
    """
    work_dir = Path(work_dir)
    # About one occurrence record (40 bytes) per 40 characters of input, at most.
    partitions = partitions or partition_count(expected_bytes or 0, memory_limit)
    spill = PartitionedSpill(work_dir / "spans", OCCURRENCE, partitions, memory_limit // 4)
    counted = [0]

    def numbered():
        for texts in batches:
            yield texts, counted[0], config
            counted[0] += len(texts)

    for records in executor(span_records, numbered()):
        spill.add(records)

    def partition_args():
        for p in range(partitions):
            yield spill.partition(p), config
            spill.release(p)  # the step holds (or was sent) its own copy

    return collect_decisions(executor(decide_partition, partition_args()), work_dir, config,
                             documents=counted[0], spans=spill.records, spilled=spill.spilled)


def collect_decisions(decided: Iterable[PartitionDecision], work_dir: str | Path,
                      config: SpanDedupConfig, *, documents: int, spans: int,
                      spilled: bool = False) -> SpanDecisions:
    """The :class:`SpanDecisions` of partitions 0, 1, ... decided in that order (whichever
    executor decided them): each partition's removed occurrences saved under
    ``work_dir/decisions``, counts summed, the most repeated spans merged."""
    decisions = SpanDecisions(Path(work_dir) / "decisions", 0, documents, spans, 0, 0, 0, 0,
                              spilled=spilled)
    tops = []
    for p, decision in enumerate(decided):
        target = decisions.directory / f"removed-{p:04d}"
        target.mkdir(parents=True, exist_ok=True)
        for name, values in decision.removed.items():
            np.save(target / f"{name}.npy", values)
        decisions.partitions += 1
        decisions.distinct += decision.distinct
        decisions.repeated += decision.repeated
        decisions.occurrences += decision.occurrences
        decisions.removed += int(decision.removed["doc"].shape[0])
        tops.extend(dict(zip(decision.top, values)) for values in zip(
            *(v.tolist() for v in decision.top.values())))
    tops.sort(key=lambda t: (-t["docs"], -t["occurrences"], t["hash"]))
    decisions.top = tops[:config.top]
    return decisions


def remove_spans(batches: Iterable[Sequence[str]], decisions: SpanDecisions, *,
                 executor: Executor = local_executor) -> Iterator[BatchRemoval]:
    """Pass 2: each batch's texts with its removed occurrences cut out (the same batches,
    in the same order, as pass 1; :func:`apply_ranges` run by ``executor``). Fills in the
    ``text`` of :attr:`SpanDecisions.top` from the kept (or first) occurrence as its
    document goes by."""
    wanted: dict[int, list[dict]] = {}
    for entry in decisions.top:
        wanted.setdefault(entry["doc"], []).append(entry)

    def batch_args():
        lo = 0
        for texts in batches:
            hi = lo + len(texts)
            for d in [d for d in wanted if lo <= d < hi]:
                for entry in wanted.pop(d):
                    entry["text"] = texts[d - lo][entry["start"]:entry["end"]]
            yield (texts, *decisions.removed_in(lo, hi))
            lo = hi

    yield from executor(apply_ranges, batch_args())
