"""A persistent, incremental near-duplicate index: :class:`Index`.

An index stores, per document, its id, its cluster, the arrays its method verifies
candidates with (MinHash signature, SimHash fingerprint, exact digest) and the postings
key -> documents (LSH band keys, SimHash block keys, digests). Adding documents computes
their keys, looks the keys up, verifies the candidates the linking rule of
:mod:`neardup.index._link` names, and joins clusters, all in one SQLite transaction
(:mod:`neardup.index._store`). Querying does the same read-only and reports the verified
matches.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from neardup import faults
from neardup.engine.rows import ArrayRows, RowSource
from neardup.engine.sketching import sketch_batch
from neardup.errors import InputError, NeardupError, check_int, setting
from neardup.graph.edges import Pairs
from neardup.index._bulk import BulkBuilder
from neardup.index._link import (
    keyed_candidates,
    link_edges,
    simhash_candidates,
    unique_edges,
)
from neardup.index._methods import (
    DuplicateIdError,
    check_ids,
    check_supported,
    i64,
    index_plan,
    method_from_params,
    params_json,
    serial_if_small,
    split_rows,
)
from neardup.index._rerank import (
    RERANK_METHODS,
    TEXT_SCHEMA,
    TEXT_TABLE,
    IndexTexts,
    candidate_rows,
    compress_texts,
    recorded_config,
    rerank_config,
    rerank_method,
)
from neardup.index._results import AddResult, BulkResult, QueryResult
from neardup.index._store import (
    FORMAT,
    FORMAT_VERSION,
    IndexBusyError,
    IndexFormatError,
    IndexMismatchError,
    IndexStorageError,
    connect,
    create_database,
    database_error,
    database_path,
    ensure_identity_column,
    read_meta,
    recovery_hint,
    replace_empty_database,
)
from neardup.index._vectors import VectorSegments
from neardup.methods import make_method
from neardup.methods.base import CandidateKeys, CandidateRows, Method, Sketch
from neardup.text.identity import text_identity
from neardup.text.normalize import NormalizeConfig, normalize_batch

__all__ = ["Index"]

_UNSET: Any = object()
#: How an index names its documents (``meta.id_mode``): by the ids given to add, or by
#: their insertion positions ("0", "1", ...). One index never mixes the two, so that a
#: position can never collide with a given id.
_GIVEN, _POSITIONS = "given", "positions"


def _storage_errors(where: str, after: str | Callable[[], str] = ""):
    """Method decorator: SQLite and disk failures become neardup errors (a damaged
    database IndexFormatError with the recovery hint, a full or failing disk
    IndexStorageError, a lock IndexBusyError), with ``after`` appended: what the failure
    left (e.g. that the operation's transaction was rolled back)."""

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
        self._lock = threading.Lock()
        self._local = threading.local()
        self._connections: list[Any] = []
        # The writer walks the postings B-tree on every add: a larger cache pays off.
        self._writer = connect(self.path, cache_mib=max(self.cache_mib, 256))
        self._connections.append(self._writer)
        try:
            meta = read_meta(self._writer, "Index.open", self.path)
        except BaseException:
            self._writer.close()
            raise
        self.meta = meta
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
        self._layout = [(n, np.dtype(d), tuple(t)) for n, d, t in meta["layout"]]
        self._row_bytes = sum(d.itemsize * int(np.prod(t or (1,))) for _, d, t in self._layout)
        self.embedding = index_plan(self.method).stage == "vector"
        # None unless self.embedding, and only the embedding paths read it.
        self._vectors: VectorSegments = VectorSegments(self.path, int(meta["dim"])) if self.embedding else None  # type: ignore[assignment]
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
        # Any: embedding methods carry embedding_key, which the Method contract does not declare.
        method_obj: Any = method if isinstance(method, Method) else make_method(method, **params)
        if isinstance(method, Method) and params:
            raise ValueError("Index.create: give parameters in the Method or as keywords, not both.")
        stage = check_supported("Index.create", method_obj)
        rerank = rerank_config(rerank)
        if rerank is not None and method_obj.name not in RERANK_METHODS:
            raise ValueError(
                f"Index.create: rerank verification ({setting('rerank', 'rerank=')}) applies to the "
                f"methods {', '.join(RERANK_METHODS)}; got method {method_obj.name!r}.")
        probe = method_obj.sketch(["probe"])
        extra: dict[str, Any] = {}
        if stage == "vector":
            # Vectors live in faiss segment files (neardup.index._vectors), not in rows.
            layout = []
            extra = {"dim": int(probe.arrays[method_obj.embedding_key].shape[1]),
                     "vector_segments": []}
        else:
            layout = [[name, probe.arrays[name].dtype.str, list(probe.arrays[name].shape[1:])]
                      for name in method_obj.capabilities.reads.arrays]
        from neardup._version import __version__

        create_database(path, {
            **extra,
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "method": method_obj.name,
            "params": json.loads(params_json(method_obj)),
            "layout": layout,
            "store_text": bool(store_text),
            "rerank": rerank,
            "next_doc": 0,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "neardup_version": __version__,
        }, extra_tables=(TEXT_SCHEMA,) if rerank else ())
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
                f"Index: this index was built with {_describe_rerank(mine)}; got "
                f"{_describe_rerank(theirs)}. Query and add with the index's own (omit "
                f"{setting('rerank', 'rerank=')}), or build another index.")

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Close every connection (a WAL checkpoint happens on the last close)."""
        for con in self._connections:
            try:
                con.close()
            except Exception:  # already closed, or closing from another thread
                pass
        self._connections.clear()

    # -- connections ---------------------------------------------------------------------

    def _reader(self):
        con = getattr(self._local, "con", None)
        if con is None:
            con = connect(self.path, cache_mib=self.cache_mib)
            self._local.con = con
            self._connections.append(con)
        return con

    @contextmanager
    def _read(self):
        """A read transaction: every statement inside sees one snapshot."""
        con = self._reader()
        con.execute("BEGIN")
        try:
            yield con
        except BaseException:
            _rollback(con)
            raise
        con.execute("COMMIT")

    @contextmanager
    def _write(self):
        with self._lock:
            con = self._writer
            con.execute("BEGIN IMMEDIATE")
            try:
                yield con
            except BaseException:
                # SQLite may have rolled back already (a full disk, an I/O error): the
                # original error is what the caller must see.
                _rollback(con)
                raise
            con.execute("COMMIT")

    # -- sketches ------------------------------------------------------------------------

    def _sketch(self, caller: str, texts: Sequence[str]
                ) -> tuple[Sketch, CandidateKeys | None, np.ndarray, list[str]]:
        """The batch's sketch and candidate keys (the sketch step every keyed executor
        runs: :func:`~neardup.engine.sketching.sketch_batch`), the digests of its
        normalized texts and the normalized texts."""
        if isinstance(texts, (str, bytes)):
            raise InputError(f"{caller}: pass a sequence of texts, not a single string.")
        texts = list(texts)
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise InputError(
                    f"{caller}: text {i} must be a string; got {type(t).__name__}: {t!r:.60}."
                )
        with serial_if_small(len(texts)):
            sketch, keys = sketch_batch(self.method, texts)
            normalized = normalize_batch(texts, self.method.normalize or NormalizeConfig())
            return sketch, keys, _text_digests(normalized), normalized

    def _rows(self, sketch: Sketch) -> np.ndarray:
        """Each document's candidate arrays as one row of bytes (uint8, (n, row_bytes))."""
        parts = [np.ascontiguousarray(sketch.arrays[name], dtype=dtype).reshape(len(sketch), -1)
                 .view(np.uint8) for name, dtype, _ in self._layout]
        return np.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]

    def _arrays_blob(self, sketch: Sketch) -> list[bytes]:
        if not self._layout:
            return [b""] * len(sketch)
        return [r.tobytes() for r in self._rows(sketch)]

    def _arrays_from_blobs(self, blobs: list[bytes]) -> dict[str, np.ndarray]:
        raw = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), self._row_bytes)
        return split_rows(raw, self._layout)

    # -- lookups -------------------------------------------------------------------------

    @property
    def _cap(self) -> int:
        """Stored members above which a key group is 'big' (anchor, last, count kept)."""
        keyed = self.method.capabilities.keyed
        if keyed.links_buckets:  # simhash: a window of fingerprints per key group
            return self.method.max_block_size
        return max(keyed.all_pairs_upto, 1)

    def _lookup(self, con, keys: np.ndarray):
        """Stored members of ``keys`` (int64): small groups in full, big ones summarised."""
        distinct = np.unique(keys)
        con.execute("CREATE TEMP TABLE IF NOT EXISTS qk(key INTEGER PRIMARY KEY)")
        con.execute("DELETE FROM qk")
        con.executemany("INSERT INTO qk(key) VALUES (?)", ((k,) for k in distinct.tolist()))
        big = {k: (f, l, c) for k, f, l, c in con.execute(
            "SELECT b.key, b.first, b.last, b.count FROM qk CROSS JOIN big b ON b.key = qk.key")}
        rows = con.execute(
            # CROSS JOIN keeps the small key table outside: one index seek per key.
            "SELECT p.key, p.payload, p.doc FROM qk CROSS JOIN postings p ON p.key = qk.key "
            "WHERE NOT EXISTS (SELECT 1 FROM big b WHERE b.key = qk.key) "
            "ORDER BY p.key, p.doc").fetchall()
        return big, np.array(rows, dtype=np.int64).reshape(-1, 3)

    def _simhash_window(self, con, key: int, fps: np.ndarray) -> list[tuple[int, int]]:
        """Distinct stored fingerprints near each of ``fps`` in a big key group."""
        window = self.method.max_block_size
        out = []
        for fp in np.unique(i64(fps)).tolist():
            for cmp, order in ((">=", "ASC"), ("<", "DESC")):
                out.extend(con.execute(
                    f"SELECT payload, min(doc) FROM (SELECT payload, doc FROM postings "
                    f"WHERE key = ? AND payload {cmp} ? ORDER BY payload {order} LIMIT ?) "
                    "GROUP BY payload", (key, fp, window)).fetchall())
        return out

    def _candidates(self, con, keys, docs, payload, with_new: bool, lookup_out=None):
        """Candidate edges (stored or new position, new position) for new rows."""
        big, rows = self._lookup(con, keys)
        if lookup_out is not None:
            lookup_out.extend((big, rows))
        keyed = self.method.capabilities.keyed
        if not keyed.links_buckets:
            stored: dict[int, np.ndarray] = {}
            if rows.size:
                starts = np.flatnonzero(np.r_[True, rows[1:, 0] != rows[:-1, 0]])
                for s, e in zip(starts.tolist(), np.r_[starts[1:], rows.shape[0]].tolist()):
                    stored[int(rows[s, 0])] = rows[s:e, 2]
            return keyed_candidates(keys, docs, stored, big, keyed.all_pairs_upto,
                                    with_new=with_new)
        groups: dict[int, list[tuple[int, int]]] = {}
        for k, p, d in rows.tolist():
            groups.setdefault(k, []).append((p, d))
        for k in big:
            groups[k] = self._simhash_window(con, k, payload[keys == k])
        stored_fps = {}
        for k, members in groups.items():
            m = np.array(members, np.int64).reshape(-1, 2)
            fps, first = np.unique(m[:, 0], return_index=True)
            # min doc per fingerprint: rows come ordered by doc within a key
            sdocs = np.array([m[m[:, 0] == f, 1].min() for f in fps], np.int64) \
                if fps.size != m.shape[0] else m[first, 1]
            stored_fps[k] = (fps, sdocs)
        return simhash_candidates(keys, docs, payload, stored_fps)

    def _stored_rows(self, con, docs: np.ndarray, columns: str):
        con.execute("CREATE TEMP TABLE IF NOT EXISTS qd(doc INTEGER PRIMARY KEY)")
        con.execute("DELETE FROM qd")
        con.executemany("INSERT INTO qd(doc) VALUES (?)", ((d,) for d in np.unique(docs).tolist()))
        return con.execute(f"SELECT d.doc, {columns} FROM qd CROSS JOIN docs d ON d.doc = qd.doc "
                           "ORDER BY d.doc").fetchall()

    def _verifier(self, new_base: int, new_arrays, stored_docs, stored_arrays,
                  texts: IndexTexts | None = None):
        """``verify(left, right) -> (score, accept)`` for edges whose sides are stored
        positions (< new_base, rows of ``stored_arrays`` by ``stored_docs``) or new ones,
        by the verifying method's ``score_candidate_rows`` (rerank's reads ``texts``)."""
        new_count = len(next(iter(new_arrays.values()))) if new_arrays else 0
        # Stored positions (ascending), then the new ones: sorted, as ArrayRows reads them.
        store: RowSource = ArrayRows(
            np.concatenate((stored_docs, new_base + np.arange(new_count))),
            {name: np.concatenate((stored_arrays[name], new_arrays[name]))
             if stored_arrays else new_arrays[name] for name in new_arrays}, texts=texts)

        def verify(left, right):
            if left.size == 0:
                return np.empty(0, np.float32), np.empty(0, bool)
            need = np.unique(np.concatenate((left, right)))
            rows = store.rows(need)
            with self._scoring:
                score, accept = self._verifying.score_candidate_rows(
                    rows, np.searchsorted(need, left), np.searchsorted(need, right))
            return np.asarray(score, np.float32), np.asarray(accept, bool)

        return verify

    # -- add -----------------------------------------------------------------------------

    @_storage_errors("Index.add", "Nothing of this add was stored (it is one transaction); "
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
        sketch, batch_keys, digest, normalized = self._sketch("Index.add", texts)
        n = len(sketch)
        if ids is not None:
            if len(set(ids)) != n:
                seen: set[str] = set()
                dup = next(i for i in ids if i in seen or seen.add(i))  # type: ignore[func-returns-value]
                raise InputError(f"Index.add: id {dup!r} appears twice in the batch; ids must be unique.")
        arrays_blobs = self._arrays_blob(sketch) if n else []
        with self._write() as con:
            next_doc = json.loads(con.execute("SELECT value FROM meta WHERE name='next_doc'").fetchone()[0])
            mode = self._id_mode(con) if n else None
            given = ids is not None
            if ids is None:
                if mode == _GIVEN:
                    some = con.execute("SELECT id FROM docs ORDER BY doc LIMIT 1").fetchone()
                    raise InputError(
                        "Index.add: the documents of this index are named by the ids given "
                        f"when they were added (e.g. {some[0] if some else ''!r}), but these "
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
                present = self._present_ids(con, ids)
                if present and not skip_existing:
                    some = sorted(present)[:5]
                    raise DuplicateIdError(
                        f"Index.add: {len(present)} id(s) already in the index (e.g. {some}); "
                        f"ids must be unique. Pass {setting('skip_existing', 'skip_existing=True')} "
                        "to skip them, e.g. when resuming an interrupted load."
                    )
                keep = np.array([i not in present for i in ids], bool)
                if mode is None:  # the first documents name the index's way
                    con.execute("INSERT OR REPLACE INTO meta(name, value) VALUES ('id_mode', ?)",
                                (json.dumps(_GIVEN if given else _POSITIONS),))
            ensure_identity_column(con)
            result = self._add_locked(con, sketch, digest, normalized, ids, keep, next_doc,
                                      arrays_blobs, texts, identity=text_identity(texts),
                                      batch_keys=batch_keys)
            faults.checkpoint("index-add-written")
        faults.checkpoint("index-add-committed")
        result.seconds = time.perf_counter() - start
        return result

    @_storage_errors("Index.bulk_add", lambda: (
        "Nothing was added: a bulk add is all or nothing. Its scratch (.bulk-* in the index "
        f"directory) is kept: the same bulk add with {setting('resume', 'resume=True')} "
        "continues it from its last completed step, and one without discards it."))
    def bulk_add(self, batches: Iterable[tuple[Sequence[str], Sequence[str] | None]], *,
                 table: bool = False, partitions: int = 256,
                 log: Callable[[str], None] | None = None, resume: bool = False,
                 input_key: Any = None, checkpoint_docs: int = 1_000_000) -> BulkResult:
        """Add a whole corpus to an **empty** index in one go: much faster than
        :meth:`add` for a large corpus (no per-document lookups; postings written in key
        order; indexes built after the load). See :mod:`neardup.index._bulk`.

        Parameters
        ----------
        batches : iterable of (texts, ids or None)
            The corpus in input order; ids None name documents by position.
        table : bool, default False
            Also return the per-document table (id, cluster, status, duplicate_of, score).
        partitions : int, default 256
            Key-range partitions (power of two) linked and sorted one at a time.
        log : callable str -> None, optional
            Progress messages.
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
        start = time.perf_counter()
        if self.embedding:
            raise ValueError(
                f"Index.bulk_add: the bulk path is for the keyed methods (exact, minhash, "
                f"simhash); add {self.method.name!r} documents with "
                f"{setting('add', 'add()')}.")
        with self._lock:
            if self._writer.execute("SELECT 1 FROM docs LIMIT 1").fetchone() is not None:
                raise IndexBusyError(
                    f"Index.bulk_add: the index {str(self.path)!r} already holds documents; "
                    "the bulk path builds an index from empty. Add to it with "
                    f"{setting('add', 'add()')}.")
            builder = BulkBuilder(self.path, self.method, self._layout, self.meta,
                                  lambda texts: self._sketch("Index.bulk_add", texts), self._rows,
                                  self._cap, store_text=self.store_text, partitions=partitions,
                                  log=log, rerank=self._verifying if self.rerank else None,
                                  checkpoint_docs=check_int("Index.bulk_add", "checkpoint_docs",
                                                            checkpoint_docs, low=1))
            try:
                identity = {"method": self.method.name, "params": json.loads(params_json(self.method)),
                            "store_text": self.store_text, "rerank": self.rerank,
                            "layout": self.meta["layout"], "partitions": partitions,
                            "input": input_key}
                with self._scoring:
                    built = builder.build(batches, table=table, resume=resume, identity=identity)
                self.close()  # our own connections would block the swap
                t = time.perf_counter()
                if built["n"]:
                    replace_empty_database(self.path, built["path"])
                builder.seconds["swap"] = time.perf_counter() - t
            except (NeardupError, ValueError, sqlite3.IntegrityError):
                builder.cleanup()  # bad input or a busy index: nothing worth resuming
                raise
            else:
                builder.cleanup()
            finally:
                # Other failures (interrupt, full disk) keep the scratch for resume=True.
                if not self._connections:
                    self._reopen()
        n, roots, nf = built["n"], built["roots"], built["n_features"]
        joined = int((roots != np.arange(n)).sum())
        empty = int((nf == 0).sum())
        out = BulkResult(n, int((roots == np.arange(n)).sum()), joined, empty,
                         time.perf_counter() - start, builder.seconds)
        if table:
            out.table = _bulk_table(built["ids"], roots, nf, *built["forest"])
        return out

    def _reopen(self) -> None:
        self._local = threading.local()
        self._writer = connect(self.path, cache_mib=max(self.cache_mib, 256))
        self._connections.append(self._writer)
        self.meta = read_meta(self._writer, "Index.open", self.path)

    def _id_mode(self, con) -> str | None:
        """How the stored documents are named (see ``_GIVEN``, ``_POSITIONS``): recorded by
        the first add; for an index made before it was recorded, found once from the
        stored ids (None while every stored id is its position, or none is stored)."""
        row = con.execute("SELECT value FROM meta WHERE name = 'id_mode'").fetchone()
        if row is not None:
            return json.loads(row[0])
        if con.execute("SELECT 1 FROM docs LIMIT 1").fetchone() is None:
            return None
        named = con.execute("SELECT 1 FROM docs WHERE id != CAST(doc AS TEXT) LIMIT 1").fetchone()
        return _GIVEN if named is not None else None

    def _present_ids(self, con, ids: list[str]) -> set[str]:
        con.execute("CREATE TEMP TABLE IF NOT EXISTS qi(id TEXT PRIMARY KEY)")
        con.execute("DELETE FROM qi")
        con.executemany("INSERT OR IGNORE INTO qi(id) VALUES (?)", ((i,) for i in ids))
        return {r[0] for r in con.execute("SELECT d.id FROM qi CROSS JOIN docs d ON d.id = qi.id")}

    def _identity_edges(self, con, identity: np.ndarray, new_docs: np.ndarray) -> tuple:
        """Edges (left, right, score 1) that link the new documents to stored and earlier
        new documents of identical texts (``identity``: the new documents'
        :func:`~neardup.text.identity.text_identity`), whatever the method finds: as every
        engine of ``dedup`` links them. Blank texts (identity 0) are never linked."""
        from neardup.engine.facts import identity_pairs

        wanted = np.unique(identity[identity != 0])
        stored: dict[int, int] = {}
        for start in range(0, wanted.size, 500):
            chunk = i64(wanted[start:start + 500]).tolist()
            marks = ",".join("?" * len(chunk))
            stored.update(con.execute(f"SELECT identity, MIN(doc) FROM docs WHERE identity IN ({marks}) "
                                      "GROUP BY identity", chunk).fetchall())
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

    def _add_locked(self, con, sketch, digest, normalized, ids, keep, next_doc, arrays_blobs,
                    texts=None, *, identity, batch_keys: CandidateKeys | None):
        if self.embedding:
            return self._add_vectors_locked(con, sketch, digest, normalized, ids, keep, next_doc,
                                            identity=identity)
        assert batch_keys is not None  # a keyed method's batch always has key rows
        n = len(sketch)
        local = np.flatnonzero(keep)
        m = local.size
        positions = np.full(n, -1, np.int64)
        positions[local] = next_doc + np.arange(m)
        same = self._identity_edges(con, identity[local], positions[local])
        sub = Sketch(sketch.n_features[local], {k: v[local] for k, v in sketch.arrays.items()})
        # The kept documents' key rows, at their index positions.
        kept = keep[batch_keys.docs]
        raw_keys = batch_keys.keys[kept]
        raw_payload = None if batch_keys.payload is None else batch_keys.payload[kept]
        keys = i64(raw_keys)
        docs = positions[batch_keys.docs[kept]]
        payload = i64(raw_payload) if raw_payload is not None else np.zeros(keys.size, np.int64)
        lookup: list = []
        left, right = self._candidates(con, keys, docs, payload, with_new=True, lookup_out=lookup)
        extra = None
        if self.method.capabilities.keyed.links_buckets and keys.size:
            extra = self.method.link_bucket(raw_keys, docs, raw_payload)  # new among new
        left, right = unique_edges(left, right)
        stored_docs, stored_arrays, cluster_of, stored_ids = self._stored(con, left[left < next_doc])
        for doc, cluster, doc_id in self._stored_rows(con, same[0][same[0] < next_doc], "d.cluster, d.id"):
            cluster_of.setdefault(doc, cluster)
            stored_ids.setdefault(doc, doc_id)
        new_texts = None
        if self.rerank is not None:
            new_texts = IndexTexts(con, next_doc, [texts[i] for i in local.tolist()],
                                   self.rerank["max_chars"])
        verify = self._verifier(next_doc, sub.arrays, stored_docs, stored_arrays, new_texts)
        new_docs = positions[local]
        linked = same  # identical texts first
        if extra is not None and len(extra):
            linked = tuple(np.concatenate(p) for p in zip(same, (extra.left, extra.right,
                                                                 extra.score.astype(np.float32))))
        if m:
            clusters_new, relabel, (left, right, score) = link_edges(
                new_docs, left, right, cluster_of, verify, linked=linked)
        else:
            clusters_new, relabel = np.empty(0, np.int64), {}
            left = right = np.empty(0, np.int64)
            score = np.empty(0, np.float32)
        # Write: relabel merged clusters, insert documents and postings, grow big groups.
        self._insert_docs(con, relabel, new_docs, local, ids, clusters_new, sketch, digest,
                          [arrays_blobs[i] for i in local.tolist()], normalized, identity)
        order = np.lexsort((docs, payload, keys))
        con.executemany("INSERT INTO postings(key, payload, doc) VALUES (?, ?, ?)",
                        zip(keys[order].tolist(), payload[order].tolist(), docs[order].tolist()))
        self._grow_big(con, keys, docs, *lookup)
        if new_texts is not None:
            assert self.rerank is not None  # texts are kept only for rerank verification
            con.executemany(f"INSERT INTO {TEXT_TABLE}(doc, text) VALUES (?, ?)",
                            zip(new_docs.tolist(), compress_texts(new_texts.new_texts,
                                                                  self.rerank["max_chars"])))
        con.execute("UPDATE meta SET value = ? WHERE name = 'next_doc'", (json.dumps(next_doc + m),))
        return self._add_result(sketch, ids, keep, positions, clusters_new, left, right, score,
                                next_doc, stored_ids, relabel)

    # -- embedding methods -----------------------------------------------------------------

    def _manifest(self, con) -> list[str]:
        row = con.execute("SELECT value FROM meta WHERE name = 'vector_segments'").fetchone()
        return json.loads(row[0]) if row else []

    def _vector_threshold(self) -> float:
        return max(float(self.method.threshold), 0.0)  # as the dedup method searches

    def _add_vectors_locked(self, con, sketch, digest, normalized, ids, keep, next_doc, *, identity):
        """Add for an embedding method: link each new document to every stored or earlier
        new document within the cosine threshold (exact), then store its vector in a new
        segment named in the manifest within this transaction."""
        from neardup.graph.similarity import similarity_pairs

        n = len(sketch)
        local = np.flatnonzero(keep)
        m = local.size
        positions = np.full(n, -1, np.int64)
        positions[local] = next_doc + np.arange(m)
        new_docs = positions[local]
        vectors = np.asarray(sketch.arrays[self.method.embedding_key], np.float32)[local]
        valid = sketch.n_features[local] > 0  # empty texts have no vector and never pair
        threshold = self._vector_threshold()
        manifest = self._manifest(con)
        self._vectors.remove_unlisted(manifest)  # orphans of killed adds (we hold the lock)
        q, stored, score = self._vectors.neighbours(manifest, vectors[valid], threshold)
        vq = np.flatnonzero(valid)
        left, right = stored, new_docs[vq[q]]
        if valid.sum() >= 2:
            inner = similarity_pairs(vectors[valid], threshold=threshold, index="flat")
            left = np.concatenate((left, new_docs[vq[inner.left]]))
            right = np.concatenate((right, new_docs[vq[inner.right]]))
            score = np.concatenate((score, inner.score.astype(np.float32)))
        # Identical texts first, whatever their vectors say.
        same = self._identity_edges(con, identity[local], new_docs)
        left, right = np.concatenate((same[0], left)), np.concatenate((same[1], right))
        score = np.concatenate((same[2], np.asarray(score, np.float32)))
        # Stored documents deleted since their segment was written are not in docs.
        rows = self._stored_rows(con, left[left < next_doc], "d.cluster, d.id") if left.size else []
        cluster_of = {r[0]: r[1] for r in rows}
        stored_ids = {r[0]: r[2] for r in rows}
        live = (left >= next_doc) | np.isin(left, np.fromiter(cluster_of, np.int64, len(cluster_of)))
        left, right, score = left[live], right[live], score[live]
        if m:
            clusters_new, relabel, (left, right, score) = link_edges(
                new_docs, np.empty(0, np.int64), np.empty(0, np.int64), cluster_of, None,
                linked=(left, right, score.astype(np.float32)))
        else:
            clusters_new, relabel = np.empty(0, np.int64), {}
        self._insert_docs(con, relabel, new_docs, local, ids, clusters_new, sketch, digest,
                          [b""] * m, normalized, identity)
        if valid.any():
            name = self._vectors.write(new_docs[valid], vectors[valid])
            self._set_manifest(con, manifest + [name])
        con.execute("UPDATE meta SET value = ? WHERE name = 'next_doc'", (json.dumps(next_doc + m),))
        return self._add_result(sketch, ids, keep, positions, clusters_new, left, right, score,
                                next_doc, stored_ids, relabel)

    def _set_manifest(self, con, manifest: list[str]) -> None:
        con.execute("INSERT OR REPLACE INTO meta(name, value) VALUES ('vector_segments', ?)",
                    (json.dumps(manifest),))

    def _query_vectors(self, sketch, n):
        """Query matches for an embedding method: (left stored doc, right query row +
        base, score, rows) as the keyed query computes them."""
        base = 1 << 62
        vectors = np.asarray(sketch.arrays[self.method.embedding_key], np.float32)
        valid = np.flatnonzero(sketch.n_features > 0)
        with self._read() as con:
            manifest = self._manifest(con)
            q, stored, score = self._vectors.neighbours(manifest, vectors[valid],
                                                        self._vector_threshold())
            rows = self._stored_rows(con, stored, "d.cluster, d.id, d.arrays, d.digest, d.text") \
                if stored.size else []
        present = np.array([r[0] for r in rows], np.int64)
        live = np.isin(stored, present)
        return stored[live], base + valid[q[live]], score[live], rows, base

    def _stored(self, con, docs: np.ndarray):
        rows = self._stored_rows(con, docs, "d.cluster, d.id, d.arrays") if docs.size else []
        stored_docs = np.array([r[0] for r in rows], np.int64)
        arrays = self._arrays_from_blobs([r[3] for r in rows]) if rows else {}
        return stored_docs, arrays, {r[0]: r[1] for r in rows}, {r[0]: r[2] for r in rows}

    def _insert_docs(self, con, relabel: dict, new_docs: np.ndarray, local: np.ndarray, ids,
                     clusters_new: np.ndarray, sketch, digest: np.ndarray, arrays_blobs: list,
                     normalized, identity: np.ndarray) -> None:
        """Relabel merged clusters, then insert the batch's new documents (``local``: their
        positions in the batch; ``arrays_blobs`` aligned with ``local``)."""
        con.executemany("UPDATE docs SET cluster = ? WHERE cluster = ?",
                        [(new, old) for old, new in sorted(relabel.items())])
        chosen = local.tolist()
        texts = [zlib.compress(normalized[i].encode("utf-8", "surrogatepass"))
                 if self.store_text else None for i in chosen]
        con.executemany(
            "INSERT INTO docs(doc, id, cluster, n_features, digest, arrays, text, identity) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            zip(new_docs.tolist(), [ids[i] for i in chosen], clusters_new.tolist(),
                sketch.n_features[local].tolist(), [digest[i].tobytes() for i in chosen],
                arrays_blobs, texts, i64(identity[local]).tolist()))

    def _grow_big(self, con, keys: np.ndarray, docs: np.ndarray, big: dict, rows: np.ndarray) -> None:
        """Record key groups that now exceed the cap (anchor, last member, count), given
        the lookup of the add's keys before it (big groups, small groups' postings)."""
        if keys.size == 0:
            return
        added_keys, added = np.unique(keys, return_counts=True)
        stored_keys, stored = np.unique(rows[:, 0], return_counts=True)
        at = np.searchsorted(stored_keys, added_keys)
        at_ok = at < stored_keys.size
        had = np.zeros(added_keys.size, np.int64)
        match = at_ok.copy()
        match[at_ok] = stored_keys[at[at_ok]] == added_keys[at_ok]
        had[match] = stored[at[match]]
        last = np.full(added_keys.size, np.iinfo(np.int64).min)
        np.maximum.at(last, np.searchsorted(added_keys, keys), docs)
        cap = self._cap
        grow, insert = [], []
        for k, c, h, l in zip(added_keys.tolist(), added.tolist(), had.tolist(), last.tolist()):
            if k in big:
                grow.append((c, l, k))
            elif h + c > cap:
                first = con.execute("SELECT min(doc) FROM postings WHERE key = ?", (k,)).fetchone()[0]
                insert.append((k, first, l, h + c))
        con.executemany("UPDATE big SET count = count + ?, last = max(last, ?) WHERE key = ?", grow)
        con.executemany("INSERT INTO big(key, first, last, count) VALUES (?, ?, ?, ?)", insert)

    def _add_result(self, sketch, ids, keep, positions, clusters_new, left, right, score,
                    next_doc, stored_ids, relabel) -> AddResult:
        n = len(sketch)
        clusters = np.full(n, -1, np.int64)
        local = np.flatnonzero(keep)
        clusters[local] = clusters_new
        best_score = np.full(n, np.nan, np.float32)
        best_of: list[str | None] = [None] * n
        pos_to_input = {int(p): i for i, p in enumerate(positions.tolist()) if p >= 0}
        order = np.argsort(-score, kind="stable")
        for k in order.tolist():
            # duplicate_of: the earlier document whose verified edge joined it (best first).
            other, me = sorted((int(left[k]), int(right[k])))
            i = pos_to_input.get(me)
            if i is None or best_of[i] is not None:
                continue
            best_of[i] = stored_ids[other] if other < next_doc else ids[pos_to_input[other]]
            best_score[i] = score[k]
        status = []
        for i in range(n):
            if not keep[i]:
                status.append("skipped")
            elif sketch.n_features[i] == 0:
                status.append("empty")
            else:
                status.append("new" if clusters[i] == positions[i] else "joined")
        return AddResult(ids, clusters, status, best_of, best_score, merged_clusters=len(relabel))

    # -- query ---------------------------------------------------------------------------

    @_storage_errors("Index.query")
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
        sketch, batch_keys, digest, normalized = self._sketch("Index.query", texts)
        n = len(sketch)
        query_ids = check_ids("Index.query", ids, n) if ids is not None \
            else [str(i) for i in range(n)]
        if self.embedding:
            left, right, score, rows, base = self._query_vectors(sketch, n)
            stored_docs = np.array([r[0] for r in rows], np.int64)
        else:
            assert batch_keys is not None  # a keyed method's batch always has key rows
            left, right, score, rows, base, stored_docs = self._query_keyed(sketch, batch_keys, texts)
        query = right - base
        order = np.lexsort((left, -score, query))
        left, query, score = left[order], query[order], score[order]
        rank = np.arange(query.size) - np.searchsorted(query, query)
        keep = rank < top_k
        left, query, score = left[keep], query[keep], score[keep]
        at = np.searchsorted(stored_docs, left)
        types = self._types(query, at, rows, digest, normalized)
        return QueryResult(query, query_ids, [rows[i][2] for i in at.tolist()],
                           np.array([rows[i][1] for i in at.tolist()], np.int64), score, types)

    def _query_keyed(self, sketch, ck: CandidateKeys, texts):
        keys = i64(ck.keys)
        payload = i64(ck.payload) if ck.payload is not None else np.zeros(keys.size, np.int64)
        base = 1 << 62  # query documents sit above every stored position
        docs = base + ck.docs.astype(np.int64)
        with self._read() as con:
            left, right = self._candidates(con, keys, docs, payload, with_new=False)
            left, right = unique_edges(left, right)
            rows = self._stored_rows(con, left, "d.cluster, d.id, d.arrays, d.digest, d.text") \
                if left.size else []
            stored_docs = np.array([r[0] for r in rows], np.int64)
            stored_arrays = self._arrays_from_blobs([r[3] for r in rows]) if rows else {}
            query_texts = IndexTexts(con, base, texts, self.rerank["max_chars"]) \
                if self.rerank is not None else None
            verify = self._verifier(base, sketch.arrays, stored_docs, stored_arrays, query_texts)
            score, accept = verify(left, right)  # in the snapshot: may read stored texts
        return left[accept], right[accept], score[accept], rows, base, stored_docs

    def _types(self, query, at, rows, digest, normalized) -> list[str]:
        if query.size == 0:
            return []
        same = np.array([rows[a][4] == digest[q].tobytes() for q, a in zip(query.tolist(), at.tolist())])
        if not self.store_text:
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

    # -- delete, compact, stats ----------------------------------------------------------

    @_storage_errors("Index.delete", "Nothing was deleted (a delete is one transaction).")
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
        split_info = {"split_clusters": 0, "new_clusters": 0}
        with self._write() as con:
            con.execute("CREATE TEMP TABLE IF NOT EXISTS qi(id TEXT PRIMARY KEY)")
            con.execute("DELETE FROM qi")
            con.executemany("INSERT INTO qi(id) VALUES (?)", ((i,) for i in ids))
            rows = con.execute("SELECT d.doc, d.id, d.n_features, d.arrays, d.cluster FROM qi "
                               "CROSS JOIN docs d ON d.id = qi.id ORDER BY d.doc").fetchall()
            found = {r[1] for r in rows}
            if rows:
                docs = np.array([r[0] for r in rows], np.int64)
                if not self.embedding:
                    sketch = Sketch(np.array([r[2] for r in rows], np.int64),
                                    self._arrays_from_blobs([r[3] for r in rows]))
                    ck = self.method.candidate_keys(sketch)
                    keys = i64(ck.keys)
                    kdocs = docs[ck.docs]
                    payload = i64(ck.payload) if ck.payload is not None \
                        else np.zeros(keys.size, np.int64)
                    con.executemany("DELETE FROM postings WHERE key = ? AND payload = ? AND doc = ?",
                                    zip(keys.tolist(), payload.tolist(), kdocs.tolist()))
                    self._shrink_big(con, keys)
                # Vectors stay in their segment until compact; queries skip deleted docs.
                con.executemany("DELETE FROM docs WHERE doc = ?", ((d,) for d in docs.tolist()))
                if self.rerank is not None:
                    con.executemany(f"DELETE FROM {TEXT_TABLE} WHERE doc = ?",
                                    ((d,) for d in docs.tolist()))
                faults.checkpoint("index-delete-removed")
                if split:
                    split_info = self._split(con, sorted({r[4] for r in rows}))
                faults.checkpoint("index-delete-split")
        faults.checkpoint("index-delete-committed")
        return {"deleted": len(rows), "missing": [i for i in ids if i not in found], **split_info}

    def _split(self, con, clusters: list[int]) -> dict[str, int]:
        """Re-link each of ``clusters`` from its remaining members (see :meth:`delete`)."""
        from neardup.engine import UnionFind, link_key_rows

        relinked = new = 0
        manifest = self._manifest(con) if self.embedding else []
        for cluster in clusters:
            members = con.execute("SELECT doc, n_features, arrays FROM docs WHERE cluster = ? "
                                  "ORDER BY doc", (cluster,)).fetchall()
            if not members:
                continue
            relinked += 1
            docs = np.array([r[0] for r in members], np.int64)
            nf = np.array([r[1] for r in members], np.int64)
            uf = UnionFind(docs.size)  # local positions: same order as index positions
            if self.embedding:
                valid = np.flatnonzero(nf > 0)
                if valid.size >= 2:
                    from neardup.graph.similarity import similarity_pairs

                    x = self._vectors.vectors_of(manifest, docs[valid])
                    pairs = similarity_pairs(x, threshold=self._vector_threshold(), index="flat")
                    uf.union(valid[pairs.left], valid[pairs.right])
            elif docs.size >= 2:
                arrays = self._arrays_from_blobs([r[2] for r in members])
                ck = self.method.candidate_keys(Sketch(nf, arrays))
                # Rows by local position; their texts by index position (docs).
                texts = IndexTexts(con, 1 << 62, [], self.rerank["max_chars"]) \
                    if self.rerank is not None else None
                with self._scoring:
                    link_key_rows(self._verifying, ck.keys, ck.docs.astype(np.int64), ck.payload,
                                  _LocalRows(arrays, docs, texts), uf)
            labels = docs[uf.roots()]
            new += int(np.unique(labels).size) - 1
            changed = labels != cluster
            con.executemany("UPDATE docs SET cluster = ? WHERE doc = ?",
                            zip(labels[changed].tolist(), docs[changed].tolist()))
        return {"split_clusters": relinked, "new_clusters": new}

    def _shrink_big(self, con, keys: np.ndarray) -> None:
        cap = self._cap
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

    @_storage_errors("Index.compact")
    def compact(self) -> dict[str, int]:
        """Checkpoint the write-ahead log and rebuild the database file without free pages
        (after deletes). Returns the file size before and after, in bytes.

        Before any work, the free space beside the database must hold a copy of its live
        pages (the rebuilt database goes through the write-ahead log); IndexStorageError
        otherwise. The rebuild is one transaction: a failure (a disk that fills up anyway,
        a kill) leaves the index as it was."""
        before = self.disk_bytes()
        self._check_compact_space()
        merged = False
        try:
            if self.embedding:
                merged = self._merge_segments()
            with self._lock:
                self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                faults.checkpoint("index-compact-checkpointed")
                self._writer.execute("VACUUM")
                faults.checkpoint("index-compact-vacuumed")
                self._writer.execute("PRAGMA optimize")
                self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except (sqlite3.Error, OSError) as exc:
            mapped = database_error(exc, self.path, "Index.compact")
            if mapped is None:
                raise
            left = ("The vector segments were merged into one, but the database was not "
                    "rebuilt; its documents are intact." if merged else
                    "Nothing was changed: the index is as it was before the compact.")
            raise type(mapped)(f"{mapped} {left}") from exc
        return {"bytes_before": before, "bytes_after": self.disk_bytes()}

    def _check_compact_space(self) -> None:
        """IndexStorageError unless the index's disk can hold a copy of the live pages."""
        with self._lock:
            page_size, pages, free_pages = (
                self._writer.execute(f"PRAGMA {name}").fetchone()[0]
                for name in ("page_size", "page_count", "freelist_count"))
        needed = (pages - free_pages) * (page_size + 24)  # a WAL frame per live page
        free = shutil.disk_usage(self.path).free
        if free < needed:
            raise IndexStorageError(
                f"Index.compact: not enough free space beside the index {str(self.path)!r}: "
                f"{free:,} bytes free, about {needed:,} needed (compacting writes a copy of "
                "the database's live pages). Nothing was changed. Free some space, then run "
                "it again."
            )

    def _merge_segments(self) -> bool:
        """One segment with the vectors of the documents still stored, swapped into the
        manifest in one transaction (files written first: before-or-after on a kill).
        Returns whether segments were merged."""
        with self._write() as con:
            manifest = self._manifest(con)
            live = np.array([r[0] for r in con.execute(
                "SELECT doc FROM docs WHERE n_features > 0 ORDER BY doc")], np.int64)
            if not manifest or (len(manifest) == 1
                                and self._vectors.load(manifest[0])[0].size == live.size):
                return False
            name = self._vectors.write(live, self._vectors.vectors_of(manifest, live))
            self._set_manifest(con, [name])
            faults.checkpoint("index-compact-merged")
        faults.checkpoint("index-compact-swapped")
        # Replaced segments go once the new manifest is committed; a reader still on the
        # old snapshot keeps what it loaded (segments are read whole).
        with self._lock:
            self._vectors.remove_unlisted([name])
        return True

    def disk_bytes(self) -> int:
        db = database_path(self.path)
        files = [db, Path(f"{db}-wal"), Path(f"{db}-shm")]
        if self.embedding and (self.path / "vectors").is_dir():
            files += list((self.path / "vectors").iterdir())
        return sum(p.stat().st_size for p in files if p.exists())

    @_storage_errors("Index.stats")
    def stats(self, *, check: bool = False) -> dict[str, Any]:
        """Counts, method, parameters and size; ``check=True`` also checks the index
        (reads all of it) and raises IndexFormatError, saying how to recover, on damage:
        SQLite's integrity check, every posting naming a stored document, the next
        position above every stored one and, for embedding methods, every listed vector
        segment readable and holding every stored document's vector."""
        if check:
            self._check()
        with self._read() as con:
            n_docs = con.execute("SELECT count(*) FROM docs").fetchone()[0]
            n_clusters = con.execute("SELECT count(*) FROM (SELECT DISTINCT cluster FROM docs)").fetchone()[0]
            largest = con.execute("SELECT max(c) FROM (SELECT count(*) c FROM docs GROUP BY cluster)").fetchone()[0]
            n_postings = con.execute("SELECT count(*) FROM postings").fetchone()[0]
            n_big = con.execute("SELECT count(*) FROM big").fetchone()[0]
            segments = len(self._manifest(con)) if self.embedding else None
        return {
            "path": str(self.path),
            "method": self.method.name,
            "params": json.loads(params_json(self.method)),
            "store_text": self.store_text,
            "rerank": self.rerank,
            "documents": n_docs,
            "clusters": n_clusters,
            "largest_cluster": largest or 0,
            "postings": n_postings,
            "big_key_groups": n_big,
            **({"vector_segments": segments} if self.embedding else {}),
            "disk_bytes": self.disk_bytes(),
            "created": self.meta.get("created"),
            "format_version": self.meta.get("version"),
            **({"check": "ok"} if check else {}),
        }

    def _check(self) -> None:
        """IndexFormatError naming what is damaged and how to recover (see :meth:`stats`)."""
        problems: list[str] = []
        try:
            with self._read() as con:
                found = [r[0] for r in con.execute("PRAGMA integrity_check(20)")]
                if found != ["ok"]:
                    problems += found
                else:
                    orphans = con.execute(
                        "SELECT count(*) FROM postings p WHERE NOT EXISTS "
                        "(SELECT 1 FROM docs d WHERE d.doc = p.doc)").fetchone()[0]
                    if orphans:
                        problems.append(f"{orphans} posting(s) name documents that are not stored")
                    next_doc = json.loads(con.execute(
                        "SELECT value FROM meta WHERE name = 'next_doc'").fetchone()[0])
                    top = con.execute("SELECT max(doc) FROM docs").fetchone()[0]
                    if top is not None and top >= next_doc:
                        problems.append(f"the next position ({next_doc}) is not above the "
                                        f"stored documents ({top})")
                    if self.embedding:
                        problems += self._check_vectors(con)
        except sqlite3.DatabaseError as exc:
            problems.append(str(exc))
        if problems:
            listed = "; ".join(problems[:5]) + ("; ..." if len(problems) > 5 else "")
            raise IndexFormatError(
                f"Index.stats: the index {str(self.path)!r} is damaged: {listed}. "
                + recovery_hint(self.path)
            )

    def _check_vectors(self, con) -> list[str]:
        manifest = self._manifest(con)
        live = np.array([r[0] for r in con.execute(
            "SELECT doc FROM docs WHERE n_features > 0 ORDER BY doc")], np.int64)
        held = []
        for name in manifest:
            try:
                held.append(self._vectors.load(name)[0])
            except Exception as exc:  # faiss raises RuntimeError on a bad file
                return [f"vector segment {name!r} cannot be read ({str(exc).splitlines()[0]})"]
        have = np.unique(np.concatenate(held)) if held else np.empty(0, np.int64)
        missing = np.setdiff1d(live, have)
        if missing.size:
            return [f"{missing.size} stored document(s) have no vector in the segments "
                    f"(e.g. position {int(missing[0])})"]
        return []

    @_storage_errors("Index.clusters")
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
            yield from self._cluster_rows(batch_size)
        except (sqlite3.Error, OSError) as exc:  # as _storage_errors, for a generator
            mapped = database_error(exc, self.path, "Index")
            if mapped is None:
                raise
            raise mapped from exc

    def _cluster_rows(self, batch_size: int) -> Iterator[pa.Table]:
        with self._read() as con:
            sizes = dict(con.execute("SELECT cluster, count(*) FROM docs GROUP BY cluster"))
            cursor = con.execute("SELECT id, cluster FROM docs ORDER BY doc")
            while True:
                rows = cursor.fetchmany(batch_size)
                if not rows:
                    break
                ids, clusters = zip(*rows)
                yield pa.table({"id": pa.array(ids, pa.string()),
                                "cluster": pa.array(clusters, pa.int64()),
                                "cluster_size": pa.array([sizes[c] for c in clusters], pa.int64())})
            if not sizes:
                yield pa.table({"id": pa.array([], pa.string()), "cluster": pa.array([], pa.int64()),
                                "cluster_size": pa.array([], pa.int64())})

    @_storage_errors("Index")
    def next_position(self) -> int:
        """The position the next added document gets (positions are never reused): it
        grows by the documents each committed add stored."""
        with self._read() as con:
            return json.loads(con.execute(
                "SELECT value FROM meta WHERE name = 'next_doc'").fetchone()[0])

    @_storage_errors("Index")
    def __len__(self) -> int:
        with self._read() as con:
            return con.execute("SELECT count(*) FROM docs").fetchone()[0]

    def __repr__(self) -> str:
        return f"Index({str(self.path)!r}, method={self.method!r})"


def _describe_rerank(config: dict[str, Any] | None) -> str:
    """A rerank setting in words (no dict reprs in messages)."""
    if not config:
        return "no rerank verification"
    parts = [f"{key.replace('_', ' ')} {config[key]}"
             for key in ("model", "threshold", "max_chars", "template_guard")
             if config.get(key) is not None]
    return (f"rerank verification by the {config.get('scorer')}"
            + (f" ({', '.join(parts)})" if parts else ""))


def _rollback(con) -> None:
    """End the connection's transaction if SQLite has not already (after a full disk or
    an I/O error it rolls back by itself, and ROLLBACK would then fail)."""
    if con.in_transaction:
        try:
            con.execute("ROLLBACK")
        except sqlite3.Error:
            pass


class _LocalRows(RowSource):
    """One cluster's candidate arrays (read from the index's SQLite tables) by local
    position 0..n-1, and their texts by the index positions ``positions`` (the local
    positions' index positions), for :func:`neardup.engine.link_key_rows`."""

    def __init__(self, arrays: dict[str, np.ndarray], positions: np.ndarray,
                 texts: IndexTexts | None = None) -> None:
        self.arrays, self.positions, self.texts = arrays, positions, texts

    def rows(self, docs: np.ndarray) -> CandidateRows:
        docs = np.asarray(docs, np.int64)
        return candidate_rows(docs, {k: v[docs] for k, v in self.arrays.items()}, self.texts,
                              self.positions[docs])


def _bulk_table(ids: pa.Array, roots: np.ndarray, n_features: np.ndarray, left: np.ndarray,
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


def _text_digests(normalized: list[str]) -> np.ndarray:
    """128-bit digests of normalized texts (uint64, shape (n, 2)): equal -> exact copy."""
    from neardup.methods.exact import ExactHash

    return ExactHash(seed=0).digest_normalized(normalized)



