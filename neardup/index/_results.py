"""What :meth:`Index.add` and :meth:`Index.query` return: arrays, with tables and records."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["AddResult", "BulkResult", "QueryResult"]


@dataclass
class AddResult:
    """What :meth:`Index.add` did to each document, in input order.

    Attributes
    ----------
    ids : list of str
    clusters : ndarray of int64, shape (n,)
        Cluster after the add (-1 for a skipped document).
    status : list of str
        "new" (founded a cluster), "joined" (joined an existing or a new cluster),
        "empty" (no features after normalization: never compared, its own cluster),
        "skipped" (id already in the index, with ``skip_existing``).
    duplicate_of : list of str or None
        An earlier document (stored or in the batch) whose verified match joined it to
        its cluster; None for a founder. Only edges that joined two clusters are verified
        (as in dedup), so this is a duplicate, not necessarily the closest one.
    score : ndarray of float32, shape (n,)
        That match's score (NaN without one).
    merged_clusters : int
        Stored clusters merged into others by this add (a new document bridged them).
    seconds : float
    """

    ids: list[str]
    clusters: np.ndarray
    status: list[str]
    duplicate_of: list[str | None]
    score: np.ndarray
    merged_clusters: int = 0
    seconds: float = 0.0

    def table(self) -> pa.Table:
        return pa.table({
            "id": pa.array(self.ids, pa.string()),
            "cluster": pa.array(self.clusters, pa.int64()),
            "status": pa.array(self.status, pa.string()),
            "duplicate_of": pa.array(self.duplicate_of, pa.string()),
            "score": pa.array(np.where(np.isnan(self.score), None, self.score), pa.float32()),
        })


@dataclass
class BulkResult:
    """What :meth:`Index.bulk_add` did: counts and timings, and optionally the table.

    Attributes
    ----------
    documents, clusters, joined, empty : int
        Documents added; clusters among them; documents that joined another's cluster;
        documents without features (each its own cluster).
    seconds : float
    stage_seconds : dict of str -> float
        sketch, link, postings, documents, indexes, swap.
    table : pyarrow.Table or None
        With ``table=True``: id, cluster, status, duplicate_of, score per document, as
        :meth:`AddResult.table` (duplicate_of: the earlier end of a verified edge that
        joined the document's cluster, when one has the document as its later end).
    """

    documents: int
    clusters: int
    joined: int
    empty: int
    seconds: float
    stage_seconds: dict[str, float]
    table: pa.Table | None = None

    def summary(self) -> dict[str, Any]:
        return {"documents": self.documents, "clusters": self.clusters, "joined": self.joined,
                "empty": self.empty, "seconds": round(self.seconds, 1),
                "stage_seconds": {k: round(v, 1) for k, v in self.stage_seconds.items()}}


@dataclass
class QueryResult:
    """Verified matches of query documents among the stored ones.

    Attributes
    ----------
    query : ndarray of int64, shape (n_matches,)
        Position of the query document in the input.
    query_ids : list of str
        Ids of all query documents (input order).
    match_ids : list of str, length n_matches
    match_clusters : ndarray of int64
    score : ndarray of float32
        Method score (MinHash estimated Jaccard, SimHash 1 - hamming/64, exact 1.0).
    type : list of str
        "exact" (same normalized text) or, with stored texts, Sanderson's types (see
        :func:`neardup.methods.pair_types.classify_pairs`); without stored texts every
        other match is "near".
    """

    query: np.ndarray
    query_ids: list[str]
    match_ids: list[str]
    match_clusters: np.ndarray
    score: np.ndarray
    type: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.query.size)

    def table(self) -> pa.Table:
        return pa.table({
            "query_id": pa.array([self.query_ids[q] for q in self.query.tolist()], pa.string()),
            "match_id": pa.array(self.match_ids, pa.string()),
            "score": pa.array(self.score, pa.float32()),
            "type": pa.array(self.type, pa.string()),
            "cluster": pa.array(self.match_clusters, pa.int64()),
        })

    def records(self) -> list[dict[str, Any]]:
        """One dict per query document: its id and its matches (best first)."""
        out: list[dict[str, Any]] = [{"id": i, "matches": []} for i in self.query_ids]
        for k, q in enumerate(self.query.tolist()):
            out[q]["matches"].append({"id": self.match_ids[k], "score": float(self.score[k]),
                                      "type": self.type[k], "cluster": int(self.match_clusters[k])})
        return out
