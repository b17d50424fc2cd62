"""The index's errors, and what a storage failure means for the user.

SQLite and the operating system report failures by code (SQLITE_FULL, ENOSPC, ...);
:func:`database_error` turns them into the neardup error a user can act on (a damaged
database, a full or read-only disk, a lock held elsewhere) and :func:`storage_errors`
applies it to an :class:`~neardup.index.Index` operation, adding what the failure left.
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

from neardup.errors import NeardupError, setting

__all__ = [
    "DATABASE_FILE",
    "IndexBusyError",
    "IndexFormatError",
    "IndexMismatchError",
    "IndexStorageError",
    "database_error",
    "database_path",
    "recovery_hint",
    "storage_errors",
]

#: The index's database file in its directory.
DATABASE_FILE = "index.sqlite"


class IndexFormatError(NeardupError):
    """The directory is not a neardup index, or its database is damaged."""


class IndexBusyError(NeardupError):
    """The index is in use elsewhere, or changed, when an operation needed it alone."""


class IndexMismatchError(NeardupError, ValueError):
    """A method or parameters other than the index's were asked for."""


class IndexStorageError(NeardupError):
    """The index's files could not be written or read: the disk is full, read-only or
    failing. What was committed before stays committed (each operation is one
    transaction, or one per batch for an add)."""


def recovery_hint(directory: str | os.PathLike) -> str:
    """How to recover a damaged index (said by every message about damage)."""
    return (
        f"To recover: restore the directory {str(directory)!r} from a backup, or rebuild "
        "it: create a new index with the same method and parameters (`neardup index "
        "create NEW --method M ...`) and add the corpus to it again. A damaged index "
        "cannot be repaired in place; `neardup index stats DIR --check` tells whether an "
        "index is sound."
    )


# SQLite primary result codes (the low byte of an extended code).
_SQLITE_PERM, _SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY = 3, 5, 6, 8
_SQLITE_IOERR, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_CANTOPEN = 10, 11, 13, 14
_SQLITE_NOTADB = 26
_FULL_ERRNOS = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


def _sqlite_code(exc: BaseException) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return int(code) & 0xFF
    text = str(exc).lower()  # Python < 3.11: the message is all there is
    for needle, value in (("malformed", _SQLITE_CORRUPT), ("not a database", _SQLITE_NOTADB),
                          ("disk is full", _SQLITE_FULL), ("disk i/o error", _SQLITE_IOERR),
                          ("locked", _SQLITE_BUSY), ("readonly", _SQLITE_READONLY)):
        if needle in text:
            return value
    return None


def _disk_nearly_full(directory: str) -> bool:
    """Whether the disk holding ``directory`` has less room than a copy of its database
    (what a write may need at most, a compact) or 64 MB; True when it cannot tell."""
    try:
        free = shutil.disk_usage(directory).free
        size = database_path(directory).stat().st_size
    except OSError:
        return True
    return free < max(size, 64 << 20)


def _fails_integrity_check(directory: str) -> bool:
    """Whether SQLite's own check finds the database damaged (read only; an error path,
    so its full pass over the file is affordable)."""
    try:
        con = sqlite3.connect(f"file:{database_path(directory)}?mode=ro", uri=True)
        try:
            return con.execute("PRAGMA quick_check(1)").fetchone()[0] != "ok"
        finally:
            con.close()
    except sqlite3.DatabaseError:
        return True
    except (sqlite3.Error, OSError):
        return False


def database_error(exc: BaseException, directory: str | os.PathLike, where: str) -> NeardupError | None:
    """The neardup error for a storage failure ``exc`` (a ``sqlite3.Error`` or an
    ``OSError`` on the index's files) in ``where``; None when ``exc`` is not one.

    A damaged database gives :class:`IndexFormatError` with the recovery hint; a full,
    read-only or failing disk :class:`IndexStorageError`; a lock held elsewhere
    :class:`IndexBusyError`. Messages say what failed, never how SQLite names it in
    Python."""
    directory = str(directory)
    if isinstance(exc, OSError):
        if exc.errno in _FULL_ERRNOS:
            return IndexStorageError(
                f"{where}: the disk holding the index {directory!r} is full "
                f"({exc.strerror or exc}). Free some space, then run the command again."
            )
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return IndexStorageError(
                f"{where}: cannot write the index {directory!r} ({exc.strerror or exc}); the "
                "file system is read-only or you lack permission."
            )
        if exc.errno == errno.EIO:
            return IndexStorageError(
                f"{where}: a disk I/O error on the index {directory!r} ({exc.strerror or exc})."
            )
        return None
    if not isinstance(exc, sqlite3.Error):
        return None
    code = _sqlite_code(exc)
    path = str(database_path(directory))
    if code in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return IndexFormatError(
            f"{where}: the index database {path!r} is damaged ({exc}). "
            + recovery_hint(directory)
        )
    if code == _SQLITE_FULL and not _disk_nearly_full(directory) and _fails_integrity_check(directory):
        # SQLite also says "full" when damaged pages claim more pages than may exist.
        return IndexFormatError(
            f"{where}: the index database {path!r} is damaged (SQLite reported it full, and "
            "its integrity check fails). " + recovery_hint(directory)
        )
    if code == _SQLITE_FULL:
        return IndexStorageError(
            f"{where}: the disk holding the index {directory!r} is full ({exc}). Free some "
            "space, then run the command again."
        )
    if code in (_SQLITE_BUSY, _SQLITE_LOCKED):
        return IndexBusyError(
            f"{where}: the index {directory!r} is locked by another process ({exc}); wait "
            "for it to finish (a server or another add), then run the command again."
        )
    if code in (_SQLITE_READONLY, _SQLITE_PERM, _SQLITE_CANTOPEN):
        return IndexStorageError(
            f"{where}: cannot write the index {directory!r} ({exc}); the file system is "
            "read-only or you lack permission on its files."
        )
    if code == _SQLITE_IOERR:
        return IndexStorageError(
            f"{where}: a disk I/O error on the index {directory!r} ({exc}); the disk may be "
            "full or failing. Free some space or check the disk, then check the index with "
            f"{setting('check', 'Index(DIR).stats(check=True)')}."
        )
    return IndexStorageError(f"{where}: the index database {path!r} failed ({exc}).")


def database_path(directory: str | os.PathLike) -> Path:
    return Path(directory) / DATABASE_FILE


def storage_errors(where: str, after: str | Callable[[], str] = ""):
    """Method decorator: SQLite and disk failures become neardup errors (a damaged
    database IndexFormatError with the recovery hint, a full or failing disk
    IndexStorageError, a lock IndexBusyError), with ``after`` appended: what the failure
    left (e.g. that the operation's transaction was rolled back). The decorated method's
    object has a ``path``: the index directory."""

    def decorate(function):
        @functools.wraps(function)
        def wrapper(self, *args, **kwargs):
            try:
                return function(self, *args, **kwargs)
            except (sqlite3.Error, OSError) as exc:
                mapped = database_error(exc, self.path, where)
                if mapped is None:
                    raise
                left = after() if callable(after) else after
                if left:
                    mapped = type(mapped)(f"{mapped} {left}")
                    mapped.left = left  # type: ignore[attr-defined]  # a front end with its own account may drop it
                raise mapped from exc

        return wrapper

    return decorate
