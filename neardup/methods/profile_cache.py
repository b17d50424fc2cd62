"""Document profiles kept between a verifier's batches, by corpus position.

The corpus stage hands rerank's verifier its candidate edges in steps and batches, and a
document meets partners in many of them (its bucket's copies, its story's variants): on
held-out news each document's texts were normalized, shingled and sorted 3-5 times. A
:class:`ProfileCache` keeps the :class:`~neardup.methods.pair_features.DocumentProfiles`
of recent batches, up to a byte budget, oldest batch dropped first, so that each document
is profiled about once while it keeps meeting partners. Profiles depend on the document's
text only, so a kept one gives the features exactly as a fresh one would.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from neardup.errors import check_int
from neardup.methods.pair_features import DocumentProfiles

__all__ = ["ProfileCache"]


class ProfileCache:
    """Profiles of documents by corpus position, from one text source at a time.

    Parameters
    ----------
    max_bytes : int, default 64 MiB
        Memory kept (:meth:`DocumentProfiles.nbytes`); the oldest batches are dropped
        beyond it, and a batch larger than it is not kept.
    """

    def __init__(self, max_bytes: int = 64 << 20) -> None:
        self.max_bytes = check_int("ProfileCache", "max_bytes", max_bytes, low=0)
        self._batches: deque[tuple[np.ndarray, DocumentProfiles, int]] = deque()
        self._bytes = 0
        self._source: Any = None
        self.hits = self.misses = 0

    def clear(self) -> None:
        self._batches.clear()
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
        return found if np.array_equal(rows, np.arange(rows.size)) else found.take(np.argsort(rows))

    def lookup(self, ids: np.ndarray, source: Any,
               compute: Callable[[np.ndarray], DocumentProfiles]) -> tuple[DocumentProfiles, np.ndarray]:
        """:meth:`profiles` without aligning them: the profiles in the order they were
        found, and the row of each of ``ids`` among them. Aligning would copy every
        shingle set of the batch once more: a caller that indexes pairs through the rows
        saves it."""
        ids = np.asarray(ids, np.int64)
        self._same_source(source)
        missing = np.ones(ids.size, bool)
        parts: list[DocumentProfiles] = []
        order: list[np.ndarray] = []
        for known, kept, _ in self._batches:
            pos = np.minimum(np.searchsorted(known, ids), known.size - 1)
            hit = missing & (known[pos] == ids)
            if hit.any():
                parts.append(kept.take(pos[hit]))
                order.append(np.flatnonzero(hit))
                missing &= ~hit
        where = np.flatnonzero(missing)
        self.hits += ids.size - where.size
        self.misses += where.size
        if where.size:
            fresh = compute(where)
            parts.append(fresh)
            order.append(where)
            if source is not None:
                self._keep(ids[where], fresh)
        found = parts[0] if len(parts) == 1 else DocumentProfiles.concat(parts)
        rows = np.empty(ids.size, np.int64)
        rows[np.concatenate(order)] = np.arange(ids.size)
        return found, rows

    def _keep(self, ids: np.ndarray, profiles: DocumentProfiles) -> None:
        size = profiles.nbytes()
        if size > self.max_bytes:
            return
        order = np.argsort(ids)
        self._batches.append((ids[order], profiles.take(order), size))
        self._bytes += size
        while self._bytes > self.max_bytes:
            self._bytes -= self._batches.popleft()[2]
