""":meth:`Index.delete`: remove documents by id and re-link the clusters they leave.

A cluster that lost a member is re-linked from its remaining members alone, by the
linker's rule (:meth:`KeyedLinker.relink`, :meth:`VectorLinker.relink`); each resulting
component is labelled by its earliest member.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from neardup import faults
from neardup.engine import UnionFind
from neardup.index._store import cluster_members, delete_documents, documents_by_id, set_clusters

__all__ = ["delete_documents_by_id"]


def delete_documents_by_id(con, linker: Any, ids: list[str], *, split: bool) -> dict[str, Any]:
    """Delete the stored ones of ``ids`` in the write transaction of ``con`` (see
    :meth:`Index.delete` for the result)."""
    split_info = {"split_clusters": 0, "new_clusters": 0}
    rows = documents_by_id(con, ids)
    found = {r[1] for r in rows}
    if rows:
        linker.forget(con, rows)
        delete_documents(con, np.array([r[0] for r in rows], np.int64), linker.text_table)
        faults.checkpoint("index-delete-removed")
        if split:
            split_info = _relink(con, linker, sorted({r[4] for r in rows}))
        faults.checkpoint("index-delete-split")
    return {"deleted": len(rows), "missing": [i for i in ids if i not in found], **split_info}


def _relink(con, linker: Any, clusters: list[int]) -> dict[str, int]:
    """Re-link each of ``clusters`` from its remaining members."""
    relinked = new = 0
    for cluster in clusters:
        members = cluster_members(con, cluster)
        if not members:
            continue
        relinked += 1
        docs = np.array([r[0] for r in members], np.int64)
        uf = UnionFind(docs.size)  # local positions: same order as index positions
        linker.relink(con, docs, np.array([r[1] for r in members], np.int64),
                      [r[2] for r in members], uf)
        labels = docs[uf.roots()]
        new += int(np.unique(labels).size) - 1
        changed = labels != cluster
        set_clusters(con, docs[changed], labels[changed])
    return {"split_clusters": relinked, "new_clusters": new}
