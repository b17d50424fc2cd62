"""Document profiles kept between a verifier's batches, by corpus position.

The corpus stage hands rerank's verifier its candidate edges in steps and batches, and a
document meets partners in many of them (its bucket's copies, its story's variants): on
held-out news each document's texts were normalized, shingled and sorted 3-5 times. A
:class:`ProfileCache` keeps the :class:`~neardup.methods.pair_features.DocumentProfiles`
of recent documents, up to a byte budget, oldest dropped first, so that each document is
profiled about once while it keeps meeting partners. Profiles depend on the document's
text only, so a kept one gives the features exactly as a fresh one would.

The kept profiles live in one arena: each shingle kind's hashes in one growing array, so
a batch's pairs index the arena directly. Gathering a batch's kept profiles into a copy
of their own cost more than the features computed from them (a few small array copies
per document and kind: experiments/rerank_cost/README.md, "Seventh round").
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from neardup.errors import check_int
from neardup.methods.pair_features import DocumentProfiles
from neardup.text.shingle import ShingleSets

__all__ = ["ProfileCache"]

#: Share of the budget the oldest documents are dropped down to when it is exceeded: the
#: arena is copied once per half budget of new profiles, not once per batch.
_LOW_WATER = 0.5
#: Most address space reserved up front for one shingle kind's hashes.
_RESERVE_BYTES = 1 << 30
#: Strings a profile may hold, in :class:`DocumentProfiles`' field order.
_STRINGS = ("aligned", "short_heads", "long_heads")


class _Growing:
    """A numpy array appended to in place, its capacity doubled when full."""

    def __init__(self, dtype: Any, values: np.ndarray | None = None, reserve: int = 0) -> None:
        values = np.zeros(0, dtype) if values is None else np.asarray(values, dtype)
        # Room to grow into: pages not yet written cost no memory, and the arena grows
        # right after its oldest documents are dropped. ``reserve`` elements up front
        # spare the copies and page faults of growing by doubling.
        self.data = np.empty(max(1024, 2 * values.size, reserve), dtype)
        self.data[: values.size] = values
        self.size = values.size

    def extend(self, values: np.ndarray) -> None:
        need = self.size + values.size
        if need > self.data.size:
            # A new array: views handed out earlier keep the old one.
            grown = np.empty(max(need, 2 * self.data.size), self.data.dtype)
            grown[: self.size] = self.data[: self.size]
            self.data = grown
        self.data[self.size:need] = values
        self.size = need

    def view(self) -> np.ndarray:
        return self.data[: self.size]


def _document_bytes(profiles: DocumentProfiles) -> np.ndarray:
    """Each document's share of :meth:`DocumentProfiles.nbytes` (int64, shape (n,))."""
    out = np.full(len(profiles), profiles.lengths.itemsize, np.int64)
    for sets in profiles.sets.values():
        out += np.diff(sets.offsets) * sets.hashes.itemsize + sets.offsets.itemsize
    for name in _STRINGS:
        part = getattr(profiles, name)
        if part is not None:
            out += np.fromiter(map(sys.getsizeof, part), np.int64, len(part))
    return out


class _Arena:
    """The kept documents' profiles in insertion order ("slots"), in growing arrays."""

    def __init__(self, first: DocumentProfiles, max_bytes: int) -> None:
        self.count = 0
        self.lengths = _Growing(np.float64)
        self.bytes = _Growing(np.int64)
        # Each kind's hashes may take up to the whole budget: reserved as address space
        # (at most _RESERVE_BYTES a kind, within what the kernel lends unasked), backed by
        # memory only as profiles are written.
        self.reserve = min(max_bytes, _RESERVE_BYTES) // 8
        self.hashes = {k: _Growing(np.uint64, reserve=self.reserve) for k in first.sets}
        self.offsets = {k: _Growing(np.int64, np.zeros(1, np.int64)) for k in first.sets}
        self.strings: dict[str, list[str] | None] = {
            name: None if getattr(first, name) is None else [] for name in _STRINGS}

    def append(self, profiles: DocumentProfiles) -> np.ndarray:
        """Add ``profiles``' documents; their slots."""
        slots = np.arange(self.count, self.count + len(profiles))
        self.lengths.extend(profiles.lengths)
        self.bytes.extend(_document_bytes(profiles))
        for kind, sets in profiles.sets.items():
            end = self.offsets[kind].view()[-1]
            self.hashes[kind].extend(sets.hashes[sets.offsets[0]:sets.offsets[-1]])
            self.offsets[kind].extend(sets.offsets[1:] - sets.offsets[0] + end)
        for name, part in self.strings.items():
            if part is not None:
                part.extend(getattr(profiles, name))
        self.count += len(profiles)
        return slots

    def profiles(self) -> DocumentProfiles:
        """Every slot's profile (views: later appends and drops leave them as they are)."""
        return DocumentProfiles(
            self.lengths.view(),
            {k: ShingleSets(self.hashes[k].view(), self.offsets[k].view()) for k in self.hashes},
            *(self.strings[name] for name in _STRINGS))

    def drop_oldest(self, k: int) -> None:
        """Forget slots ``0..k-1``; slot ``k`` becomes 0. New arrays, so that profiles
        handed out before stay whole."""
        self.count -= k
        self.lengths = _Growing(np.float64, self.lengths.view()[k:])
        self.bytes = _Growing(np.int64, self.bytes.view()[k:])
        for kind in self.hashes:
            offsets = self.offsets[kind].view()
            self.hashes[kind] = _Growing(np.uint64, self.hashes[kind].view()[offsets[k]:],
                                         self.reserve)
            self.offsets[kind] = _Growing(np.int64, offsets[k:] - offsets[k])
        for name, part in self.strings.items():
            if part is not None:
                self.strings[name] = part[k:]


class ProfileCache:
    """Profiles of documents by corpus position, from one text source at a time.

    Parameters
    ----------
    max_bytes : int, default 64 MiB
        Memory kept (:meth:`DocumentProfiles.nbytes` of the kept documents). Past it, the
        oldest documents are dropped down to half of it.
    """

    def __init__(self, max_bytes: int = 64 << 20) -> None:
        self.max_bytes = check_int("ProfileCache", "max_bytes", max_bytes, low=0)
        self._arena: _Arena | None = None
        self._ids = np.zeros(0, np.int64)  # kept positions, sorted
        self._slots = np.zeros(0, np.int64)  # the slot of each of _ids
        self._bytes = 0
        self._source: Any = None
        self.hits = self.misses = 0

    def clear(self) -> None:
        self._arena = None
        self._ids = self._slots = np.zeros(0, np.int64)
        self._bytes = 0

    def _same_source(self, source: Any) -> bool:
        # A weak reference: a new source object can never pass for a dead one whose
        # positions meant other documents.
        known = None if self._source is None else self._source()
        if source is None or known is not source:
            self.clear()
            self._source = None if source is None else weakref.ref(source)
            return False
        return True

    def profiles(self, ids: np.ndarray, source: Any,
                 compute: Callable[[np.ndarray], DocumentProfiles]) -> DocumentProfiles:
        """Profiles aligned with ``ids`` (distinct corpus positions): kept ones where the
        cache has them from the same ``source`` (any weak-referenceable object that
        stands for the corpus the positions index; None: keep nothing), the others from
        ``compute(where)``, ``where`` being the positions in ``ids`` still missing."""
        found, rows = self.lookup(ids, source, compute)
        return found if np.array_equal(rows, np.arange(len(found))) else found.take(rows)

    def lookup(self, ids: np.ndarray, source: Any,
               compute: Callable[[np.ndarray], DocumentProfiles]) -> tuple[DocumentProfiles, np.ndarray]:
        """:meth:`profiles` without gathering them: profiles holding at least those of
        ``ids`` (the cache's own, which may hold more documents), and the row of each of
        ``ids`` among them. A caller that indexes pairs through the rows copies no
        profile."""
        ids = np.asarray(ids, np.int64)
        self._same_source(source)
        if source is None:  # nothing is kept
            self.misses += ids.size
            return compute(np.arange(ids.size)), np.arange(ids.size)
        rows = np.full(ids.size, -1, np.int64)
        if self._ids.size:
            pos = np.minimum(np.searchsorted(self._ids, ids), self._ids.size - 1)
            hit = self._ids[pos] == ids
            rows[hit] = self._slots[pos[hit]]
        where = np.flatnonzero(rows < 0)
        self.hits += ids.size - where.size
        self.misses += where.size
        if where.size:
            fresh = compute(where)
            if self._arena is None:
                self._arena = _Arena(fresh, self.max_bytes)
            rows[where] = self._remember(ids[where], self._arena.append(fresh))
            self._bytes = int(self._arena.bytes.view().sum())
        found = self._arena.profiles() if self._arena is not None else compute(where)
        if self._bytes > self.max_bytes:
            self._drop_oldest()
        return found, rows

    def _remember(self, ids: np.ndarray, slots: np.ndarray) -> np.ndarray:
        order = np.argsort(ids)
        at = np.searchsorted(self._ids, ids[order])
        self._ids = np.insert(self._ids, at, ids[order])
        self._slots = np.insert(self._slots, at, slots[order])
        return slots

    def _drop_oldest(self) -> None:
        sizes = self._arena.bytes.view()
        # Keep the newest documents whose bytes fit in the low-water mark.
        kept_bytes = np.cumsum(sizes[::-1])[::-1]  # bytes of slots k.. for each k
        k = int(np.searchsorted(-kept_bytes, -int(_LOW_WATER * self.max_bytes)))
        if k >= self._arena.count:
            self.clear()
            return
        self._arena.drop_oldest(k)
        keep = self._slots >= k
        self._ids, self._slots = self._ids[keep], self._slots[keep] - k
        self._bytes = int(self._arena.bytes.view().sum())
