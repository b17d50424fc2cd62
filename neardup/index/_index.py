"""A persistent, incremental near-duplicate index: :class:`Index`.

An index stores, per document, its id, its cluster, the arrays its method verifies
candidates with (MinHash signature, SimHash fingerprint, exact digest) and the postings
key -> documents (LSH band keys, SimHash block keys, digests), in one SQLite database
(:mod:`neardup.index._schema`, every query in :mod:`neardup.index._store`). The class is
the front door: it validates, holds the connections and the transactions, and delegates
each operation to the module that does it:

- adding: :mod:`neardup.index._add` (shared steps) with the method's linker,
  :class:`~neardup.index._keyed.KeyedLinker` (postings, candidates by the rule of
  :mod:`neardup.index._link`, the Link step's verification) or
  :class:`~neardup.index._embedded.VectorLinker` (faiss segments); a whole corpus at once
  by :mod:`neardup.index._bulk`;
- querying: the linker's matches, ranked by :mod:`neardup.index._query`;
- deleting and re-linking: :mod:`neardup.index._remove`;
- exporting: :mod:`neardup.index._export`.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pyarrow as pa

from neardup import faults
from neardup.errors import InputError, check_int, setting
from neardup.index._add import add_batch
from neardup.index._bulk_add import bulk_load
from neardup.index._create import create_index
from neardup.index._embedded import VectorLinker
from neardup.index._errors import (
    IndexFormatError,
    IndexMismatchError,
    database_error,
    database_path,
    storage_errors,
)
from neardup.index._export import cluster_tables
from neardup.index._keyed import KeyedLinker
from neardup.index._maintain import check_index, compact_index
from neardup.index._methods import (
    check_ids,
    index_plan,
    method_from_params,
    params_json,
)
from neardup.index._query import query_result
from neardup.index._remove import delete_documents_by_id
from neardup.index._rerank import (
    describe_rerank,
    recorded_config,
    rerank_config,
    rerank_method,
)
from neardup.index._results import AddResult, BulkResult, QueryResult
from neardup.index._rows import RowLayout, sketch_texts
from neardup.index._store import (
    Store,
    count_documents,
    count_rows,
    next_position,
)
from neardup.index._vectors import VectorSegments
from neardup.methods import make_method
from neardup.methods.base import Method

__all__ = ["Index"]

_UNSET: Any = object()


class Index:
    """A persistent near-duplicate index in a directory (``Index.create``, ``Index(path)``).

    Parameters
    ----------
    path : str or os.PathLike
        A directory made by :meth:`create`.
    method : str or Method, optional
        When given, must equal the index's method and parameters (IndexMismatchError
        otherwise): guards a caller that assumes a configuration.
    cache_mib : int, default 64
        SQLite page cache per connection, MiB.
    rerank : None, str or dict, optional
        When given, must equal the index's rerank verification (see :meth:`create`;
        None: the index must have none), IndexMismatchError otherwise.

    Notes
    -----
    Thread-safe: queries from many threads run concurrently, each on its own connection
    and snapshot; adds and deletes are serialized by a lock (and across processes by
    SQLite's write lock). Every add, delete and compact is one transaction.

    Examples
    --------
    >>> import tempfile, neardup
    >>> d = tempfile.mkdtemp() + "/idx"
    >>> with neardup.Index.create(d, "exact") as index:
    ...     r = index.add(["Hello, world!", "something else"], ids=["a", "b"])
    ...     q = index.query(["hello world"])
    >>> q.match_ids
    ['a']
    """

    def __init__(self, path: str | os.PathLike, *, method: str | Method | None = None,
                 cache_mib: int = 64, rerank: Any = _UNSET, **params: Any) -> None:
        self.path = Path(path)
        self.cache_mib = check_int("Index", "cache_mib", cache_mib, low=1)
        self._store = Store(self.path, self.cache_mib)
        self.meta = meta = self._store.read_meta("Index.open")
        try:
            # Any: the index reads method-specific attributes (embedding_key, max_block_size,
            # threshold) that the Method contract does not declare.
            self.method: Any = method_from_params(meta["method"], meta["params"])
        except (KeyError, TypeError, ValueError) as exc:
            raise IndexFormatError(
                f"Index.open: the index records a method it cannot rebuild ({exc}); it was "
                "written by another neardup or is corrupted."
            ) from exc
        self.store_text = bool(meta.get("store_text", False))
        self.rerank = recorded_config(meta.get("rerank"))
        # What verifies candidate edges: the method, or with rerank verification the
        # rerank method over it, as dedup --method rerank verifies them.
        self._verifying: Any = rerank_method(self.rerank, self.method) if self.rerank else self.method
        # The rerank scorer keeps document profiles between its batches, by position in
        # one text source: one verification at a time, or concurrent queries would mix
        # their documents' profiles.
        self._scoring: Any = threading.Lock() if self.rerank else nullcontext()
        self._layout = RowLayout(meta["layout"])
        self.embedding = index_plan(self.method).stage == "vector"
        # The method-specific part of every operation.
        self._linker: Any = (
            VectorLinker(self.method, VectorSegments(self.path, int(meta["dim"])))
            if self.embedding else
            KeyedLinker(self.method, self._verifying, self._scoring, self._layout, self.rerank))
        if rerank is not _UNSET:
            self.check_rerank(rerank)
        if method is not None:
            self.check_method(method, **params)
        elif params:
            raise IndexMismatchError(
                f"Index: parameters {sorted(params)} given without 'method'; pass method= too."
            )

    # -- creation and identity -----------------------------------------------------------

    @classmethod
    def create(cls, path: str | os.PathLike, method: str | Method = "minhash", *,
               store_text: bool = False, rerank: Any = None, **params: Any) -> Index:
        """Create an empty index in ``path`` (a new or empty directory).

        Parameters
        ----------
        path : str or os.PathLike
        method : {"exact", "minhash", "simhash"} or a Method, default "minhash"
        store_text : bool, default False
            Also store each document's normalized text (zlib), so that queries type
            matches with Sanderson's duplicate types (exact, expanded, corrected,
            template, near); without it a match is "exact" (same normalized text) or
            "near". Costs about the corpus's compressed size on disk.
        rerank : None, "verifier", "cross-encoder" or dict, default None
            Rerank verification (minhash only): candidates are verified by ``dedup
            --method rerank``'s own verification over the index's MinHash: every
            candidate the method accepts is also scored by the pair classifier and kept
            only if its duplicate probability reaches the threshold (the edge's score is
            then that probability) and the template guard lets it. A dict gives
            ``scorer``, ``model`` (default the shipped one), ``threshold`` (default the one
            tuned on validation for the model with MinHash candidates), ``max_chars``
            (default 20,000) and ``template_guard`` (default True). The index then also
            stores each document's raw text (cut to ``max_chars``; zstd) for the scorer.
            See :mod:`neardup.index._rerank`.
        **params
            Method parameters (e.g. ``threshold=0.5, num_perm=128``).
        """
        create_index(path, method, store_text=store_text, rerank=rerank, params=params)
        return cls(path)

    def check_method(self, method: str | Method, **params: Any) -> None:
        """Raise IndexMismatchError unless ``method`` (with ``params``) is the index's."""
        other = method if isinstance(method, Method) else make_method(method, **params)
        if other.name != self.method.name or params_json(other) != params_json(self.method):
            mine = json.loads(params_json(self.method))
            theirs = json.loads(params_json(other))
            diff = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
            raise IndexMismatchError(
                f"Index: this index was built with method {self.method.name!r} "
                f"{params_json(self.method)}; got {other.name!r} {params_json(other)}"
                + (f" (differs in {', '.join(diff)})" if diff else "")
                + ". Query and add with the index's own method (omit the method options), or "
                "build another index."
            )

    def check_rerank(self, rerank: Any) -> None:
        """Raise IndexMismatchError unless ``rerank`` (None, a scorer name or a dict, as
        for :meth:`create`; unset keys take their defaults) is the index's rerank
        verification."""
        mine = self.rerank
        # The guard left unset is the index's own (an index built before it has none).
        theirs = rerank_config(rerank, template_guard=True if mine is None else mine["template_guard"])
        if (theirs is None) != (mine is None) or (
                theirs is not None and {k: v for k, v in theirs.items()} != mine):
            raise IndexMismatchError(
                f"Index: this index was built with {describe_rerank(mine)}; got "
                f"{describe_rerank(theirs)}. Query and add with the index's own (omit "
                f"{setting('rerank', 'rerank=')}), or build another index.")

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Close every connection (a WAL checkpoint happens on the last close)."""
        self._store.close()

    # -- add -----------------------------------------------------------------------------

    @storage_errors("Index.add", "Nothing of this add was stored (it is one transaction); "
                                 "earlier adds are intact.")
    def add(self, texts: Sequence[str], ids: Sequence[str] | None = None, *,
            skip_existing: bool = False) -> AddResult:
        """Add documents in one transaction and give each its cluster.

        Parameters
        ----------
        texts : sequence of str
        ids : sequence of str (or int) or None, default None
            Unique ids (not already in the index); None: their index positions as strings.
            An index names its documents one way: an index that holds documents added
            with ids refuses an add without them, and one whose documents are named by
            position refuses ids (either could collide with the other). None in ``ids``
            is refused.
        skip_existing : bool, default False
            Skip documents whose id is already in the index (to resume an interrupted
            load) instead of raising. Needs ``ids``: positions are new for every add, so
            nothing would be skipped.

        Returns
        -------
        AddResult
        """
        start = time.perf_counter()
        if not isinstance(texts, (str, bytes)):
            texts = list(texts)
        if ids is not None:
            ids = check_ids("Index.add", ids, None if isinstance(texts, (str, bytes)) else len(texts))
        elif skip_existing:
            raise InputError(
                f"Index.add: {setting('skip_existing', 'skip_existing=True')} skips documents "
                "whose id is already in the index, but documents added without ids are named "
                "by new index positions, so none would be skipped (an interrupted add would "
                f"be stored twice). Give ids ({setting('id_field', 'ids=[...]')}) to resume an add."
            )
        batch = sketch_texts(self.method, "Index.add", texts)
        n = len(batch.sketch)
        if ids is not None and len(set(ids)) != n:
            seen: set[str] = set()
            dup = next(i for i in ids if i in seen or seen.add(i))  # type: ignore[func-returns-value]
            raise InputError(f"Index.add: id {dup!r} appears twice in the batch; ids must be unique.")
        row_blobs = self._layout.blobs(batch.sketch) if n else []
        with self._store.write() as con:
            result = add_batch(con, self._linker, batch, list(texts), ids,
                               skip_existing=skip_existing, store_text=self.store_text,
                               row_blobs=row_blobs)
            faults.checkpoint("index-add-written")
        faults.checkpoint("index-add-committed")
        result.seconds = time.perf_counter() - start
        return result

    @storage_errors("Index.bulk_add", lambda: (
        "Nothing was added: a bulk add is all or nothing. Its scratch (.bulk-* in the index "
        f"directory) is kept: the same bulk add with {setting('resume', 'resume=True')} "
        "continues it from its last completed step, and one without discards it."))
    def bulk_add(self, batches: Iterable[tuple[Sequence[str], Sequence[str] | None]], *,
                 table: bool = False, partitions: int | None = None,
                 log: Callable[[str], None] | None = None, progress: bool | None = False,
                 resume: bool = False, input_key: Any = None,
                 checkpoint_docs: int = 1_000_000) -> BulkResult:
        """Add a whole corpus to an **empty** index in one go: much faster than
        :meth:`add` for a large corpus (no per-document lookups; postings written in key
        order; indexes built after the load). See :mod:`neardup.index._bulk`.

        Parameters
        ----------
        batches : iterable of (texts, ids or None)
            The corpus in input order; ids None name documents by position.
        table : bool, default False
            Also return the per-document table (id, cluster, status, duplicate_of, score).
        partitions : int or None, default None
            Key-range partitions (power of two) linked and sorted one at a time. None:
            256, of which consecutive ones are linked together up to 262,144 key rows
            (a small corpus in one step).
        log : callable str -> None, optional
            Stage messages: a few per bulk add, whatever the corpus size.
        progress : bool or None, default False
            Progress bars on stderr for the sketch and link stages (None: when stderr is a
            terminal).
        resume : bool, default False
            Continue the interrupted (killed, interrupted, failed on I/O) bulk add of the
            same input into this index from its last completed step: the sketch stage
            checkpoints every ~64 MB of keys, the link + postings stage every key
            partition, the documents table and the indexes are one step each. ``batches``
            must be the same corpus from its beginning (documents already sketched are
            skipped). A scratch left by another input or setting is refused
            (InputError); without ``resume`` it is discarded.
        input_key : JSON-able, optional
            What identifies the input (the CLI passes its files' paths, sizes and
            modification times and the reader options); recorded with the scratch so
            that ``resume`` refuses another input. None: the caller vouches for it.
        checkpoint_docs : int, default 1,000,000
            Documents between checkpoints of the sketch stage (also one per 64 MB of
            buffered keys): at most this much sketching is redone by a resume.

        Returns
        -------
        BulkResult

        Notes
        -----
        All or nothing: the database is built in a new file and swapped in at the end, so
        a killed bulk add leaves the index empty (scratch files under ``DIR/.bulk-PID``
        are removed by the next one). It needs exclusive use of the index (no server,
        no other open :class:`Index`; IndexBusyError otherwise), and the clusters are
        those of one-shot ``dedup`` of the corpus, as with :meth:`add` in batches.
        Scratch disk: about the candidate arrays plus 16-24 bytes per candidate key.
        """
        if self.embedding:
            raise ValueError(
                f"Index.bulk_add: the bulk path is for the keyed methods (exact, minhash, "
                f"simhash); add {self.method.name!r} documents with "
                f"{setting('add', 'add()')}.")
        checkpoint_docs = check_int("Index.bulk_add", "checkpoint_docs", checkpoint_docs, low=1)
        # What a resume must match (with the input's key).
        identity = {"method": self.method.name, "params": json.loads(params_json(self.method)),
                    "store_text": self.store_text, "rerank": self.rerank,
                    "layout": self.meta["layout"], "partitions": partitions}
        result, self.meta = bulk_load(
            self._store, self.meta, self.method, self._layout, self._linker.cap, batches,
            store_text=self.store_text, rerank=self._verifying if self.rerank else None,
            scoring=self._scoring, table=table, partitions=partitions, log=log, progress=progress,
            resume=resume, input_key=input_key, checkpoint_docs=checkpoint_docs,
            identity=identity)
        return result

    # -- query ---------------------------------------------------------------------------

    @storage_errors("Index.query")
    def query(self, texts: Sequence[str], ids: Sequence[str] | None = None, *,
              top_k: int = 10) -> QueryResult:
        """Stored near-duplicates of each text (read only; the index is not changed).

        Parameters
        ----------
        texts : sequence of str
        ids : sequence of str or None
            Names of the query documents in the result (default "0", "1", ...).
        top_k : int >= 1, default 10
            At most this many matches per query document, best first.

        Returns
        -------
        QueryResult
            Every verified match among the candidates the add rule would check (see
            :mod:`neardup.index._link`); a document matching nothing has no rows.
        """
        top_k = check_int("Index.query", "top_k", top_k, low=1)
        if not isinstance(texts, (str, bytes)):
            texts = list(texts)
        batch = sketch_texts(self.method, "Index.query", texts)
        n = len(batch.sketch)
        query_ids = check_ids("Index.query", ids, n) if ids is not None \
            else [str(i) for i in range(n)]
        with self._store.read() as con:
            # In the snapshot: rerank verification may read stored texts.
            matches = self._linker.query(con, batch, list(texts))
        return query_result(matches, batch, query_ids, top_k, self.store_text)

    # -- delete, compact, stats ----------------------------------------------------------

    @storage_errors("Index.delete", "Nothing was deleted (a delete is one transaction).")
    def delete(self, ids: Sequence[str], *, split: bool = True) -> dict[str, Any]:
        """Remove documents (and their postings) by id, in one transaction.

        Parameters
        ----------
        ids : sequence of str
        split : bool, default True
            Re-link every cluster that lost a member from its remaining members, so that
            a cluster held together only through a deleted document splits (see Notes).
            False keeps every remaining document in its cluster (cheaper for huge
            clusters; union-find keeps no edges to undo).

        Returns
        -------
        dict
            ``{"deleted": n, "missing": [ids not in the index], "split_clusters": k,
            "new_clusters": j}``: k clusters re-linked into k + j clusters.

        Notes
        -----
        Re-linking applies the method's own rule to the cluster's remaining members
        alone: their shared keys grouped as ``dedup`` groups a key (all pairs up to the
        bucket cap, star plus chain above it; SimHash's block rule), candidates verified,
        connected components taken; for embedding methods every remaining pair within the
        cosine threshold. Each component is labelled by its earliest member. A re-link
        never joins documents of two clusters, and clusters without a deleted member are
        unchanged. When no key group of a re-linked cluster exceeds the cap, the result is
        the clustering one-shot ``dedup`` gives the remaining documents; above the cap
        dedup's star and chain run over the whole key group, so the two can differ for
        documents of huge template clusters.
        """
        ids = list(dict.fromkeys(check_ids("Index.delete", ids)))
        with self._store.write() as con:
            result = delete_documents_by_id(con, self._linker, ids, split=split)
        faults.checkpoint("index-delete-committed")
        return result

    @storage_errors("Index.compact")
    def compact(self) -> dict[str, int]:
        """Checkpoint the write-ahead log and rebuild the database file without free pages
        (after deletes). Returns the file size before and after, in bytes.

        Before any work, the free space beside the database must hold a copy of its live
        pages (the rebuilt database goes through the write-ahead log); IndexStorageError
        otherwise. The rebuild is one transaction: a failure (a disk that fills up anyway,
        a kill) leaves the index as it was."""
        before = self.disk_bytes()
        compact_index(self._store, self._linker, self.path)
        return {"bytes_before": before, "bytes_after": self.disk_bytes()}

    def disk_bytes(self) -> int:
        db = database_path(self.path)
        files = [db, Path(f"{db}-wal"), Path(f"{db}-shm"), *self._linker.files()]
        return sum(p.stat().st_size for p in files if p.exists())

    @storage_errors("Index.stats")
    def stats(self, *, check: bool = False) -> dict[str, Any]:
        """Counts, method, parameters and size; ``check=True`` also checks the index
        (reads all of it) and raises IndexFormatError, saying how to recover, on damage:
        SQLite's integrity check, every posting naming a stored document, the next
        position above every stored one and, for embedding methods, every listed vector
        segment readable and holding every stored document's vector."""
        if check:
            check_index(self._store, self._linker, self.path)
        with self._store.read() as con:
            counts = count_rows(con)
            extra = self._linker.counts(con)
        return {
            "path": str(self.path),
            "method": self.method.name,
            "params": json.loads(params_json(self.method)),
            "store_text": self.store_text,
            "rerank": self.rerank,
            **counts,
            **extra,
            "disk_bytes": self.disk_bytes(),
            "created": self.meta.get("created"),
            "format_version": self.meta.get("version"),
            **({"check": "ok"} if check else {}),
        }

    # -- export --------------------------------------------------------------------------

    @storage_errors("Index.clusters")
    def clusters(self) -> pa.Table:
        """Every stored document's id and cluster, in insertion order."""
        parts = list(self.iter_clusters())
        return pa.concat_tables(parts).select(["id", "cluster"])

    def iter_clusters(self, batch_size: int = 100_000) -> Iterator[pa.Table]:
        """Every stored document's ``id``, current ``cluster`` (the position of its
        cluster's founder, as merges left it) and ``cluster_size``, in insertion order, as
        tables of up to ``batch_size`` rows, all read from one snapshot (an add committed
        meanwhile is not half seen). What ``neardup index export`` writes."""
        check_int("Index.iter_clusters", "batch_size", batch_size, low=1)
        return self._cluster_batches(batch_size)

    def _cluster_batches(self, batch_size: int) -> Iterator[pa.Table]:
        try:
            with self._store.read() as con:
                yield from cluster_tables(con, batch_size)
        except (sqlite3.Error, OSError) as exc:  # as storage_errors, for a generator
            mapped = database_error(exc, self.path, "Index")
            if mapped is None:
                raise
            raise mapped from exc

    @storage_errors("Index")
    def next_position(self) -> int:
        """The position the next added document gets (positions are never reused): it
        grows by the documents each committed add stored."""
        with self._store.read() as con:
            return next_position(con)

    @storage_errors("Index")
    def __len__(self) -> int:
        with self._store.read() as con:
            return count_documents(con)

    def __repr__(self) -> str:
        return f"Index({str(self.path)!r}, method={self.method!r})"
