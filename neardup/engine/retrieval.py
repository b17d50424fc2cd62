"""The retrieval stages of the corpus stage, for methods that link documents by mutual
retrieval of per-document queries (the keyed spec's ``query_retrieval``: sanderson).

Key groups cannot express such a method: a query retrieves a partner only when the
partner stands out from the query's *whole* result list (Sanderson's ``top_k`` and
``margin``), which is a property of a document's ranking, not of a pair. So after the
statistics and sketch stages (which store each document's token multiset), two stages
run the in-memory algorithm out of core, with the method's own code:

1. **postings**: the stored token multisets are read in blocks of documents and weighted
   with the fitted statistics (:meth:`retrieval_rows`); the (term, document, weight) rows
   are spilled as sorted runs whenever the buffer passes a quarter of the memory limit,
   then merged by ranges of the term-hash space (each range's rows fit the budget) into
   range files sorted by term then document: the inverted index, on disk.
2. **retrieval**: documents are read again in blocks; each block's queries are split into
   sub-blocks whose scores (bounded by the document frequencies of their terms) fit the
   budget, the postings of the sub-block's terms are read from the memory-mapped range
   files (binary search per term), and the query-by-document product is scanned by the
   method's :meth:`retrieve` exactly as its in-memory ``find_pairs`` scans its blocks
   (same weights, same term order, so the same sums). The directed retrievals (at most
   ``top_k`` per document) are then paired by :meth:`mutual`, the method's own time window
   and the run's applied, and the edges written for the components stage.

Resident memory: one block's rows, one sub-block's postings and scores, and the
retrievals. Each stage ends with a marker; a killed stage is redone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.engine.buckets import concat_ranges
from neardup.engine.workdir import MappedArray, WorkDir, stage_key, write_arrow
from neardup.graph.edges import Pairs, outside_time_window
from neardup.methods.base import Method
from neardup.progress import progress_bar
from neardup.text.shingle import ShingleSets

__all__ = ["block_tokens", "mutual_edges", "posting_range_lows", "posting_rows", "retrieval_stages", "retrieve_block",
           "token_blocks"]

# Bytes a posting row costs while runs are sorted and merged (hash, doc, weight, order).
_POSTING_BYTES = 48
# Bytes a query-document score costs in the sparse product and its scan.
_SCORE_BYTES = 32


class _TokenSets:
    """The sketch stage's ragged token multisets, read by blocks of documents."""

    def __init__(self, sizes_path: Path, values_path: Path, n_docs: int) -> None:
        sizes = np.fromfile(sizes_path, np.int64)
        self.offsets = np.zeros(n_docs + 1, np.int64)
        np.cumsum(sizes, out=self.offsets[1:])
        self.values_path = values_path
        self.n_docs = n_docs

    def blocks(self, tokens: int):
        """``(d0, sets)`` for consecutive blocks of about ``tokens`` tokens (at least one
        document each)."""
        # Read, not mapped: a mapping's touched pages would stay resident.
        return token_blocks(self.offsets, lambda o0, o1: np.fromfile(
            self.values_path, np.uint64, count=o1 - o0, offset=8 * o0), tokens)


def token_blocks(offsets: np.ndarray, read, tokens: int):
    """``(d0, sets)`` for consecutive blocks of about ``tokens`` tokens (at least one
    document each) of the token multisets whose ``offsets`` (n + 1, ascending) are given
    and whose values ``read(o0, o1)`` returns."""
    n_docs = offsets.size - 1
    d0 = 0
    while d0 < n_docs:
        d1 = int(np.searchsorted(offsets, offsets[d0] + tokens, "right")) - 1
        d1 = min(max(d1, d0 + 1), n_docs)
        o0, o1 = int(offsets[d0]), int(offsets[d1])
        yield d0, ShingleSets(read(o0, o1), offsets[d0:d1 + 1] - o0)
        d0 = d1


def block_tokens(budget: int) -> int:
    """Tokens per block of documents read at once (their posting rows fit a quarter of
    ``budget``)."""
    return max(budget // 4 // _POSTING_BYTES, 1 << 12)


def posting_rows(method: Method, sets: ShingleSets, d0: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The inverted index's rows of the documents ``sets`` (positions from ``d0``), in
    document then term order: term hash, document, weight."""
    docs, hashes, weight, _, _ = method.retrieval_rows(sets)
    return hashes, docs + d0, weight


def posting_range_lows(rows: int, budget: int) -> list[int]:
    """The first term hash of each range of the inverted index: as many ranges of the
    hash space as ``rows`` posting rows need for each to fit a quarter of ``budget``."""
    ranges = max(int(np.ceil(rows * _POSTING_BYTES / max(budget // 4, 1))), 1)
    return [(k << 64) // ranges for k in range(ranges)]


def _postings(directory: Path, method: Method, sets: _TokenSets, budget: int) -> dict[str, Any]:
    runs_dir = directory / "runs"
    runs_dir.mkdir()
    flush_rows = block_tokens(budget)
    runs: list[Path] = []
    buffer: list[tuple[np.ndarray, ...]] = []
    buffered = 0

    def flush() -> None:
        nonlocal buffered
        if not buffer:
            return
        hashes = np.concatenate([b[0] for b in buffer])
        docs = np.concatenate([b[1] for b in buffer])
        weights = np.concatenate([b[2] for b in buffer])
        buffer.clear()
        order = np.argsort(hashes, kind="stable")  # documents ascend within a term
        path = runs_dir / f"run-{len(runs):05d}"
        np.save(f"{path}.hash.npy", hashes[order])
        np.save(f"{path}.doc.npy", docs[order])
        np.save(f"{path}.weight.npy", weights[order])
        runs.append(path)
        buffered = 0

    for d0, block in sets.blocks(flush_rows):
        hashes, docs, weight = posting_rows(method, block, d0)
        buffer.append((hashes, docs, weight))
        buffered += hashes.size
        if buffered >= flush_rows:
            flush()
    flush()
    mapped = [tuple(MappedArray(Path(f"{path}.{suffix}.npy")) for suffix in ("hash", "doc", "weight"))
              for path in runs]
    rows = sum(run[0].count for run in mapped)
    bounds = posting_range_lows(rows, budget)
    ranges = len(bounds)
    bounds.append(1 << 64)
    for k in range(ranges):
        lo, hi = bounds[k], bounds[k + 1]
        parts: list[list[np.ndarray]] = [[], [], []]
        for files in mapped:  # in document order: a term's documents stay ascending
            run = files[0].read()
            a = int(np.searchsorted(run, np.uint64(lo)))
            b = run.shape[0] if hi >= 1 << 64 else int(np.searchsorted(run, np.uint64(hi)))
            del run
            if b > a:
                for i, file in enumerate(files):
                    parts[i].append(np.array(file.read()[a:b]))
        hashes = np.concatenate(parts[0]) if parts[0] else np.zeros(0, np.uint64)
        order = np.argsort(hashes, kind="stable")
        for i, suffix in enumerate(("hash", "doc", "weight")):
            values = np.concatenate(parts[i]) if parts[i] else np.zeros(0, (np.uint64, np.int64, np.float64)[i])
            np.save(directory / f"range-{k:05d}.{suffix}.npy", values[order])
    for path in runs:
        for suffix in ("hash", "doc", "weight"):
            Path(f"{path}.{suffix}.npy").unlink()
    runs_dir.rmdir()
    return {"postings": int(rows), "ranges": ranges, "bounds": [str(b) for b in bounds[:-1]]}


def _retrieve(directory: Path, method: Method, sets: _TokenSets, facts: dict[str, Any],
              budget: int, progress) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    n = sets.n_docs
    lows = np.array([int(b) for b in facts["bounds"]], np.uint64)

    range_files = [tuple(MappedArray(directory / f"range-{k:05d}.{suffix}.npy")
                         for suffix in ("hash", "doc", "weight")) for k in range(lows.size)]

    def postings_of(k: int):
        # Mapped per sub-block and dropped after it: the pages touched leave the process.
        return tuple(array.read() for array in range_files[k])
    found: list[tuple[np.ndarray, ...]] = []
    scores = 0
    with progress_bar("retrieving", total=n, unit="docs", enabled=progress) as advance:
        for d0, block in sets.blocks(block_tokens(budget)):
            block_found, block_scores = retrieve_block(method, block, d0, n, lows, postings_of, budget)
            found += block_found
            scores += block_scores
            advance(len(block))
    return _joined_retrievals(found, scores)


def _joined_retrievals(found: list[tuple[np.ndarray, ...]], scores: int
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    if not found:
        empty = np.zeros(0, np.int64)
        return empty, empty, np.zeros(0), scores
    return (np.concatenate([f[0] for f in found]), np.concatenate([f[1] for f in found]),
            np.concatenate([f[2] for f in found]), scores)


def retrieve_block(method: Method, block: ShingleSets, d0: int, n: int, lows: np.ndarray, postings_of,
                   budget: int) -> tuple[list[tuple[np.ndarray, ...]], int]:
    """The directed retrievals of one block of queries (documents ``d0`` on, of ``n``),
    scored against the inverted index (``lows``: each range's first term hash;
    ``postings_of(k)``: range ``k``'s hash, document and weight arrays, sorted by hash)
    in sub-blocks whose scores fit a quarter of ``budget``, as the method's in-memory
    ``find_pairs`` scans its blocks (same weights, same term order, so the same sums).
    Returns the retrievals (query, partner, normalized score) per sub-block and the
    number of scores computed."""
    import scipy.sparse as sp

    stats = method.fitted_statistics()
    capacity = max(budget // 4 // _SCORE_BYTES, 1 << 12)
    found: list[tuple[np.ndarray, ...]] = []
    scores = 0
    m = len(block)
    docs, hashes, _, chosen, q_weight = method.retrieval_rows(block)
    q_docs, q_terms = docs[chosen], hashes[chosen]
    bound = np.bincount(q_docs, stats.df("term", q_terms).astype(np.float64), minlength=m)
    cum = np.zeros(m + 1)
    np.cumsum(bound, out=cum[1:])
    cap = max(float(capacity), float(bound.max(initial=0.0)))
    a = 0
    while a < m:
        b = int(np.searchsorted(cum, cum[a] + cap, side="right")) - 1
        b = min(max(b, a + 1), m)
        lo, hi = np.searchsorted(q_docs, [a, b])
        if hi > lo:
            terms, local = np.unique(q_terms[lo:hi], return_inverse=True)
            owner = np.searchsorted(lows, terms, side="right") - 1
            p_docs, p_weight, counts = [], [], np.zeros(terms.size, np.int64)
            for k in np.unique(owner).tolist():
                sel = np.flatnonzero(owner == k)
                h, d, w = postings_of(k)
                start = np.searchsorted(h, terms[sel], "left")
                stop = np.searchsorted(h, terms[sel], "right")
                rows = concat_ranges(start, stop - start)
                counts[sel] = stop - start
                p_docs.append(np.asarray(d[rows]))
                p_weight.append(np.asarray(w[rows]))
                del h, d, w
            indptr = np.zeros(terms.size + 1, np.int64)
            np.cumsum(counts, out=indptr[1:])
            postings = sp.csr_matrix((np.concatenate(p_weight), np.concatenate(p_docs),
                                      indptr), shape=(terms.size, n))
            q_indptr = np.zeros(b - a + 1, np.int64)
            np.cumsum(np.bincount(q_docs[lo:hi] - a, minlength=b - a), out=q_indptr[1:])
            query = sp.csr_matrix((q_weight[lo:hi], local.ravel(), q_indptr),
                                  shape=(b - a, terms.size))
            product = query @ postings
            scores += int(product.nnz)
            found.append(method.retrieve(product, d0 + a))
            del product, postings
        a = b
    return found, scores


def mutual_edges(method: Method, retrievals: tuple[np.ndarray, np.ndarray, np.ndarray], n_docs: int,
                 dates: np.ndarray | None, window_hours: float | None,
                 identity: np.ndarray | None) -> tuple[Pairs, Pairs, dict[str, int]]:
    """The method's mutual pairs of the directed ``retrievals`` (query, partner, normalized
    score) over ``n_docs`` documents: those inside the method's and the run's time windows
    (``identity``: the documents' text identities, which the run's window lets through),
    those outside, and the method's retrieval counts."""
    src, dst, norm = retrievals
    method.stats_ = {}
    pairs = method.mutual(src, dst, norm, n_docs, dates)
    outside = method.outside_window_
    far = outside_time_window(pairs, dates, window_hours, identity)
    inside, away = pairs.select(~far), Pairs.concat([outside, pairs.select(far)])
    return inside, away, {k: int(v) for k, v in method.stats_.items()}


def retrieval_stages(wd: WorkDir, key: str, method: Method, n_docs: int, sets_paths: tuple[Path, Path],
                     dates: np.ndarray | None, window_hours: float | None, budget: int,
                     timer, progress, identity: np.ndarray | None = None) -> tuple[Path, dict[str, Any]]:
    """Run the postings and retrieval stages (see the module docstring); ``identity``: the
    documents' text identities, which the time window lets through. Returns the
    edge file for :func:`~neardup.engine.components.merge_forests` (left, right, score,
    outside_window) and the stages' counts."""

    sets = _TokenSets(*sets_paths, n_docs)
    postings_key = stage_key("postings", key)
    facts = wd.done("postings", postings_key)
    if facts is None:
        with timer.stage("pairs"):
            facts = _postings(wd.start("postings"), method, sets, budget)
        wd.finish("postings", postings_key, facts)
    retrieval_key = stage_key("retrieval", key)
    done = wd.done("retrieval", retrieval_key)
    directory = wd.stage_dir("retrieval")
    if done is not None:
        return directory / "edges.arrow", done
    directory = wd.start("retrieval")
    with timer.stage("pairs"):
        if method.fitted_statistics().totals.get("docs", 0) >= 2 and n_docs >= 2:
            src, dst, norm, scores = _retrieve(wd.stage_dir("postings"), method, sets, facts,
                                               budget, progress)
        else:
            src = dst = np.zeros(0, np.int64)
            norm, scores = np.zeros(0), 0
        inside, away, retrieval_counts = mutual_edges(method, (src, dst, norm), n_docs, dates,
                                                      window_hours, identity)
        write_arrow(directory / "edges.arrow", pa.table({
            "left": np.concatenate((inside.left, away.left)),
            "right": np.concatenate((inside.right, away.right)),
            "score": np.concatenate((inside.score, away.score)).astype(np.float32),
            "outside_window": np.concatenate((np.zeros(len(inside), bool), np.ones(len(away), bool))),
        }))
    counts = {"postings": facts["postings"], "scores": scores, **retrieval_counts}
    wd.finish("retrieval", retrieval_key, counts)
    return directory / "edges.arrow", counts
