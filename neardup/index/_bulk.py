"""The bulk path of :meth:`Index.bulk_add`: a whole corpus into an empty index, fast.

Adding batch by batch pays, per document, a B-tree lookup of each of its keys and a
random insert of each posting into a table far larger than SQLite's page cache: at 1M
documents that is ~1 ms per document, and it grows with the index. An empty index needs
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

Everything is written into a new database file beside the index (journal off: nothing
else sees it until it is complete), then swapped in by
:func:`neardup.index._store.replace_empty_database`. A killed bulk add leaves the index
as it was (empty) and a scratch directory that the next bulk add removes.
"""

from __future__ import annotations

import json
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

from neardup.engine import UnionFind, link_key_rows
from neardup.engine.buckets import group_runs
from neardup.errors import InputError
from neardup.index._methods import DuplicateIdError, i64, split_rows
from neardup.index._rerank import (
    DOC_ARRAY,
    TEXT_SCHEMA,
    TEXT_TABLE,
    RerankedMethod,
    compress_texts,
    decompress_text,
)
from neardup.index._store import create_indexes, create_tables

__all__ = ["BulkBuilder", "remove_stale_scratch"]

_SCRATCH = ".bulk-"
_SIGN = np.uint64(1 << 63)


def remove_stale_scratch(directory: Path) -> None:
    """Delete scratch directories of bulk adds whose process is gone (killed)."""
    from neardup.io.outputs import process_alive

    for path in directory.glob(f"{_SCRATCH}*"):
        pid = path.name[len(_SCRATCH):]
        if pid.isdigit() and (int(pid) == os.getpid() or not process_alive(int(pid))):
            shutil.rmtree(path, ignore_errors=True)


class _RowStore:
    """Candidate-array rows in a raw file, read by position (mapped per read: resident
    memory is the rows read, the rest stays in the OS cache).

    A fault on a mapped file page maps the pages around it too (the kernel's
    fault-around, 64 KB), and every page a mapping touched counts in the process's RSS
    until it is unmapped: the linker's reads of up to 16,384 random 512-byte rows through
    one mapping put ~1 GB in RSS (the 2.1 GB peak of the 2.9M build). Rows are therefore
    read :attr:`rows_per_map` at a time, each slice through its own mapping, as the
    corpus stage does.
    """

    rows_per_map = 2048

    def __init__(self, path: Path, n: int, row_bytes: int, layout, *,
                 with_positions: bool = False) -> None:
        self.path, self.n, self.row_bytes, self.layout = path, n, row_bytes, layout
        self.with_positions = with_positions

    def raw(self, docs) -> np.ndarray:
        docs = np.asarray(docs)
        out = np.empty((docs.size, self.row_bytes), np.uint8)
        for start in range(0, docs.size, self.rows_per_map):
            part = slice(start, start + self.rows_per_map)
            mapped = np.memmap(self.path, np.uint8, "r", shape=(self.n, self.row_bytes))
            out[part] = mapped[docs[part]]
            del mapped
        return out

    def rows(self, docs: np.ndarray) -> dict[str, np.ndarray]:
        out = split_rows(self.raw(docs), self.layout)
        if self.with_positions:  # for the rerank verifier's text lookup
            out[DOC_ARRAY] = np.asarray(docs, np.int64)
        return out


class _TextStore:
    """The rerank verifier's compressed texts in the scratch (``rerank.bin``, end offsets
    in ``rerank.end``), read by position."""

    def __init__(self, directory: Path, n: int) -> None:
        self.data, self.end_path, self.n = directory / "rerank.bin", directory / "rerank.end", n

    def texts_of(self, docs: np.ndarray) -> list[str]:
        docs = np.asarray(docs, np.int64)
        ends = np.memmap(self.end_path, np.int64, "r", shape=(self.n,))
        stop = np.array(ends[docs])
        start = np.where(docs > 0, np.array(ends[np.maximum(docs - 1, 0)]), 0)
        del ends
        out = []
        with open(self.data, "rb") as handle:
            for a, b in zip(start.tolist(), stop.tolist()):
                out.append(decompress_text(os.pread(handle.fileno(), b - a, a)))
        return out


#: Postings rows per INSERT statement of the bulk load: one statement binding many rows
#: costs a third of the CPU of one row per statement (measured: 2M sorted rows, 3.0 vs
#: 1.1 CPU s), the per-statement work of the VM and the Python driver being shared.
_ROWS_PER_INSERT = 256
#: Rows converted to Python ints at once (bounds the transient lists, ~100 B a row).
_INSERT_SLICE = 1 << 17


def _insert_postings(con: sqlite3.Connection, keys: np.ndarray, payload: np.ndarray | None,
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


class BulkBuilder:
    """One bulk build into a new database file under ``DIR/.bulk-PID/`` (see module doc).

    Parameters
    ----------
    directory : Path
        The index directory (scratch and the new database go inside it: same file system,
        so the final rename is atomic).
    method : Method
    layout : list of (name, dtype, tail)
        The index's candidate-array row layout.
    meta : dict
        The index's metadata rows (copied, with ``next_doc`` set).
    sketch : callable texts -> (Sketch, digests uint64 (n, 2), normalized texts)
    rows_blob : callable Sketch -> ndarray uint8 (n, row_bytes)
    cap : int
        Stored members above which a key group goes to ``big``.
    store_text : bool
    partitions : int
        Key-range partitions (a power of two); each is sorted and linked in memory
        (about 25 rows of 16-24 bytes per MinHash document: 256 partitions keep one
        partition of a 10M-document corpus near 25 MB).
    log : callable str -> None
    rerank : RerankVerifier or None
        Rerank verification (texts kept in the scratch for the linker, then stored).
    """

    def __init__(self, directory: Path, method, layout, meta: dict[str, Any], sketch: Callable,
                 rows_blob: Callable, cap: int, *, store_text: bool, partitions: int = 256,
                 log: Callable[[str], None] | None = None, rerank=None) -> None:
        if partitions < 1 or partitions & (partitions - 1):
            raise ValueError(f"Index.bulk_add: partitions must be a power of two; got {partitions}.")
        self.directory = Path(directory)
        self.method, self.layout, self.meta = method, layout, meta
        self.sketch, self.rows_blob, self.cap = sketch, rows_blob, cap
        self.store_text, self.partitions = store_text, partitions
        self.rerank = rerank
        self.log = log or (lambda message: None)
        self.row_bytes = sum(np.dtype(d).itemsize * int(np.prod(t or (1,))) for _, d, t in layout)
        self.scratch = self.directory / f"{_SCRATCH}{os.getpid()}"
        self.seconds: dict[str, float] = {}

    # -- 1. sketch -----------------------------------------------------------------------

    def _spill(self, batches: Iterable[tuple[Sequence[str], Sequence[str] | None]]) -> int:
        bits = self.partitions.bit_length() - 1
        buffers: list[list[np.ndarray]] = [[] for _ in range(self.partitions)]
        buffered, n = 0, 0
        flush_bytes = 64 << 20
        names = pa.schema([("id", pa.string())] + ([("text", pa.binary())] if self.store_text else []))
        sc = self.scratch
        text_end = 0
        with open(sc / "rows.bin", "wb") as rows_f, open(sc / "digest.bin", "wb") as digest_f, \
                open(sc / "nf.bin", "wb") as nf_f, \
                open(sc / "rerank.bin", "wb") as text_f, open(sc / "rerank.end", "wb") as end_f, \
                pa.OSFile(str(sc / "ids.arrow"), "wb") as ids_sink, \
                pa.ipc.new_stream(ids_sink, names) as ids_w:

            def flush() -> None:
                for p, parts in enumerate(buffers):
                    if parts:
                        with open(sc / f"p-{p:05d}.bin", "ab") as handle:
                            for part in parts:
                                handle.write(part.tobytes())
                        buffers[p] = []

            for texts, ids in batches:
                sketch, digest, normalized = self.sketch(texts)
                m = len(sketch)
                if m == 0:
                    continue
                if ids is None:
                    ids = [str(n + i) for i in range(m)]
                elif len(ids) != m:
                    raise InputError(f"Index.bulk_add: got {m} texts but {len(ids)} ids.")
                if self.rerank is not None:
                    blobs = compress_texts(texts, self.rerank.max_chars)
                    text_f.write(b"".join(blobs))
                    ends = text_end + np.cumsum([len(b) for b in blobs], dtype=np.int64)
                    end_f.write(ends.tobytes())
                    text_end = int(ends[-1])
                rows_f.write(self.rows_blob(sketch).tobytes())
                digest_f.write(np.ascontiguousarray(digest).tobytes())
                nf_f.write(np.asarray(sketch.n_features, np.int64).tobytes())
                columns = [pa.array([str(i) for i in ids], pa.string())]
                if self.store_text:
                    columns.append(pa.array(
                        [zlib.compress(t.encode("utf-8", "surrogatepass")) for t in normalized],
                        pa.binary()))
                ids_w.write_batch(pa.record_batch(columns, schema=names))
                ck = self.method.candidate_keys(sketch)
                keys = np.ascontiguousarray(ck.keys).view(np.uint64) if ck.keys.dtype.itemsize == 8 \
                    else ck.keys.astype(np.uint64)
                cols = [keys.view(np.int64), n + ck.docs.astype(np.int64)]
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
                if buffered >= flush_bytes:
                    flush()
                    buffered = 0
                n += m
                self.log(f"bulk: sketched {n} documents")
            flush()
        self.width = 3 if self._has_payload() else 2
        return n

    def _has_payload(self) -> bool:
        return self.method.candidate_keys(self.sketch(["probe text"])[0]).payload is not None

    # -- 2. link + postings ----------------------------------------------------------------

    def _link_and_post(self, con: sqlite3.Connection, n: int,
                       keep_forest: bool) -> tuple[UnionFind, list]:
        store = _RowStore(self.scratch / "rows.bin", n, self.row_bytes, self.layout,
                          with_positions=self.rerank is not None)
        method = self.method
        if self.rerank is not None:
            method = RerankedMethod(self.method, self.rerank,
                                    _TextStore(self.scratch, n).texts_of)
        uf = UnionFind(n)
        forests = []
        t_link = t_post = 0.0
        chunk_rows = max((256 << 20) // (self.row_bytes + 64), 1024)
        self.log("bulk: linking key partitions")
        for p in range(self.partitions):
            path = self.scratch / f"p-{p:05d}.bin"
            if not path.exists():
                continue
            raw = np.fromfile(path, np.int64).reshape(-1, self.width)
            path.unlink()
            keys, docs = raw[:, 0], raw[:, 1]
            payload = raw[:, 2] if self.width == 3 else np.zeros(keys.size, np.int64)
            t = time.perf_counter()
            forest = link_key_rows(method, keys.view(np.uint64), docs,
                                   payload.view(np.uint64) if self.width == 3 else None,
                                   store, uf, chunk_rows=chunk_rows)
            if keep_forest:
                forests.append((forest.left, forest.right, forest.score))
            t_link += time.perf_counter() - t
            t = time.perf_counter()
            order = np.lexsort((docs, payload, keys) if self.width == 3 else (docs, keys))
            keys, docs, payload = keys[order], docs[order], payload[order]
            _insert_postings(con, keys, payload if self.width == 3 else None, docs)
            t_post += time.perf_counter() - t
            starts, sizes = group_runs(keys)
            over = sizes > self.cap
            if over.any():
                first = np.minimum.reduceat(docs, starts)[over]
                last = np.maximum.reduceat(docs, starts)[over]
                con.executemany("INSERT INTO big(key, first, last, count) VALUES (?, ?, ?, ?)",
                                zip(keys[starts[over]].tolist(), first.tolist(), last.tolist(),
                                    sizes[over].tolist()))
            if p % 16 == 15:
                self.log(f"bulk: linked and stored key partition {p + 1}/{self.partitions}")
        self.seconds["link"], self.seconds["postings"] = t_link, t_post
        return uf, forests

    # -- 3. documents ----------------------------------------------------------------------

    def _documents(self, con: sqlite3.Connection, n: int, roots: np.ndarray,
                   keep_ids: bool) -> pa.Array | None:
        sc = self.scratch
        # Every scratch file read in blocks, not mapped or loaded whole: touched pages of a
        # map count in the process's RSS (2.1 GB at 2.9M docs), whole files grow with n.
        digest_bytes = 16
        at = 0
        id_chunks = []
        text_at = 0
        with open(sc / "rows.bin", "rb") as rows_f, open(sc / "digest.bin", "rb") as digest_f, \
                open(sc / "nf.bin", "rb") as nf_f, \
                open(sc / "rerank.bin", "rb") as text_f, open(sc / "rerank.end", "rb") as end_f, \
                pa.OSFile(str(sc / "ids.arrow"), "rb") as source:
            reader = pa.ipc.open_stream(source)
            for record in reader:
                m = record.num_rows
                ids = record.column(0)
                if keep_ids:
                    id_chunks.append(ids)
                texts = record.column(1).to_pylist() if self.store_text else [None] * m
                block = np.frombuffer(rows_f.read(m * self.row_bytes), np.uint8) \
                    .reshape(m, self.row_bytes)
                digest = np.frombuffer(digest_f.read(m * digest_bytes), np.uint8).reshape(m, -1)
                nf = np.frombuffer(nf_f.read(m * 8), np.int64)
                if self.rerank is not None:
                    ends = np.frombuffer(end_f.read(m * 8), np.int64)
                    data = text_f.read(int(ends[-1]) - text_at)
                    cuts = np.r_[0, ends - text_at].tolist()
                    con.executemany(f"INSERT INTO {TEXT_TABLE}(doc, text) VALUES (?, ?)",
                                    zip(range(at, at + m),
                                        (data[a:b] for a, b in zip(cuts[:-1], cuts[1:]))))
                    text_at = int(ends[-1])
                con.executemany(
                    "INSERT INTO docs(doc, id, cluster, n_features, digest, arrays, text) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    zip(range(at, at + m), ids.to_pylist(), roots[at:at + m].tolist(),
                        nf.tolist(), [d.tobytes() for d in digest],
                        [r.tobytes() for r in block], texts))
                at += m
        if not keep_ids:
            return None
        return pa.chunked_array(id_chunks, pa.string()).combine_chunks() if id_chunks \
            else pa.array([], pa.string())

    # -- the whole build -------------------------------------------------------------------

    def build(self, batches, *, table: bool = False) -> dict[str, Any]:
        """Build the new database; returns its path, the documents' roots and feature
        counts, and with ``table`` the ids and forest the result table needs (held only
        then: they grow with the corpus)."""
        remove_stale_scratch(self.directory)
        self.scratch.mkdir()
        t = time.perf_counter()
        n = self._spill(batches)
        self.seconds["sketch"] = time.perf_counter() - t
        db = self.scratch / "index.sqlite"
        con = sqlite3.connect(db, isolation_level=None)
        try:
            # Nothing reads this file before the swap: no journal, no fsync per commit
            # (the file is fsynced once before the swap), a large cache for the sorts.
            con.execute("PRAGMA journal_mode=OFF")
            con.execute("PRAGMA synchronous=OFF")
            con.execute("PRAGMA locking_mode=EXCLUSIVE")
            con.execute(f"PRAGMA cache_size=-{256 * 1024}")
            create_tables(con)
            if self.rerank is not None:
                con.execute(TEXT_SCHEMA)
            con.execute("BEGIN")
            uf, forests = self._link_and_post(con, n, table)
            t = time.perf_counter()
            roots = uf.roots()
            del uf
            self.log("bulk: documents table")
            ids = self._documents(con, n, roots, table)
            self.seconds["documents"] = time.perf_counter() - t
            t = time.perf_counter()
            self.log("bulk: building the id and cluster indexes")
            try:
                create_indexes(con)
            except sqlite3.IntegrityError as exc:
                dup = con.execute("SELECT id FROM docs GROUP BY id HAVING count(*) > 1 LIMIT 5")
                raise DuplicateIdError(
                    f"Index.bulk_add: ids must be unique; repeated: {[r[0] for r in dup]}. "
                    "Nothing was added.") from exc
            meta = dict(self.meta, next_doc=n)
            con.execute("DELETE FROM meta")
            con.executemany("INSERT INTO meta(name, value) VALUES (?, ?)",
                            [(k, json.dumps(v, sort_keys=True)) for k, v in meta.items()])
            con.execute("COMMIT")
            con.execute("PRAGMA locking_mode=NORMAL")
            con.execute("PRAGMA journal_mode=WAL")
            self.seconds["indexes"] = time.perf_counter() - t
        finally:
            con.close()
        left = np.concatenate([f[0] for f in forests]) if forests else np.empty(0, np.int64)
        right = np.concatenate([f[1] for f in forests]) if forests else np.empty(0, np.int64)
        score = np.concatenate([f[2] for f in forests]) if forests else np.empty(0, np.float32)
        nf = np.fromfile(self.scratch / "nf.bin", np.int64)
        return {"path": db, "n": n, "roots": roots, "ids": ids, "n_features": nf,
                "forest": (left, right, score)}

    def cleanup(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)
