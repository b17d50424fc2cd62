"""Records hash-partitioned into files once they outgrow a memory budget.

The counting passes of ``neardup spans`` and ``neardup substrings`` see one record per
span (or token window) of the corpus: far more than memory holds on a large corpus.
:class:`PartitionedSpill` buffers the records of each batch and, once the buffers pass
their budget, appends every partition's buffer to its own file. A partition is then read
back whole (:meth:`PartitionedSpill.partition`) and reduced by a pure function, so peak
memory is one partition plus the buffers, whatever the corpus size. Records go to
partition ``hash >> (64 - bits)``: every record of one hash lands in one partition.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

__all__ = ["PartitionedSpill", "partition_count", "split_partitions"]


def partition_count(expected_bytes: int, memory_limit: int, *, working_factor: int = 4) -> int:
    """Partitions (a power of two, 1 to 4096) so that one partition's records, times the
    ``working_factor`` a reduction needs to sort them, fit in ``memory_limit``."""
    needed = max(1, math.ceil(expected_bytes * working_factor / max(1, memory_limit)))
    return min(4096, 1 << (needed - 1).bit_length())


def split_partitions(records: np.ndarray, partitions: int) -> list[np.ndarray]:
    """``records`` (a structured array with a uint64 ``hash`` field) split into
    ``partitions`` (a power of two) blocks by the hash's top bits, each in arrival order."""
    bits = partitions.bit_length() - 1
    if bits == 0:
        return [records]
    parts = (records["hash"] >> np.uint64(64 - bits)).astype(np.int64)
    order = np.argsort(parts, kind="stable")
    records = records[order]
    bounds = np.searchsorted(parts[order], np.arange(partitions + 1))
    return [records[bounds[p]:bounds[p + 1]] for p in range(partitions)]


class PartitionedSpill:
    """Structured records, partitioned by their ``hash`` field, kept in memory while they
    fit in ``budget`` bytes and appended to ``directory/p-PPPP.bin`` after that.

    Parameters
    ----------
    directory : Path
        Where the partition files go (created when first needed).
    dtype : numpy structured dtype
        The record layout; it must have a ``uint64`` field named ``hash``.
    partitions : int
        A power of two.
    budget : int
        Bytes of buffered records held before they are written out.
    """

    def __init__(self, directory: Path, dtype: np.dtype, partitions: int, budget: int) -> None:
        if partitions & (partitions - 1) or partitions < 1:
            raise ValueError(f"partitions must be a power of two; got {partitions}")
        self.directory = Path(directory)
        self.dtype = np.dtype(dtype)
        self.partitions = partitions
        self.budget = max(1, budget)
        self._buffers: list[list[np.ndarray]] = [[] for _ in range(partitions)]
        self._buffered = 0
        self.spilled = False  # whether any record went to disk
        self.records = 0

    def add(self, records: np.ndarray) -> None:
        """Add ``records`` (of :attr:`dtype`)."""
        if records.shape[0] == 0:
            return
        for p, block in enumerate(split_partitions(records, self.partitions)):
            if block.shape[0]:
                self._buffers[p].append(block)
        self._buffered += records.nbytes
        self.records += records.shape[0]
        if self._buffered > self.budget:
            self.flush()

    def flush(self) -> None:
        """Append every buffered record to its partition's file."""
        if self._buffered == 0:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        for p, buffered in enumerate(self._buffers):
            if buffered:
                with open(self._path(p), "ab") as handle:
                    for block in buffered:
                        block.tofile(handle)
                buffered.clear()
        self._buffered = 0
        self.spilled = True

    def partition(self, p: int) -> np.ndarray:
        """Every record of partition ``p`` (file part first, then buffers: arrival order)."""
        parts = []
        path = self._path(p)
        if path.exists():
            parts.append(np.fromfile(path, dtype=self.dtype))
        parts.extend(self._buffers[p])
        if not parts:
            return np.empty(0, dtype=self.dtype)
        return np.concatenate(parts)

    def release(self, p: int) -> None:
        """Forget partition ``p`` (its file and buffers) once it is reduced."""
        self._path(p).unlink(missing_ok=True)
        self._buffered -= sum(b.nbytes for b in self._buffers[p])
        self._buffers[p] = []

    def _path(self, p: int) -> Path:
        return self.directory / f"p-{p:04d}.bin"
