"""What :meth:`Index.query` shares across methods: the matches a linker finds
(:class:`Matches`) and the best ``top_k`` of them per query document, typed by
Sanderson's duplicate types when the index stores texts."""

from __future__ import annotations

import zlib
from typing import NamedTuple

import numpy as np

from neardup.graph.edges import Pairs
from neardup.index._results import QueryResult
from neardup.index._rows import SketchedBatch

__all__ = ["QUERY_BASE", "QUERY_FIELDS", "Matches", "query_result"]

#: Query documents' positions start here, above every stored position.
QUERY_BASE = 1 << 62
#: What a query reads of each stored match (after its position).
QUERY_FIELDS = ("cluster", "id", "arrays", "digest", "text")


class Matches(NamedTuple):
    """A query's verified matches: stored position ``left``, query row + QUERY_BASE
    ``right``, ``score``; ``rows`` the matched stored documents (doc, *QUERY_FIELDS) by
    position, ``stored_docs`` their positions."""

    left: np.ndarray
    right: np.ndarray
    score: np.ndarray
    rows: list[tuple]
    stored_docs: np.ndarray


def query_result(matches: Matches, batch: SketchedBatch, query_ids: list[str], top_k: int,
                 store_text: bool) -> QueryResult:
    """The ``top_k`` best of ``matches`` per query document (score, then stored position),
    with their ids, clusters and types."""
    rows = matches.rows
    query = matches.right - QUERY_BASE
    order = np.lexsort((matches.left, -matches.score, query))
    left, query, score = matches.left[order], query[order], matches.score[order]
    rank = np.arange(query.size) - np.searchsorted(query, query)
    keep = rank < top_k
    left, query, score = left[keep], query[keep], score[keep]
    at = np.searchsorted(matches.stored_docs, left)
    types = _types(query, at, rows, batch, store_text)
    return QueryResult(query, query_ids, [rows[i][2] for i in at.tolist()],
                       np.array([rows[i][1] for i in at.tolist()], np.int64), score, types)


def _types(query: np.ndarray, at: np.ndarray, rows: list[tuple], batch: SketchedBatch,
           store_text: bool) -> list[str]:
    """Each match's type: "exact" (same normalized text) or "near", or with stored texts
    Sanderson's types (:func:`neardup.methods.pair_types.classify_pairs`)."""
    if query.size == 0:
        return []
    digest, normalized = batch.digest, batch.normalized
    same = np.array([rows[a][4] == digest[q].tobytes() for q, a in zip(query.tolist(), at.tolist())])
    if not store_text:
        return np.where(same, "exact", "near").tolist()
    from neardup.methods.pair_types import classify_pairs

    texts: dict[int, str] = {}
    for q in np.unique(query).tolist():
        texts[q] = normalized[q]
    offset = len(normalized)
    for a in np.unique(at).tolist():
        blob = rows[a][5]
        texts[offset + a] = zlib.decompress(blob).decode("utf-8", "surrogatepass") if blob else ""
    pairs = Pairs(query.astype(np.int64), offset + at.astype(np.int64), np.ones(query.size))
    return classify_pairs(pairs, texts, time_window_hours=None).tolist()
