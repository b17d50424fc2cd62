"""Keeping an index sound: :meth:`Index.compact` (merge vector segments, rebuild the
database without free pages) and the damage check of :meth:`Index.stats`."""

from __future__ import annotations

import os
import shutil
import sqlite3
from typing import Any

from neardup import faults
from neardup.index._errors import IndexFormatError, IndexStorageError, database_error, recovery_hint
from neardup.index._store import (
    Store,
    integrity_problems,
    invariant_problems,
    optimize,
    page_counts,
    truncate_log,
    vacuum,
)

__all__ = ["check_index", "compact_index"]


def compact_index(store: Store, linker: Any, path: str | os.PathLike) -> None:
    """Merge the linker's files (vector segments), then checkpoint the write-ahead log
    and rebuild the database (see :meth:`Index.compact`); a failure says what it left."""
    _check_compact_space(store, path)
    merged = False
    try:
        merged = linker.compact(store)
        with store.lock:
            truncate_log(store.writer)
            faults.checkpoint("index-compact-checkpointed")
            vacuum(store.writer)
            faults.checkpoint("index-compact-vacuumed")
            optimize(store.writer)
            truncate_log(store.writer)
    except (sqlite3.Error, OSError) as exc:
        mapped = database_error(exc, path, "Index.compact")
        if mapped is None:
            raise
        left = ("The vector segments were merged into one, but the database was not "
                "rebuilt; its documents are intact." if merged else
                "Nothing was changed: the index is as it was before the compact.")
        raise type(mapped)(f"{mapped} {left}") from exc


def _check_compact_space(store: Store, path: str | os.PathLike) -> None:
    """IndexStorageError unless the index's disk can hold a copy of the live pages."""
    with store.lock:
        page_size, pages, free_pages = page_counts(store.writer)
    needed = (pages - free_pages) * (page_size + 24)  # a WAL frame per live page
    free = shutil.disk_usage(path).free
    if free < needed:
        raise IndexStorageError(
            f"Index.compact: not enough free space beside the index {str(path)!r}: "
            f"{free:,} bytes free, about {needed:,} needed (compacting writes a copy of "
            "the database's live pages). Nothing was changed. Free some space, then run "
            "it again."
        )


def check_index(store: Store, linker: Any, path: str | os.PathLike) -> None:
    """IndexFormatError naming what is damaged and how to recover (see :meth:`Index.stats`):
    SQLite's integrity check, then the index's invariants and the linker's files."""
    problems: list[str] = []
    try:
        with store.read() as con:
            problems = integrity_problems(con)
            if not problems:
                problems = invariant_problems(con) + linker.problems(con)
    except sqlite3.DatabaseError as exc:
        problems.append(str(exc))
    if problems:
        listed = "; ".join(problems[:5]) + ("; ..." if len(problems) > 5 else "")
        raise IndexFormatError(
            f"Index.stats: the index {str(path)!r} is damaged: {listed}. " + recovery_hint(path)
        )
