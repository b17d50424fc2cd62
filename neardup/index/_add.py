"""The steps of :meth:`Index.add` every method shares: naming the new documents, linking
identical texts, storing the documents and reporting each one's cluster.

What differs by method (finding and verifying candidates, storing postings or vectors) is
the linker's (:class:`~neardup.index._keyed.KeyedLinker`,
:class:`~neardup.index._embedded.VectorLinker`); :func:`add_batch` runs one add in the
caller's write transaction around it.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np

from neardup.engine.facts import identity_pairs
from neardup.errors import InputError, setting
from neardup.index._methods import DuplicateIdError, i64
from neardup.index._results import AddResult
from neardup.index._rows import SketchedBatch
from neardup.index._schema import ensure_identity_column
from neardup.index._store import (
    first_of_identities,
    first_stored_id,
    has_documents,
    has_named_ids,
    insert_documents,
    meta_value,
    next_position,
    present_ids,
    relabel_clusters,
    set_meta_value,
    set_next_position,
)
from neardup.text.identity import text_identity

__all__ = ["Linked", "NewDocuments", "add_batch", "identity_edges"]

#: How an index names its documents (``meta.id_mode``): by the ids given to add, or by
#: their insertion positions ("0", "1", ...). One index never mixes the two, so that a
#: position can never collide with a given id.
_GIVEN, _POSITIONS = "given", "positions"


@dataclass
class NewDocuments:
    """An add's batch and where its documents go."""

    batch: SketchedBatch
    #: The raw texts (rerank verification scores them).
    texts: list[str]
    #: Every batch document's id (given or its position).
    ids: list[str]
    #: Which batch documents are stored (bool, (n,)): not the skipped ones.
    keep: np.ndarray
    #: The first position of this add.
    next_doc: int
    #: The batch's :func:`~neardup.text.identity.text_identity` (uint64, (n,)).
    identity: np.ndarray

    def __post_init__(self) -> None:
        #: Batch rows of the stored documents (int64, (m,)).
        self.local = np.flatnonzero(self.keep)
        #: Each batch document's index position (-1: skipped) (int64, (n,)).
        self.positions = np.full(self.keep.size, -1, np.int64)
        self.positions[self.local] = self.next_doc + np.arange(self.local.size)
        #: The stored documents' positions (int64, (m,)).
        self.docs = self.positions[self.local]


class Linked(NamedTuple):
    """What a linker found for an add."""

    #: Each stored document's cluster (int64, (m,)).
    clusters: np.ndarray
    #: Stored clusters merged into others (old -> new label).
    relabel: dict[int, int]
    #: The verified edges (positions) and their scores.
    left: np.ndarray
    right: np.ndarray
    score: np.ndarray
    #: Ids of the stored documents at the edges' stored ends.
    stored_ids: dict[int, str]


class Linker(Protocol):
    def add(self, con: Any, new: NewDocuments) -> Linked: ...


def add_batch(con: Any, linker: Linker, batch: SketchedBatch, texts: list[str],
              ids: list[str] | None, *, skip_existing: bool, store_text: bool,
              row_blobs: list[bytes]) -> AddResult:
    """One add in the write transaction of ``con``: name the documents, let ``linker``
    link (and store its postings or vectors), store the documents."""
    n = len(batch.sketch)
    next_doc = next_position(con)
    ids, keep = _name_documents(con, ids, n, next_doc, skip_existing)
    ensure_identity_column(con)
    new = NewDocuments(batch, texts, ids, keep, next_doc, text_identity(texts))
    linked = linker.add(con, new)
    relabel_clusters(con, linked.relabel)
    chosen = new.local.tolist()
    stored_texts = [zlib.compress(batch.normalized[i].encode("utf-8", "surrogatepass"))
                    if store_text else None for i in chosen]
    insert_documents(con, zip(
        new.docs.tolist(), [ids[i] for i in chosen], linked.clusters.tolist(),
        batch.sketch.n_features[new.local].tolist(), [batch.digest[i].tobytes() for i in chosen],
        [row_blobs[i] for i in chosen], stored_texts, i64(new.identity[new.local]).tolist()))
    set_next_position(con, next_doc + new.local.size)
    return _result(new, linked)


def _name_documents(con: Any, ids: list[str] | None, n: int, next_doc: int,
                    skip_existing: bool) -> tuple[list[str], np.ndarray]:
    """The batch's ids (positions when none are given) and which documents to store,
    checked against how the index names its documents; records that way on the first
    add."""
    mode = _id_mode(con) if n else None
    given = ids is not None
    if ids is None:
        if mode == _GIVEN:
            raise InputError(
                "Index.add: the documents of this index are named by the ids given "
                f"when they were added (e.g. {first_stored_id(con) or ''!r}), but these "
                "come without ids; their index positions could collide with those "
                f"ids. Give their ids ({setting('id_field', 'ids=[...]')}) too."
            )
        ids = [str(next_doc + i) for i in range(n)]
    elif mode == _POSITIONS:
        raise InputError(
            "Index.add: the documents of this index are named by their index "
            "positions ('0', '1', ...: they were added without ids), but these come "
            "with ids, which could collide with those positions. Add them without "
            f"ids ({setting('id_field=None', 'ids=None')}), or build another index "
            "for documents with ids."
        )
    keep = np.ones(n, bool)
    if n:
        present = present_ids(con, ids)
        if present and not skip_existing:
            some = sorted(present)[:5]
            raise DuplicateIdError(
                f"Index.add: {len(present)} id(s) already in the index (e.g. {some}); "
                f"ids must be unique. Pass {setting('skip_existing', 'skip_existing=True')} "
                "to skip them, e.g. when resuming an interrupted load."
            )
        keep = np.array([i not in present for i in ids], bool)
        if mode is None:  # the first documents name the index's way
            set_meta_value(con, "id_mode", _GIVEN if given else _POSITIONS)
    return ids, keep


def _id_mode(con: Any) -> str | None:
    """How the stored documents are named (see ``_GIVEN``, ``_POSITIONS``): recorded by
    the first add; for an index made before it was recorded, found once from the stored
    ids (None while every stored id is its position, or none is stored)."""
    mode = meta_value(con, "id_mode")
    if mode is not None or not has_documents(con):
        return mode
    return _GIVEN if has_named_ids(con) else None


def identity_edges(con: Any, identity: np.ndarray, new_docs: np.ndarray) -> tuple:
    """Edges (left, right, score 1) that link the new documents to stored and earlier
    new documents of identical texts (``identity``: the new documents'
    :func:`~neardup.text.identity.text_identity`), whatever the method finds: as every
    engine of ``dedup`` links them. Blank texts (identity 0) are never linked."""
    stored = first_of_identities(con, i64(np.unique(identity[identity != 0])))
    # Each new document to the first stored document of its identity, by a sorted lookup.
    known = np.fromiter(sorted(stored), np.int64, len(stored))
    first = np.fromiter((stored[k] for k in known.tolist()), np.int64, known.size)
    signed = i64(identity)
    at = np.searchsorted(known, signed).clip(max=max(known.size - 1, 0))
    found = known[at] == signed if known.size else np.zeros(signed.size, bool)
    among = identity_pairs(identity, new_docs)
    left = np.concatenate((first[at[found]], among.left))
    right = np.concatenate((new_docs[found], among.right))
    return left, right, np.ones(left.size, np.float32)


def _result(new: NewDocuments, linked: Linked) -> AddResult:
    """Each batch document's cluster, status and the earlier document that joined it."""
    n = new.keep.size
    ids, keep, positions = new.ids, new.keep, new.positions
    clusters = np.full(n, -1, np.int64)
    clusters[new.local] = linked.clusters
    best_score = np.full(n, np.nan, np.float32)
    best_of: list[str | None] = [None] * n
    pos_to_input = {int(p): i for i, p in enumerate(positions.tolist()) if p >= 0}
    left, right, score = linked.left, linked.right, linked.score
    for k in np.argsort(-score, kind="stable").tolist():
        # duplicate_of: the earlier document whose verified edge joined it (best first).
        other, me = sorted((int(left[k]), int(right[k])))
        i = pos_to_input.get(me)
        if i is None or best_of[i] is not None:
            continue
        best_of[i] = linked.stored_ids[other] if other < new.next_doc else ids[pos_to_input[other]]
        best_score[i] = score[k]
    n_features = new.batch.sketch.n_features
    status = ["skipped" if not keep[i] else "empty" if n_features[i] == 0
              else "new" if clusters[i] == positions[i] else "joined" for i in range(n)]
    return AddResult(ids, clusters, status, best_of, best_score, merged_clusters=len(linked.relabel))

