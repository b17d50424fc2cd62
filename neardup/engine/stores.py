"""The storage the keyed stage's steps write and read on one machine: candidate-key rows
hashed into partition files (:class:`KeySpill`), the exchange's pair counts
(:class:`PairSpill`), texts cut for the scorer (:class:`TextWriter`, :class:`TextReader`)
and the sketch step's per-document rows read back by document (:class:`ArrayStore`, a
:class:`~neardup.engine.rows.RowSource`). The local executor
(:mod:`neardup.engine.local`) and the vector stage lay their work directories out with
them; nothing here decides what is written, only how."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.graph.edges import pair_codes
from neardup.engine.rows import LazyTexts, RowSource, TextSource
from neardup.engine.sketching import SET_SIZES, SET_VALUES, SET_WEIGHT_VALUES
from neardup.engine.workdir import WorkDir, write_arrow
from neardup.io.rowfile import read_rows, read_spans
from neardup.methods.base import CandidateRows
from neardup.text.shingle import ShingleSets

__all__ = ["TEXTS_FILE", "ArrayStore", "KeySpill", "PairSpill", "TextReader", "TextWriter",
           "read_raw"]


#: The texts a scorer reads, in a stage's directory (:class:`TextWriter`).
TEXTS_FILE = "texts.bin"
_TEXT_OFFSETS = "texts.offsets.bin"


class KeySpill:
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


class PairSpill:
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


def read_raw(path: Path, dtype) -> np.ndarray:
    """A raw file memory-mapped (an empty array for an empty file)."""
    if path.stat().st_size == 0:
        return np.zeros(0, dtype)
    return np.memmap(path, dtype=dtype, mode="r")


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


def _row_width(dtype: np.dtype, tail: tuple) -> int:
    """Bytes of one document's row of a fixed-width array of ``dtype`` and row shape ``tail``."""
    return dtype.itemsize * int(np.prod(tail or (1,)))


class ArrayStore(RowSource):
    """The per-document data of the sketch stage, read back by row: fixed-width arrays,
    ragged shingle sets (with their element weights), texts and dates (each only when the
    method reads it). Raw files are read with ``pread`` (:mod:`neardup.io.rowfile`: a memory map put the file's
    page-cache folios around each row in the process's RSS), so resident memory is the
    rows read, not the corpus. Set offsets (8 bytes per document) stay in memory; texts
    are read the same way (:class:`TextReader`), when the scorer takes them.

    Fixed-width files that together fit in ``resident_bytes`` are read whole, once, at
    the first :meth:`rows`, and rows are then taken from memory: a small corpus's steps
    read their rows thousands of times, a call each, for a file of a few megabytes.
    """

    def __init__(self, wd: WorkDir, facts: dict[str, Any], dates: np.ndarray | None = None,
                 *, resident_bytes: int = 0) -> None:
        layout, n_docs = facts["arrays"], facts["n_docs"]
        directory = wd.stage_dir("sketch")
        self.layout = {name: (np.dtype(d), tuple(tail)) for name, (d, tail) in layout.items()}
        self.paths = {name: directory / "arrays" / f"{name}.bin" for name in layout}
        self.n_docs = n_docs
        self.row_bytes = sum(_row_width(d, t) for d, t in self.layout.values())
        self.set_offsets = None
        if facts.get("sets"):
            sizes = np.fromfile(directory / "arrays" / f"{SET_SIZES}.bin", np.int64)
            self.set_offsets = np.zeros(n_docs + 1, np.int64)
            np.cumsum(sizes, out=self.set_offsets[1:])
            self.set_path = directory / "arrays" / f"{SET_VALUES}.bin"
            self.row_bytes += 8 * int(self.set_offsets[-1] // max(n_docs, 1))
        self.weight_path = None
        if facts.get("set_weights"):
            self.weight_path = directory / "arrays" / f"{SET_WEIGHT_VALUES}.bin"
            self.row_bytes += 8 * int(self.set_offsets[-1] // max(n_docs, 1))
        self.texts = TextReader(directory / TEXTS_FILE, n_docs) if facts.get("texts") else None
        if self.texts is not None:
            self.row_bytes += self.texts.doc_bytes
        self.dates = dates
        fixed = n_docs * sum(_row_width(dtype, tail) for dtype, tail in self.layout.values())
        self._resident: dict[str, np.ndarray] | None = None
        self._hold = 0 < fixed <= resident_bytes

    def _resident_arrays(self) -> dict[str, np.ndarray]:
        if self._resident is None:
            self._resident = {
                name: np.fromfile(self.paths[name], np.uint8).view(dtype)
                .reshape(self.n_docs, *tail)
                for name, (dtype, tail) in self.layout.items()}
        return self._resident

    def rows(self, docs: np.ndarray) -> CandidateRows:
        """The stored data of ``docs`` (corpus positions; ascending reads best)."""
        docs = np.asarray(docs, np.int64)
        out = CandidateRows(docs)
        if self._hold:
            out.arrays = {name: whole[docs] for name, whole in self._resident_arrays().items()}
        else:
            for name, (dtype, tail) in self.layout.items():
                out.arrays[name] = read_rows(self.paths[name], docs, _row_width(dtype, tail)).view(dtype) \
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
