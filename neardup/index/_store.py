"""The index's storage: connections, transactions and every query the index runs.

:class:`Store` owns the connections to one index database (see :mod:`neardup.index._schema`
for its tables): one writer, serialized by a lock (and across processes by SQLite's write
lock, ``BEGIN IMMEDIATE``), and one reader per thread, each reading one snapshot per
transaction (WAL). The functions below are the index's queries, each named for what it
reads or writes; they take the connection of the caller's transaction, so that an add,
a delete or a compact stays one transaction however many of them it runs.

Keys, payloads and identities are unsigned 64-bit values stored bit for bit as SQLite's
signed INTEGER: callers pass them through :func:`neardup.index._methods.i64`.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import numpy as np

from neardup.index._schema import TEXT_TABLE, connect, read_meta

__all__ = [
    "append_postings",
    "begin_step",
    "bulk_progress",
    "commit_step",
    "finish_bulk",
    "insert_big_groups",
    "repeated_ids",
    "set_bulk_progress",
    "DOC_FIELDS",
    "Store",
    "cluster_members",
    "cluster_sizes",
    "count_documents",
    "count_rows",
    "delete_documents",
    "delete_postings",
    "doc_rows",
    "documents_by_id",
    "first_of_identities",
    "first_stored_id",
    "has_documents",
    "has_named_ids",
    "id_cluster_rows",
    "insert_documents",
    "insert_postings",
    "insert_texts",
    "integrity_problems",
    "invariant_problems",
    "live_vector_documents",
    "meta_value",
    "nearest_payloads",
    "next_position",
    "optimize",
    "page_counts",
    "postings_of",
    "present_ids",
    "record_big_groups",
    "refresh_big_groups",
    "relabel_clusters",
    "set_clusters",
    "set_meta_value",
    "set_next_position",
    "stored_texts",
    "truncate_log",
    "vacuum",
]


class Store:
    """The connections to the index database in ``path``.

    Parameters
    ----------
    path : str or os.PathLike
        The index directory.
    cache_mib : int
        SQLite page cache per reader connection, MiB (the writer's is at least 256 MiB:
        it walks the postings B-tree on every add).
    """

    def __init__(self, path: str | os.PathLike, cache_mib: int) -> None:
        self.path, self.cache_mib = path, cache_mib
        self.lock = threading.Lock()
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self.writer = self._open_writer()

    def _open_writer(self) -> sqlite3.Connection:
        self._local = threading.local()
        writer = connect(self.path, cache_mib=max(self.cache_mib, 256))
        self._connections.append(writer)
        return writer

    def read_meta(self, where: str) -> dict[str, Any]:
        """The checked ``meta`` table (the writer is closed when it is not an index's)."""
        try:
            return read_meta(self.writer, where, self.path)
        except BaseException:
            self.close()
            raise

    @property
    def is_open(self) -> bool:
        return bool(self._connections)

    def reopen(self) -> None:
        """A new writer after :meth:`close` (e.g. after the database file was swapped)."""
        self.writer = self._open_writer()

    def close(self) -> None:
        """Close every connection (a WAL checkpoint happens on the last close)."""
        for con in self._connections:
            try:
                con.close()
            except Exception:  # already closed, or closing from another thread
                pass
        self._connections.clear()

    def reader(self) -> sqlite3.Connection:
        """This thread's read connection."""
        con = getattr(self._local, "con", None)
        if con is None:
            con = connect(self.path, cache_mib=self.cache_mib)
            self._local.con = con
            self._connections.append(con)
        return con

    def read(self) -> AbstractContextManager[sqlite3.Connection]:
        """A read transaction: every statement inside sees one snapshot."""
        return _transaction(self.reader(), "BEGIN")

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """The write transaction (one at a time: the lock, then SQLite's write lock)."""
        with self.lock, _transaction(self.writer, "BEGIN IMMEDIATE") as con:
            yield con


@contextmanager
def _transaction(con: sqlite3.Connection, begin: str) -> Iterator[sqlite3.Connection]:
    """``begin`` ... COMMIT, rolled back on any exception."""
    con.execute(begin)
    try:
        yield con
    except BaseException:
        # SQLite may have rolled back already (a full disk, an I/O error; ROLLBACK would
        # then fail): the original error is what the caller must see.
        if con.in_transaction:
            try:
                con.execute("ROLLBACK")
            except sqlite3.Error:
                pass
        raise
    con.execute("COMMIT")


# -- meta ----------------------------------------------------------------------------------

def meta_value(con: sqlite3.Connection, name: str, default: Any = None) -> Any:
    row = con.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
    return json.loads(row[0]) if row is not None else default


def set_meta_value(con: sqlite3.Connection, name: str, value: Any) -> None:
    con.execute("INSERT OR REPLACE INTO meta(name, value) VALUES (?, ?)", (name, json.dumps(value)))


def next_position(con: sqlite3.Connection) -> int:
    """The position the next added document gets (positions are never reused)."""
    return meta_value(con, "next_doc")


def set_next_position(con: sqlite3.Connection, position: int) -> None:
    con.execute("UPDATE meta SET value = ? WHERE name = 'next_doc'", (json.dumps(position),))


# -- documents -----------------------------------------------------------------------------

#: The ``docs`` fields :func:`doc_rows` reads, after the position.
DOC_FIELDS = frozenset({"cluster", "id", "n_features", "digest", "arrays", "text"})


def _fill(con: sqlite3.Connection, table: str, column: str, values: Iterable) -> None:
    """A temporary one-column table holding ``values``: a batch's lookup keys, joined
    with CROSS JOIN so that the small table stays outside (one index seek per value)."""
    kind = "TEXT" if column == "id" else "INTEGER"
    con.execute(f"CREATE TEMP TABLE IF NOT EXISTS {table}({column} {kind} PRIMARY KEY)")
    con.execute(f"DELETE FROM {table}")
    con.executemany(f"INSERT OR IGNORE INTO {table}({column}) VALUES (?)", ((v,) for v in values))


def has_documents(con: sqlite3.Connection) -> bool:
    return con.execute("SELECT 1 FROM docs LIMIT 1").fetchone() is not None


def has_named_ids(con: sqlite3.Connection) -> bool:
    """Whether some stored id is not its position (documents added with ids)."""
    return con.execute("SELECT 1 FROM docs WHERE id != CAST(doc AS TEXT) LIMIT 1").fetchone() is not None


def first_stored_id(con: sqlite3.Connection) -> str | None:
    row = con.execute("SELECT id FROM docs ORDER BY doc LIMIT 1").fetchone()
    return row[0] if row else None


def count_documents(con: sqlite3.Connection) -> int:
    return con.execute("SELECT count(*) FROM docs").fetchone()[0]


def present_ids(con: sqlite3.Connection, ids: Sequence[str]) -> set[str]:
    """Those of ``ids`` that are stored."""
    _fill(con, "qi", "id", ids)
    return {r[0] for r in con.execute("SELECT d.id FROM qi CROSS JOIN docs d ON d.id = qi.id")}


def documents_by_id(con: sqlite3.Connection, ids: Sequence[str]) -> list[tuple]:
    """(doc, id, n_features, arrays, cluster) of the stored ones of ``ids``, by position."""
    _fill(con, "qi", "id", ids)
    return con.execute("SELECT d.doc, d.id, d.n_features, d.arrays, d.cluster FROM qi "
                       "CROSS JOIN docs d ON d.id = qi.id ORDER BY d.doc").fetchall()


def doc_rows(con: sqlite3.Connection, docs: np.ndarray, fields: Sequence[str]) -> list[tuple]:
    """(doc, *fields) of the stored ones of positions ``docs``, by position."""
    unknown = set(fields) - DOC_FIELDS
    if unknown:
        raise ValueError(f"doc_rows: unknown fields {sorted(unknown)}; known: {sorted(DOC_FIELDS)}.")
    _fill(con, "qd", "doc", np.unique(docs).tolist())
    columns = ", ".join(f"d.{f}" for f in fields)
    return con.execute(f"SELECT d.doc, {columns} FROM qd CROSS JOIN docs d ON d.doc = qd.doc "
                       "ORDER BY d.doc").fetchall()


def first_of_identities(con: sqlite3.Connection, identities: np.ndarray) -> dict[int, int]:
    """identity -> its first stored position, for the stored ones of ``identities``
    (int64)."""
    found: dict[int, int] = {}
    for start in range(0, identities.size, 500):
        chunk = identities[start:start + 500].tolist()
        marks = ",".join("?" * len(chunk))
        found.update(con.execute(f"SELECT identity, MIN(doc) FROM docs WHERE identity IN ({marks}) "
                                 "GROUP BY identity", chunk).fetchall())
    return found


def insert_documents(con: sqlite3.Connection, rows: Iterable[tuple]) -> None:
    """Insert (doc, id, cluster, n_features, digest, arrays, text, identity) rows."""
    con.executemany(
        "INSERT INTO docs(doc, id, cluster, n_features, digest, arrays, text, identity) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)


def insert_texts(con: sqlite3.Connection, table: str, docs: np.ndarray, blobs: Sequence[bytes]) -> None:
    """Insert each of ``docs``' compressed text into ``table`` (doc, text)."""
    con.executemany(f"INSERT INTO {table}(doc, text) VALUES (?, ?)", zip(docs.tolist(), blobs))


def stored_texts(con: sqlite3.Connection, docs: np.ndarray) -> dict[int, bytes]:
    """doc -> its compressed rerank text, for the stored ones of positions ``docs``."""
    _fill(con, "qr", "doc", np.unique(docs).tolist())
    return dict(con.execute(f"SELECT t.doc, t.text FROM qr CROSS JOIN {TEXT_TABLE} t ON t.doc = qr.doc"))


def relabel_clusters(con: sqlite3.Connection, relabel: dict[int, int]) -> None:
    """Move every member of cluster ``old`` to ``new``, for each old -> new."""
    con.executemany("UPDATE docs SET cluster = ? WHERE cluster = ?",
                    [(new, old) for old, new in sorted(relabel.items())])


def set_clusters(con: sqlite3.Connection, docs: np.ndarray, clusters: np.ndarray) -> None:
    con.executemany("UPDATE docs SET cluster = ? WHERE doc = ?", zip(clusters.tolist(), docs.tolist()))


def delete_documents(con: sqlite3.Connection, docs: np.ndarray, text_table: str | None = None) -> None:
    """Delete the documents at positions ``docs`` (and their rows of ``text_table``)."""
    con.executemany("DELETE FROM docs WHERE doc = ?", ((d,) for d in docs.tolist()))
    if text_table is not None:
        con.executemany(f"DELETE FROM {text_table} WHERE doc = ?", ((d,) for d in docs.tolist()))


def cluster_members(con: sqlite3.Connection, cluster: int) -> list[tuple]:
    """(doc, n_features, arrays) of the cluster's members, by position."""
    return con.execute("SELECT doc, n_features, arrays FROM docs WHERE cluster = ? ORDER BY doc",
                       (cluster,)).fetchall()


def cluster_sizes(con: sqlite3.Connection) -> dict[int, int]:
    return dict(con.execute("SELECT cluster, count(*) FROM docs GROUP BY cluster"))


def id_cluster_rows(con: sqlite3.Connection, batch_size: int) -> Iterator[list[tuple]]:
    """Every document's (id, cluster) by position, in lists of up to ``batch_size``."""
    cursor = con.execute("SELECT id, cluster FROM docs ORDER BY doc")
    while True:
        rows = cursor.fetchmany(batch_size)
        if not rows:
            return
        yield rows


def live_vector_documents(con: sqlite3.Connection) -> np.ndarray:
    """Positions of the stored documents that have a vector (not empty), ascending."""
    return np.array([r[0] for r in con.execute(
        "SELECT doc FROM docs WHERE n_features > 0 ORDER BY doc")], np.int64)


# -- postings and big key groups -----------------------------------------------------------

def postings_of(con: sqlite3.Connection, keys: np.ndarray) -> tuple[dict, np.ndarray]:
    """The stored members of ``keys`` (int64): big groups summarised as key -> (first,
    last, count), the others' postings in full as (key, payload, doc) rows (int64,
    (m, 3)) ordered by key and position."""
    _fill(con, "qk", "key", np.unique(keys).tolist())
    big = {k: (f, l, c) for k, f, l, c in con.execute(
        "SELECT b.key, b.first, b.last, b.count FROM qk CROSS JOIN big b ON b.key = qk.key")}
    rows = con.execute(
        "SELECT p.key, p.payload, p.doc FROM qk CROSS JOIN postings p ON p.key = qk.key "
        "WHERE NOT EXISTS (SELECT 1 FROM big b WHERE b.key = qk.key) "
        "ORDER BY p.key, p.doc").fetchall()
    return big, np.array(rows, dtype=np.int64).reshape(-1, 3)


def nearest_payloads(con: sqlite3.Connection, key: int, payload: int, window: int) -> list[tuple[int, int]]:
    """Up to ``window`` distinct payloads of ``key`` from ``payload`` up and ``window``
    below it, each with its first position (SimHash: the fingerprints near one in a big
    key group)."""
    out = []
    for cmp, order in ((">=", "ASC"), ("<", "DESC")):
        out.extend(con.execute(
            f"SELECT payload, min(doc) FROM (SELECT payload, doc FROM postings "
            f"WHERE key = ? AND payload {cmp} ? ORDER BY payload {order} LIMIT ?) "
            "GROUP BY payload", (key, payload, window)).fetchall())
    return out


def insert_postings(con: sqlite3.Connection, keys: np.ndarray, payload: np.ndarray,
                    docs: np.ndarray) -> None:
    """Insert postings rows (int64 arrays), in key order (B-tree friendly)."""
    order = np.lexsort((docs, payload, keys))
    con.executemany("INSERT INTO postings(key, payload, doc) VALUES (?, ?, ?)",
                    zip(keys[order].tolist(), payload[order].tolist(), docs[order].tolist()))


def delete_postings(con: sqlite3.Connection, keys: np.ndarray, payload: np.ndarray,
                    docs: np.ndarray) -> None:
    con.executemany("DELETE FROM postings WHERE key = ? AND payload = ? AND doc = ?",
                    zip(keys.tolist(), payload.tolist(), docs.tolist()))


def record_big_groups(con: sqlite3.Connection, grow: list[tuple], new: list[tuple[int, int, int]]) -> None:
    """Record an add's changes to the big key groups (after its postings are inserted):
    ``grow`` the big groups that grew, as (added, last, key); ``new`` the groups that
    now exceed the cap, as (key, last, count)."""
    insert = [(k, con.execute("SELECT min(doc) FROM postings WHERE key = ?", (k,)).fetchone()[0], l, c)
              for k, l, c in new]
    con.executemany("UPDATE big SET count = count + ?, last = max(last, ?) WHERE key = ?", grow)
    con.executemany("INSERT INTO big(key, first, last, count) VALUES (?, ?, ?, ?)", insert)


def refresh_big_groups(con: sqlite3.Connection, keys: np.ndarray, cap: int) -> None:
    """Re-summarise the big ones of ``keys`` after postings were deleted (a group at or
    under ``cap`` members is no longer big)."""
    for k in np.unique(keys).tolist():
        if con.execute("SELECT 1 FROM big WHERE key = ?", (k,)).fetchone() is None:
            continue
        first, last, count = con.execute(
            "SELECT min(doc), max(doc), count(*) FROM postings WHERE key = ?", (k,)).fetchone()
        if count <= cap:
            con.execute("DELETE FROM big WHERE key = ?", (k,))
        else:
            con.execute("UPDATE big SET first = ?, last = ?, count = ? WHERE key = ?",
                        (first, last, count, k))


# -- the bulk build's scratch database (neardup.index._bulk) --------------------------------

#: Postings rows per INSERT statement of the bulk load: one statement binding many rows
#: costs much less CPU than one row per statement (measured on 2M sorted rows), the
#: per-statement work of the VM and the Python driver being shared.
_ROWS_PER_INSERT = 256
#: Rows converted to Python ints at once (bounds the transient lists, ~100 B a row).
_INSERT_SLICE = 1 << 17


def append_postings(con: sqlite3.Connection, keys: np.ndarray, payload: np.ndarray | None,
                    docs: np.ndarray) -> None:
    """Append sorted postings rows (key order: each at the B-tree's right edge), many rows
    per statement; ``payload`` None: 0 for every row."""
    k = _ROWS_PER_INSERT
    if payload is None:
        cols, row = (keys, docs), "(?,0,?)"
    else:
        cols, row = (keys, payload, docs), "(?,?,?)"
    many = "INSERT INTO postings(key, payload, doc) VALUES " + ",".join([row] * k)
    one = "INSERT INTO postings(key, payload, doc) VALUES " + row
    n = keys.size
    for start in range(0, n, _INSERT_SLICE):
        stop = min(start + _INSERT_SLICE, n)
        table = np.stack([c[start:stop] for c in cols], axis=1)
        whole = (stop - start) // k * k
        if whole:
            con.executemany(many, map(tuple, table[:whole].reshape(-1, k * len(cols)).tolist()))
        if whole < table.shape[0]:
            con.executemany(one, map(tuple, table[whole:].tolist()))


def insert_big_groups(con: sqlite3.Connection, keys: np.ndarray, first: np.ndarray,
                      last: np.ndarray, count: np.ndarray) -> None:
    con.executemany("INSERT INTO big(key, first, last, count) VALUES (?, ?, ?, ?)",
                    zip(keys.tolist(), first.tolist(), last.tolist(), count.tolist()))


def bulk_progress(con: sqlite3.Connection) -> dict[str, int] | None:
    """The steps a bulk build committed (None: it finished, its meta is written)."""
    if con.execute("SELECT 1 FROM meta LIMIT 1").fetchone() is not None:
        return None
    return dict(con.execute("SELECT name, value FROM _bulk"))


def set_bulk_progress(con: sqlite3.Connection, **values: int) -> None:
    con.executemany("INSERT OR REPLACE INTO _bulk(name, value) VALUES (?, ?)", values.items())


def begin_step(con: sqlite3.Connection) -> None:
    con.execute("BEGIN")


def commit_step(con: sqlite3.Connection) -> None:
    """Commit a bulk build's step and begin the next one's transaction."""
    con.execute("COMMIT")
    con.execute("BEGIN")


def repeated_ids(con: sqlite3.Connection, limit: int = 5) -> list[str]:
    return [r[0] for r in con.execute(
        "SELECT id FROM docs GROUP BY id HAVING count(*) > 1 LIMIT ?", (limit,))]


def finish_bulk(con: sqlite3.Connection, meta: dict[str, Any]) -> None:
    """Write the built index's ``meta``, drop the progress table, commit."""
    con.execute("DELETE FROM meta")
    con.executemany("INSERT INTO meta(name, value) VALUES (?, ?)",
                    [(k, json.dumps(v, sort_keys=True)) for k, v in meta.items()])
    con.execute("DROP TABLE _bulk")
    con.execute("COMMIT")


# -- statistics, checks, compaction --------------------------------------------------------

def count_rows(con: sqlite3.Connection) -> dict[str, int]:
    """Documents, clusters, largest cluster, postings and big key groups."""
    one = lambda sql: con.execute(sql).fetchone()[0]  # noqa: E731
    return {
        "documents": one("SELECT count(*) FROM docs"),
        "clusters": one("SELECT count(*) FROM (SELECT DISTINCT cluster FROM docs)"),
        "largest_cluster": one("SELECT max(c) FROM (SELECT count(*) c FROM docs GROUP BY cluster)") or 0,
        "postings": one("SELECT count(*) FROM postings"),
        "big_key_groups": one("SELECT count(*) FROM big"),
    }


def integrity_problems(con: sqlite3.Connection) -> list[str]:
    """What SQLite's integrity check finds wrong with the database file (up to 20)."""
    found = [r[0] for r in con.execute("PRAGMA integrity_check(20)")]
    return [] if found == ["ok"] else found


def invariant_problems(con: sqlite3.Connection) -> list[str]:
    """What breaks the index's own invariants: postings of documents not stored, the
    next position not above the stored ones."""
    problems = []
    orphans = con.execute("SELECT count(*) FROM postings p WHERE NOT EXISTS "
                          "(SELECT 1 FROM docs d WHERE d.doc = p.doc)").fetchone()[0]
    if orphans:
        problems.append(f"{orphans} posting(s) name documents that are not stored")
    following = next_position(con)
    top = con.execute("SELECT max(doc) FROM docs").fetchone()[0]
    if top is not None and top >= following:
        problems.append(f"the next position ({following}) is not above the stored documents ({top})")
    return problems


def page_counts(con: sqlite3.Connection) -> tuple[int, int, int]:
    """The database's page size, pages and free pages."""
    return tuple(con.execute(f"PRAGMA {name}").fetchone()[0]  # type: ignore[return-value]
                 for name in ("page_size", "page_count", "freelist_count"))


def truncate_log(con: sqlite3.Connection) -> None:
    """Checkpoint the write-ahead log into the database and truncate it."""
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def vacuum(con: sqlite3.Connection) -> None:
    """Rebuild the database file without free pages (one transaction)."""
    con.execute("VACUUM")


def optimize(con: sqlite3.Connection) -> None:
    con.execute("PRAGMA optimize")
