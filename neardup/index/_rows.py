"""What the index keeps of each document's sketch, and how a batch of texts becomes it.

A keyed method verifies candidates with fixed-width arrays (MinHash signature, SimHash
fingerprint, exact digest). The index stores them as one row of bytes per document, the
arrays' bytes side by side in :class:`RowLayout` order: in the ``docs.arrays`` BLOB of
the database (:mod:`neardup.index._store`) and in the bulk build's scratch row file
(:mod:`neardup.index._bulk`). One layout, recorded in the index's ``meta.layout``, packs
and unpacks both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from neardup.engine.rows import RowSource
from neardup.engine.sketching import sketch_batch
from neardup.errors import InputError
from neardup.index._methods import serial_if_small, split_rows
from neardup.index._rerank import IndexTexts, candidate_rows
from neardup.methods.base import CandidateKeys, CandidateRows, Sketch
from neardup.text.normalize import NormalizeConfig, normalize_batch

__all__ = ["LocalRows", "RowLayout", "SketchedBatch", "sketch_texts", "text_digests"]


class RowLayout:
    """The candidate arrays of a document as one row of bytes.

    Parameters
    ----------
    fields : sequence of (name, dtype, tail)
        Each array's name, dtype and per-document shape, in row order (``meta.layout``;
        empty for embedding methods, whose vectors live in segment files).
    """

    def __init__(self, fields: Sequence[tuple[str, Any, Sequence[int]]]) -> None:
        self.fields = [(name, np.dtype(dtype), tuple(tail)) for name, dtype, tail in fields]
        #: Bytes per document row.
        self.row_bytes = sum(d.itemsize * int(np.prod(t or (1,))) for _, d, t in self.fields)

    def pack(self, sketch: Sketch) -> np.ndarray:
        """Each document's candidate arrays as one row (uint8, shape (n, row_bytes))."""
        parts = [np.ascontiguousarray(sketch.arrays[name], dtype=dtype).reshape(len(sketch), -1)
                 .view(np.uint8) for name, dtype, _ in self.fields]
        return np.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]

    def blobs(self, sketch: Sketch) -> list[bytes]:
        """Each document's row as bytes (the ``docs.arrays`` values)."""
        if not self.fields:
            return [b""] * len(sketch)
        return [r.tobytes() for r in self.pack(sketch)]

    def unpack(self, raw: np.ndarray) -> dict[str, np.ndarray]:
        """The candidate arrays of rows ``raw`` (uint8, shape (n, row_bytes))."""
        return split_rows(raw, self.fields)

    def from_blobs(self, blobs: Sequence[bytes]) -> dict[str, np.ndarray]:
        """The candidate arrays of stored rows (``docs.arrays`` values)."""
        raw = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), self.row_bytes)
        return self.unpack(raw)


class SketchedBatch(NamedTuple):
    """A batch of texts as the index sees it."""

    #: The method's sketch of each text.
    sketch: Sketch
    #: Candidate-key rows (keyed methods; None for embedding methods).
    keys: CandidateKeys | None
    #: 128-bit digests of the normalized texts (uint64, shape (n, 2)).
    digest: np.ndarray
    #: The normalized texts.
    normalized: list[str]


def sketch_texts(method: Any, caller: str, texts: Sequence[str]) -> SketchedBatch:
    """The batch's sketch and candidate keys (the sketch step every keyed executor runs:
    :func:`~neardup.engine.sketching.sketch_batch`), the digests of its normalized texts
    and the normalized texts; InputError (naming ``caller``) unless ``texts`` is a
    sequence of strings."""
    if isinstance(texts, (str, bytes)):
        raise InputError(f"{caller}: pass a sequence of texts, not a single string.")
    texts = list(texts)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise InputError(
                f"{caller}: text {i} must be a string; got {type(t).__name__}: {t!r:.60}."
            )
    with serial_if_small(len(texts)):
        sketch, keys = sketch_batch(method, texts)
        normalized = normalize_batch(texts, method.normalize or NormalizeConfig())
        return SketchedBatch(sketch, keys, text_digests(normalized), normalized)


def text_digests(normalized: list[str]) -> np.ndarray:
    """128-bit digests of normalized texts (uint64, shape (n, 2)): equal -> exact copy."""
    from neardup.methods.exact import ExactHash

    return ExactHash(seed=0).digest_normalized(normalized)


class LocalRows(RowSource):
    """One cluster's candidate arrays (read from the index's SQLite tables) by local
    position 0..n-1, and their texts by the index positions ``positions`` (the local
    positions' index positions), for :func:`neardup.engine.link_key_rows`."""

    def __init__(self, arrays: dict[str, np.ndarray], positions: np.ndarray,
                 texts: IndexTexts | None = None) -> None:
        self.arrays, self.positions, self.texts = arrays, positions, texts

    def rows(self, docs: np.ndarray) -> CandidateRows:
        docs = np.asarray(docs, np.int64)
        return candidate_rows(docs, {k: v[docs] for k, v in self.arrays.items()}, self.texts,
                              self.positions[docs])
