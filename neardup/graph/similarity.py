"""Embeddings -> scored pairs: cosine-similarity neighbours found with faiss.

Silcock et al. (2022), "Noise-Robust De-Duplication at Scale" (sections 4.1 and 6), link
two documents when the inner product of their L2-normalised bi-encoder embeddings (their
cosine similarity) reaches a threshold tuned on validation data, then cluster the graph.
They find the neighbours with faiss ``IndexFlatIP``: exact, and a range search on CPU; on
GPU, which has no range search, a k-nearest-neighbour search with a conservative k = 900
whose results are filtered by the threshold.

:func:`similarity_pairs` does the same on CPU, with three indexes:

* ``"flat"`` (``IndexFlatIP``): exact. Range search at the threshold, or kNN then the
  threshold when ``k`` is given. Time grows as n^2 * d, so it suits up to a few hundred
  thousand documents.
* ``"hnsw"`` (``IndexHNSWFlat``, inner-product metric): approximate kNN on a graph;
  no training, high recall, build time about n log n.
* ``"ivf"`` (``IndexIVFFlat`` on spherical k-means cells): approximate kNN that visits
  ``nprobe`` of ``nlist`` cells; needs training, lighter than HNSW in memory.

:func:`chunk_similarity_pairs` finds *partial* duplicates: documents are split into
chunks, neighbours are found between chunks, and each document pair scores the best
cosine over its chunk pairs.

Whatever the index, the faiss inner products only select candidates: every candidate's
cosine is recomputed from the two float32 rows with float64 accumulation (and divided by
the row norms, which float32 rounding leaves a few 1e-8 off 1) before the threshold is
applied. A pair's score thus does not depend on the index, the batch size or the BLAS
kernel, two copies of a row score exactly 1, and the flat index returns exactly the pairs
a brute-force float64 comparison returns.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from neardup.errors import check_choice, check_float, check_int
from neardup.graph.edges import Pairs
from neardup.graph.labels import as_python
from neardup.progress import progress_bar

__all__ = [
    "DEFAULT_APPROX_K",
    "check_unit_rows",
    "chunk_similarity_pairs",
    "cosine_scores",
    "import_faiss",
    "ivf_nlist",
    "omp_threads",
    "search_margin",
    "similarity_pairs",
    "train_ivf",
]

INDEXES = ("auto", "flat", "hnsw", "ivf")
# k of the approximate indexes when none is given: the largest NEWS-COPY cluster has
# ~200 copies and the mean ~6 (Silcock et al. 2022, footnote 3); k bounds only how many
# neighbours each document keeps, and transitivity still links bigger clusters.
DEFAULT_APPROX_K = 100
# Rows must have an L2 norm within this distance of 1.
NORM_TOLERANCE = 1e-3
MAX_SEED = 2**31 - 1
# Values (rows * d) converted to float64 at once, when rows are checked or candidate
# pairs rescored: 16 MB per float64 block, whatever the dimension.
_BLOCK_VALUES = 1 << 21
# Rows added to an approximate index at once (one progress-bar step).
_ROW_BLOCK = 32768
# faiss scores are float32 inner products; summed in another order, a score of ~1 moves
# by at most ~d * 2**-24 (worst case). Candidates are taken this far below the threshold
# so that no pair whose exact score reaches it is missed.
_MIN_MARGIN = 1e-4


@dataclass(frozen=True)
class _Options:
    """Validated search options, shared by both public functions."""

    threshold: float
    k: int | None
    index: str
    exact_limit: int
    query_batch: int
    threads: int | None
    progress: bool | None
    ef_search: int
    ef_construction: int
    hnsw_m: int
    nlist: int | None
    nprobe: int
    seed: int
    deterministic: bool


def similarity_pairs(
    embeddings: np.ndarray,
    *,
    threshold: float,
    k: int | None = None,
    index: str = "auto",
    exact_limit: int = 50_000,
    query_batch: int = 4096,
    threads: int | None = None,
    progress: bool | None = None,
    ef_search: int = 128,
    ef_construction: int = 80,
    hnsw_m: int = 32,
    nlist: int | None = None,
    nprobe: int = 16,
    seed: int = 0,
    deterministic: bool = True,
) -> Pairs:
    """Document pairs whose embeddings have cosine similarity >= ``threshold``.

    Parameters
    ----------
    embeddings : ndarray of float32, shape (n_docs, d)
        One L2-normalised row per document (norm within 1e-3 of 1, all values finite), in
        document-position order; e.g. ``SentenceTransformer.encode(...,
        normalize_embeddings=True)``. The inner product of two rows is their cosine.
    threshold : float
        Minimum cosine similarity of a returned pair, in (0, 1]. Tune it on labelled
        data; Silcock et al. (2022) used 0.92 for their fine-tuned bi-encoder. Lower
        thresholds return many more pairs (and need more memory).
    k : int or None, default None
        Neighbours per document (>= 1), itself excluded, before the threshold is applied.
        None: range search (every pair above the threshold) with the flat index, and
        ``k = 100`` with the approximate indexes. With the flat index a ``k`` caps the
        pairs per document, which bounds memory when templates have thousands of copies;
        Silcock et al. used k = 900. A cluster larger than ``k + 1`` loses some of its
        pairs but usually stays connected.
    index : {"auto", "flat", "hnsw", "ivf"}, default "auto"
        ``"flat"``: exact. ``"ivf"``: approximate, inverted lists (k-means cells, only
        ``nprobe`` of them searched per query). ``"hnsw"``: approximate graph search;
        on few cores its (single-threaded, reproducible) build costs as much as exact
        search. ``"auto"``: ``"flat"`` up to ``exact_limit`` documents, ``"ivf"`` above
        (faster than flat at almost the same recall; see
        docs/decisions/0012-embeddings-out-of-core.md).
    exact_limit : int, default 50_000
        Largest corpus ``index="auto"`` searches exactly (>= 0). Flat search takes
        ~n^2 * d multiply-adds: 1e13 for 200,000 256-d rows, several minutes on a
        few cores, growing fourfold when n doubles; IVF overtakes it near 50,000.
    query_batch : int, default 4096
        Documents queried at once (>= 1). Memory for one batch is about
        ``query_batch * (neighbours per document) * 16`` bytes, plus the pairs kept.
        The result does not depend on it.
    threads : int or None, default None
        faiss (OpenMP) threads (>= 1); None keeps faiss's setting (all cores). The
        setting is process-wide while the function runs and is restored afterwards.
    progress : bool or None, default None
        Show a progress bar; None shows it when stderr is a terminal.
    ef_search : int, default 128
        HNSW: candidate-list size of a search (>= 1; raised to ``k + 1`` if smaller).
        Higher is slower with better recall; 64-512 is the useful range.
    ef_construction : int, default 80
        HNSW: candidate-list size while building (>= 1). Higher builds slower, better
        graphs.
    hnsw_m : int, default 32
        HNSW: links per node (>= 2). 32 suits 256-1024-d embeddings; memory grows by
        ~``8 * hnsw_m`` bytes per document.
    nlist : int or None, default None
        IVF: number of k-means cells (>= 1). None: ``4 * sqrt(n_docs)``, capped at
        ``n_docs / 39`` so each cell has enough training points.
    nprobe : int, default 16
        IVF: cells visited per query (>= 1, capped at ``nlist``). Higher is slower with
        better recall.
    seed : int, default 0
        IVF: seed of the k-means training (0 <= seed < 2**31).
    deterministic : bool, default True
        HNSW: build the graph with one thread. faiss inserts nodes in an unspecified
        order when building with several threads, so the graph, and hence which
        neighbours are found, can change from run to run; searching stays parallel.
        False builds with all threads (faster on many-core machines).

    Returns
    -------
    Pairs
        Canonical pairs (``left < right``, sorted, no repeats) of document positions with
        ``score`` = cosine similarity: the rows' inner product divided by their norms,
        computed in float64, clipped to at most 1 and rounded to float32. Pairs are kept
        when that float32 score is ``>= threshold`` (as ``Pairs.above`` compares), so
        copies of a row (score exactly 1) pass ``threshold=1``.

    Raises
    ------
    ValueError
        Embeddings that are not a 2-D float32 array of finite, L2-normalised rows, or an
        invalid parameter.
    ImportError
        faiss is not installed (``pip install faiss-cpu``).

    Notes
    -----
    Output is deterministic for all three indexes (with ``deterministic=True`` for
    HNSW): flat search is exact; HNSW assigns node levels from a fixed seed; IVF training
    uses ``seed``. Scores are recomputed for every candidate, which faiss selects with a
    margin below the threshold (``max(1e-4, 2 * d * 2**-24)`` plus twice the largest
    deviation of a row norm from 1), wider than float32 rounding can move a score. So
    range search depends neither on ``query_batch`` nor on ``threads``. In kNN mode
    (``k`` given, or an approximate index), which of two neighbours whose faiss scores
    tie within float32 rounding (~1e-7) is the k-th can depend on the faiss kernel, and
    so on ``query_batch`` or ``threads``; this only matters for documents with more than
    ``k`` neighbours above the threshold.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[1, 0], [0.96, 0.28], [0, 1]], dtype=np.float32)
    >>> pairs = similarity_pairs(x, threshold=0.9)
    >>> pairs.left.tolist(), pairs.right.tolist(), [round(s, 2) for s in pairs.score.tolist()]
    ([0], [1], [0.96])
    """
    caller = "similarity_pairs"
    x, norm = check_unit_rows(caller, "embeddings", embeddings)
    opts = _check_options(caller, locals())
    return _search_pairs(x, norm, opts, doc_of=None)


def chunk_similarity_pairs(
    chunk_embeddings: np.ndarray,
    offsets: np.ndarray,
    *,
    threshold: float,
    k: int | None = None,
    index: str = "auto",
    exact_limit: int = 50_000,
    query_batch: int = 4096,
    threads: int | None = None,
    progress: bool | None = None,
    ef_search: int = 128,
    ef_construction: int = 80,
    hnsw_m: int = 32,
    nlist: int | None = None,
    nprobe: int = 16,
    seed: int = 0,
    deterministic: bool = True,
) -> Pairs:
    """Document pairs sharing a chunk pair with cosine similarity >= ``threshold``.

    For partial duplicates (one article quoting or abridging another): embed each
    document's chunks (paragraphs, windows of sentences), then two documents pair up when
    any of their chunks are near neighbours, scored by the best chunk match.

    Parameters
    ----------
    chunk_embeddings : ndarray of float32, shape (n_chunks, d)
        One L2-normalised row per chunk, the chunks of each document contiguous and the
        documents in position order (same requirements as in :func:`similarity_pairs`).
    offsets : array-like of int, shape (n_docs + 1,)
        Document ``i`` owns chunks ``offsets[i]:offsets[i + 1]``; ``offsets[0] == 0``,
        non-decreasing, ``offsets[-1] == n_chunks`` (the CSR / faiss ``lims`` layout). A
        document with no chunks (e.g. empty text) takes part in no pair.
    threshold, k, index, exact_limit, query_batch, threads, progress, ef_search, \
ef_construction, hnsw_m, nlist, nprobe, seed, deterministic
        As in :func:`similarity_pairs`, applied to chunks: ``exact_limit`` and
        ``query_batch`` count chunks, and ``k`` counts neighbouring chunks, chunks of
        the same document included (they are dropped afterwards, so a document with many
        near-identical chunks of its own should use a larger ``k`` or range search).

    Returns
    -------
    Pairs
        Canonical document pairs (``left < right``, positions in ``[0, n_docs)``) with
        ``score`` = maximum cosine over the pairs of their chunks (float32). Pairs of
        chunks of the same document are dropped.

    Raises
    ------
    ValueError
        Invalid embeddings (see :func:`similarity_pairs`) or offsets, or an invalid
        parameter.

    Examples
    --------
    >>> import numpy as np
    >>> chunks = np.array([[1, 0], [0, 1], [0.6, 0.8]], dtype=np.float32)
    >>> pairs = chunk_similarity_pairs(chunks, [0, 2, 3], threshold=0.75)
    >>> pairs.left.tolist(), pairs.right.tolist(), [round(s, 2) for s in pairs.score.tolist()]
    ([0], [1], [0.8])
    """
    caller = "chunk_similarity_pairs"
    x, norm = check_unit_rows(caller, "chunk_embeddings", chunk_embeddings)
    offsets = _check_offsets(caller, offsets, x.shape[0])
    opts = _check_options(caller, locals())
    doc_of = np.repeat(np.arange(offsets.size - 1, dtype=np.int64), np.diff(offsets))
    return _search_pairs(x, norm, opts, doc_of=doc_of)


# --------------------------------------------------------------------------- validation


def check_unit_rows(caller: str, name: str, value: Any) -> tuple[np.ndarray, np.ndarray]:
    """Check ``value`` is a float32 (n, d) array of finite unit rows.

    Returns it C-contiguous, with the L2 norm of every row (float64, shape (n,)).
    """
    x = value if isinstance(value, np.ndarray) else np.asarray(value)
    fix = "Convert with np.asarray(x, dtype=np.float32)."
    if x.dtype != np.float32:
        raise ValueError(
            f"{caller}: parameter '{name}' must be a float32 array; got dtype {x.dtype}. {fix}"
        )
    if x.ndim != 2 or x.shape[1] == 0:
        raise ValueError(
            f"{caller}: parameter '{name}' must be a 2-D array of shape (n, d) with d >= 1; "
            f"got shape {x.shape}. Stack one embedding per row."
        )
    x = np.ascontiguousarray(x)
    norms = np.empty(x.shape[0], dtype=np.float64)
    # Checked in blocks: a boolean mask of a 10M x 768 matrix would need 7.7 GB.
    rows = max(1, _BLOCK_VALUES // x.shape[1])
    for start in range(0, x.shape[0], rows):
        block = x[start : start + rows]
        finite = np.isfinite(block).all(axis=1)
        if not finite.all():
            row = start + int(np.flatnonzero(~finite)[0])
            raise ValueError(
                f"{caller}: parameter '{name}' must hold finite values; got NaN or "
                f"infinity in row {row}. Check the encoder output for that document."
            )
        norm = np.sqrt(np.einsum("ij,ij->i", block, block, dtype=np.float64))
        norms[start : start + rows] = norm
        bad = np.abs(norm - 1.0) > NORM_TOLERANCE
        if bad.any():
            row = start + int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{caller}: parameter '{name}' must have L2-normalised rows (norm 1 within "
                f"{NORM_TOLERANCE}); got norm {float(norm[row - start]):.6g} in row {row}. "
                "Normalise with x / np.linalg.norm(x, axis=1, keepdims=True) (or encode "
                "with normalize_embeddings=True); an all-zero row (empty text) cannot be "
                "normalised, so drop it first."
            )
    return x, norms


def _check_offsets(caller: str, value: Any, n_chunks: int) -> np.ndarray:
    """Return ``value`` as int64 (n_docs + 1,) CSR offsets over ``n_chunks`` chunks."""
    arr = np.asarray(value)
    ok = arr.ndim == 1 and arr.size >= 1 and np.issubdtype(arr.dtype, np.integer)
    if ok:
        arr = arr.astype(np.int64)
        ok = arr[0] == 0 and arr[-1] == n_chunks and bool((np.diff(arr) >= 0).all())
    if not ok:
        shown = arr.tolist() if arr.size <= 8 else f"an array of shape {arr.shape}"
        raise ValueError(
            f"{caller}: parameter 'offsets' must be a 1-D integer array starting at 0, "
            f"non-decreasing and ending at the number of chunks ({n_chunks}); got {shown}. "
            "Document i owns chunks offsets[i]:offsets[i + 1]."
        )
    return arr


def _check_options(caller: str, given: dict[str, Any]) -> _Options:
    """Validate the keyword options shared by both public functions."""
    threshold = as_python(given["threshold"])
    if check_float(caller, "threshold", threshold, low=0.0, high=1.0) <= 0.0:
        raise ValueError(
            f"{caller}: parameter 'threshold' must be a number in (0, 1]; got {threshold!r}. "
            "A threshold of 0 pairs about half of all documents; near-duplicate "
            "thresholds are usually 0.8-0.95."
        )
    k = given["k"]
    if k is not None:
        k = check_int(caller, "k", as_python(k), low=1, hint="Pass None for range search.")
    index = check_choice(caller, "index", given["index"], INDEXES)
    threads = given["threads"]
    if threads is not None:
        threads = check_int(
            caller, "threads", as_python(threads), low=1, hint="None uses all cores."
        )
    progress = given["progress"]
    if progress is not None and not isinstance(progress, (bool, np.bool_)):
        raise ValueError(
            f"{caller}: parameter 'progress' must be True, False or None; got {progress!r}."
        )
    deterministic = given["deterministic"]
    if not isinstance(deterministic, (bool, np.bool_)):
        raise ValueError(
            f"{caller}: parameter 'deterministic' must be True or False; got {deterministic!r}."
        )
    nlist = given["nlist"]
    if nlist is not None:
        nlist = check_int(
            caller, "nlist", as_python(nlist), low=1, hint="None picks 4 * sqrt(n)."
        )

    def positive(name: str, low: int = 1) -> int:
        return check_int(caller, name, as_python(given[name]), low=low)

    return _Options(
        threshold=float(threshold),
        k=k,
        index=index,
        exact_limit=positive("exact_limit", low=0),
        query_batch=positive("query_batch"),
        threads=threads,
        progress=None if progress is None else bool(progress),
        ef_search=positive("ef_search"),
        ef_construction=positive("ef_construction"),
        hnsw_m=positive("hnsw_m", low=2),
        nlist=nlist,
        nprobe=positive("nprobe"),
        seed=check_int(caller, "seed", as_python(given["seed"]), low=0, high=MAX_SEED),
        deterministic=bool(deterministic),
    )


# --------------------------------------------------------------------------- building blocks
# Public so that the out-of-core vector stage (neardup.engine.vectors) selects and scores
# candidates exactly as the in-memory search does: same margin, same float64 rescoring.


def search_margin(d: int, max_norm_deviation: float) -> float:
    """How far below the threshold faiss candidates are taken, for rows of dimension ``d``
    whose L2 norms differ from 1 by at most ``max_norm_deviation``: faiss scores float32
    inner products, which differ from the cosines by the norms and by rounding."""
    deviation = max_norm_deviation
    return max(_MIN_MARGIN, 2.0 * d * 2.0**-24) + 2.0 * deviation + deviation**2


def cosine_scores(
    x_left: np.ndarray,
    norm_left: np.ndarray,
    left: np.ndarray,
    x_right: np.ndarray,
    norm_right: np.ndarray,
    right: np.ndarray,
) -> np.ndarray:
    """Cosine (float32, clipped to at most 1) of rows ``x_left[left]`` and
    ``x_right[right]``, accumulated in float64 and divided by the rows' norms, in blocks
    of bounded memory. Each score depends only on its two rows."""
    cosine = np.empty(left.size, dtype=np.float64)
    rows = max(1, _BLOCK_VALUES // x_left.shape[1])
    for start in range(0, left.size, rows):
        a = x_left[left[start : start + rows]].astype(np.float64)
        b = x_right[right[start : start + rows]].astype(np.float64)
        # float32 products are exact in float64, so the sum hardly depends on its order.
        cosine[start : start + rows] = np.einsum("ij,ij->i", a, b)
    # The cosine proper, not the inner product: float32 rounding leaves norms ~1e-7 off 1.
    cosine /= norm_left[left] * norm_right[right]
    return np.minimum(cosine, 1.0).astype(np.float32)


# --------------------------------------------------------------------------- search


def import_faiss() -> Any:
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - exercised only without faiss
        raise ImportError(
            "Embedding similarity search needs the optional dependency faiss: "
            "pip install faiss-cpu."
        ) from exc
    return faiss


@contextmanager
def omp_threads(faiss: Any, threads: int | None) -> Iterator[None]:
    """Set faiss's (process-wide) OpenMP thread count for the block, then restore it."""
    if threads is None:
        yield
        return
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(threads)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def _search_pairs(
    x: np.ndarray, norm: np.ndarray, opts: _Options, doc_of: np.ndarray | None
) -> Pairs:
    """Canonical pairs of rows (or, with ``doc_of``, of their documents); inputs trusted.

    ``norm`` holds the L2 norm of every row of ``x`` (float64, shape (n,)).
    """
    n, d = x.shape
    if n < 2:
        return Pairs.empty()
    kind = opts.index
    if kind == "auto":
        kind = "flat" if n <= opts.exact_limit else "ivf"
    k = opts.k if opts.k is not None or kind == "flat" else DEFAULT_APPROX_K
    if k is not None:
        k = min(k, n - 1)
    # faiss scores inner products, which differ from cosines by the rows' norms (1 within
    # NORM_TOLERANCE) and by float32 rounding: take candidates that far below threshold.
    floor = opts.threshold - search_margin(d, float(np.abs(norm - 1.0).max()))
    faiss = import_faiss()

    with omp_threads(faiss, opts.threads):
        index = _build_index(faiss, x, kind, k, opts)
        if k is None:
            find = _range_finder(index, floor)
        else:
            find = _knn_finder(index, k, floor)
        parts = []
        unit = "docs" if doc_of is None else "chunks"
        with progress_bar(
            f"similarity ({kind})", total=n, unit=unit, enabled=opts.progress
        ) as advance:
            for start in range(0, n, opts.query_batch):
                stop = min(n, start + opts.query_batch)
                left, right = find(x, start, stop)
                parts.append(_exact_pairs(x, norm, left, right, opts.threshold, doc_of))
                advance(stop - start)
    return Pairs.concat(parts).canonical()


def _build_index(faiss: Any, x: np.ndarray, kind: str, k: int | None, opts: _Options) -> Any:
    """A faiss inner-product index of kind ``kind`` holding every row of ``x``."""
    n, d = x.shape
    if kind == "flat":
        index = faiss.IndexFlatIP(d)
        index.add(x)
        return index
    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(d, opts.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = opts.ef_construction
        # A search keeps at most efSearch candidates: fewer than k + 1 would truncate.
        index.hnsw.efSearch = max(opts.ef_search, (k or 0) + 1)
        build_threads = 1 if opts.deterministic else None
        with omp_threads(faiss, build_threads):
            _add_in_blocks(index, x, "building hnsw index", opts.progress)
        return index
    index = train_ivf(faiss, x, ivf_nlist(n, opts.nlist), opts.seed, opts.nprobe)
    _add_in_blocks(index, x, "building ivf index", opts.progress)
    return index


def ivf_nlist(n_rows: int, nlist: int | None = None) -> int:
    """IVF cells for ``n_rows`` rows: ``nlist`` if given, else ``4 * sqrt(n_rows)`` capped
    at ``n_rows / 39`` so each cell has enough training points; at most ``n_rows``."""
    chosen = nlist or max(1, min(round(4 * math.sqrt(n_rows)), n_rows // 39))
    return max(1, min(chosen, n_rows))


def train_ivf(faiss: Any, sample: np.ndarray, nlist: int, seed: int, nprobe: int) -> Any:
    """An empty ``IndexIVFFlat`` (inner product) whose ``nlist`` centroids are trained by
    spherical k-means on ``sample`` (float32 unit rows) with ``seed``; it visits
    ``nprobe`` cells per query. Deterministic for a given sample and seed."""
    d = sample.shape[1]
    quantizer = faiss.IndexFlatIP(d)
    index = faiss.IndexIVFFlat(quantizer, d, nlist, faiss.METRIC_INNER_PRODUCT)
    index.cp.seed = seed  # k-means init and training sample
    index.cp.spherical = True  # centroids on the unit sphere, as the data
    index.cp.verbose = False
    index.train(sample)
    index.nprobe = min(nprobe, nlist)
    return index  # faiss's Python wrapper keeps ``quantizer`` alive with the index


def _add_in_blocks(index: Any, x: np.ndarray, label: str, progress: bool | None) -> None:
    n = x.shape[0]
    with progress_bar(label, total=n, unit="docs", enabled=progress) as advance:
        for start in range(0, n, _ROW_BLOCK):
            index.add(x[start : start + _ROW_BLOCK])
            advance(min(n, start + _ROW_BLOCK) - start)


_Finder = Callable[[np.ndarray, int, int], "tuple[np.ndarray, np.ndarray]"]


def _range_finder(index: Any, floor: float) -> _Finder:
    """Candidates of a query batch by flat range search: rows with score > ``floor``."""

    def find(x: np.ndarray, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        lims, _, found = index.range_search(x[start:stop], floor)
        counts = np.diff(lims.astype(np.int64))  # faiss lims are uint64
        query = np.repeat(np.arange(start, stop, dtype=np.int64), counts)
        found = found.astype(np.int64, copy=False)
        # Exact search is symmetric: each pair is found from both ends; keep it once.
        # (A pair that reaches the threshold clears ``floor`` from both ends.)
        keep = found > query
        return query[keep], found[keep]

    return find


def _knn_finder(index: Any, k: int, floor: float) -> _Finder:
    """Candidates of a query batch by kNN: up to ``k`` neighbours besides the query."""
    n_search = k + 1  # the query itself is (nearly always) its own nearest neighbour

    def find(x: np.ndarray, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        scores, found = index.search(x[start:stop], n_search)
        found = found.astype(np.int64, copy=False)
        query = np.arange(start, stop, dtype=np.int64)[:, None]
        other = (found >= 0) & (found != query)
        # Keep the first k results that are not the query: with exact ties the query may
        # not come first, or not at all, and must not cost another neighbour its place.
        keep = other & (np.cumsum(other, axis=1) <= k) & (scores >= floor)
        rows, cols = np.nonzero(keep)
        return rows.astype(np.int64) + start, found[rows, cols]

    return find


def _exact_pairs(
    x: np.ndarray,
    norm: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    threshold: float,
    doc_of: np.ndarray | None,
) -> Pairs:
    """Candidates -> canonical pairs scored by exact cosine, kept when >= ``threshold``."""
    if doc_of is not None:
        other = doc_of[left] != doc_of[right]
        left, right = left[other], right[other]
    score = cosine_scores(x, norm, left, x, norm, right)
    # Threshold the float32 score as Pairs.above does, so re-thresholding the output at
    # the same value keeps every pair, and two copies of a row (1 within 1e-16) pass 1.0.
    keep = score >= np.float32(threshold)
    left, right, score = left[keep], right[keep], score[keep]
    if doc_of is not None:
        left, right = doc_of[left], doc_of[right]
    # Canonical per batch: chunk pairs of one document pair collapse to their best score
    # before the next batch, so memory follows document pairs, not chunk pairs.
    return Pairs(left, right, score).canonical()
