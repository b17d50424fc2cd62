"""The out-of-core vector stage: embeddings -> shards -> cosine pairs -> components.

The embedding methods (``retsim``, ``retsim-partial``, ``biencoder``) link documents whose
rows (one embedding per document, or one per chunk) reach a cosine threshold. In memory
they hold every row and search the whole corpus at once; here no step holds more than two
shards of rows:

1. **embed** (streaming, per batch): ``method.sketch`` then ``method.vector_rows``; rows
   are appended to one raw array in the work directory (``storage``: float32 by default,
   float16 halves the disk; docs/decisions/0012-embeddings-out-of-core.md), the
   number of rows each document owns to another, document facts to Parquet.
2. **search** (per query shard): rows are cut into shards of ``shard_rows`` (from the
   memory limit). The index is chosen as :meth:`Method.find_pairs` chooses it
   (:func:`resolve_index`): flat up to the method's ``exact_limit`` rows (``index="auto"``)
   or always (``"flat"``), IVF above it (or always, ``"ivf"``).

   *Flat*: for query shard *i*, a faiss ``IndexFlatIP`` is built over each shard *j*
   (``j >= i`` for range search: the search is symmetric, so each pair is found once;
   every *j* in kNN mode, whose per-shard top-k are merged into a global top-k) and
   queried in batches.

   *IVF* (kNN, ``k`` or 100 as in memory): the ``nlist`` centroids (``4 * sqrt(rows)``,
   as in memory) are trained once by seeded spherical k-means on every row when there
   are at most 256 per centroid and they fit in half the memory limit (then they are the
   in-memory index's centroids), else on a seeded uniform sample of that size. Each
   shard's ``IndexIVFFlat`` on those centroids is written once (``ivf-JJJJ.faiss``);
   each query row's ``nprobe`` cells are chosen once per query shard, and every shard's
   lists for those cells are searched (``search_preassigned``) and their top-k merged:
   the neighbours of one IVF index over all rows, whatever the shard size. Time: the
   training, plus per query row ``nprobe / nlist`` of the rows, plus reading every
   shard's index once per query shard.

   Candidates come from faiss with the in-memory search's margin below the threshold
   and are rescored in float64 by the same function
   (:func:`neardup.graph.similarity.cosine_scores`), so with the flat index the pairs
   above the threshold are exactly those of :meth:`Method.find_pairs`. Candidates whose
   documents are already connected are skipped; the rest, once scored, join a union-find
   over the documents (the time window applied first); its joins are the forest written
   per query shard, atomically, so a killed stage resumes at the first missing shard
   (the IVF centroids and shard indexes are kept too).
3. **components**: the roots of the union-find, the forest and the outside-window pairs.

Leiden, Louvain and HAC (``every_edge``, :data:`EVERY_EDGE_CLUSTERINGS`) read every
accepted pair, not a forest: the search's union-find is then replaced by the keyed stage's
:class:`~neardup.engine.link.NoJoins` (nothing counts as joined, nothing is skipped),
each query shard's file holds its accepted pairs, and the components stage merges them
once each (a pair found from both ends, or by several chunk pairs, keeps its best score)
into ``components/edges.arrow``, which the pipeline clusters with
:func:`neardup.graph.cluster_pairs` as the in-memory path does. These are the pairs
:meth:`Method.find_pairs` gives that clustering in memory (HAC's weak pairs are those
above the method's threshold there too): at most ``k`` per row in kNN mode, every pair
above the threshold with range search.

A method that scores its candidate pairs from texts (a verification spec with
``text_chars`` beside its vectors: rerank over RETSim or bi-encoder candidates) also has its texts
written at the embed stage (``embed/texts.bin``, the keyed stage's
:class:`~neardup.engine.stores.TextWriter`); in the search, the pairs above the vector
threshold (not yet joined, not rejected before) go to
:meth:`Method.score_candidate_rows` in batches whose texts take at most an eighth of the
budget (:class:`PairScoring`), and only the accepted pairs join. The scorer's parameters
are part of the search key, so another rerank threshold re-runs the search only.

Resident memory: two shards of float32 rows (a quarter of
``CorpusStageConfig.memory_limit`` each; with IVF the index shard is its index, the
same rows plus 8-byte ids) and a query batch's candidates (batches shrink when they find
more than another quarter's worth: a template's thousands of copies), for a method that
scores its candidates the texts of one scoring batch and its rejected pairs (an eighth
and a sixteenth, :class:`PairScoring`), plus 16 bytes per
document (union-find, row offsets), the IVF training sample (at most half the limit,
before any shard is read) and the model's own memory while embedding. Flat search takes
n^2 * d / 2 multiply-adds whatever the shard size; HNSW (``index="hnsw"``) is not built
per shard (it stays in memory: its single-threaded, reproducible build costs as much as
exact search here, docs/decisions/0012-embeddings-out-of-core.md).

Work directory (beside ``manifest.json``)::

    embed/rows.bin, embed/rows_per_doc.bin, embed/docs.parquet, embed/_DONE.json
    embed/texts.bin, embed/texts.offsets.bin (methods that score pairs from texts only)
    search/q-IIII.arrow, search/q-IIII.json, search/_KEY, search/_DONE.json
    search/ivf-centroids.faiss, search/ivf-JJJJ.faiss (IVF only)
    components/forest.arrow, components/outside.arrow, components/roots.npy, _DONE.json
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from neardup.engine.components import CorpusStageOutput, merge_forests, read_stage_output
from neardup.engine.facts import DOC_SCHEMA, document_facts, require_dates
from neardup.engine.link import NoJoins, PartitionLinker
from neardup.engine.local import CorpusStageConfig
from neardup.engine.pairmemory import PairMemory
from neardup.engine.rows import LazyTexts, RowSource, VectorShards
from neardup.engine.stores import TEXTS_FILE, TextReader, TextWriter
from neardup.engine.unionfind import UnionFind
from neardup.engine.workdir import WorkDir, atomic_write_text, read_arrow, stage_key, write_arrow
from neardup.errors import check_choice, check_int
from neardup.graph.edges import Pairs, TimeWindow
from neardup.graph.similarity import (
    DEFAULT_APPROX_K,
    check_unit_rows,
    cosine_scores,
    import_faiss,
    ivf_nlist,
    omp_threads,
    search_margin,
    train_ivf,
)
from neardup.io.batch import DocumentBatch
from neardup.io.rowfile import read_rows, read_spans
from neardup.io.writers import atomic_path
from neardup.methods.base import CandidateRows, Method
from neardup.progress import StageTimer, progress_bar, timed_batches

__all__ = ["EVERY_EDGE_CLUSTERINGS", "STORAGE_DTYPES", "PairScoring", "resolve_index",
           "run_vector_stage", "shard_rows_for", "supports_vector_stage", "training_positions",
           "training_rows"]

#: How rows are stored on disk between the embed and search stages.
STORAGE_DTYPES = ("float32", "float16")
#: Query rows searched at once (the in-memory search's default ``query_batch``).
QUERY_BATCH = 4096
#: Fewest rows in a shard, however small the memory limit.
MIN_SHARD_ROWS = 64
#: IVF training rows per centroid at most (faiss's own cap, ``max_points_per_centroid``).
IVF_TRAIN_PER_CELL = 256
#: IVF training rows per centroid at least (faiss warns below it).
IVF_MIN_PER_CELL = 39

#: Clusterings the stage runs besides connected components, over every accepted pair
#: (``every_edge``): what :meth:`Method.find_pairs` gives the in-memory clustering, whose
#: weak pairs (HAC's too) are those above the method's own threshold.
EVERY_EDGE_CLUSTERINGS = ("leiden", "louvain", "hac")


def supports_vector_stage(method: Method, algorithm: str, n_docs: int | None = None) -> bool:
    """Whether ``method`` with clustering ``algorithm`` runs through this stage: methods
    with the vector contract (a ``vectors`` spec, rerank over embedding
    candidates included; flat, IVF or ``auto``
    indexes, not HNSW) clustered by connected components, or by any of
    :data:`EVERY_EDGE_CLUSTERINGS` over every accepted pair, at any size (``n_docs`` is
    accepted for compatibility; the index is chosen from the row count once the rows are
    embedded, :func:`resolve_index`)."""
    return method.capabilities.vectors is not None and (
        algorithm == "components" or algorithm in EVERY_EDGE_CLUSTERINGS)


def resolve_index(search, n_rows: int) -> tuple[str, int | None]:
    """The index kind (``"flat"`` or ``"ivf"``) and neighbours per row (None: range
    search) the stage uses for ``n_rows`` rows, as :meth:`Method.find_pairs` chooses
    them: flat up to ``search.exact_limit`` rows, the approximate index above it with
    ``k`` (default :data:`~neardup.graph.similarity.DEFAULT_APPROX_K`)."""
    if search.exact_limit is None or n_rows <= search.exact_limit or search.index == "flat":
        return "flat", search.k
    return search.index, search.k if search.k is not None else DEFAULT_APPROX_K


def shard_rows_for(budget: int, dim: int, k: int | None, ivf: bool = False) -> int:
    """Rows per shard so that a query shard and an index shard (float32 rows, their
    norms, an IVF shard's row ids and, in kNN mode, the query shard's running top-k) take
    half of ``budget`` bytes; the other half is left to a query batch's candidates (or,
    with IVF, the training sample)."""
    row_bytes = dim * 4 + 8 + ((k + 1) * 12 if k else 0) + (8 if ivf else 0)
    return max(MIN_SHARD_ROWS, budget // 4 // row_bytes)


# --------------------------------------------------------------------------- embed


def _embed_stage(wd: WorkDir, batches: Iterable[DocumentBatch], method: Method, storage: str,
                 timer, progress, total) -> dict[str, Any]:
    # Keyed by the sketch parameters only: a rerun with another threshold reuses the rows.
    key = stage_key("embed", method.sketch_key(), storage)
    facts = wd.done("embed", key)
    if facts is not None:
        return facts
    directory = wd.start("embed")
    writer = pq.ParquetWriter(directory / "docs.parquet", DOC_SCHEMA)
    n_docs = n_rows = 0
    dim, deviation, has_dates = None, 0.0, False
    # A method that scores its candidate pairs from texts (rerank) reads them from here.
    text_chars = method.capabilities.reads.text_chars
    text_writer = TextWriter(directory / TEXTS_FILE, text_chars) if text_chars is not None else None
    try:
        with open(directory / "rows.bin", "wb") as rows_file, \
                open(directory / "rows_per_doc.bin", "wb") as counts_file:
            for batch in timed_batches(batches, timer, total=total, progress=progress):
                n = len(batch)
                with timer.stage("sketch"):
                    sketch = method.sketch(batch.texts)
                    rows, owned = method.vector_rows(sketch)
                    rows = np.asarray(rows, dtype=np.float32)
                    if rows.shape[0]:
                        stored = rows.astype(storage)
                        # Norms of the rows as the search will read them back.
                        _, norms = check_unit_rows(method.name, "embeddings", stored.astype(np.float32))
                        deviation = max(deviation, float(np.abs(norms - 1.0).max()))
                        dim = int(rows.shape[1]) if dim is None else dim
                        rows_file.write(np.ascontiguousarray(stored).tobytes())
                counts_file.write(np.asarray(owned, np.int64).tobytes())
                n_rows += int(rows.shape[0])
                if text_writer is not None:
                    text_writer.write(batch.texts)
                has_dates = has_dates or batch.dates is not None
                writer.write_table(document_facts(batch, sketch))
                n_docs += n
    finally:
        writer.close()
        if text_writer is not None:
            text_writer.close()
    facts = {"n_docs": n_docs, "n_rows": n_rows, "dim": dim or 0, "storage": storage,
             "max_norm_deviation": deviation, "has_dates": has_dates,
             "texts": text_writer is not None}
    wd.finish("embed", key, facts)
    return facts


class _VectorFile(VectorShards):
    """The embed stage's rows, read back shard by shard as float32 with their norms, with
    ``pread`` (:mod:`neardup.io.rowfile`): only the rows read become resident."""

    def __init__(self, wd: WorkDir, facts: dict[str, Any]) -> None:
        self.path = wd.stage_dir("embed") / "rows.bin"
        self.n_rows, self.dim = facts["n_rows"], facts["dim"]
        self.dtype = np.dtype(facts["storage"])
        self.row_bytes = self.dtype.itemsize * self.dim

    def _float_rows(self, raw: np.ndarray) -> np.ndarray:
        return raw.view(self.dtype).reshape(-1, self.dim).astype(np.float32, order="C")

    def read(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        raw = read_spans(self.path, np.array([start * self.row_bytes]),
                         np.array([(stop - start) * self.row_bytes]))
        rows = self._float_rows(raw)
        norms = np.sqrt(np.einsum("ij,ij->i", rows, rows, dtype=np.float64))
        return rows, norms

    def take(self, positions: np.ndarray) -> np.ndarray:
        """Rows at sorted ``positions``, float32."""
        return self._float_rows(read_rows(self.path, positions, self.row_bytes))


class _IvfShards:
    """One ``IndexIVFFlat`` per shard, all on the same centroids (trained once, by
    spherical k-means on a seeded sample of every row), each written to the work
    directory once and read back per query shard. A query's probed cells are chosen once
    against the shared centroids and searched in every shard; the merged per-shard top-k
    is then the top-k of one IVF index over all rows with those centroids."""

    def __init__(self, faiss, directory, store: _VectorFile, shards: list[tuple[int, int]],
                 search, budget: int) -> None:
        self.faiss = faiss
        self.nlist = ivf_nlist(store.n_rows, search.nlist)
        path = directory / "ivf-centroids.faiss"
        if path.exists():  # a resumed stage (files are kept only under the same key)
            trained = faiss.read_index(str(path))
        else:
            sample = _training_sample(store, self.nlist, search.seed, budget)
            self.training_rows = int(sample.shape[0])
            trained = train_ivf(faiss, sample, self.nlist, search.seed, search.nprobe)
            del sample
            with atomic_path(path) as tmp:
                faiss.write_index(trained, str(tmp))
        self.nprobe = min(search.nprobe, self.nlist)
        self.trained = trained  # owns the quantizer
        self.quantizer = faiss.downcast_index(trained.quantizer)
        self.paths = []
        for j, (i0, i1) in enumerate(shards):
            shard_path = directory / f"ivf-{j:04d}.faiss"
            if not shard_path.exists():
                index = faiss.clone_index(trained)
                index.add_with_ids(store.read(i0, i1)[0], np.arange(i0, i1, dtype=np.int64))
                with atomic_path(shard_path) as tmp:
                    faiss.write_index(index, str(tmp))
                del index
            self.paths.append(shard_path)

    def probes(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(centroid scores, cells) each query visits, shape (n, nprobe)."""
        return self.quantizer.search(queries, self.nprobe)

    def index(self, j: int):
        index = self.faiss.read_index(str(self.paths[j]))
        index.nprobe = self.nprobe
        return index


def training_rows(n_rows: int, dim: int, nlist: int, budget: int) -> int:
    """Rows the IVF centroids are trained on: at most :data:`IVF_TRAIN_PER_CELL` per
    cell and half the budget of float32 rows, at least :data:`IVF_MIN_PER_CELL` per cell."""
    cap = max(IVF_MIN_PER_CELL * nlist, budget // 2 // (dim * 4))
    return min(n_rows, IVF_TRAIN_PER_CELL * nlist, cap)


def training_positions(n_rows: int, dim: int, nlist: int, seed: int, budget: int) -> np.ndarray | None:
    """Sorted positions of the rows the IVF centroids are trained on, or None for every
    row (:func:`training_rows` of them; a seeded uniform sample when fewer). With every
    row (at most :data:`IVF_TRAIN_PER_CELL` per cell, within half the budget) the
    centroids are those of the in-memory index."""
    size = training_rows(n_rows, dim, nlist, budget)
    if size >= n_rows:
        return None
    return np.sort(np.random.default_rng(seed).choice(n_rows, size=size, replace=False))


def _training_sample(store: _VectorFile, nlist: int, seed: int, budget: int) -> np.ndarray:
    positions = training_positions(store.n_rows, store.dim, nlist, seed, budget)
    if positions is None:
        return store.read(0, store.n_rows)[0]
    return store.take(positions)


# --------------------------------------------------------------------------- search


class PairScoring(RowSource):
    """What a method that scores its vector candidates (verification ``text_chars`` set:
    rerank) needs in the search: the stored texts, the dates when it reads them,
    the pairs it rejected (remembered up to 1/16 of the budget: in kNN mode a pair comes
    from both ends, in different query shards) and pairs scored per batch (the texts of
    one batch's documents take at most an eighth of the budget). With the two row shards
    (half) and a query batch's candidates (a quarter) that is 15/16 of the budget."""

    #: Most pairs scored at once (as the keyed stage's verification step).
    MAX_STEP = 8192

    def __init__(self, texts: TextReader, dates: np.ndarray | None, budget: int) -> None:
        self.texts, self.dates = texts, dates
        self.rejected = PairMemory(budget // 16 // 8)
        self.step = int(min(max(budget // 8 // (2 * texts.doc_bytes + 64), 64), self.MAX_STEP))

    def rows(self, docs: np.ndarray) -> CandidateRows:
        out = CandidateRows(docs, texts=LazyTexts(self.texts, docs))
        if self.dates is not None:
            out.dates = self.dates[docs]
        return out


class ShardLinker:
    """Candidate row pairs -> document pairs joined in the run's union-find: already
    connected documents skipped, the rest rescored exactly and thresholded, then handed
    to the keyed stage's :class:`PartitionLinker` (for a method that scores its
    candidates, ``scoring``: scored by the method in bounded batches, rejections
    remembered) which applies the time window and keeps the joins as forest edges."""

    def __init__(self, method: Method, uf: UnionFind | NoJoins, offsets: np.ndarray, threshold: float,
                 window: TimeWindow | None, scoring: PairScoring | None = None) -> None:
        self.uf, self.offsets, self.threshold = uf, offsets, np.float32(threshold)
        self.scoring = scoring
        self.linker = PartitionLinker(method, np.zeros(0, np.int64), scoring, window, uf,
                                      None if scoring is None else scoring.rejected)
        if scoring is not None:
            self.linker.step = scoring.step
        self._counts = {"candidate_pairs": 0, "scored_pairs": 0}

    @property
    def counts(self) -> dict[str, int]:
        if self.scoring is None:
            return dict(self._counts)
        return {**self._counts, "verified_pairs": self.linker.counts["verified_edges"],
                "rescoring_skipped": self.linker.counts.get("rescoring_skipped", 0)}

    def doc_of(self, rows: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.offsets, rows, side="right") - 1

    def consider(self, query: tuple[np.ndarray, np.ndarray, int], index: tuple[np.ndarray, np.ndarray, int],
                 q_rows: np.ndarray, i_rows: np.ndarray) -> None:
        """``q_rows``, ``i_rows``: global row numbers of candidate pairs, the first in the
        query shard (rows, norms, first row), the second in the index shard."""
        left, right = self.doc_of(q_rows), self.doc_of(i_rows)
        self._counts["candidate_pairs"] += int(left.size)
        todo = (left != right)  # chunks of one document never pair it with itself
        todo[todo] = ~self.uf.connected(left[todo], right[todo])
        if not todo.any():
            return
        q_rows, i_rows, left, right = q_rows[todo], i_rows[todo], left[todo], right[todo]
        (qx, qn, q0), (ix, inorm, i0) = query, index
        score = cosine_scores(qx, qn, q_rows - q0, ix, inorm, i_rows - i0)
        self._counts["scored_pairs"] += int(score.size)
        keep = score >= self.threshold
        # Chunk pairs of one document pair collapse to their best score.
        pairs = Pairs(left[keep], right[keep], score[keep]).canonical()
        # A method that scores its candidates re-scores them (its score replaces the cosine).
        self.linker.consider(pairs.left, pairs.right, None if self.scoring else pairs.score)

    def results(self) -> tuple[Pairs, Pairs]:
        """(forest, outside-window pairs) of the shards linked so far."""
        return self.linker.forest_pairs(), self.linker.outside_pairs()


class QueryBatchSize:
    """Rows per range-search query batch, adapted so that a batch's results stay near
    ``max_results``: a row can have thousands of neighbours (a template's copies), so a
    batch that found too many makes the next ones smaller, and batches grow back (up to
    :data:`QUERY_BATCH`) when they find few. faiss's results for one batch cannot be
    capped beforehand; this bounds all but the first batch that meets such a cluster."""

    def __init__(self, max_results: int) -> None:
        self.max_results = max(max_results, 1024)
        self.rows = QUERY_BATCH

    def observe(self, found: int) -> None:
        if found > self.max_results:
            self.rows = max(1, int(self.rows * self.max_results / found))
        elif found < self.max_results // 4:
            self.rows = min(QUERY_BATCH, self.rows * 2)


def _range_candidates(index, queries: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """(query position, index position) of every inner product above ``floor``."""
    lims, _, found = index.range_search(queries, floor)
    query = np.repeat(np.arange(queries.shape[0], dtype=np.int64), np.diff(lims.astype(np.int64)))
    return query, found.astype(np.int64, copy=False)


def _merge_top(best_s: np.ndarray, best_i: np.ndarray, scores: np.ndarray, ids: np.ndarray,
               width: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``width`` best of two per-row candidate lists (score descending; ties: the
    earlier list, then the lower position, as one flat index over all rows orders them)."""
    s = np.concatenate((best_s, scores), axis=1)
    i = np.concatenate((best_i, ids), axis=1)
    order = np.argsort(-s, axis=1, kind="stable")[:, :width]
    return np.take_along_axis(s, order, 1), np.take_along_axis(i, order, 1)


def search_shard(faiss, store: VectorShards, shards: list[tuple[int, int]], i: int,
                  k: int | None, floor: float, linker: ShardLinker,
                  batch: QueryBatchSize, ivf: _IvfShards | None = None) -> None:
    """Query shard ``i`` against the shards it must meet (see the module docstring)."""
    q0, q1 = shards[i]
    qx, qn = store.read(q0, q1)
    query = (qx, qn, q0)
    if k is None:
        for j in range(i, len(shards)):
            i0, i1 = shards[j]
            ix, inorm = (qx, qn) if j == i else store.read(i0, i1)
            index = faiss.IndexFlatIP(store.dim)
            index.add(ix)
            b = 0
            while b < q1 - q0:
                e = min(q1 - q0, b + batch.rows)
                local_q, local_i = _range_candidates(index, qx[b:e], floor)
                batch.observe(local_q.size)
                q_rows, i_rows = local_q + (q0 + b), local_i + i0
                del local_q, local_i
                if j == i:  # within a shard each pair is found from both ends: keep one
                    keep = i_rows > q_rows
                    q_rows, i_rows = q_rows[keep], i_rows[keep]
                linker.consider(query, (ix, inorm, i0), q_rows, i_rows)
                b = e
            del index
        return
    # kNN: each query row's k + 1 best rows over all shards, merged shard by shard.
    width = k + 1
    best_s = np.full((q1 - q0, width), -np.inf, dtype=np.float32)
    best_i = np.full((q1 - q0, width), -1, dtype=np.int64)
    probe_scores, probe_cells = ivf.probes(qx) if ivf is not None else (None, None)
    for j, (i0, i1) in enumerate(shards):
        if ivf is None:
            ix = qx if j == i else store.read(i0, i1)[0]
            index = faiss.IndexFlatIP(store.dim)
            index.add(ix)
            n_search, base = min(width, i1 - i0), i0
            del ix
        else:  # the shard's IVF lists hold global row numbers
            index, n_search, base = ivf.index(j), width, 0
        for b in range(0, q1 - q0, QUERY_BATCH):
            part = slice(b, b + QUERY_BATCH)
            if ivf is None:
                scores, found = index.search(qx[part], n_search)
            else:
                scores, found = index.search_preassigned(qx[part], n_search, probe_cells[part],
                                                         probe_scores[part])
            found = np.where(found >= 0, found.astype(np.int64) + base, -1)
            best_s[part], best_i[part] = _merge_top(best_s[part], best_i[part], scores, found, width)
        del index
    own = np.arange(q0, q1, dtype=np.int64)[:, None]
    other = (best_i >= 0) & (best_i != own)
    # As the in-memory search: the first k rows that are not the query, above the floor.
    keep = other & (np.cumsum(other, axis=1) <= k) & (best_s >= floor)
    rows, cols = np.nonzero(keep)
    q_rows, i_rows = rows.astype(np.int64) + q0, best_i[rows, cols]
    # Index rows lie in any shard: score them shard by shard against that shard's rows.
    for i0, i1 in shards:
        inside = (i_rows >= i0) & (i_rows < i1)
        if inside.any():
            ix, inorm = (qx, qn) if i0 == q0 else store.read(i0, i1)
            linker.consider(query, (ix, inorm, i0), q_rows[inside], i_rows[inside])


def _search_stage(wd: WorkDir, key: str, method: Method, facts: dict[str, Any], shard_rows: int,
                  budget: int, window_hours: float | None, timer, progress,
                  kind: str = "flat", k: int | None = None, every_edge: bool = False) -> dict[str, Any]:
    done = wd.done("search", key)
    if done is not None:
        return done
    directory = wd.start_keyed("search", key)
    caps = method.capabilities
    search = caps.vectors
    n_docs, n_rows = facts["n_docs"], facts["n_rows"]
    counts = np.fromfile(wd.stage_dir("embed") / "rows_per_doc.bin", dtype=np.int64)
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    del counts
    dates = identity = None
    if window_hours is not None or caps.reads.dates:
        docs = pq.read_table(wd.stage_dir("embed") / "docs.parquet", columns=["date", "identity"])
        dates = docs.column("date").to_numpy().astype("datetime64[s]")
        identity = docs.column("identity").to_numpy()
    scoring = None
    if caps.reads.text_chars is not None:
        if not facts.get("texts"):
            raise ValueError(
                f"run_vector_stage: the work directory's embed stage kept no texts, which "
                f"method {method.name!r} scores; start with a fresh work directory."
            )
        scoring = PairScoring(TextReader(wd.stage_dir("embed") / TEXTS_FILE, n_docs),
                              dates if caps.reads.dates else None, budget)
    window = TimeWindow.of(window_hours, dates, identity)
    store = _VectorFile(wd, facts)
    shards = [(s, min(s + shard_rows, n_rows)) for s in range(0, n_rows, shard_rows)]
    k = None if k is None else min(k, max(n_rows - 1, 1))
    floor = search.threshold - search_margin(store.dim, facts["max_norm_deviation"])
    totals = {"candidate_pairs": 0, "scored_pairs": 0}
    if scoring is not None:
        totals.update(verified_pairs=0, rescoring_skipped=0)
    # One union-find across query shards, searched in order: a resumed stage replays the
    # forests of the completed shards (a prefix) to get the same state. With
    # ``every_edge`` nothing counts as joined: each shard's file holds its accepted pairs.
    uf = NoJoins() if every_edge else UnionFind(n_docs)
    # A result row costs ~40 bytes (faiss's, the row numbers, the mask): a batch's results
    # may take a quarter of the budget (two shards take half).
    batch = QueryBatchSize(budget // 4 // 40)
    resuming = True
    faiss = import_faiss() if n_rows >= 2 else None
    ivf, ivf_facts = None, {}
    if kind == "ivf" and faiss is not None:
        with timer.stage("index"), omp_threads(faiss, search.threads):
            ivf = _IvfShards(faiss, directory, store, shards, search, budget)
        ivf_facts = {"nlist": ivf.nlist, "nprobe": ivf.nprobe,
                     "training_rows": training_rows(n_rows, store.dim, ivf.nlist, budget)}
    with progress_bar("searching", total=len(shards), unit="shards", enabled=progress) as advance, \
            timer.stage("pairs"), omp_threads(faiss, search.threads if faiss else None):
        for i in range(len(shards)):
            out, marker = directory / f"q-{i:04d}.arrow", directory / f"q-{i:04d}.json"
            resuming = resuming and out.exists() and marker.exists()
            if resuming:
                table = read_arrow(out)
                away = table.column("outside_window").to_numpy(zero_copy_only=False)
                uf.union(table.column("left").to_numpy()[~away], table.column("right").to_numpy()[~away])
            else:
                linker = ShardLinker(method, uf, offsets, search.threshold, window, scoring)
                if n_rows >= 2:
                    search_shard(faiss, store, shards, i, k, floor, linker, batch, ivf)
                forest, outside = linker.results()
                write_arrow(out, pa.table({
                    "left": np.concatenate((forest.left, outside.left)),
                    "right": np.concatenate((forest.right, outside.right)),
                    "score": np.concatenate((forest.score, outside.score)),
                    "outside_window": np.concatenate((np.zeros(len(forest), bool),
                                                      np.ones(len(outside), bool))),
                }))
                atomic_write_text(marker, json.dumps(linker.counts))
            shard_counts = json.loads(marker.read_text())
            for name in totals:
                totals[name] += shard_counts[name]
            advance(1)
    totals.update(shards=len(shards), shard_rows=shard_rows, index=kind, k=k, **ivf_facts)
    wd.finish("search", key, totals)
    return totals


# --------------------------------------------------------------------------- components


def run_vector_stage(
    batches: Iterable[DocumentBatch],
    method: Method,
    *,
    config: CorpusStageConfig = CorpusStageConfig(),
    time_window_hours: float | None = None,
    input_identity: Any = None,
    timer=None,
    progress: bool | None = None,
    total: int | None = None,
    storage: str = "float32",
    shard_rows: int | None = None,
    every_edge: bool = False,
) -> CorpusStageOutput:
    """Run the embed, search and components stages over ``batches`` (module docstring).

    Parameters
    ----------
    batches, config, time_window_hours, input_identity, timer, progress, total
        As :func:`neardup.engine.run_corpus_stage` (``config.partitions`` is unused).
    storage : {"float32", "float16"}, default "float32"
        How rows are stored between the stages. float32: the pairs of the in-memory
        search, exactly. float16: half the disk, scores moved by ~1e-4.
    shard_rows : int or None
        Rows per shard; None: :func:`shard_rows_for` the memory limit.
    every_edge : bool, default False
        Keep every accepted pair, not only a spanning forest, for the clusterings of
        :data:`EVERY_EDGE_CLUSTERINGS`: no candidate is skipped for joining documents
        already joined, so each is scored (and, for a method that scores its candidates,
        verified) once per query shard that meets it; the pairs are those the in-memory
        search gives the clustering.

    Returns
    -------
    CorpusStageOutput
        Same fields as the keyed stage's; ``pairs`` is the spanning forest of the scored
        pairs that joined the components, or with ``every_edge`` every accepted pair
        (once each, its best score).
    """
    search = method.capabilities.vectors
    if search is None:
        raise ValueError(
            f"run_vector_stage: method {method.name!r} with these parameters has no vector "
            "stage (an approximate index is searched in memory); run it through "
            "neardup.pipeline.run"
        )
    if search.threshold <= 0.0:
        raise ValueError(
            f"run_vector_stage: threshold must be a number in (0, 1]; got {search.threshold!r}. "
            "A threshold of 0 pairs about half of all documents; near-duplicate thresholds "
            "are usually 0.8-0.95."
        )
    check_choice("run_vector_stage", "storage", storage, STORAGE_DTYPES)
    if shard_rows is not None:
        check_int("run_vector_stage", "shard_rows", shard_rows, low=1)
    timer = timer or StageTimer()
    with tempfile.TemporaryDirectory(prefix=f"neardup-work-{os.getpid()}-") as scratch:
        path = config.work_dir if config.work_dir is not None else scratch
        wd = WorkDir(path, {"method": method.name, "input": input_identity}, resume=config.resume)
        facts = _embed_stage(wd, batches, method, storage, timer, progress, total)
        require_dates(time_window_hours, facts["has_dates"])
        kind, k = resolve_index(search, facts["n_rows"])
        rows = shard_rows or shard_rows_for(config.budget, max(facts["dim"], 1), k, kind == "ivf")
        key_parts = ["search", facts, search, rows, time_window_hours, kind, k,
                     *(("every-edge",) if every_edge else ())]
        if method.capabilities.reads.text_chars is not None:  # the scorer and its threshold
            key_parts.append(method.get_params())
        search_key = stage_key(*key_parts)
        search_facts = _search_stage(wd, search_key, method, facts, rows, config.budget,
                                     time_window_hours, timer, progress, kind, k, every_edge)
        edge_files = [wd.stage_dir("search") / f"q-{i:04d}.arrow"
                      for i in range(search_facts["shards"])]
        comp_facts = merge_forests(wd, search_key, facts["n_docs"], edge_files, timer,
                                   every_edge, docs_stage="embed")
        with timer.stage("cluster"):
            output = read_stage_output(
                wd, "embed", facts["has_dates"],
                {"rows": facts["n_rows"], "storage": storage, **search_facts, **comp_facts})
    return output
