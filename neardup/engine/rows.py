"""Where the Link step reads its documents' rows: the :class:`RowSource` protocol, the
:class:`TextSource` protocol under it, and the in-memory source every executor shares.

A verifier never asks where rows live. It calls ``source.rows(docs)`` and gets the
:class:`~neardup.methods.base.CandidateRows` its method declares it reads
(``capabilities.reads``: arrays, shingle sets, texts, dates), aligned with ``docs``.
The sources differ only in storage:

- :class:`ArrayRows`: arrays held in memory (the index's add and query, and what Ray
  ships each link task, see :func:`neardup.engine.ray.rows.shipped_rows`);
- ``engine.stores.ArrayStore``: the sketch step's spill, read with ``pread``;
- ``engine.vectors.PairScoring``: texts and dates of the vector stage's candidates;
- ``index._scratch.ScratchRows``: the bulk build's raw row file;
- ``index._rows.LocalRows``: rows read from the index's SQLite tables.

The vector stage's faiss search reads whole shards of embedding rows instead, through
:class:`VectorShards` (``read(start, stop)``): the work directory's row file
(``engine.vectors._VectorFile``) or Ray's object store (``engine.ray.vectors._VectorObjects``).

Texts are read through a :class:`TextSource` (``texts(docs) -> list of str``) and
handed to the scorer as :class:`LazyTexts`: only the texts it takes are read and
become Python strings. Implementations subclass the protocols explicitly, so
``RowSource.__subclasses__()`` lists them (the contract test checks it covers each).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from neardup.engine.buckets import concat_ranges
from neardup.methods.base import CandidateRows
from neardup.text.shingle import ShingleSets

__all__ = ["ArrayRows", "LazyTexts", "RowSource", "TextSource", "VectorShards"]


class TextSource(Protocol):
    """Raw texts by document."""

    def texts(self, docs: np.ndarray) -> list[str]:
        """The texts of ``docs`` in the order asked (any order, repeats allowed)."""
        ...


class RowSource(Protocol):
    """Per-document rows for verification."""

    #: Whether the rows carry shingle sets; then :meth:`set_sizes` gives their sizes,
    #: which the set-overlap bound reads before any set is merged.
    holds_sets: bool = False

    def rows(self, docs: np.ndarray) -> CandidateRows:
        """What the method reads of ``docs`` (any order, repeats allowed), aligned with them."""
        ...

    def set_sizes(self, docs: np.ndarray) -> np.ndarray:
        """Shingle-set sizes of ``docs`` (only when :attr:`holds_sets`)."""
        raise TypeError(f"{type(self).__name__} holds no shingle sets")


class VectorShards(Protocol):
    """Embedding rows read a shard (a range of rows) at a time, for the faiss search."""

    def read(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``start..stop-1`` as float32 (n, dim) and their float64 norms."""
        ...


class LazyTexts:
    """``CandidateRows.texts`` of documents ``docs``, read from ``source`` only when
    taken (``take(positions) -> list of str``, positions into ``docs``)."""

    def __init__(self, source: TextSource, docs: np.ndarray) -> None:
        self.source, self.docs = source, np.asarray(docs, np.int64)

    def __len__(self) -> int:
        return int(self.docs.shape[0])

    def take(self, positions) -> list[str]:
        return self.source.texts(self.docs[np.asarray(positions, np.int64)])


class ArrayRows(RowSource):
    """Rows held in memory for the documents ``docs`` (sorted, unique): fixed-width
    ``arrays`` and optionally shingle ``sets`` (with ``set_weights``), ``texts`` (a
    :class:`TextSource` over the same documents) and ``dates``, all aligned with ``docs``.
    Only rows of ``docs`` may be asked for."""

    def __init__(self, docs: np.ndarray, arrays: dict[str, np.ndarray], *,
                 sets: ShingleSets | None = None, set_weights: np.ndarray | None = None,
                 texts: TextSource | None = None, dates: np.ndarray | None = None,
                 text_bytes: int = 0) -> None:
        self.docs, self.arrays = np.asarray(docs, np.int64), arrays
        self.sets, self.set_weights, self.texts, self.dates = sets, set_weights, texts, dates
        held = sum(a.nbytes for a in arrays.values()) + text_bytes
        if sets is not None:
            held += sets.hashes.nbytes
        if set_weights is not None:
            held += set_weights.nbytes
        #: Mean bytes per document held (to size the steps whose rows are read).
        self.row_bytes = held // max(self.docs.size, 1)

    def rows(self, docs: np.ndarray) -> CandidateRows:
        docs = np.asarray(docs, np.int64)
        index = np.searchsorted(self.docs, docs)
        out = CandidateRows(docs, {name: values[index] for name, values in self.arrays.items()})
        if self.sets is not None:
            starts, sizes = self.sets.offsets[index], self.set_sizes(docs)
            offsets = np.zeros(docs.size + 1, np.int64)
            np.cumsum(sizes, out=offsets[1:])
            elements = concat_ranges(starts, sizes)
            out.sets = ShingleSets(self.sets.hashes[elements], offsets)
            if self.set_weights is not None:
                out.set_weights = self.set_weights[elements]
        if self.texts is not None:
            out.texts = LazyTexts(self.texts, docs)
        if self.dates is not None:
            out.dates = self.dates[index].view("datetime64[s]")
        return out

    @property
    def holds_sets(self) -> bool:  # type: ignore[override]
        return self.sets is not None

    def set_sizes(self, docs: np.ndarray) -> np.ndarray:
        """Shingle-set sizes of ``docs``."""
        index = np.searchsorted(self.docs, np.asarray(docs, np.int64))
        return self.sets.offsets[index + 1] - self.sets.offsets[index]
