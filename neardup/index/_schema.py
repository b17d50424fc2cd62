"""The index's database file: its schema, creation, opening and replacement.

SQLite gives what the index needs without a server: a transaction is atomic and durable
(a process killed in the middle of an add leaves the database as it was before it), one
writer at a time (``BEGIN IMMEDIATE`` takes the write lock at the start), and readers that
see a consistent snapshot while a writer runs (WAL: a reader keeps the database as of its
``BEGIN`` until it ends). Arrays are stored as BLOBs of fixed width, never pickled.

Layout (``DIR/index.sqlite``)::

    meta(name TEXT PRIMARY KEY, value TEXT)        format, version, method, params, ...
    docs(doc INTEGER PRIMARY KEY,                   insertion position (never reused)
         id TEXT (unique index), cluster INTEGER,   cluster = position of its founder
         n_features INTEGER, digest BLOB(16),       normalized-text digest (exact pairs)
         arrays BLOB, text BLOB)                    candidate arrays row; zlib text or NULL
    postings(key, payload, doc) WITHOUT ROWID       key -> documents (payload: SimHash
                                                    fingerprint, 0 for other methods)
    big(key PRIMARY KEY, first, last, count)        keys with more than the method's
                                                    bucket cap members (see _link.py)

With rerank verification on (_rerank.py), ``rerank_text(doc INTEGER PRIMARY KEY, text
BLOB)`` holds each document's raw text cut to the scorer's ``max_chars``, zstd.

Embedding methods keep no postings: their vectors are faiss files ``DIR/vectors/seg-*``
named by ``meta.vector_segments`` (see _vectors.py), written and recorded inside the add's
transaction. A bulk add (_bulk.py) builds a whole new database file and swaps it in.

Keys and payloads are unsigned 64-bit values stored bit for bit as SQLite's signed
INTEGER. Every query the index runs on it is in :mod:`neardup.index._store`.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from neardup.errors import setting
from neardup.index._errors import (
    DATABASE_FILE,
    IndexBusyError,
    IndexFormatError,
    database_error,
    database_path,
    recovery_hint,
)

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "TEXT_SCHEMA",
    "TEXT_TABLE",
    "connect",
    "create_database",
    "create_indexes",
    "create_tables",
    "ensure_identity_column",
    "open_bulk_database",
    "read_meta",
    "release_bulk_database",
    "replace_empty_database",
]

FORMAT = "neardup-index"
FORMAT_VERSION = 1

_SCHEMA = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE docs (
    doc INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    cluster INTEGER NOT NULL,
    n_features INTEGER NOT NULL,
    digest BLOB NOT NULL,
    arrays BLOB NOT NULL,
    text BLOB,
    identity INTEGER
);
CREATE TABLE postings (
    key INTEGER NOT NULL,
    payload INTEGER NOT NULL,
    doc INTEGER NOT NULL,
    PRIMARY KEY (key, payload, doc)
) WITHOUT ROWID;
CREATE TABLE big (
    key INTEGER PRIMARY KEY,
    first INTEGER NOT NULL,
    last INTEGER NOT NULL,
    count INTEGER NOT NULL
);
"""
# Secondary indexes apart from the tables: a bulk build creates them after the load (one
# sort each instead of a random B-tree insert per row). Indexes made by an older create
# (an inline UNIQUE on docs.id) serve the same lookups.
#: Rerank verification's texts (neardup.index._rerank): each document's raw text cut to
#: the scorer's max_chars, compressed. Made only when rerank verification is on.
TEXT_TABLE = "rerank_text"
TEXT_SCHEMA = f"CREATE TABLE IF NOT EXISTS {TEXT_TABLE} (doc INTEGER PRIMARY KEY, text BLOB NOT NULL)"
_INDEXES = """
CREATE UNIQUE INDEX IF NOT EXISTS docs_id ON docs(id);
CREATE INDEX IF NOT EXISTS docs_cluster ON docs(cluster);
CREATE INDEX IF NOT EXISTS docs_identity ON docs(identity);
"""
_TABLES = {"meta", "docs", "postings", "big"}

def create_database(directory: str | os.PathLike, meta: dict[str, Any],
                    extra_tables: tuple[str, ...] = ()) -> Path:
    """Create ``DIR/index.sqlite`` with the schema and ``meta``; atomic: the database is
    built under a temporary name and renamed into place, so a killed create leaves no
    half-made index."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise IndexFormatError(f"Index.create: {str(directory)!r} exists and is not a directory.")
    made = not directory.exists()
    if not made:
        _remove_killed_creates(directory)
        if any(directory.iterdir()):
            raise IndexFormatError(
                f"Index.create: directory {str(directory)!r} is not empty; give a new or empty "
                "directory."
            )
    tmp = directory / f"{_CREATING}{os.getpid()}"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        tmp.unlink(missing_ok=True)
        con = sqlite3.connect(tmp, isolation_level=None)
        try:
            create_tables(con, extra_tables)
            create_indexes(con)
            con.execute("BEGIN")
            con.executemany(
                "INSERT INTO meta(name, value) VALUES (?, ?)",
                [(k, json.dumps(v, sort_keys=True)) for k, v in meta.items()],
            )
            con.execute("COMMIT")
            con.execute("PRAGMA journal_mode=WAL")
        finally:
            con.close()
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, database_path(directory))
    except BaseException as exc:
        # Nothing half-made is left: the next create in this directory must not find it
        # "not empty".
        for leftover in (tmp, Path(f"{tmp}-journal"), Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            leftover.unlink(missing_ok=True)
        if made:
            shutil.rmtree(directory, ignore_errors=True)
        mapped = database_error(exc, directory, "Index.create") \
            if isinstance(exc, (sqlite3.Error, OSError)) else None
        if mapped is not None:
            raise type(mapped)(f"{mapped} No index was created.") from exc
        raise
    return database_path(directory)


_CREATING = f".{DATABASE_FILE}.tmp-"


def _remove_killed_creates(directory: Path) -> None:
    """Delete the temporary databases of creates killed in ``directory``."""
    from neardup.io.outputs import process_alive

    for path in directory.iterdir():
        if path.name.startswith(_CREATING):
            pid = path.name[len(_CREATING):].split("-")[0]
            if pid.isdigit() and not process_alive(int(pid)):
                path.unlink(missing_ok=True)


def create_tables(con: sqlite3.Connection, extra_tables: tuple[str, ...] = ()) -> None:
    """The index's tables and ``extra_tables`` (CREATE statements), without their
    secondary indexes (:func:`create_indexes`)."""
    con.executescript(_SCHEMA)
    for statement in extra_tables:
        con.execute(statement)


def ensure_identity_column(con: sqlite3.Connection) -> None:
    """Give an index made before documents carried their text identity the column (NULL
    for the documents already stored: they are linked to identical texts by their method
    only) and its index, inside the caller's write transaction."""
    columns = {row[1] for row in con.execute("PRAGMA table_info(docs)")}
    if "identity" not in columns:
        con.execute("ALTER TABLE docs ADD COLUMN identity INTEGER")
        con.execute("CREATE INDEX IF NOT EXISTS docs_identity ON docs(identity)")


def create_indexes(con: sqlite3.Connection) -> None:
    """The secondary indexes (inside the caller's transaction: not executescript, which
    commits first)."""
    for statement in filter(str.strip, _INDEXES.split(";")):
        con.execute(statement)


def replace_empty_database(directory: str | os.PathLike, built: Path) -> None:
    """Move the database file ``built`` into place of the index in ``directory``, which
    must hold no documents and be open nowhere else.

    Atomic for readers of the directory: ``os.replace`` swaps whole files. The old file
    is first switched out of WAL mode, which SQLite refuses while any other connection
    is open (so a running server or add is detected, not corrupted), and held under an
    exclusive lock until the swap, so nothing writes to it in between. A process killed
    before the swap leaves the old, empty index (in rollback-journal mode, which
    :func:`connect` turns back to WAL).
    """
    path = database_path(directory)
    con = sqlite3.connect(path, isolation_level=None, timeout=0)
    try:
        try:
            mode = con.execute("PRAGMA journal_mode=DELETE").fetchone()[0]
            con.execute("BEGIN EXCLUSIVE")
        except sqlite3.OperationalError as exc:
            raise IndexBusyError(
                f"Index.bulk_add: the index {str(directory)!r} is open in another process "
                f"or connection ({exc}); a bulk add replaces the database file and needs "
                "exclusive use: stop the server or other adds, or add without --bulk."
            ) from exc
        if mode != "delete":
            raise IndexBusyError(f"Index.bulk_add: cannot take exclusive use of {str(path)!r}.")
        if con.execute("SELECT 1 FROM docs LIMIT 1").fetchone() is not None:
            raise IndexBusyError(
                f"Index.bulk_add: documents were added to {str(directory)!r} during the bulk "
                "add; nothing was changed. Run it again on an empty index."
            )
        with open(built, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(built, path)
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)  # the rename itself survives a power cut
        finally:
            os.close(fd)
        con.execute("COMMIT")
    finally:
        con.close()


def connect(directory: str | os.PathLike, *, cache_mib: int = 64) -> sqlite3.Connection:
    """A connection to the index in ``directory`` (autocommit; transactions explicit),
    after checking that it is a neardup index this version can read."""
    path = database_path(directory)
    if not Path(directory).is_dir():
        raise IndexFormatError(
            f"Index.open: {str(directory)!r} is not a directory; create an index with "
            f"{setting('create', 'Index.create(DIR, method)')}."
        )
    if not path.is_file():
        raise IndexFormatError(
            f"Index.open: {str(directory)!r} is not a neardup index (no {DATABASE_FILE}); create one "
            f"with {setting('create', 'Index.create(DIR, method)')}."
        )
    con = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=60.0)
    try:
        con.execute(f"PRAGMA cache_size=-{cache_mib * 1024}")
        con.execute("PRAGMA synchronous=FULL")  # an acknowledged add survives a power cut
        con.execute("PRAGMA busy_timeout=60000")
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as exc:
        con.close()
        mapped = database_error(exc, directory, "Index.open")
        if isinstance(mapped, IndexFormatError) or mapped is None:
            raise IndexFormatError(
                f"Index.open: {str(path)!r} is not a readable neardup index database ({exc}); "
                "the index is damaged or the file is foreign. " + recovery_hint(directory)
            ) from exc
        raise mapped from exc
    if not _TABLES <= tables:
        con.close()
        raise IndexFormatError(
            f"Index.open: {str(path)!r} is a SQLite database but not a neardup index (tables "
            f"{sorted(tables)}, expected {sorted(_TABLES)})."
        )
    try:
        if con.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            # Left in rollback-journal mode by a bulk add killed just before its swap.
            con.execute("PRAGMA journal_mode=WAL")
    except sqlite3.Error as exc:
        con.close()
        raise (database_error(exc, directory, "Index.open") or exc) from exc
    return con


def read_meta(con: sqlite3.Connection, where: str,
              directory: str | os.PathLike | None = None) -> dict[str, Any]:
    """The ``meta`` table as a dict, checked for this format and version."""
    try:
        meta = {name: json.loads(value) for name, value in con.execute("SELECT name, value FROM meta")}
    except (sqlite3.DatabaseError, ValueError) as exc:
        raise IndexFormatError(
            f"{where}: the index metadata cannot be read ({exc}); the index is damaged. "
            + recovery_hint(directory if directory is not None else "DIR")
        ) from exc
    if meta.get("format") != FORMAT:
        raise IndexFormatError(
            f"{where}: the database is not a neardup index (format {meta.get('format')!r})."
        )
    if meta.get("version") != FORMAT_VERSION:
        raise IndexFormatError(
            f"{where}: index format version {meta.get('version')!r} is not supported by this "
            f"neardup (it reads version {FORMAT_VERSION}); use the neardup that wrote it."
        )
    return meta


#: The bulk build's progress: the steps its scratch database committed.
_PROGRESS_SCHEMA = "CREATE TABLE _bulk (name TEXT PRIMARY KEY, value INTEGER NOT NULL)"


def open_bulk_database(path: Path, extra_tables: tuple[str, ...] = ()) -> sqlite3.Connection:
    """The bulk build's new database ``path`` (autocommit), made with the index's tables,
    ``extra_tables`` and the progress table when it does not exist (made whole under
    another name: a resumed build finds all tables).

    Nothing reads this file before the swap: no fsync per commit (the file is fsynced once
    before the swap), a large cache for the sorts. A rollback journal: a killed process
    leaves it, and the next open rolls the interrupted transaction back, so a resumed build
    starts from a commit."""
    if not path.exists():
        fresh = path.with_name(path.name + ".new")
        fresh.unlink(missing_ok=True)
        con = sqlite3.connect(fresh, isolation_level=None)
        try:
            create_tables(con, (*extra_tables, _PROGRESS_SCHEMA))
        finally:
            con.close()
        os.replace(fresh, path)
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("PRAGMA journal_mode=DELETE")
        con.execute("PRAGMA synchronous=OFF")
        con.execute("PRAGMA locking_mode=EXCLUSIVE")
        con.execute(f"PRAGMA cache_size=-{256 * 1024}")
    except BaseException:
        con.close()
        raise
    return con


def release_bulk_database(con: sqlite3.Connection) -> None:
    """Leave the built database as an index is kept (shared locking, WAL)."""
    con.execute("PRAGMA locking_mode=NORMAL")
    con.execute("PRAGMA journal_mode=WAL")
