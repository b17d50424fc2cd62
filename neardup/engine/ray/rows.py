"""Per-document rows shipped between tasks: which arrays a link task asks the shards
for, the gather task that cuts them out, and :func:`shipped_rows`, which reads them as
the local stage's work-directory store reads its files."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from neardup.engine.buckets import concat_ranges
from neardup.engine.budget import default_memory_limit
from neardup.engine.link import verify_step as corpus_verify_step
from neardup.engine.rows import ArrayRows, TextSource
from neardup.engine.ray.shards import IDENTITY, TEXTS
from neardup.engine.sketching import SET_SIZES, SET_VALUES, SET_WEIGHT_VALUES
from neardup.methods.base import Method
from neardup.text.shingle import ShingleSets


def gathered_names(method: Method, window_hours: float | None) -> tuple[str, ...]:
    """The per-document arrays a link task asks the shards for: the method's verification
    arrays, dates (time window, or a scorer that reads them) and text identities (time
    window), shingle sets (with their element weights), texts."""
    reads = method.capabilities.reads
    return reads.arrays + (
        ("date", IDENTITY) if window_hours is not None else
        ("date",) if reads.dates else ()) + (
        (SET_SIZES, SET_VALUES) if reads.sets else ()) + (
        (SET_WEIGHT_VALUES,) if reads.set_weights else ()) + (
        (TEXTS,) if reads.text_chars is not None else ())


def gather_task(arrays: dict, names: tuple[str, ...], *requests: np.ndarray):
    """The rows of one shard's arrays (``names``; ragged shingle sets, their weights and
    texts included) that each partition asked for."""
    offsets = None
    if SET_SIZES in names:
        offsets = np.zeros(arrays[SET_SIZES].size + 1, np.int64)
        np.cumsum(arrays[SET_SIZES], out=offsets[1:])
    out = []
    for rows in requests:
        got = {name: arrays[name][rows] for name in names
               if name not in (SET_VALUES, SET_WEIGHT_VALUES, TEXTS)}
        if offsets is not None:
            elements = concat_ranges(offsets[rows], got[SET_SIZES])
            got[SET_VALUES] = arrays[SET_VALUES][elements]
            if SET_WEIGHT_VALUES in names:  # aligned with the elements, as the local store's file
                got[SET_WEIGHT_VALUES] = arrays[SET_WEIGHT_VALUES][elements]
        if TEXTS in names:
            got[TEXTS] = arrays[TEXTS].take(pa.array(rows))
        out.append(got)
    return tuple(out) if len(out) != 1 else out[0]



class ShippedTexts(TextSource):
    """Texts of the documents ``docs`` (sorted; UTF-8 bytes in an Arrow column, aligned
    with them), decoded only when read."""

    def __init__(self, docs: np.ndarray, column: pa.Array) -> None:
        self.docs, self.column = docs, column

    def texts(self, docs: np.ndarray) -> list[str]:
        index = np.searchsorted(self.docs, np.asarray(docs, np.int64))
        raw = self.column.take(pa.array(index)).to_pylist()
        return [b.decode("utf-8", "surrogatepass") for b in raw]


def shipped_rows(docs: np.ndarray, rows: Sequence[dict], dates: bool) -> ArrayRows:
    """The rows one link task gathered from the shards (``docs``: sorted positions; one
    dict per shard, as :func:`gather_task` cuts them), read as the local stage's
    work-directory store reads its files: fixed-width arrays, ragged shingle sets (and
    their sizes, for the overlap bound; their element weights when shipped), texts, dates."""
    names = rows[0].keys() if rows else ()
    arrays = {name: np.concatenate([r[name] for r in rows]) for name in names
              if name not in (SET_SIZES, SET_VALUES, SET_WEIGHT_VALUES, TEXTS, "date", IDENTITY)}
    sets = weights = texts = None
    text_bytes = 0
    if SET_SIZES in names:
        sizes = np.concatenate([r[SET_SIZES] for r in rows])
        offsets = np.zeros(sizes.size + 1, np.int64)
        np.cumsum(sizes, out=offsets[1:])
        sets = ShingleSets(np.concatenate([r[SET_VALUES] for r in rows]), offsets)
    if SET_WEIGHT_VALUES in names:
        weights = np.concatenate([r[SET_WEIGHT_VALUES] for r in rows])
    if TEXTS in names:
        column = pa.concat_arrays([r[TEXTS] for r in rows])
        texts, text_bytes = ShippedTexts(docs, column), column.nbytes
    return ArrayRows(docs, arrays, sets=sets, set_weights=weights, texts=texts, text_bytes=text_bytes,
                     dates=np.concatenate([r["date"] for r in rows]) if dates and rows else None)


def shipped_bytes(rows: Sequence[dict]) -> int:
    """Bytes of the rows a link task received from the shards (the gather exchange)."""
    return int(sum(getattr(v, "nbytes", 0) for r in rows for v in r.values()))


def verify_step(options: dict, row_bytes: int) -> int:
    """Edges verified at once by a link task: their two documents' rows (``row_bytes``
    each, as shipped) within a quarter of the memory limit, as the local stage steps."""
    return corpus_verify_step(options["memory_limit"] or default_memory_limit(), row_bytes)
