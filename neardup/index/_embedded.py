"""The index's part for embedding methods (retsim, biencoder): vectors in faiss segment
files (:mod:`neardup.index._vectors`), linked by exact cosine search within the method's
threshold, as ``dedup`` links them.

:class:`VectorLinker` links an add's documents (and writes their segment), finds a
query's matches, re-links a cluster that lost members, merges segments on compact and
checks that every stored document has its vector.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from neardup import faults
from neardup.engine import UnionFind
from neardup.graph.similarity import similarity_pairs
from neardup.index._add import Linked, NewDocuments, identity_edges
from neardup.index._link import link_edges
from neardup.index._query import QUERY_BASE, QUERY_FIELDS, Matches
from neardup.index._rows import SketchedBatch
from neardup.index._store import Store, doc_rows, live_vector_documents, meta_value, set_meta_value
from neardup.index._vectors import VectorSegments

__all__ = ["VectorLinker", "manifest"]


def manifest(con) -> list[str]:
    """The vector segments of the committed state (``meta.vector_segments``)."""
    return meta_value(con, "vector_segments", [])


class VectorLinker:
    """Adds, queries and re-links for an embedding method.

    Parameters
    ----------
    method : Method
        The index's embedding method (``embedding_key``, ``threshold``).
    segments : VectorSegments
        The index's segment files.
    """

    text_table = None

    def __init__(self, method: Any, segments: VectorSegments) -> None:
        self.method, self.segments = method, segments

    @property
    def threshold(self) -> float:
        return max(float(self.method.threshold), 0.0)  # as the dedup method searches

    def add(self, con, new: NewDocuments) -> Linked:
        """Link each new document to every stored or earlier new document within the
        cosine threshold (exact), then store its vector in a new segment named in the
        manifest within this transaction."""
        sketch, next_doc, local, new_docs = new.batch.sketch, new.next_doc, new.local, new.docs
        vectors = np.asarray(sketch.arrays[self.method.embedding_key], np.float32)[local]
        valid = sketch.n_features[local] > 0  # empty texts have no vector and never pair
        listed = manifest(con)
        self.segments.remove_unlisted(listed)  # orphans of killed adds (we hold the lock)
        q, stored, score = self.segments.neighbours(listed, vectors[valid], self.threshold)
        vq = np.flatnonzero(valid)
        left, right = stored, new_docs[vq[q]]
        if valid.sum() >= 2:
            inner = similarity_pairs(vectors[valid], threshold=self.threshold, index="flat")
            left = np.concatenate((left, new_docs[vq[inner.left]]))
            right = np.concatenate((right, new_docs[vq[inner.right]]))
            score = np.concatenate((score, inner.score.astype(np.float32)))
        # Identical texts first, whatever their vectors say.
        same = identity_edges(con, new.identity[local], new_docs)
        left, right = np.concatenate((same[0], left)), np.concatenate((same[1], right))
        score = np.concatenate((same[2], np.asarray(score, np.float32)))
        # Stored documents deleted since their segment was written are not in docs.
        rows = doc_rows(con, left[left < next_doc], ("cluster", "id")) if left.size else []
        cluster_of = {r[0]: r[1] for r in rows}
        stored_ids = {r[0]: r[2] for r in rows}
        live = (left >= next_doc) | np.isin(left, np.fromiter(cluster_of, np.int64, len(cluster_of)))
        left, right, score = left[live], right[live], score[live]
        if local.size:
            clusters, relabel, (left, right, score) = link_edges(
                new_docs, np.empty(0, np.int64), np.empty(0, np.int64), cluster_of, None,
                linked=(left, right, score.astype(np.float32)))
        else:
            clusters, relabel = np.empty(0, np.int64), {}
        if valid.any():
            name = self.segments.write(new_docs[valid], vectors[valid])
            set_meta_value(con, "vector_segments", listed + [name])
        return Linked(clusters, relabel, left, right, score, stored_ids)

    def query(self, con, batch: SketchedBatch, texts: list[str]) -> Matches:
        """The stored documents within the threshold of each query text."""
        sketch = batch.sketch
        vectors = np.asarray(sketch.arrays[self.method.embedding_key], np.float32)
        valid = np.flatnonzero(sketch.n_features > 0)
        q, stored, score = self.segments.neighbours(manifest(con), vectors[valid], self.threshold)
        rows = doc_rows(con, stored, QUERY_FIELDS) if stored.size else []
        present = np.array([r[0] for r in rows], np.int64)
        live = np.isin(stored, present)
        return Matches(stored[live], QUERY_BASE + valid[q[live]], score[live], rows, present)

    def forget(self, con, rows: list[tuple]) -> None:
        """Nothing: vectors stay in their segment until compact; queries skip deleted
        documents."""

    def relink(self, con, docs: np.ndarray, n_features: np.ndarray, blobs: list[bytes],
               uf: UnionFind) -> None:
        """Union in ``uf`` (local positions) every pair of the members ``docs`` within the
        cosine threshold."""
        valid = np.flatnonzero(n_features > 0)
        if valid.size >= 2:
            x = self.segments.vectors_of(manifest(con), docs[valid])
            pairs = similarity_pairs(x, threshold=self.threshold, index="flat")
            uf.union(valid[pairs.left], valid[pairs.right])

    def compact(self, store: Store) -> bool:
        """One segment with the vectors of the documents still stored, swapped into the
        manifest in one transaction (files written first: before-or-after on a kill).
        Returns whether segments were merged."""
        with store.write() as con:
            listed = manifest(con)
            live = live_vector_documents(con)
            if not listed or (len(listed) == 1
                              and self.segments.load(listed[0])[0].size == live.size):
                return False
            name = self.segments.write(live, self.segments.vectors_of(listed, live))
            set_meta_value(con, "vector_segments", [name])
            faults.checkpoint("index-compact-merged")
        faults.checkpoint("index-compact-swapped")
        # Replaced segments go once the new manifest is committed; a reader still on the
        # old snapshot keeps what it loaded (segments are read whole).
        with store.lock:
            self.segments.remove_unlisted([name])
        return True

    def problems(self, con) -> list[str]:
        """Every listed segment readable, every stored document's vector in one."""
        live = live_vector_documents(con)
        held = []
        for name in manifest(con):
            try:
                held.append(self.segments.load(name)[0])
            except Exception as exc:  # faiss raises RuntimeError on a bad file
                return [f"vector segment {name!r} cannot be read ({str(exc).splitlines()[0]})"]
        have = np.unique(np.concatenate(held)) if held else np.empty(0, np.int64)
        missing = np.setdiff1d(live, have)
        if missing.size:
            return [f"{missing.size} stored document(s) have no vector in the segments "
                    f"(e.g. position {int(missing[0])})"]
        return []

    def counts(self, con) -> dict[str, int]:
        """What :meth:`Index.stats` adds for an embedding index."""
        return {"vector_segments": len(manifest(con))}

    def files(self) -> list:
        """The segment files (for the index's disk size)."""
        directory = self.segments.directory
        return list(directory.iterdir()) if directory.is_dir() else []
