"""Exact-substring de-duplication (Lee et al. 2022, "Deduplicating Training Data Makes
Language Models Better"): repeated runs of at least N tokens, found with suffix arrays.

Definitions (the tests check them against a brute-force reference):

* Tokens are whitespace-separated runs (:mod:`neardup.spans.tokens`), compared exactly. A
  *window* is N consecutive tokens of one document; no window crosses documents.
* Without ``against``: a window is removed when the same N tokens occur at an earlier
  position of the corpus (earlier document, or earlier in the same document). So the
  first occurrence of every repeated substring of >= N tokens stays and every later one
  goes; a removed range is the union of its removed windows.
* With ``against``: a window of the input is removed when the same N tokens occur
  anywhere in the ``against`` corpus; repeats within the input are left alone.

How (out of core, memory bounded by ``memory_limit``):

1. The corpus (the ``against`` documents first) is cut into *chunks* of whole documents,
   at most ``chunk_tokens`` tokens each (from the memory limit; a longer document is a
   chunk of its own). Each chunk's token ids, with a unique separator after every
   document, get a suffix array and LCP array (pydivsufsort's divsufsort and kasai).
   Suffixes sharing >= N tokens are adjacent in it: each run of LCP >= N is one repeated
   window, and within the chunk every occurrence but the earliest is a later one —
   exactly, with no hashing (:func:`chunk_repeats`).
2. Across chunks: every chunk's distinct window hashes (64-bit) go to a
   :class:`~neardup.spans.spill.PartitionedSpill`; per partition, a hash seen in two or
   more chunks records its first chunk (and its first ``against`` chunk). A window in
   chunk c whose hash was first seen in a chunk before c is a later occurrence
   (:func:`cross_chunk_table`). This is the documented alternative to Lee et al.'s merge
   of per-chunk suffix arrays: it is exact within a chunk and, across chunks, wrong only
   on a 64-bit hash collision (probability about w^2 / 2^65 for w distinct windows).
   When the corpus fits in one chunk, only step 1 runs.
3. Pass 2 re-reads the input, recomputes each batch's windows, and cuts the removed ones
   (:func:`remove_substrings`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from neardup.errors import check_int
from neardup.spans.executors import Executor, local_executor
from neardup.spans.ranges import BatchRemoval, apply_ranges
from neardup.spans.spill import PartitionedSpill, partition_count
from neardup.spans.tokens import TokenTable, tokenize, window_hashes

__all__ = ["BYTES_PER_TOKEN", "SubstringDecisions", "chunk_repeats", "chunk_step",
           "cross_chunk_table", "dense_ids", "distinct", "find_repeated_substrings",
           "remove_batch", "remove_substrings", "removed_windows", "save_cross_table"]

#: Bytes per token of a chunk's step: its token hashes (8), the suffix array step's peak
#: (dense ids, the uint32 sequence, suffix and LCP arrays, groups: about 53, measured on
#: 4M tokens) and margin. Chunks hold three quarters of the memory limit over this; the
#: spill buffers get an eighth.
BYTES_PER_TOKEN = 96
_NEVER = np.iinfo(np.int64).max
WINDOW = np.dtype([("hash", "<u8"), ("chunk", "<i4"), ("against", "<i4")])
_CROSS = np.dtype([("hash", "<u8"), ("first", "<i8"), ("first_against", "<i8")])


def dense_ids(values: np.ndarray) -> tuple[int, np.ndarray]:
    """Number each distinct value from 0 in sorted order: (count, ids of shape
    values.shape). A sort and a scan (numpy's hash-based unique is slower here)."""
    order = np.argsort(values)
    ordered = values[order]
    new = np.empty(ordered.shape[0], dtype=np.int64)
    if ordered.shape[0]:
        new[0] = 0
        np.not_equal(ordered[1:], ordered[:-1], out=new[1:], casting="unsafe")
    np.cumsum(new, out=new)
    ids = np.empty_like(new)
    ids[order] = new
    return (int(new[-1]) + 1 if new.shape[0] else 0), ids


def distinct(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values of a uint64 array (sort and scan)."""
    ordered = np.sort(values)
    keep = np.ones(ordered.shape[0], dtype=bool)
    keep[1:] = ordered[1:] != ordered[:-1]
    return ordered[keep]


def chunk_repeats(token_hashes: np.ndarray, bounds: np.ndarray, against: np.ndarray,
                  n: int, *, against_mode: bool = False) -> np.ndarray:
    """Step 1 (per chunk): the windows of the chunk to remove, found with a suffix array.

    Parameters
    ----------
    token_hashes : ndarray of uint64, shape (t,)
        The chunk's tokens, document after document.
    bounds : ndarray of int64, shape (d + 1,)
        Tokens of the chunk's document ``i`` are ``bounds[i]:bounds[i + 1]``.
    against : ndarray of bool, shape (d,)
        Which documents belong to the ``against`` corpus (all False without one).
    n : int
        Window length in tokens.
    against_mode : bool
        Remove input windows found in ``against`` documents, rather than later repeats.

    Returns
    -------
    ndarray of int64
        Sorted indices (into ``token_hashes``) of the first tokens of removed windows:
        without ``against_mode``, every occurrence of a repeated window but the earliest;
        with it, every input occurrence of a window some ``against`` document holds.
    """
    from pydivsufsort import divsufsort, kasai

    docs = bounds.shape[0] - 1
    if token_hashes.shape[0] == 0:
        return np.empty(0, np.int64)
    vocabulary, dense = dense_ids(token_hashes)
    if vocabulary + docs >= 2**32:
        raise ValueError("a chunk holds more than 2**32 distinct tokens; lower the memory limit")
    doc_of_token = np.repeat(np.arange(docs, dtype=np.int64), np.diff(bounds))
    # Sequence: each document's token ids, then a separator no other position holds, so
    # no common prefix runs across a document's end.
    sequence = np.empty(token_hashes.shape[0] + docs, dtype=np.uint32)
    sequence[np.arange(token_hashes.shape[0]) + doc_of_token] = dense
    sequence[bounds[1:] + np.arange(docs)] = vocabulary + np.arange(docs, dtype=np.int64)
    del dense
    suffixes = divsufsort(sequence)
    lcp = kasai(sequence, suffixes)
    del sequence
    joined = lcp[:-1] >= n  # suffixes i and i + 1 share a window
    member = np.zeros(suffixes.shape[0], dtype=bool)
    member[:-1] |= joined
    member[1:] |= joined
    group = np.cumsum(np.concatenate(([True], ~joined)))[member]
    position = suffixes[member].astype(np.int64)
    del suffixes, lcp, joined, member
    separators = bounds[1:] + np.arange(docs)
    doc = np.searchsorted(separators, position)  # a group member is never a separator
    token = position - doc
    if not against_mode:
        order = np.lexsort((token, group))
        group, token = group[order], token[order]
        earliest = np.ones(token.shape[0], dtype=bool)
        earliest[1:] = group[1:] != group[:-1]
        return np.sort(token[~earliest])
    flagged = against[doc]
    groups_with_against = np.unique(group[flagged])
    hit = np.isin(group, groups_with_against) & ~flagged
    return np.sort(token[hit])


def cross_chunk_table(records: np.ndarray) -> np.ndarray:
    """Step 2 (per partition of window records): for every hash seen in two or more
    chunks, its first chunk and first ``against`` chunk (``_NEVER`` when none); sorted by
    hash."""
    if records.shape[0] == 0:
        return np.empty(0, _CROSS)
    order = np.lexsort((records["chunk"], records["hash"]))
    rec = records[order]
    new = np.ones(rec.shape[0], dtype=bool)
    new[1:] = rec["hash"][1:] != rec["hash"][:-1]
    starts = np.flatnonzero(new)
    chunk = rec["chunk"].astype(np.int64)
    new_chunk = new.copy()
    new_chunk[1:] |= chunk[1:] != chunk[:-1]
    chunks_seen = np.add.reduceat(new_chunk.astype(np.int64), starts)
    against_chunk = np.where(rec["against"] > 0, chunk, _NEVER)
    first_against = np.minimum.reduceat(against_chunk, starts)
    shared = chunks_seen >= 2
    out = np.empty(int(shared.sum()), _CROSS)
    out["hash"] = rec["hash"][starts[shared]]
    out["first"] = chunk[starts[shared]]
    out["first_against"] = first_against[shared]
    return out


@dataclass
class SubstringDecisions:
    """What pass 1 found: chunk boundaries, within-chunk removed windows and the
    cross-chunk table (files in ``directory``), and counts."""

    directory: Path
    n: int
    against_docs: int
    documents: int
    tokens: int
    chunk_starts: np.ndarray  # first global document of each chunk
    windows_within: int = 0
    shared_hashes: int = 0
    spilled: bool = False
    against_mode: bool = False
    chunks: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.chunks = int(self.chunk_starts.shape[0])

    def _within(self) -> tuple[np.ndarray, np.ndarray]:
        path = self.directory / "within.bin"
        if not path.exists() or path.stat().st_size == 0:
            empty = np.empty(0, np.int64)
            return empty, empty
        pairs = np.memmap(path, dtype=np.int64, mode="r").reshape(-1, 2)
        return pairs[:, 0], pairs[:, 1]

    def _cross(self, column: str) -> np.ndarray:
        path = self.directory / f"cross-{column}.bin"
        if not path.exists() or path.stat().st_size == 0:
            return np.empty(0, _CROSS[column])
        return np.memmap(path, dtype=_CROSS[column], mode="r")

    def within_range(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """The within-chunk removed windows of global documents ``lo`` to ``hi - 1``:
        (document relative to ``lo``, first token in it)."""
        doc_of, token_of = self._within()
        a, b = np.searchsorted(doc_of, [lo, hi])
        return np.asarray(doc_of[a:b]) - lo, np.asarray(token_of[a:b])

    def cross_table(self) -> tuple[np.ndarray, np.ndarray]:
        """The cross-chunk table: hashes (sorted) and the chunk each counts from (its
        first chunk, or first ``against`` chunk under ``against_mode``)."""
        return self._cross("hash"), self._cross("first_against" if self.against_mode else "first")

    def removed_windows(self, lo: int, tokens: TokenTable) -> np.ndarray:
        """Indices (into ``tokens``, the tokens of global documents ``lo``...) of the
        first tokens of the removed windows."""
        return removed_windows(tokens, lo, *self.within_range(lo, lo + tokens.bounds.shape[0] - 1),
                               *self.cross_table(), self.chunk_starts, self.n)


def removed_windows(tokens: TokenTable, lo: int, within_doc: np.ndarray, within_token: np.ndarray,
                    cross_hash: np.ndarray, cross_first: np.ndarray, chunk_starts: np.ndarray,
                    n: int) -> np.ndarray:
    """Indices (into ``tokens``, the tokens of global documents ``lo``...) of the first
    tokens of the removed windows: the within-chunk ones (``within_doc`` relative to
    ``lo``) and those whose hash the cross-chunk table counts from an earlier chunk."""
    within = tokens.bounds[within_doc] + within_token
    hashes, first_token = window_hashes(tokens, n)
    if cross_hash.shape[0] == 0 or hashes.shape[0] == 0:
        return distinct(within)
    where = np.minimum(np.searchsorted(cross_hash, hashes), cross_hash.shape[0] - 1)
    found = cross_hash[where] == hashes
    doc = np.searchsorted(tokens.bounds, first_token, side="right") - 1 + lo
    chunk = np.searchsorted(chunk_starts, doc, side="right") - 1
    earlier = found & (cross_first[where] < chunk)
    return distinct(np.concatenate((within, first_token[earlier])))


def chunk_step(hashes: np.ndarray, bounds: np.ndarray, against: np.ndarray, n: int,
               against_mode: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Step 1 (per chunk): the removed windows (document in the chunk, first token in the
    document; sorted) and the chunk's distinct window hashes of input and of
    ``against`` documents."""
    removed = chunk_repeats(hashes, bounds, against, n, against_mode=against_mode)
    doc = np.searchsorted(bounds, removed, side="right") - 1
    pairs = np.empty((removed.shape[0], 2), np.int64)
    pairs[:, 0] = doc
    pairs[:, 1] = removed - bounds[doc]
    table = TokenTable(bounds, *(np.empty(0, np.int64),) * 3, hashes)
    window, first_token = window_hashes(table, n)
    flag = against[np.searchsorted(bounds, first_token, side="right") - 1]
    return pairs, distinct(window[~flag]), distinct(window[flag])


def _chunks(tokenized: Iterable[tuple[TokenTable, bool]], chunk_tokens: int, starts: list[int]
            ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Tokenized batches gathered into chunks of whole documents of at most
    ``chunk_tokens`` tokens (a longer document alone): (token hashes, bounds, against
    flags) per chunk; each chunk's first global document appended to ``starts``."""
    hashes: list[np.ndarray] = []
    lengths: list[np.ndarray] = []
    flags: list[np.ndarray] = []
    pending = first_doc = 0

    def cut(final: bool):
        nonlocal hashes, lengths, flags, pending, first_doc
        all_lengths = np.concatenate(lengths)
        all_hashes = np.concatenate(hashes)
        all_flags = np.concatenate(flags)
        hashes, lengths, flags = [], [], []  # one copy of the tokens at a time
        if all_lengths.size == 0:
            return None
        bounds = np.zeros(all_lengths.shape[0] + 1, np.int64)
        np.cumsum(all_lengths, out=bounds[1:])
        docs = all_lengths.shape[0] if final else max(1, int(np.searchsorted(
            bounds, chunk_tokens, side="right")) - 1)
        chunk = (all_hashes[:bounds[docs]], bounds[:docs + 1], all_flags[:docs])
        hashes, lengths, flags = [all_hashes[bounds[docs]:]], [all_lengths[docs:]], [all_flags[docs:]]
        pending = int(bounds[-1] - bounds[docs])
        starts.append(first_doc)
        first_doc += docs
        return chunk

    for tokens, against in tokenized:
        hashes.append(tokens.hash)
        lengths.append(np.diff(tokens.bounds))
        flags.append(np.full(tokens.bounds.shape[0] - 1, against))
        pending += len(tokens)
        while pending >= chunk_tokens:
            chunk = cut(final=False)
            if chunk is not None:
                yield chunk
    if lengths:
        chunk = cut(final=True)
        if chunk is not None:
            yield chunk


def find_repeated_substrings(batches: Iterable[Sequence[str]], n: int, *,
                             work_dir: str | Path, memory_limit: int,
                             against: Iterable[Sequence[str]] | None = None,
                             chunk_tokens: int | None = None,
                             expected_bytes: int | None = None,
                             executor: Executor = local_executor) -> SubstringDecisions:
    """Pass 1: chunks, suffix arrays, and the cross-chunk table.

    Parameters
    ----------
    batches : iterable of sequences of str
        The input corpus in order (documents numbered after the ``against`` ones).
    n : int
        Shortest repeated substring removed, in tokens (Lee et al. use 50).
    work_dir : path
        An existing directory for the chunk results and spilled window hashes.
    memory_limit : int
        Bytes; sets ``chunk_tokens`` (``3/4 * memory_limit // BYTES_PER_TOKEN``) and the
        spill buffers (an eighth).
    against : iterable of sequences of str, optional
        Batches of the corpus whose substrings are removed from the input (even when it
        holds no document); None: de-duplicate the input against itself.
    chunk_tokens : int, optional
        Tokens per chunk, overriding the memory limit's (tests force tiny chunks).
    expected_bytes : int, optional
        The inputs' size on disk, to choose the spill's partitions.
    executor : callable
        Runs :func:`chunk_step` per chunk and :func:`cross_chunk_table` per partition
        (:mod:`neardup.spans.executors`); the result does not depend on it.
    """
    check_int("substrings", "n", n, low=1)
    work_dir = Path(work_dir)
    directory = work_dir / "substrings"
    directory.mkdir(parents=True, exist_ok=True)
    chunk_tokens = chunk_tokens or max(1, memory_limit * 3 // 4 // BYTES_PER_TOKEN)
    # About one distinct window record (16 bytes) per 6 characters, per chunk holding it.
    partitions = partition_count((expected_bytes or 0) * 3, memory_limit)
    spill = PartitionedSpill(work_dir / "windows", WINDOW, partitions, memory_limit // 8)
    decisions = SubstringDecisions(directory, n, 0, 0, 0, np.empty(0, np.int64),
                                   against_mode=against is not None)
    counts = {"against": 0, "input": 0, "tokens": 0}

    def tokenized():
        for is_against, source in ((True, against or ()), (False, batches)):
            for texts in source:
                tokens = tokenize(texts)
                counts["tokens"] += len(tokens)
                counts["against" if is_against else "input"] += len(texts)
                yield tokens, is_against

    starts: list[int] = []
    chunk_args = ((*chunk, n, decisions.against_mode) for chunk in _chunks(tokenized(), chunk_tokens, starts))
    with open(directory / "within.bin", "wb") as within:
        for index, (pairs, input_hashes, against_hashes) in enumerate(executor(chunk_step, chunk_args)):
            # A new array: a Ray result is read-only.
            (pairs + np.array([starts[index], 0], np.int64)).tofile(within)
            decisions.windows_within += int(pairs.shape[0])
            for flag, hashes_seen in ((0, input_hashes), (1, against_hashes)):
                records = np.empty(hashes_seen.shape[0], WINDOW)
                records["hash"] = hashes_seen
                records["chunk"] = index
                records["against"] = flag
                spill.add(records)
    decisions.against_docs, decisions.documents, decisions.tokens = (
        counts["against"], counts["input"], counts["tokens"])
    decisions.chunk_starts = np.asarray(starts, np.int64)
    decisions.chunks = len(starts)
    decisions.spilled = spill.spilled

    def partition_args():
        # One chunk: step 1 found everything.
        for p in range(partitions if decisions.chunks > 1 else 0):
            yield (spill.partition(p),)
            spill.release(p)  # the step holds (or was sent) its own copy

    save_cross_table(executor(cross_chunk_table, partition_args()), decisions)
    return decisions


def save_cross_table(tables: Iterable[np.ndarray], decisions: SubstringDecisions) -> None:
    """The cross-chunk table's partitions, in partition order, written to the column
    files of ``decisions`` (and counted)."""
    columns = {name: open(decisions.directory / f"cross-{name}.bin", "wb") for name in _CROSS.names}
    try:
        # Partitions are ranges of the hash's top bits: written in order, the table is
        # sorted by hash as a whole.
        for table in tables:
            for name, handle in columns.items():
                np.ascontiguousarray(table[name]).tofile(handle)
            decisions.shared_hashes += int(table.shape[0])
    finally:
        for handle in columns.values():
            handle.close()


def remove_batch(texts: Sequence[str], lo: int, within_doc: np.ndarray, within_token: np.ndarray,
                 cross_hash: np.ndarray, cross_first: np.ndarray, chunk_starts: np.ndarray,
                 n: int) -> BatchRemoval:
    """Pass 2's step (per batch of global documents ``lo``...): its removed windows
    (:func:`removed_windows`) cut out of ``texts``."""
    tokens = tokenize(texts)
    first = removed_windows(tokens, lo, within_doc, within_token, cross_hash, cross_first,
                            chunk_starts, n)
    last = first + n - 1
    doc = np.searchsorted(tokens.bounds, first, side="right") - 1
    return apply_ranges(texts, doc, tokens.start[first], tokens.stop[last])


def remove_substrings(batches: Iterable[Sequence[str]], decisions: SubstringDecisions, *,
                      executor: Executor = local_executor) -> Iterator[BatchRemoval]:
    """Pass 2: each input batch with its removed windows cut out (the same batches, in
    the same order, as pass 1; :func:`remove_batch` run by ``executor``, which gets the
    cross-chunk table once, through its ``put`` when it has one)."""
    put = getattr(executor, "put", lambda value: value)
    cross = tuple(put(np.asarray(column)) if hasattr(executor, "put") else column
                  for column in decisions.cross_table())
    chunk_starts = put(decisions.chunk_starts)

    def batch_args():
        lo = decisions.against_docs
        for texts in batches:
            yield (texts, lo, *decisions.within_range(lo, lo + len(texts)), *cross,
                   chunk_starts, decisions.n)
            lo += len(texts)

    yield from executor(remove_batch, batch_args())
