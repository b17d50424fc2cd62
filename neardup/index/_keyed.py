"""The index's part for keyed methods (exact, minhash, simhash; rerank verification over
minhash): postings key -> documents, candidates by the rule of :mod:`neardup.index._link`,
verification by the method's ``score_candidate_rows`` (the corpus stage's Link step).

:class:`KeyedLinker` links an add's documents (and writes their postings), finds a
query's verified matches, removes deleted documents' postings and re-links a cluster
that lost members (by :func:`neardup.engine.link_key_rows`, as ``dedup`` links a bucket).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from neardup.engine import UnionFind, link_key_rows
from neardup.engine.rows import ArrayRows, RowSource
from neardup.index._add import Linked, NewDocuments, identity_edges
from neardup.index._link import keyed_candidates, link_edges, simhash_candidates, unique_edges
from neardup.index._methods import i64
from neardup.index._query import QUERY_BASE, QUERY_FIELDS, Matches
from neardup.index._rerank import IndexTexts, compress_texts
from neardup.index._schema import TEXT_TABLE
from neardup.index._rows import LocalRows, RowLayout, SketchedBatch
from neardup.index._store import (
    delete_postings,
    doc_rows,
    insert_postings,
    insert_texts,
    nearest_payloads,
    postings_of,
    record_big_groups,
    refresh_big_groups,
)
from neardup.methods.base import Sketch

__all__ = ["KeyedLinker"]

def _big_groups_to_record(keys: np.ndarray, docs: np.ndarray, big: dict, rows: np.ndarray,
                         cap: int) -> tuple[list[tuple], list[tuple[int, int, int]]]:
    """What an add's postings (``keys``, ``docs``: int64) do to the big key groups, given
    the lookup of its keys before it (``big``, ``rows``: see
    :func:`~neardup.index._store.postings_of`): the big groups that grow, as (added,
    last, key), and the groups that now exceed ``cap``, as (key, last, count) (for
    :func:`~neardup.index._store.record_big_groups`)."""
    added_keys, added = np.unique(keys, return_counts=True)
    stored_keys, stored = np.unique(rows[:, 0], return_counts=True)
    at = np.searchsorted(stored_keys, added_keys)
    at_ok = at < stored_keys.size
    had = np.zeros(added_keys.size, np.int64)
    match = at_ok.copy()
    match[at_ok] = stored_keys[at[at_ok]] == added_keys[at_ok]
    had[match] = stored[at[match]]
    last = np.full(added_keys.size, np.iinfo(np.int64).min)
    np.maximum.at(last, np.searchsorted(added_keys, keys), docs)
    grow, new = [], []
    for k, c, h, l in zip(added_keys.tolist(), added.tolist(), had.tolist(), last.tolist()):
        if k in big:
            grow.append((c, l, k))
        elif h + c > cap:
            new.append((k, l, h + c))
    return grow, new


class KeyedLinker:
    """Adds, queries and re-links for a keyed method.

    Parameters
    ----------
    method : Method
        The index's method (its keys and candidate rule).
    verifying : Method
        What verifies candidate edges: ``method``, or the rerank method over it.
    scoring : context manager
        Held while ``verifying`` scores (rerank's scorer is one verification at a time).
    layout : RowLayout
        The stored candidate-array rows.
    rerank : dict or None
        The index's rerank configuration (its texts are stored and scored).
    """

    def __init__(self, method: Any, verifying: Any, scoring: AbstractContextManager,
                 layout: RowLayout, rerank: dict[str, Any] | None) -> None:
        self.method, self.verifying, self.scoring = method, verifying, scoring
        self.layout, self.rerank = layout, rerank
        self.text_table = TEXT_TABLE if rerank is not None else None

    @property
    def cap(self) -> int:
        """Stored members above which a key group is 'big' (anchor, last, count kept)."""
        keyed = self.method.capabilities.keyed
        if keyed.links_buckets:  # simhash: a window of fingerprints per key group
            return self.method.max_block_size
        return max(keyed.all_pairs_upto, 1)

    # -- candidates and verification ----------------------------------------------------

    def _candidates(self, con, keys, docs, payload, with_new: bool, lookup_out=None):
        """Candidate edges (stored or new position, new position) for new rows."""
        big, rows = postings_of(con, keys)
        if lookup_out is not None:
            lookup_out.extend((big, rows))
        keyed = self.method.capabilities.keyed
        if not keyed.links_buckets:
            stored: dict[int, np.ndarray] = {}
            if rows.size:
                starts = np.flatnonzero(np.r_[True, rows[1:, 0] != rows[:-1, 0]])
                for s, e in zip(starts.tolist(), np.r_[starts[1:], rows.shape[0]].tolist()):
                    stored[int(rows[s, 0])] = rows[s:e, 2]
            return keyed_candidates(keys, docs, stored, big, keyed.all_pairs_upto,
                                    with_new=with_new)
        groups: dict[int, list[tuple[int, int]]] = {}
        for k, p, d in rows.tolist():
            groups.setdefault(k, []).append((p, d))
        window = self.method.max_block_size
        for k in big:
            # Distinct stored fingerprints near each of the new ones in a big key group.
            groups[k] = [pair for fp in np.unique(i64(payload[keys == k])).tolist()
                         for pair in nearest_payloads(con, k, fp, window)]
        stored_fps = {}
        for k, members in groups.items():
            m = np.array(members, np.int64).reshape(-1, 2)
            fps, first = np.unique(m[:, 0], return_index=True)
            # min doc per fingerprint: rows come ordered by doc within a key
            sdocs = np.array([m[m[:, 0] == f, 1].min() for f in fps], np.int64) \
                if fps.size != m.shape[0] else m[first, 1]
            stored_fps[k] = (fps, sdocs)
        return simhash_candidates(keys, docs, payload, stored_fps)

    def _verifier(self, new_base: int, new_arrays, stored_docs, stored_arrays,
                  texts: IndexTexts | None = None):
        """``verify(left, right) -> (score, accept)`` for edges whose sides are stored
        positions (< new_base, rows of ``stored_arrays`` by ``stored_docs``) or new ones,
        by the verifying method's ``score_candidate_rows`` (rerank's reads ``texts``)."""
        new_count = len(next(iter(new_arrays.values()))) if new_arrays else 0
        # Stored positions (ascending), then the new ones: sorted, as ArrayRows reads them.
        store: RowSource = ArrayRows(
            np.concatenate((stored_docs, new_base + np.arange(new_count))),
            {name: np.concatenate((stored_arrays[name], new_arrays[name]))
             if stored_arrays else new_arrays[name] for name in new_arrays}, texts=texts)

        def verify(left, right):
            if left.size == 0:
                return np.empty(0, np.float32), np.empty(0, bool)
            need = np.unique(np.concatenate((left, right)))
            rows = store.rows(need)
            with self.scoring:
                score, accept = self.verifying.score_candidate_rows(
                    rows, np.searchsorted(need, left), np.searchsorted(need, right))
            return np.asarray(score, np.float32), np.asarray(accept, bool)

        return verify

    def _stored(self, con, docs: np.ndarray):
        rows = doc_rows(con, docs, ("cluster", "id", "arrays")) if docs.size else []
        stored_docs = np.array([r[0] for r in rows], np.int64)
        arrays = self.layout.from_blobs([r[3] for r in rows]) if rows else {}
        return stored_docs, arrays, {r[0]: r[1] for r in rows}, {r[0]: r[2] for r in rows}

    def _texts(self, con, base: int, texts: list[str]) -> IndexTexts | None:
        """What rerank's scorer reads: stored texts, and ``texts`` from ``base`` on."""
        return IndexTexts(con, base, texts, self.rerank["max_chars"]) if self.rerank is not None else None

    # -- add, query, delete ---------------------------------------------------------------

    def add(self, con, new: NewDocuments) -> Linked:
        """Link the new documents to stored and earlier new ones; write their postings
        (and rerank texts)."""
        batch_keys, next_doc = new.batch.keys, new.next_doc
        if batch_keys is None:
            raise ValueError("KeyedLinker.add: a keyed method's batch has candidate keys.")
        local, new_docs = new.local, new.docs
        same = identity_edges(con, new.identity[local], new_docs)
        sketch = new.batch.sketch
        new_arrays = {k: v[local] for k, v in sketch.arrays.items()}
        # The kept documents' key rows, at their index positions.
        kept = new.keep[batch_keys.docs]
        raw_keys = batch_keys.keys[kept]
        raw_payload = None if batch_keys.payload is None else batch_keys.payload[kept]
        keys = i64(raw_keys)
        docs = new.positions[batch_keys.docs[kept]]
        payload = i64(raw_payload) if raw_payload is not None else np.zeros(keys.size, np.int64)
        lookup: list = []
        left, right = self._candidates(con, keys, docs, payload, with_new=True, lookup_out=lookup)
        extra = None
        if self.method.capabilities.keyed.links_buckets and keys.size:
            extra = self.method.link_bucket(raw_keys, docs, raw_payload)  # new among new
        left, right = unique_edges(left, right)
        stored_docs, stored_arrays, cluster_of, stored_ids = self._stored(con, left[left < next_doc])
        for doc, cluster, doc_id in doc_rows(con, same[0][same[0] < next_doc], ("cluster", "id")):
            cluster_of.setdefault(doc, cluster)
            stored_ids.setdefault(doc, doc_id)
        new_texts = self._texts(con, next_doc, [new.texts[i] for i in local.tolist()])
        verify = self._verifier(next_doc, new_arrays, stored_docs, stored_arrays, new_texts)
        linked = same  # identical texts first
        if extra is not None and len(extra):
            linked = tuple(np.concatenate(p) for p in zip(same, (extra.left, extra.right,
                                                                 extra.score.astype(np.float32))))
        if local.size:
            clusters, relabel, (left, right, score) = link_edges(
                new_docs, left, right, cluster_of, verify, linked=linked)
        else:
            clusters, relabel = np.empty(0, np.int64), {}
            left = right = np.empty(0, np.int64)
            score = np.empty(0, np.float32)
        insert_postings(con, keys, payload, docs)
        if keys.size:
            record_big_groups(con, *_big_groups_to_record(keys, docs, *lookup, self.cap))
        if new_texts is not None:
            insert_texts(con, TEXT_TABLE, new_docs,
                         compress_texts(new_texts.new_texts, self.rerank["max_chars"]))
        return Linked(clusters, relabel, left, right, score, stored_ids)

    def query(self, con, batch: SketchedBatch, texts: list[str]) -> Matches:
        """The stored documents that the query texts duplicate, verified in the snapshot
        of ``con`` (rerank's scorer may read stored texts)."""
        ck = batch.keys
        if ck is None:
            raise ValueError("KeyedLinker.query: a keyed method's batch has candidate keys.")
        keys = i64(ck.keys)
        payload = i64(ck.payload) if ck.payload is not None else np.zeros(keys.size, np.int64)
        docs = QUERY_BASE + ck.docs.astype(np.int64)
        left, right = unique_edges(*self._candidates(con, keys, docs, payload, with_new=False))
        rows = doc_rows(con, left, QUERY_FIELDS) if left.size else []
        stored_docs = np.array([r[0] for r in rows], np.int64)
        stored_arrays = self.layout.from_blobs([r[3] for r in rows]) if rows else {}
        verify = self._verifier(QUERY_BASE, batch.sketch.arrays, stored_docs, stored_arrays,
                                self._texts(con, QUERY_BASE, texts))
        score, accept = verify(left, right)
        return Matches(left[accept], right[accept], score[accept], rows, stored_docs)

    def forget(self, con, rows: list[tuple]) -> None:
        """Delete the postings of deleted documents ``rows`` ((doc, id, n_features,
        arrays, cluster)) and re-summarise the big key groups they were in."""
        docs = np.array([r[0] for r in rows], np.int64)
        sketch = Sketch(np.array([r[2] for r in rows], np.int64),
                        self.layout.from_blobs([r[3] for r in rows]))
        ck = self.method.candidate_keys(sketch)
        keys = i64(ck.keys)
        payload = i64(ck.payload) if ck.payload is not None else np.zeros(keys.size, np.int64)
        delete_postings(con, keys, payload, docs[ck.docs])
        refresh_big_groups(con, keys, self.cap)

    def relink(self, con, docs: np.ndarray, n_features: np.ndarray, blobs: list[bytes],
               uf: UnionFind) -> None:
        """Union in ``uf`` (local positions 0..n-1) the cluster members ``docs`` that
        the method links among themselves alone (see :meth:`Index.delete`)."""
        if docs.size < 2:
            return
        arrays = self.layout.from_blobs(blobs)
        ck = self.method.candidate_keys(Sketch(n_features, arrays))
        # Rows by local position; their texts by index position (docs).
        texts = self._texts(con, QUERY_BASE, [])
        with self.scoring:
            link_key_rows(self.verifying, ck.keys, ck.docs.astype(np.int64), ck.payload,
                          LocalRows(arrays, docs, texts), uf)

    # -- maintenance: keyed indexes keep everything in the database ------------------------

    def compact(self, store) -> bool:
        return False

    def problems(self, con) -> list[str]:
        return []

    def counts(self, con) -> dict[str, int]:
        return {}

    def files(self) -> list:
        return []
