"""``neardup spans`` and ``neardup substrings`` on Ray with the workers reading the input.

The inputs are cut into shards as the dedup Ray path cuts them (Parquet by runs of whole
row groups, other formats one file a shard: :func:`neardup.engine.ray.plan_shards`),
and every pass reads its shards in the tasks:

* spans, counting: a task per shard splits and hashes its spans and returns them as one
  object per hash partition (documents numbered from 0 in the shard); a task per
  partition adds the shards' offsets and decides (:func:`~.span_dedup.decide_partition`).
* substrings, counting: a task per shard tokenizes and returns its token hashes (an
  object left in the store) and each document's token count (to the driver, which cuts
  the corpus into the chunks the local run cuts); a task per chunk gathers its tokens from
  the shards' objects, runs the suffix array step and returns its window hashes as one
  object per partition; a task per partition builds that part of the cross-chunk table.
* both, rewrite: a task per shard reads its texts and full records again, cuts the
  removed ranges and returns the rewritten records, which the driver writes in order.

The driver numbers documents (a count per shard), plans chunks (8 bytes per document, a
shard at a time), saves the decisions and writes the outputs: what passes through it is
the per-shard counts, the removed ranges and the output records, never the input for
the counting pass. Each shard's texts are digested (BLAKE2b) on both reads; a shard that
changed in between is an error naming its file, as the local run's input watch gives.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# Shards are planned as the dedup Ray path plans them.
from neardup.engine.ray import RayInputs, plan_shards
from neardup.errors import InputError
from neardup.io.readers import ReaderConfig, part_records, read_part
from neardup.spans.ranges import BatchRemoval, apply_ranges
from neardup.spans.span_dedup import (
    OCCURRENCE,
    SpanDecisions,
    SpanDedupConfig,
    collect_decisions,
    decide_partition,
    span_records,
)
from neardup.spans.spill import partition_count, split_partitions
from neardup.spans.substring_dedup import (
    BYTES_PER_TOKEN,
    WINDOW,
    SubstringDecisions,
    chunk_step,
    cross_chunk_table,
    remove_batch,
    save_cross_table,
)
from neardup.spans.tokens import tokenize

__all__ = ["ShardRead", "find_spans_sharded", "find_substrings_sharded", "plan_chunks",
           "rewrite_shards", "shards_of"]

#: Shards a Ray run reads: at most this many rows of Parquet per task (as the dedup path).
SHARD_ROWS = 25_000


@dataclass
class ShardRead:
    """One shard of a Ray run (``shard``: a planned read task; ``against``: of the
    ``--against`` corpus) and what the counting pass learned of it: its documents, the
    digest of its texts, and the global number of its first document."""

    shard: Any
    against: bool
    documents: int = 0
    digest: bytes = b""
    first: int = 0

    @property
    def source(self) -> str:
        return self.shard.path


def shards_of(paths: Sequence[str | Path], reader: ReaderConfig, shard_rows: int = SHARD_ROWS
              ) -> list:
    """The read tasks of ``paths`` (:func:`~neardup.engine.ray.plan_shards`)."""
    return plan_shards(RayInputs(tuple(str(p) for p in paths), reader), shard_rows)


def _batches(shard, reader: ReaderConfig):
    stop = None if shard.stop < 0 else shard.stop
    return read_part(shard.path, shard.kind, reader, start=0 if stop is None else shard.start,
                     stop=stop)


def _texts_digest(digest, texts: Sequence[str]) -> None:
    # Each text's length in characters, then all their bytes (the lengths tell the texts
    # apart): a batch at a time, no Python step per document.
    digest.update(np.fromiter(map(len, texts), np.int64, len(texts)).tobytes())
    digest.update("".join(texts).encode("utf-8", "surrogatepass"))


# -- tasks ----------------------------------------------------------------------------------


def span_shard_task(shard, reader: ReaderConfig, config: SpanDedupConfig, partitions: int):
    """Counting, per shard: (documents, digest, records) then the shard's span occurrences
    (documents numbered from 0 in the shard), one array per hash partition."""
    digest = hashlib.blake2b(digest_size=16)
    parts, documents = [], 0
    for batch in _batches(shard, reader):
        _texts_digest(digest, batch.texts)
        parts.append(span_records(batch.texts, documents, config))
        documents += len(batch)
    records = np.concatenate(parts) if parts else np.empty(0, OCCURRENCE)
    return (documents, digest.digest(), int(records.shape[0]),
            *split_partitions(records, partitions))


def span_decide_task(config: SpanDedupConfig, offsets: np.ndarray, *blocks: np.ndarray):
    """Deciding, per partition: the shards' blocks numbered globally, then decided."""
    numbered = []
    for offset, block in zip(offsets.tolist(), blocks):
        block = block.copy()  # a Ray argument is read-only
        block["doc"] += offset
        numbered.append(block)
    records = np.concatenate(numbered) if numbered else np.empty(0, OCCURRENCE)
    return decide_partition(records, config)


def token_shard_task(shard, reader: ReaderConfig):
    """Counting, per shard: ((documents, digest, token count per document), token hashes)."""
    digest = hashlib.blake2b(digest_size=16)
    lengths, hashes = [], []
    for batch in _batches(shard, reader):
        _texts_digest(digest, batch.texts)
        tokens = tokenize(batch.texts)
        lengths.append(np.diff(tokens.bounds))
        hashes.append(tokens.hash)
    lengths = np.concatenate(lengths) if lengths else np.empty(0, np.int64)
    return ((int(lengths.shape[0]), digest.digest(), lengths),
            np.concatenate(hashes) if hashes else np.empty(0, np.uint64))


def chunk_task(index: int, pieces: list[tuple[int, int]], lengths: np.ndarray, against: np.ndarray,
               n: int, against_mode: bool, partitions: int, *hashes: np.ndarray):
    """Per chunk: its tokens gathered from the shards' hashes (``pieces``: the token range
    of each), the suffix array step (:func:`chunk_step`), and its distinct window hashes
    (input first, then ``against``) as records, one array per hash partition."""
    tokens = np.concatenate([h[a:b] for h, (a, b) in zip(hashes, pieces)]) if hashes else \
        np.empty(0, np.uint64)
    bounds = np.zeros(lengths.shape[0] + 1, np.int64)
    np.cumsum(lengths, out=bounds[1:])
    pairs, input_hashes, against_hashes = chunk_step(tokens, bounds, against, n, against_mode)
    records = np.empty(input_hashes.shape[0] + against_hashes.shape[0], WINDOW)
    records["hash"] = np.concatenate((input_hashes, against_hashes))
    records["chunk"] = index
    records["against"] = np.repeat([0, 1], [input_hashes.shape[0], against_hashes.shape[0]])
    return (pairs, int(records.shape[0]), *split_partitions(records, partitions))


def cross_task(*blocks: np.ndarray) -> np.ndarray:
    """Per partition: its part of the cross-chunk table, from the chunks' blocks in order."""
    return cross_chunk_table(np.concatenate(blocks) if blocks else np.empty(0, WINDOW))


def rewrite_task(shard, reader: ReaderConfig, cut: Callable[..., BatchRemoval],
                 snippets: list[tuple[int, int, int]], *cut_args):
    """Rewrite, per shard: (removal, full records, ids, rows, digest, snippet texts).
    ``cut(texts, *cut_args)`` cuts the shard's removed ranges; ``snippets`` are (document
    in the shard, start, end) of texts the report quotes."""
    digest = hashlib.blake2b(digest_size=16)
    texts, ids, rows = [], [], []
    numbered = False
    for batch in _batches(shard, reader):
        _texts_digest(digest, batch.texts)
        texts.extend(batch.texts)
        numbered = batch.ids is None
        if not numbered:
            ids.extend(batch.ids)
        rows.append(batch.rows)
    stop = None if shard.stop < 0 else shard.stop
    records = [record for _row, _line, record in part_records(
        shard.path, shard.kind, reader, start=0 if stop is None else shard.start, stop=stop)]
    if len(records) != len(texts):
        raise InputError(f"{shard.path}: {len(records)} records but {len(texts)} documents were "
                         "read; was it changed during the run?")
    quoted = [texts[d][start:end] for d, start, end in snippets]
    return (cut(texts, *cut_args), records, None if numbered else ids,
            np.concatenate(rows) if rows else np.empty(0, np.int64), digest.digest(), quoted)


# -- driver ---------------------------------------------------------------------------------


def _ray():
    from neardup.engine.ray import import_ray

    return import_ray()


def find_spans_sharded(reads: list[ShardRead], reader: ReaderConfig, config: SpanDedupConfig, *,
                       work_dir: str | Path, memory_limit: int, expected_bytes: int | None = None,
                       advance: Callable[[int], None] = lambda documents: None) -> SpanDecisions:
    """Pass 1 of span de-duplication with the workers reading ``reads``' shards (filled in
    with their counts): the decisions :func:`~.span_dedup.find_repeated_spans` gives.
    ``advance`` is called with each shard's documents as its count arrives."""
    ray = _ray()
    partitions = partition_count(expected_bytes or 0, memory_limit)
    task = ray.remote(span_shard_task).options(num_returns=3 + partitions)
    submitted = [task.remote(read.shard, reader, config, partitions) for read in reads]
    first = spans = 0
    for read, refs in zip(reads, submitted):
        read.documents, read.digest, count = ray.get(refs[:3])
        read.first = first
        first += read.documents
        spans += count
        advance(read.documents)
    offsets = np.asarray([read.first for read in reads], np.int64)
    decide = ray.remote(span_decide_task)

    def decided() -> Iterator:
        pending: deque = deque()
        for p in range(partitions):
            pending.append(decide.remote(config, offsets, *[refs[3 + p] for refs in submitted]))
            if len(pending) > 2:
                yield ray.get(pending.popleft())
        while pending:
            yield ray.get(pending.popleft())

    # As the local spill: records beyond a quarter of the limit go to disk (here Ray's
    # object store spills them).
    spilled = spans * OCCURRENCE.itemsize > memory_limit // 4
    return collect_decisions(decided(), work_dir, config, documents=first, spans=spans,
                             spilled=spilled)


def plan_chunks(reads: list[ShardRead], lengths: np.ndarray, batch_size: int,
                chunk_tokens: int) -> list[tuple[int, int]]:
    """The chunks the local run cuts (global document ranges), from every document's token
    count (``lengths``, the shards' in order): it looks at the pending tokens after each
    batch the reader yields (``batch_size`` documents from the start of each file, and
    the file's end) and, while they reach ``chunk_tokens``, cuts the longest prefix of the
    pending documents within it (at least one); the rest is the last chunk."""
    checks = []  # documents after which the local run looks
    for i, read in enumerate(reads):
        row = read.shard.start if read.shard.stop >= 0 else 0
        ends = (np.arange(read.documents) + row + 1) % batch_size == 0
        following = reads[i + 1] if i + 1 < len(reads) else None
        if read.documents and (following is None or following.source != read.source
                               or following.against != read.against):
            ends[-1] = True
        checks.append(np.flatnonzero(ends) + read.first)
    checks = np.concatenate(checks) if checks else np.empty(0, np.int64)
    cum = np.cumsum(lengths)
    chunks: list[tuple[int, int]] = []
    first = at = 0
    while first < cum.shape[0]:
        base = int(cum[first - 1]) if first else 0
        reach = int(np.searchsorted(cum, base + chunk_tokens))  # pending reaches the limit here
        look = int(np.searchsorted(checks, max(reach, at)))
        if reach >= cum.shape[0] or look >= checks.shape[0]:
            break
        at = int(checks[look])
        docs = max(1, int(np.searchsorted(cum[first:at + 1], base + chunk_tokens, side="right")))
        chunks.append((first, first + docs))
        first += docs
    if first < cum.shape[0]:
        chunks.append((first, int(cum.shape[0])))
    return chunks


def find_substrings_sharded(reads: list[ShardRead], reader: ReaderConfig, n: int, *,
                            work_dir: str | Path, memory_limit: int, against_mode: bool,
                            chunk_tokens: int | None = None, expected_bytes: int | None = None,
                            advance: Callable[[int], None] = lambda documents: None
                            ) -> SubstringDecisions:
    """Pass 1 of substring de-duplication with the workers reading ``reads``' shards (the
    ``against`` ones first): the decisions :func:`~.substring_dedup.find_repeated_substrings`
    gives."""
    ray = _ray()
    directory = Path(work_dir) / "substrings"
    directory.mkdir(parents=True, exist_ok=True)
    chunk_tokens = chunk_tokens or max(1, memory_limit * 3 // 4 // BYTES_PER_TOKEN)
    partitions = partition_count((expected_bytes or 0) * 3, memory_limit)
    tokenized = [ray.remote(token_shard_task).options(num_returns=2).remote(read.shard, reader)
                 for read in reads]
    lengths = []
    first = 0
    for read, (summary, _) in zip(reads, tokenized):
        read.documents, read.digest, counts = ray.get(summary)
        read.first = first
        first += read.documents
        lengths.append(counts)
        advance(read.documents)
    tokens_before = np.cumsum([0] + [int(c.sum()) for c in lengths])  # each shard's first token
    all_lengths = np.concatenate(lengths) if lengths else np.empty(0, np.int64)
    starts_of = np.concatenate(([0], np.cumsum(all_lengths)))  # each document's first token
    is_against = np.repeat([read.against for read in reads],
                           [read.documents for read in reads]).astype(bool)
    against_docs = int(is_against.sum())
    del lengths
    chunks = plan_chunks(reads, all_lengths, reader.batch_size, chunk_tokens)
    decisions = SubstringDecisions(directory, n, against_docs, first - against_docs,
                                   int(tokens_before[-1]),
                                   np.asarray([a for a, _ in chunks], np.int64),
                                   against_mode=against_mode)
    step = ray.remote(chunk_task).options(num_returns=2 + partitions)
    submitted = []
    for index, (a, b) in enumerate(chunks):
        lo, hi = starts_of[a], starts_of[b]
        involved = np.flatnonzero((tokens_before[:-1] < hi) & (tokens_before[1:] > lo)) \
            if hi > lo else np.empty(0, np.int64)
        pieces = [(int(max(lo, tokens_before[s]) - tokens_before[s]),
                   int(min(hi, tokens_before[s + 1]) - tokens_before[s])) for s in involved]
        submitted.append(step.remote(index, pieces, all_lengths[a:b], is_against[a:b], n,
                                     against_mode, partitions,
                                     *[tokenized[s][1] for s in involved.tolist()]))
    windows = 0
    with open(directory / "within.bin", "wb") as within:
        for (a, _), refs in zip(chunks, submitted):
            pairs, count = ray.get(refs[:2])
            (pairs + np.array([a, 0], np.int64)).tofile(within)
            decisions.windows_within += int(pairs.shape[0])
            windows += count
    del tokenized  # the shards' tokens: the chunks hold what they need
    decisions.spilled = windows * WINDOW.itemsize > memory_limit // 8
    # One chunk: its step found everything.
    cross = ray.remote(cross_task)
    tables = [cross.remote(*[refs[2 + p] for refs in submitted])
              for p in range(partitions if len(chunks) > 1 else 0)]
    del submitted  # each partition's blocks are held by its task alone
    save_cross_table((ray.get(table) for table in tables), decisions)
    return decisions


def span_cuts(decisions: SpanDecisions):
    """The rewrite's cut of span de-duplication, per shard of documents ``lo``-``hi``."""
    return apply_ranges, lambda lo, hi: decisions.removed_in(lo, hi)


def substring_cuts(decisions: SubstringDecisions, put: Callable[[Any], Any]):
    """The rewrite's cut of substring de-duplication, per shard: the cross-chunk table
    and chunk starts sent once (``put``)."""
    shared = (*(put(np.asarray(column)) for column in decisions.cross_table()),
              put(decisions.chunk_starts))

    def arguments(lo: int, hi: int) -> tuple:
        cross_hash, cross_first, chunk_starts = shared
        return (lo, *decisions.within_range(lo, hi), cross_hash, cross_first, chunk_starts,
                decisions.n)

    return remove_batch, arguments


def rewrite_shards(reads: list[ShardRead], reader: ReaderConfig, cut: Callable[..., BatchRemoval],
                   arguments: Callable[[int, int], tuple], top: list[dict] | None = None,
                   window: int | None = None) -> Iterator[tuple]:
    """Pass 2 with the workers reading the input shards (``reads``, the input ones, from
    the counting pass): per shard in order, (removal, records, ids, rows, source). Fills
    in the ``text`` of the ``top`` entries (global ``doc``, ``start``, ``end``)."""
    ray = _ray()
    task = ray.remote(rewrite_task)
    numbered_from = reads[0].first if reads else 0
    window = window or max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
    pending: deque = deque()
    wanted: dict[int, list[dict]] = {}
    for entry in top or ():
        wanted.setdefault(entry["doc"], []).append(entry)

    def result():
        read, entries = pending[0][1:]
        removal, records, ids, rows, digest, quoted = ray.get(pending.popleft()[0])
        if digest != read.digest:
            raise InputError(f"{read.source}: its texts changed between the counting pass and "
                             "the rewrite; run again on inputs that stay put.")
        for entry, text in zip(entries, quoted):
            entry["text"] = text
        if ids is None:  # numbered by position in the inputs (after any --against ones)
            ids = [str(d - numbered_from) for d in range(read.first, read.first + read.documents)]
        return removal, records, ids, rows, read.source

    for read in reads:
        lo, hi = read.first, read.first + read.documents
        entries = [entry for d in sorted(d for d in wanted if lo <= d < hi) for entry in wanted.pop(d)]
        snippets = [(entry["doc"] - lo, entry["start"], entry["end"]) for entry in entries]
        # The cut's arguments last, each its own: Ray resolves the objects among them.
        pending.append((task.remote(read.shard, reader, cut, snippets, *arguments(lo, hi)),
                        read, entries))
        if len(pending) >= window:
            yield result()
    while pending:
        yield result()
