"""What an index gives out as tables: every document's cluster
(:meth:`Index.iter_clusters`, ``neardup index export``) and a bulk add's per-document
table."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from neardup.index._store import cluster_sizes, id_cluster_rows

__all__ = ["bulk_table", "cluster_tables"]


def cluster_tables(con, batch_size: int) -> Iterator[pa.Table]:
    """Every document's ``id``, ``cluster`` and ``cluster_size`` by position, in tables of
    up to ``batch_size`` rows, read in the transaction of ``con`` (one snapshot); one
    empty table for an empty index."""
    sizes = cluster_sizes(con)
    for rows in id_cluster_rows(con, batch_size):
        ids, clusters = zip(*rows)
        yield pa.table({"id": pa.array(ids, pa.string()),
                        "cluster": pa.array(clusters, pa.int64()),
                        "cluster_size": pa.array([sizes[c] for c in clusters], pa.int64())})
    if not sizes:
        yield pa.table({"id": pa.array([], pa.string()), "cluster": pa.array([], pa.int64()),
                        "cluster_size": pa.array([], pa.int64())})


def bulk_table(ids: pa.Array, roots: np.ndarray, n_features: np.ndarray, left: np.ndarray,
               right: np.ndarray, score: np.ndarray) -> pa.Table:
    """The per-document table of a bulk add (as :meth:`AddResult.table`), from Arrow ids."""
    n = roots.size
    positions = np.arange(n)
    status = np.where(n_features == 0, "empty", np.where(roots == positions, "new", "joined"))
    # duplicate_of: as an add reports it, the earlier end of a joining edge, best first.
    lo, hi = np.minimum(left, right), np.maximum(left, right)
    order = np.lexsort((-score, hi))
    lo, hi, sc = lo[order], hi[order], score[order]
    first = np.r_[True, hi[1:] != hi[:-1]] if hi.size else np.empty(0, bool)
    other = np.full(n, -1, np.int64)
    best = np.full(n, np.nan, np.float32)
    other[hi[first]] = lo[first]
    best[hi[first]] = sc[first]
    has = other >= 0
    dup = pc.if_else(pa.array(has), pc.take(ids, pa.array(np.where(has, other, 0))),
                     pa.scalar(None, pa.string())) if n else pa.array([], pa.string())
    return pa.table({
        "id": ids,
        "cluster": pa.array(roots, pa.int64()),
        "status": pa.array(status, pa.string()),
        "duplicate_of": dup,
        "score": pa.array(best, pa.float32(), mask=np.isnan(best)),
    })
