""":meth:`Index.bulk_add` around its builder (:mod:`neardup.index._bulk`): the index
checked empty and held, the new database built and swapped in, the connections reopened,
the result summarised."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from neardup.errors import NeardupError, setting
from neardup.index._bulk import BulkBuilder
from neardup.index._errors import IndexBusyError
from neardup.index._export import bulk_table
from neardup.index._results import BulkResult
from neardup.index._rows import RowLayout, sketch_texts
from neardup.index._schema import replace_empty_database
from neardup.index._store import Store, has_documents

__all__ = ["bulk_load"]


def bulk_load(store: Store, meta: dict[str, Any], method: Any, layout: RowLayout, cap: int,
              batches: Iterable, *, store_text: bool, rerank: Any, scoring: AbstractContextManager,
              table: bool, partitions: int | None, log: Any, progress: bool | None, resume: bool, input_key: Any,
              checkpoint_docs: int, identity: dict[str, Any]) -> tuple[BulkResult, dict[str, Any]]:
    """Build the empty index of ``store`` (its ``meta``; a keyed ``method``, its row
    ``layout`` and big-group ``cap``) from ``batches``; ``rerank``: the verifying rerank
    method or None, used under ``scoring``; the other arguments as :meth:`Index.bulk_add`
    (``identity``: what a resume must match). Returns the result and the index's meta as
    read after the swap."""
    start = time.perf_counter()
    path = store.path
    with store.lock:
        if has_documents(store.writer):
            raise IndexBusyError(
                f"Index.bulk_add: the index {str(path)!r} already holds documents; "
                "the bulk path builds an index from empty. Add to it with "
                f"{setting('add', 'add()')}.")
        builder = BulkBuilder(path, method, layout, meta,
                              lambda texts: sketch_texts(method, "Index.bulk_add", texts),
                              cap, store_text=store_text, partitions=partitions, log=log,
                              progress=progress, rerank=rerank, checkpoint_docs=checkpoint_docs)
        try:
            with scoring:
                built = builder.build(batches, table=table, resume=resume,
                                      identity={**identity, "input": input_key})
            store.close()  # our own connections would block the swap
            t = time.perf_counter()
            if built["n"]:
                replace_empty_database(path, built["path"])
            builder.seconds["swap"] = time.perf_counter() - t
        except (NeardupError, ValueError, sqlite3.IntegrityError):
            builder.cleanup()  # bad input or a busy index: nothing worth resuming
            raise
        else:
            builder.cleanup()
        finally:
            # Other failures (interrupt, full disk) keep the scratch for resume=True.
            if not store.is_open:
                store.reopen()
                meta = store.read_meta("Index.open")
    n, roots, nf = built["n"], built["roots"], built["n_features"]
    joined = int((roots != np.arange(n)).sum())
    empty = int((nf == 0).sum())
    out = BulkResult(n, int((roots == np.arange(n)).sum()), joined, empty,
                     time.perf_counter() - start, builder.seconds)
    if table:
        out.table = bulk_table(built["ids"], roots, nf, *built["forest"])
    return out, meta
