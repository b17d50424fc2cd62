"""A set of document ids that finds the first repeated id, in bounded memory per id.

Readers check that ids are unique across all inputs while they stream. A Python dict of
ten million ids costs ~130 bytes each (string and int objects plus the table); this set
keeps every id's UTF-8 bytes in one growing buffer and an open-addressing table of
positions, about ``len(id) + 24`` bytes per id (up to twice that while the buffers grow), and does the per-id work in compiled code.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from numba import njit

__all__ = ["IdSet"]

# Table slots hold id ordinals as uint32 (half the size of int64): one process's reader
# checks at most 2**32 - 1 ids, far past what fits in one machine's memory anyway.
_EMPTY = np.uint32(0xFFFFFFFF)


@njit(cache=True)
def _hash(data, start, stop):
    # FNV-1a over the bytes, then a 64-bit finalizer (splitmix) so that probing by the
    # low bits sees well-mixed values.
    h = np.uint64(0xCBF29CE484222325)
    for i in range(start, stop):
        h = (h ^ np.uint64(data[i])) * np.uint64(0x100000001B3)
    h ^= h >> np.uint64(30)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(27)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(31)
    return h


@njit(cache=True)
def _same(data, a0, a1, other, b0, b1):
    if a1 - a0 != b1 - b0:
        return False
    for k in range(a1 - a0):
        if data[a0 + k] != other[b0 + k]:
            return False
    return True


@njit(cache=True)
def _insert(table, stored, stored_offsets, n_stored, data, offsets, first_new):
    """Add the batch's ids (``data``/``offsets``: Arrow string buffers) whose bytes were
    already appended to ``stored`` as entries ``first_new..``; returns (batch index of the
    first id seen before, position of its earlier copy), or (-1, -1)."""
    mask = np.uint64(table.shape[0] - 1)
    for i in range(offsets.shape[0] - 1):
        a0, a1 = offsets[i], offsets[i + 1]
        slot = _hash(data, a0, a1) & mask
        while True:
            held = table[slot]
            if held == _EMPTY:
                table[slot] = np.uint32(first_new + i)
                break
            if _same(data, a0, a1, stored, stored_offsets[held], stored_offsets[held + 1]):
                return i, held
            slot = (slot + np.uint64(1)) & mask
    return -1, -1


class IdSet:
    """Ids added in batches; :meth:`add` returns the first id of a batch already present.

    Ids are compared as UTF-8 bytes (exactly as strings). Each id keeps an int64 ``code``
    given by the caller (where it was read), returned for the earlier copy of a repeat.
    """

    def __init__(self) -> None:
        self._bytes = np.empty(1 << 16, np.uint8)
        self._offsets = np.zeros(1 << 12, np.int64)
        self._codes = np.empty(1 << 12, np.int64)
        self._table = np.full(1 << 13, _EMPTY, np.uint32)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def add(self, ids: list[str], codes: np.ndarray) -> tuple[int, int] | None:
        """Add ``ids`` with their ``codes``. If one was seen before (in an earlier batch or
        earlier in this one), stop there and return ``(its index in ids, the earlier
        copy's code)``; the set then holds the ids before it."""
        if not ids:
            return None
        array = pa.array(ids, pa.large_string())
        buffers = array.buffers()
        offsets = np.frombuffer(buffers[1], np.int64, len(ids) + 1, array.offset * 8)
        start = int(offsets[0])
        data = np.frombuffer(buffers[2], np.uint8, int(offsets[-1]) - start, start) \
            if buffers[2] is not None else np.empty(0, np.uint8)
        offsets = offsets - start
        self._reserve(len(ids), data.size)
        n, used = self._n, int(self._offsets[self._n])
        self._bytes[used:used + data.size] = data
        self._offsets[n + 1:n + len(ids) + 1] = offsets[1:] + used
        self._codes[n:n + len(ids)] = codes
        index, earlier = _insert(self._table, self._bytes, self._offsets, n, data, offsets, n)
        if index < 0:
            self._n += len(ids)
            return None
        self._n += int(index)  # the ids before the repeat are in the table
        return int(index), int(self._codes[earlier])

    def _reserve(self, n_ids: int, n_bytes: int) -> None:
        need_ids = self._n + n_ids
        if need_ids >= int(_EMPTY):
            raise ValueError("IdSet holds at most 2**32 - 2 ids; read the input in parts")
        if need_ids + 1 > self._offsets.size:
            size = _grown(self._offsets.size, need_ids + 1)
            self._offsets = _resized(self._offsets, size)
            self._codes = _resized(self._codes, size)
        used = int(self._offsets[self._n])
        if used + n_bytes > self._bytes.size:
            self._bytes = _resized(self._bytes, _grown(self._bytes.size, used + n_bytes))
        # Load factor at most one half keeps probe runs short.
        if 2 * need_ids > self._table.size:
            self._rehash(_grown(self._table.size, 2 * need_ids))

    def _rehash(self, size: int) -> None:
        self._table = _rebuilt(size, self._bytes, self._offsets, self._n)


@njit(cache=True)
def _rebuilt(size, stored, stored_offsets, n):
    table = np.full(size, _EMPTY, np.uint32)
    mask = np.uint64(size - 1)
    for i in range(n):
        slot = _hash(stored, stored_offsets[i], stored_offsets[i + 1]) & mask
        while table[slot] != _EMPTY:
            slot = (slot + np.uint64(1)) & mask
        table[slot] = np.uint32(i)
    return table


def _grown(size: int, need: int) -> int:
    while size < need:
        size *= 2
    return size


def _resized(array: np.ndarray, size: int) -> np.ndarray:
    out = np.empty(size, array.dtype)
    out[:array.size] = array
    return out
