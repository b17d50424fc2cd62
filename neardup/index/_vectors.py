"""Embedding vectors of an index (retsim, biencoder): immutable faiss segment files.

Each add writes its documents' vectors to a new file ``DIR/vectors/seg-*.faiss`` (a faiss
``IndexIDMap2`` over an exact ``IndexFlatIP``, ids = index positions): written under a
temporary name, fsynced and renamed, *inside* the add's SQLite transaction, which also
records the file in the manifest (``meta.vector_segments``). A killed add leaves either
the old manifest (the new file, if any, is an orphan removed by the next writer) or the
new one with its file complete: before or after, never between. Files are never changed;
:meth:`Index.compact` merges them into one (dropping deleted documents) the same way.

Neighbours: faiss inner products select candidates from ``threshold - margin`` up; every
candidate's cosine is then recomputed from the two float32 rows in float64 and kept when
its float32 value is ``>= threshold``: the rule of
:func:`neardup.graph.similarity.similarity_pairs` with the flat index, so a new document
is linked to exactly the stored documents one-shot ``dedup`` (flat search) would link it to.
"""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path

import numpy as np

__all__ = ["VectorSegments", "cosine"]

#: Candidates are taken this far below the threshold (float32 rounding of inner products
#: and row norms within 1e-3 of 1 move a score far less).
_MARGIN = 0.01
_DIR = "vectors"


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine of float32 rows in float64, as float32 (at most 1)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    dot = np.einsum("ij,ij->i", a64, b64)
    norm = np.sqrt(np.einsum("ij,ij->i", a64, a64)) * np.sqrt(np.einsum("ij,ij->i", b64, b64))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.minimum(np.where(norm > 0, dot / norm, 0.0), 1.0).astype(np.float32)


def _faiss():
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - faiss is a core dependency
        raise ImportError("the index's embedding methods need faiss: pip install faiss-cpu") from exc
    return faiss


class VectorSegments:
    """The segment files of one index directory, loaded on demand and cached (they never
    change, so a cached segment is always current)."""

    def __init__(self, directory: Path, dim: int) -> None:
        self.directory = Path(directory) / _DIR
        self.dim = dim
        self._cache: dict[str, tuple[np.ndarray, np.ndarray, object]] = {}
        self._lock = threading.Lock()

    # -- writing (callers hold the index's write lock) ------------------------------------

    def write(self, positions: np.ndarray, vectors: np.ndarray) -> str:
        """A new segment file with these rows; returns its name (for the manifest)."""
        faiss = _faiss()
        self.directory.mkdir(exist_ok=True)
        name = f"seg-{int(positions.min()) if positions.size else 0:012d}-{uuid.uuid4().hex[:8]}.faiss"
        index = faiss.IndexIDMap2(faiss.IndexFlatIP(self.dim))
        if positions.size:
            index.add_with_ids(np.ascontiguousarray(vectors, np.float32),
                               np.ascontiguousarray(positions, np.int64))
        tmp = self.directory / f".{name}.tmp"
        faiss.write_index(index, str(tmp))
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, self.directory / name)
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return name

    def remove_unlisted(self, manifest: list[str], keep: list[str] = ()) -> None:
        """Delete segment files (and temporaries) the manifest does not name: orphans of
        killed adds, or segments a compaction replaced. Call under the write lock."""
        if not self.directory.is_dir():
            return
        wanted = set(manifest) | set(keep)
        for path in self.directory.iterdir():
            if path.name not in wanted:
                path.unlink(missing_ok=True)
                self._cache.pop(path.name, None)

    # -- reading ---------------------------------------------------------------------------

    def load(self, name: str) -> tuple[np.ndarray, np.ndarray, object]:
        """(positions int64, vectors float32 (n, dim), faiss index) of a segment."""
        with self._lock:
            hit = self._cache.get(name)
        if hit is not None:
            return hit
        faiss = _faiss()
        index = faiss.read_index(str(self.directory / name))
        ids = faiss.vector_to_array(index.id_map).astype(np.int64)
        flat = faiss.downcast_index(index.index)
        vectors = faiss.vector_to_array(flat.codes).view(np.float32).reshape(-1, self.dim)
        entry = (ids, vectors, index)
        with self._lock:
            self._cache[name] = entry
        return entry

    def neighbours(self, manifest: list[str], vectors: np.ndarray, threshold: float
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query row, stored position, cosine) for every stored vector with cosine
        ``>= threshold`` to a query row (exact)."""
        rows, docs, scores = [], [], []
        if vectors.shape[0] == 0:
            return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32)
        x = np.ascontiguousarray(vectors, np.float32)
        for name in manifest:
            ids, stored, index = self.load(name)
            if ids.size == 0:
                continue
            lims, _, found = index.range_search(x, float(threshold) - _MARGIN)
            q = np.repeat(np.arange(x.shape[0]), np.diff(lims).astype(np.int64))
            if q.size == 0:
                continue
            at = np.searchsorted(ids, found)  # ids ascend within a segment
            score = cosine(x[q], stored[at])
            keep = score >= np.float32(threshold)
            rows.append(q[keep]), docs.append(found[keep].astype(np.int64)), scores.append(score[keep])
        if not rows:
            return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32)
        return np.concatenate(rows), np.concatenate(docs), np.concatenate(scores)

    def vectors_of(self, manifest: list[str], positions: np.ndarray) -> np.ndarray:
        """Stored vectors of ``positions`` (each must be in a segment), in that order."""
        out = np.zeros((positions.size, self.dim), np.float32)
        for name in manifest:
            ids, stored, _ = self.load(name)
            at = np.searchsorted(ids, positions)
            hit = (at < ids.size) & (ids[np.minimum(at, max(ids.size - 1, 0))] == positions) \
                if ids.size else np.zeros(positions.size, bool)
            out[hit] = stored[at[hit]]
        return out
