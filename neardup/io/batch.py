"""The unit every reader yields and every per-batch stage consumes."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

__all__ = ["DocumentBatch", "look_ahead"]


@dataclass
class DocumentBatch:
    """A batch of documents from one input file, in input order.

    Attributes
    ----------
    ids : list of str, length n
        Document ids (from ``id_field``, NEWID for Reuters, relative path for .txt
        directories, or the global row number as a string when no id field is given).
    texts : list of str, length n
        Raw document texts (not normalized).
    dates : ndarray of datetime64[s], shape (n,), or None
        Parsed dates (NaT where missing); None when no date field was requested and the
        format has no native date.
    source : str
        The path the batch was read from.
    rows : ndarray of int64, shape (n,)
        Row (record) number of each document within ``source``, counting from 0.
    """

    ids: list[str]
    texts: list[str]
    dates: np.ndarray | None
    source: str
    rows: np.ndarray

    def __len__(self) -> int:
        return len(self.texts)


def look_ahead(batches: Iterable[DocumentBatch], docs: int
               ) -> tuple[list[DocumentBatch], Iterator[DocumentBatch]]:
    """The first batches holding at least ``docs`` documents (or all of them), and an
    iterator over every batch from the first: a look at the start of a stream that is
    read only once."""
    batches = iter(batches)
    head: list[DocumentBatch] = []
    seen = 0
    for batch in batches:
        head.append(batch)
        seen += len(batch)
        if seen >= docs:
            break
    return head, itertools.chain(head, batches)
