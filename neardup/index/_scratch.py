"""The bulk build's scratch files (:mod:`neardup.index._bulk`), read back by position:
candidate-array rows (in the index's :class:`~neardup.index._rows.RowLayout`, as the
database stores them) and the rerank scorer's compressed texts; and the small JSON state
files of a resumable build."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from neardup.engine.rows import RowSource, TextSource
from neardup.index._rerank import candidate_rows, decompress_text
from neardup.index._rows import RowLayout
from neardup.io.rowfile import read_rows, read_spans
from neardup.methods.base import CandidateRows

__all__ = ["ScratchRows", "ScratchTexts", "read_json", "skip_documents", "write_json"]


class ScratchRows(RowSource):
    """Candidate-array rows in a raw file, read by position with ``pread``
    (:func:`neardup.io.rowfile.read_rows`): resident memory is the rows read. (Through a
    memory map, the page-cache folios around each scattered row counted in the process's
    RSS: 2 GB of the 10M build's 2.7 GB peak.)"""

    def __init__(self, path: Path, layout: RowLayout, texts: ScratchTexts | None = None) -> None:
        self.path, self.layout, self.texts = path, layout, texts

    def raw(self, docs) -> np.ndarray:
        return read_rows(self.path, np.asarray(docs, np.int64), self.layout.row_bytes)

    def rows(self, docs: np.ndarray) -> CandidateRows:
        return candidate_rows(docs, self.layout.unpack(self.raw(docs)), self.texts)


class ScratchTexts(TextSource):
    """The rerank scorer's compressed texts in the scratch (``rerank.bin``, end offsets
    in ``rerank.end``), read by position."""

    def __init__(self, directory: Path) -> None:
        self.data, self.end_path = directory / "rerank.bin", directory / "rerank.end"

    def texts(self, docs: np.ndarray) -> list[str]:
        docs = np.asarray(docs, np.int64)
        # Each document's end offset and the one before it (its start) in one read: 16
        # bytes from the previous document's entry, 8 for the first document (start 0).
        first = docs == 0
        lengths = np.where(first, 8, 16)
        ends = read_spans(self.end_path, np.where(first, 0, (docs - 1) * 8), lengths).view(np.int64)
        last = np.cumsum(lengths // 8) - 1
        stop = ends[last]
        start = np.where(first, 0, ends[last - 1])
        blob = read_spans(self.data, start, stop - start).tobytes()
        cuts = np.concatenate(([0], np.cumsum(stop - start))).tolist()
        return [decompress_text(blob[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]


def skip_documents(batches, skip: int):
    """``batches`` without their first ``skip`` documents (a resumed sketch)."""
    for texts, ids in batches:
        if skip >= len(texts):
            skip -= len(texts)
            continue
        if skip:
            texts = list(texts)[skip:]
            ids = None if ids is None else list(ids)[skip:]
            skip = 0
        yield texts, ids


def write_json(path: Path, value: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, sort_keys=True))
    os.replace(tmp, path)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
