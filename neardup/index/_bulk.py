"""The bulk path of :meth:`Index.bulk_add`: a whole corpus into an empty index, fast.

Adding batch by batch pays, per document, a B-tree lookup of each of its keys and a
random insert of each posting into a table far larger than SQLite's page cache, a cost
that grows with the index (docs/decisions/0015-persistent-index.md). An empty index needs
neither: nothing is stored to look up, and the postings can be written in key order.

1. **sketch** (streaming, per input batch): the method's sketch; each document's
   candidate-array row, digest, feature count, id (and compressed text) go to scratch
   files in document order; its candidate-key rows are appended to one of ``partitions``
   files by *key range* (top bits of the key), so that partitions in order are keys in
   the order SQLite sorts them.
2. **link + postings** (per key partition, in key order): the partition's rows are linked
   by the corpus stage (:func:`neardup.engine.link_key_rows`: star plus chain per key,
   verification against the memory-mapped rows, one union-find over the corpus: the
   clusters of one-shot ``dedup``), then sorted and appended to the postings table; key
   groups over the method's cap go to ``big``.
3. **documents**: rows in position order with their cluster (the smallest position of
   their component, as an add labels them); then the secondary indexes, each built by
   one sort.

Everything is written into a new database file in a scratch directory beside the index
(``DIR/.bulk-PID``; nothing else sees it until it is complete; no fsync until the end),
then swapped in by :func:`neardup.index._schema.replace_empty_database`. A killed bulk add
leaves the index as it was (empty) and its scratch, which ``resume=True`` continues (the
next bulk add without it removes the scratch): the sketch stage checkpoints every
``checkpoint_docs`` documents or 64 MB of keys (``sketch.json``: documents done, every
file's size; a resume cuts the files back and skips that many input documents), each key
partition is committed with its progress (the scratch database keeps a rollback journal,
so an interrupted partition is rolled back when it is reopened) after its forest edges
are appended to ``forest.bin`` (a resume replays them into the union-find: the same sets,
hence the same later decisions), and the documents table and the indexes are one
transaction each. The scratch records the identity of the build (method, parameters,
settings, input key); a resume of another is refused.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from neardup import faults
from neardup.engine import UnionFind, link_key_rows
from neardup.engine.buckets import group_runs
from neardup.engine.facts import identity_pairs
from neardup.errors import InputError, setting
from neardup.index._methods import DuplicateIdError, check_ids, i64
from neardup.index._rerank import (
    compress_texts,
)
from neardup.index._rows import RowLayout
from neardup.index._scratch import ScratchRows, ScratchTexts, read_json, skip_documents, write_json
from neardup.index._schema import TEXT_SCHEMA, TEXT_TABLE, create_indexes, open_bulk_database, release_bulk_database
from neardup.index._store import (
    append_postings,
    begin_step,
    bulk_progress,
    commit_step,
    finish_bulk,
    insert_big_groups,
    insert_documents,
    insert_texts,
    repeated_ids,
    set_bulk_progress,
)
from neardup.progress import progress_bar
from neardup.text.identity import text_identity

__all__ = ["BulkBuilder"]

_SCRATCH = ".bulk-"
_SIGN = np.uint64(1 << 63)
#: Key rows the default partitions link together at most (4-6 MB of rows; 10,000 MinHash
#: documents): more held the 1M-document build's peak 260 MiB higher for no less CPU.
LINK_ROWS = 1 << 18


class BulkBuilder:
    """One bulk build into a new database file under ``DIR/.bulk-PID/`` (see module doc).

    Parameters
    ----------
    directory : Path
        The index directory (scratch and the new database go inside it: same file system,
        so the final rename is atomic).
    method : Method
    layout : RowLayout
        The index's candidate-array rows (as the database stores them).
    meta : dict
        The index's metadata rows (copied, with ``next_doc`` set).
    sketch : callable texts -> SketchedBatch
        The index's sketch step (:func:`neardup.index._rows.sketch_texts`).
    cap : int
        Stored members above which a key group goes to ``big``.
    store_text : bool
    partitions : int or None
        Key-range partitions (a power of two); each is sorted and linked in memory
        (about 25 rows of 16-24 bytes per MinHash document: 256 partitions keep one
        partition of a 10M-document corpus near 25 MB). None: 256, linked in runs of
        consecutive partitions of up to :data:`LINK_ROWS` key rows together (a small
        corpus in one step: each step has a fixed cost of its own).
    log : callable str -> None
        Stage messages (a few per build, whatever the corpus size).
    progress : bool or None
        Progress bars for the sketch and link stages (None: when stderr is a terminal).
    rerank : RerankMethod or None
        Rerank verification: the method that verifies the edges (over ``method``); the
        texts are kept in the scratch for it, then stored.
    checkpoint_docs : int
        The sketch stage checkpoints (spills its buffered keys and records every file's
        size) after this many documents, or sooner when 64 MB of keys are buffered.
    """

    def __init__(self, directory: Path, method, layout: RowLayout, meta: dict[str, Any],
                 sketch: Callable, cap: int, *, store_text: bool, partitions: int | None = None,
                 log: Callable[[str], None] | None = None, progress: bool | None = False,
                 rerank=None, checkpoint_docs: int = 1_000_000) -> None:
        # Explicit partitions are linked one at a time; the default's are grouped.
        self.link_rows = LINK_ROWS if partitions is None else 0
        partitions = 256 if partitions is None else partitions
        if partitions < 1 or partitions & (partitions - 1):
            raise ValueError(f"Index.bulk_add: partitions must be a power of two; got {partitions}.")
        self.directory = Path(directory)
        self.method, self.layout, self.meta = method, layout, meta
        self.sketch, self.cap = sketch, cap
        self.store_text, self.partitions = store_text, partitions
        self.rerank = rerank
        self.checkpoint_docs = checkpoint_docs
        self.log = log or (lambda message: None)
        self.progress = progress
        self.row_bytes = layout.row_bytes
        self.scratch = self.directory / f"{_SCRATCH}{os.getpid()}"
        self.seconds: dict[str, float] = {}

    # -- the scratch directory and its resumption -------------------------------------------

    def _claim(self, resume: bool, identity: dict[str, Any] | None) -> None:
        """Make ``self.scratch``: a new directory, or with ``resume`` the scratch of an
        interrupted bulk add of the same identity (renamed to ours). A scratch is a
        :class:`~neardup.engine.workdir.WorkDir` (its manifest records the identity, checked
        as every out-of-core run's is); it is named by the process that made it, so that a
        scratch is found again only once that process is gone."""
        from neardup.engine.workdir import WorkDir, WorkDirError
        from neardup.io.outputs import process_alive

        stale = []
        for path in sorted(self.directory.glob(f"{_SCRATCH}*")):
            pid = path.name[len(_SCRATCH):]
            if pid.isdigit() and (int(pid) == os.getpid() or not process_alive(int(pid))):
                stale.append(path)
        ident = identity or {}
        adopted = None
        if resume:
            for path in stale:
                try:
                    WorkDir(path, ident, resume=True)
                except (OSError, WorkDirError):
                    continue
                adopted = path
            if adopted is None and stale:
                raise InputError(
                    f"Index.bulk_add: the interrupted bulk add in {str(stale[-1])!r} was for "
                    "another input, method or setting; it cannot be resumed for this one. "
                    f"Run without {setting('resume', 'resume=True')} to discard it and start "
                    "afresh.")
        elif stale:
            self.log("bulk: discarding the scratch of an interrupted bulk add "
                     f"({setting('resume', 'resume=True')} would have continued it)")
        for path in stale:
            if path != adopted:
                shutil.rmtree(path, ignore_errors=True)
        if adopted is not None and adopted != self.scratch:
            os.replace(adopted, self.scratch)
        if adopted is not None:
            self.log("bulk: resuming an interrupted bulk add")
            return
        self.scratch.mkdir()
        WorkDir(self.scratch, ident, resume=False)

    # -- 1. sketch -----------------------------------------------------------------------

    def _spill(self, batches: Iterable[tuple[Sequence[str], Sequence[str] | None]]) -> int:
        """Sketch and spill, checkpointed at every flush (``sketch.json``: documents done
        and the size of every scratch file); resumes from the last checkpoint."""
        sc = self.scratch
        state = read_json(sc / "sketch.json") or {"docs": 0, "sizes": {}, "segments": 0,
                                                   "text_end": 0, "done": False,
                                                   "id_mode": None}
        if state["done"]:
            self.log(f"bulk: sketch stage already complete ({state['docs']} documents)")
            return int(state["docs"])
        # Back to the checkpoint: files cut to their recorded sizes, later files removed.
        for path in sc.iterdir():
            name = path.name
            if name in ("manifest.json", "sketch.json"):
                continue
            if name.startswith("ids-") and int(name[4:9]) < state["segments"]:
                continue
            if name in state["sizes"]:
                os.truncate(path, state["sizes"][name])
            else:
                path.unlink()
        n = int(state["docs"])
        if n:
            self.log(f"bulk: sketch resumes after {n} documents")
        bits = self.partitions.bit_length() - 1
        buffers: list[list[np.ndarray]] = [[] for _ in range(self.partitions)]
        buffered = since = 0
        flush_bytes = 64 << 20
        names = pa.schema([("id", pa.string())] + ([("text", pa.binary())] if self.store_text else []))
        text_end = int(state["text_end"])
        segments = int(state["segments"])
        id_mode = state.get("id_mode")
        files = {name: open(sc / name, "ab") for name in _FILES}
        ids_w = [None]

        def ids_writer():
            if ids_w[0] is None:
                sink = pa.OSFile(str(sc / f"ids-{segments:05d}.arrow"), "wb")
                ids_w[0] = (sink, pa.ipc.new_stream(sink, names))
            return ids_w[0][1]

        def checkpoint(done: bool) -> None:
            nonlocal segments
            for p, parts in enumerate(buffers):
                if parts:
                    with open(sc / f"p-{p:05d}.bin", "ab") as handle:
                        for part in parts:
                            handle.write(part.tobytes())
                    buffers[p] = []
            if ids_w[0] is not None:
                ids_w[0][1].close()
                ids_w[0][0].close()
                ids_w[0] = None
                segments += 1
            for handle in files.values():
                handle.flush()
            sizes = {p.name: p.stat().st_size for p in sc.iterdir()
                     if p.name in _FILES or p.name.startswith("p-")}
            write_json(sc / "sketch.json", {"docs": n, "sizes": sizes, "segments": segments,
                                             "text_end": text_end, "done": done,
                                             "id_mode": id_mode})

        try:
            with progress_bar("sketching", unit="docs", enabled=self.progress) as advance:
                for texts, ids in skip_documents(batches, n):
                    sketch, ck, digest, normalized = self.sketch(texts)
                    m = len(sketch)
                    if m == 0:
                        continue
                    advance(m)
                    mode = "positions" if ids is None else "given"
                    if id_mode is not None and mode != id_mode:
                        raise InputError(
                            "Index.bulk_add: some batches come with ids and others without; "
                            "name every document by an id or none (positions could collide "
                            "with the ids).")
                    id_mode = mode
                    if ids is None:
                        ids = [str(n + i) for i in range(m)]
                    else:
                        ids = check_ids("Index.bulk_add", ids, m)
                    if self.rerank is not None:
                        blobs = compress_texts(texts, self.rerank.max_chars)
                        files["rerank.bin"].write(b"".join(blobs))
                        ends = text_end + np.cumsum([len(b) for b in blobs], dtype=np.int64)
                        files["rerank.end"].write(ends.tobytes())
                        text_end = int(ends[-1])
                    files["rows.bin"].write(self.layout.pack(sketch).tobytes())
                    files["digest.bin"].write(np.ascontiguousarray(digest).tobytes())
                    files["nf.bin"].write(np.asarray(sketch.n_features, np.int64).tobytes())
                    files["identity.bin"].write(text_identity(texts).tobytes())
                    columns = [pa.array([str(i) for i in ids], pa.string())]
                    if self.store_text:
                        columns.append(pa.array(
                            [zlib.compress(t.encode("utf-8", "surrogatepass")) for t in normalized],
                            pa.binary()))
                    ids_writer().write_batch(pa.record_batch(columns, schema=names))
                    keys = np.ascontiguousarray(ck.keys).view(np.uint64) if ck.keys.dtype.itemsize == 8 \
                        else ck.keys.astype(np.uint64)
                    cols = [keys.view(np.int64), n + ck.docs]
                    if ck.payload is not None:
                        cols.append(i64(ck.payload))
                    table = np.stack(cols, axis=1)
                    # Top bits of the key with the sign bit flipped: partition order is the
                    # signed-integer order in which SQLite keeps the keys.
                    part = ((keys ^ _SIGN) >> np.uint64(64 - bits)).astype(np.int64) if bits else \
                        np.zeros(keys.size, np.int64)
                    order = np.argsort(part, kind="stable")
                    bounds = np.searchsorted(part[order], np.arange(self.partitions + 1))
                    table = table[order]
                    for p in np.flatnonzero(np.diff(bounds)).tolist():
                        buffers[p].append(table[bounds[p]:bounds[p + 1]])
                    buffered += table.nbytes
                    n += m
                    since += m
                    if buffered >= flush_bytes or since >= self.checkpoint_docs:
                        checkpoint(False)
                        buffered = since = 0
                        faults.checkpoint("bulk-sketch")
                checkpoint(True)
            self.log(f"bulk: sketched {n} documents")
        finally:
            if ids_w[0] is not None:
                ids_w[0][1].close()
                ids_w[0][0].close()
            for handle in files.values():
                handle.close()
        return n

    def _width(self) -> int:
        probe = self.sketch(["probe text"])[1]
        return 3 if probe.payload is not None else 2

    # -- 2. link + postings ----------------------------------------------------------------

    def _replay_forest(self, n: int, forest_bytes: int) -> UnionFind:
        """The union-find of the partitions linked so far, from their forest edges
        (``forest.bin`` cut to the committed size): the same sets, so the same answers
        to every later ``connected`` and ``union``."""
        path = self.scratch / "forest.bin"
        if path.exists():
            os.truncate(path, forest_bytes)
        uf = UnionFind(n)
        if forest_bytes:
            edges = np.fromfile(path, _FOREST)
            uf.union(edges["left"], edges["right"])
        return uf

    def _link_identities(self, con: sqlite3.Connection, uf: UnionFind) -> None:
        """Link the documents of identical texts first, whatever the method finds (as
        every engine of ``dedup`` does): their joins start ``forest.bin``, committed as one
        step of the build."""
        identity = np.fromfile(self.scratch / "identity.bin", np.uint64)
        same = identity_pairs(identity)
        merged = uf.union(same.left, same.right)
        edges = np.empty(int(merged.sum()), _FOREST)
        edges["left"], edges["right"], edges["score"] = \
            same.left[merged], same.right[merged], same.score[merged]
        with open(self.scratch / "forest.bin", "ab") as forest_f:
            forest_f.write(edges.tobytes())
            forest_f.flush()
            set_bulk_progress(con, identities_linked=1, forest_bytes=forest_f.tell())
        commit_step(con)

    def _link_and_post(self, con: sqlite3.Connection, n: int, uf: UnionFind, done: int) -> None:
        """Partitions ``done``.. in key order; each one's forest edges appended to
        ``forest.bin`` and its postings committed with the progress (a killed run
        resumes after the last committed partition)."""
        store = ScratchRows(self.scratch / "rows.bin", self.layout,
                          ScratchTexts(self.scratch) if self.rerank is not None else None)
        method = self.rerank if self.rerank is not None else self.method
        width = self._width()
        t_link = t_post = 0.0
        # Key rows whose candidate edges are built at once: a group of up to the cap (50)
        # members is paired all-to-all, so a chunk gives up to ~25 edges per row. 466k-row
        # chunks (the earlier 256 MB / row) allowed ~11M edges, several hundred MB with
        # their temporaries: the likely source of the 10M build's transient peak (1,912 MiB
        # in its first partitions, while sampled RSS stayed under 0.9 GB).
        chunk_rows = 1 << 16
        self.log("bulk: linking key partitions" + (f" from {done}" if done else ""))
        steps = self._link_steps(done, width)
        committed = 0
        with open(self.scratch / "forest.bin", "ab") as forest_f, \
                progress_bar("linking", total=self.partitions - done, unit="partitions",
                             enabled=self.progress) as advance:
            for step in steps:
                paths = [self.scratch / f"p-{p:05d}.bin" for p in step]
                parts = [np.fromfile(path, np.int64) for path in paths if path.exists()]
                if parts:
                    raw = np.concatenate(parts).reshape(-1, width)
                    keys, docs = raw[:, 0], raw[:, 1]
                    payload = raw[:, 2] if width == 3 else np.zeros(keys.size, np.int64)
                    t = time.perf_counter()
                    forest = link_key_rows(method, keys.view(np.uint64), docs,
                                           payload.view(np.uint64) if width == 3 else None,
                                           store, uf, chunk_rows=chunk_rows)
                    edges = np.empty(len(forest), _FOREST)
                    edges["left"], edges["right"], edges["score"] = \
                        forest.left, forest.right, forest.score
                    forest_f.write(edges.tobytes())
                    forest_f.flush()
                    t_link += time.perf_counter() - t
                    t = time.perf_counter()
                    order = np.lexsort((docs, payload, keys) if width == 3 else (docs, keys))
                    keys, docs, payload = keys[order], docs[order], payload[order]
                    append_postings(con, keys, payload if width == 3 else None, docs)
                    starts, sizes = group_runs(keys)
                    over = sizes > self.cap
                    if over.any():
                        first = np.minimum.reduceat(docs, starts)[over]
                        last = np.maximum.reduceat(docs, starts)[over]
                        insert_big_groups(con, keys[starts[over]], first, last, sizes[over])
                    t_post += time.perf_counter() - t
                set_bulk_progress(con, partitions_done=step[-1] + 1, forest_bytes=forest_f.tell())
                commit_step(con)
                for path in paths:
                    path.unlink(missing_ok=True)
                committed += 1
                advance(len(step))
                if committed == min(2, len(steps)):
                    faults.checkpoint("bulk-link")
        self.seconds["link"], self.seconds["postings"] = t_link, t_post

    def _link_steps(self, done: int, width: int) -> list[list[int]]:
        """Partitions ``done``.. in key order, cut into the steps that are linked and
        committed together: one partition each when the caller chose the partitions,
        else runs of consecutive partitions of up to ``link_rows`` key rows (a
        partition bigger than that alone). Consecutive key ranges together are one key
        range: every key's rows are still in one step, and the clusters are the same."""
        rows = []
        for p in range(done, self.partitions):
            path = self.scratch / f"p-{p:05d}.bin"
            rows.append(path.stat().st_size // (8 * width) if path.exists() else 0)
        steps: list[list[int]] = []
        held = 0
        for p, n in zip(range(done, self.partitions), rows):
            if steps and self.link_rows and held + n <= self.link_rows:
                steps[-1].append(p)
                held += n
            else:
                steps.append([p])
                held = n
        return steps

    # -- 3. documents ----------------------------------------------------------------------

    def _id_segments(self) -> list[Path]:
        return sorted(self.scratch.glob("ids-*.arrow"))

    def _documents(self, con: sqlite3.Connection, n: int, roots: np.ndarray) -> None:
        sc = self.scratch
        # Every scratch file read in blocks, not mapped or loaded whole: touched pages of a
        # map count in the process's RSS (2.1 GB at 2.9M docs), whole files grow with n.
        digest_bytes = 16
        at = 0
        text_at = 0
        with open(sc / "rows.bin", "rb") as rows_f, open(sc / "digest.bin", "rb") as digest_f, \
                open(sc / "nf.bin", "rb") as nf_f, open(sc / "identity.bin", "rb") as identity_f, \
                open(sc / "rerank.bin", "rb") as text_f, open(sc / "rerank.end", "rb") as end_f:
            for segment in self._id_segments():
                with pa.OSFile(str(segment), "rb") as source:
                    for record in pa.ipc.open_stream(source):
                        m = record.num_rows
                        ids = record.column(0)
                        texts = record.column(1).to_pylist() if self.store_text else [None] * m
                        block = np.frombuffer(rows_f.read(m * self.row_bytes), np.uint8) \
                            .reshape(m, self.row_bytes)
                        digest = np.frombuffer(digest_f.read(m * digest_bytes), np.uint8) \
                            .reshape(m, -1)
                        nf = np.frombuffer(nf_f.read(m * 8), np.int64)
                        identity = np.frombuffer(identity_f.read(m * 8), np.int64)
                        if self.rerank is not None:
                            ends = np.frombuffer(end_f.read(m * 8), np.int64)
                            data = text_f.read(int(ends[-1]) - text_at)
                            cuts = np.r_[0, ends - text_at].tolist()
                            insert_texts(con, TEXT_TABLE, np.arange(at, at + m),
                                         [data[a:b] for a, b in zip(cuts[:-1], cuts[1:])])
                            text_at = int(ends[-1])
                        insert_documents(con, zip(
                            range(at, at + m), ids.to_pylist(), roots[at:at + m].tolist(),
                                nf.tolist(), [d.tobytes() for d in digest],
                                [r.tobytes() for r in block], texts, identity.tolist()))
                        at += m
                        faults.checkpoint("bulk-documents")

    def _ids(self) -> pa.Array:
        chunks = []
        for segment in self._id_segments():
            with pa.OSFile(str(segment), "rb") as source:
                chunks.extend(r.column(0) for r in pa.ipc.open_stream(source))
        return pa.chunked_array(chunks, pa.string()).combine_chunks() if chunks \
            else pa.array([], pa.string())

    # -- the whole build -------------------------------------------------------------------

    def build(self, batches, *, table: bool = False, resume: bool = False,
              identity: dict[str, Any] | None = None) -> dict[str, Any]:
        """Build the new database; returns its path, the documents' roots and feature
        counts, and with ``table`` the ids and forest the result table needs (read back
        only then: they grow with the corpus). ``resume``: continue the interrupted bulk
        add of the same ``identity`` (method, settings, input) from its last completed
        step; its scratch is refused for another identity."""
        self._claim(resume, identity)
        t = time.perf_counter()
        n = self._spill(batches)
        self.seconds["sketch"] = time.perf_counter() - t
        db = self.scratch / "index.sqlite"
        con = open_bulk_database(db, (TEXT_SCHEMA,) if self.rerank is not None else ())
        try:
            progress = bulk_progress(con)
            finished = progress is None
            progress = progress or {}
            uf = self._replay_forest(n, int(progress.get("forest_bytes", 0)) if not finished
                                     else (self.scratch / "forest.bin").stat().st_size
                                     if (self.scratch / "forest.bin").exists() else 0)
            if not finished:
                begin_step(con)
                if not progress.get("identities_linked"):
                    self._link_identities(con, uf)
                self._link_and_post(con, n, uf, int(progress.get("partitions_done", 0)))
                t = time.perf_counter()
                roots = uf.roots()
                if not progress.get("documents_done"):
                    self.log("bulk: documents table")
                    self._documents(con, n, roots)
                    set_bulk_progress(con, documents_done=1)
                    commit_step(con)
                self.seconds["documents"] = time.perf_counter() - t
                t = time.perf_counter()
                self.log("bulk: building the id and cluster indexes")
                try:
                    create_indexes(con)
                except sqlite3.IntegrityError as exc:
                    raise DuplicateIdError(
                        f"Index.bulk_add: ids must be unique; repeated: {repeated_ids(con)}. "
                        "Nothing was added.") from exc
                meta = dict(self.meta, next_doc=n)
                state = read_json(self.scratch / "sketch.json") or {}
                if state.get("id_mode"):
                    meta["id_mode"] = state["id_mode"]
                finish_bulk(con, meta)
                faults.checkpoint("bulk-indexed")
                self.seconds["indexes"] = time.perf_counter() - t
            else:
                roots = uf.roots()
            release_bulk_database(con)
        finally:
            con.close()
        nf = np.fromfile(self.scratch / "nf.bin", np.int64)
        out = {"path": db, "n": n, "roots": roots, "n_features": nf, "ids": None,
               "forest": None}
        if table:
            path = self.scratch / "forest.bin"
            edges = np.fromfile(path, _FOREST) if path.exists() else np.empty(0, _FOREST)
            out["ids"] = self._ids()
            out["forest"] = (edges["left"].copy(), edges["right"].copy(), edges["score"].copy())
        return out

    def cleanup(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)


#: Scratch files of the sketch stage appended per batch (p-*.bin and ids-*.arrow aside).
_FILES = ("rows.bin", "digest.bin", "nf.bin", "identity.bin", "rerank.bin", "rerank.end")
#: A forest edge in ``forest.bin``.
_FOREST = np.dtype([("left", "<i8"), ("right", "<i8"), ("score", "<f4")])
