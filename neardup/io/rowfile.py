"""Random reads of rows from the raw per-document files of a work directory.

The out-of-core stages keep per-document data (signatures, shingle sets) in raw files and
read back the rows of the documents a step verifies: a few thousand scattered rows of a
file that can be many gigabytes. Reading them through a memory map put the file's pages in
the process's resident memory: a fault maps the page-cache folio around the row, and
with large folios (an 8 MB read-ahead, a file just written) 2,048 scattered rows of a
1.9 GB file mapped 1.7 GB (measured on this machine's kernel, 6.18); the 10M bulk index
build peaked at 2.7 GB, 2 GB of it file pages of its row file. ``pread`` copies only the
bytes asked for: resident memory is the rows read, whatever the kernel's folio sizes.
Adjacent rows (copies of a cluster are often neighbours) are read with one call, and so
are fixed-width rows a few kilobytes apart (:data:`GAP_BYTES`).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

__all__ = ["read_rows", "read_spans"]


def read_spans(path: str | os.PathLike, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The bytes ``[starts[i], starts[i] + lengths[i])`` of the file at ``path``,
    concatenated in the order given.

    Parameters
    ----------
    path : path-like
        A regular file.
    starts, lengths : ndarray of int64
        Byte offsets and lengths (lengths >= 0).

    Returns
    -------
    ndarray of uint8
        ``lengths.sum()`` bytes.

    Raises
    ------
    OSError
        When a span reaches past the end of the file (a truncated work directory).
    """
    starts = np.asarray(starts, np.int64)
    lengths = np.asarray(lengths, np.int64)
    keep = lengths > 0
    starts, lengths = starts[keep], lengths[keep]
    if starts.size == 0:
        return np.zeros(0, np.uint8)
    # Spans that continue the previous one become a single read.
    ends = starts + lengths
    first = np.ones(starts.size, bool)
    first[1:] = starts[1:] != ends[:-1]
    run_starts = starts[first]
    run_lengths = np.add.reduceat(lengths, np.flatnonzero(first))
    out = np.empty(int(lengths.sum()), np.uint8)
    view = memoryview(out)
    at_out = np.concatenate(([0], np.cumsum(run_lengths)[:-1])).tolist()
    fd = os.open(path, os.O_RDONLY)
    try:
        for at, n, pos in zip(run_starts.tolist(), run_lengths.tolist(), at_out):
            if os.preadv(fd, [view[pos:pos + n]], at) != n:
                raise OSError(f"{Path(path)}: shorter than the rows asked for (a truncated file?)")
    finally:
        view.release()
        os.close(fd)
    return out


#: Rows at most this many bytes apart are read with one call, the rows between them
#: included: a call costs about as much as copying 16 KB, and a step's rows are often a
#: few rows apart (rerank's signature rows: experiments/rerank_cost/README.md, "Seventh round"). The
#: extra bytes are at most this much per call saved.
GAP_BYTES = 16 << 10


def read_rows(path: str | os.PathLike, rows: np.ndarray, row_bytes: int) -> np.ndarray:
    """Rows ``rows`` of a file of fixed-width ``row_bytes``-byte rows, as a
    ``(len(rows), row_bytes)`` uint8 array (view it as the rows' dtype), in the order
    given (repeats allowed)."""
    rows = np.asarray(rows, np.int64)
    if rows.size == 0:
        return np.zeros((0, row_bytes), np.uint8)
    order = np.argsort(rows, kind="stable")
    ranked = rows[order]
    # Runs of rows close enough to read whole (GAP_BYTES); each run's rows, the gaps
    # included, are whole rows of the buffer read.
    opens = np.ones(ranked.size, bool)
    opens[1:] = np.diff(ranked) > 1 + GAP_BYTES // max(row_bytes, 1)
    run = np.cumsum(opens) - 1
    first = ranked[opens]
    last = np.append(ranked[np.flatnonzero(opens)[1:] - 1], ranked[-1])
    counts = last - first + 1
    before = np.concatenate(([0], np.cumsum(counts)[:-1]))
    data = read_spans(path, first * row_bytes, counts * row_bytes).reshape(-1, row_bytes)
    at = np.empty(rows.size, np.int64)
    at[order] = before[run] + (ranked - first[run])
    return data[at]
