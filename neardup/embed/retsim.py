"""RETSim text embeddings (Zhang et al. 2023), run with ONNX Runtime.

RETSim is a small (536k parameters) transformer trained to embed near-duplicate texts close
together, robust to typos and adversarial edits, in any script. Text is cut into chunks
of 512 characters, each character binarized into a 24-bit code
(:mod:`neardup.embed.binarizer`); the model maps each chunk to a 256-dimensional,
L2-normalized embedding. From one forward pass come two embeddings (paper, sec. 3.1):

* **near-duplicate** (:meth:`RETSim.encode`): the mean of a text's chunk embeddings,
  renormalized (a single chunk's embedding is used as is), for whole-text matching;
* **partial-duplicate** (:meth:`RETSim.encode_chunks`): the chunk embeddings themselves, for
  finding texts that share a passage; two texts are compared by the best-matching pair of
  chunks (:func:`partial_similarity`).

Requirements
    The ``neural`` extra: ``onnxruntime`` and ``unisim`` (which ships the trained model as
    ``unisim/embedder/models/text/retsim/v1.onnx``). Only the model file is read from
    unisim; the package itself is never imported, so its other dependencies (TensorFlow,
    pandas, usearch) are not needed at run time. Nothing is downloaded.
Inputs
    Raw text of any length and script. Lone surrogates and control characters are encoded
    like any other code point.
Relations
    Embeddings equal those of ``unisim.TextSim.embed`` (same binarizer rules and model; the
    tests check cosine > 0.999 per text). Cosine similarity is the dot product. The paper
    deduplicates Wiki-40B at cosine distance 0.1 (similarity 0.9) with near-duplicate
    embeddings and 0.15 with partial-duplicate ones (sec. 5.1); unisim's default is 0.9.
References
    M. Zhang, O. Vallis, A. Bumin, T. Vakharia, E. Bursztein, "RETSim: Resilient and
    Efficient Text Similarity", arXiv:2311.17264, 2023. Reference implementation:
    google/unisim v1.0.1.

Example
-------
>>> from neardup.embed import RETSim
>>> model = RETSim()
>>> emb = model.encode(["The cat sat on the mat.", "The cat sat on teh mat!"])
>>> float(emb[0] @ emb[1]) > 0.9
True

Speed. The model's input is fixed at 512 characters and it has no padding mask, so a
chunk costs the same whatever its length: sorting by length cannot shorten batches as it
does for variable-length encoders. What is sorted instead is content: within each block of
chunks, identical chunks (repeated passages, exact duplicate texts, the all-padding chunk)
are collapsed with ``np.unique`` and run through the model once, then the original order
is restored. Model input is built one batch at a time into a reused buffer, and ONNX
Runtime writes each batch's output straight into the result through an I/O binding.
ONNX Runtime runs on every core the process may use unless ``threads`` says otherwise.
``precision="int8"`` quantizes the dense layers' weights; the attention products between
activations stay float32, which is why int8 alone cannot double the speed (figures:
docs/neural-speed.md).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from neardup.embed.base import Embedder
from neardup.embed.binarizer import CODE_BITS, Chunks, binarize_codes, chunk_texts
from neardup.errors import check_choice, check_int
from neardup.progress import progress_bar

__all__ = ["PRECISIONS", "RETSim", "available_cores", "default_model_path", "int8_model_file",
           "partial_similarity", "resolve_model_file"]

_EXTRA = "pip install 'neardup[neural]'"
#: The model file inside the installed unisim package.
_MODEL_IN_UNISIM = ("embedder", "models", "text", "retsim", "v1.onnx")
_DIM = 256
#: Chunks deduplicated together (their code points take 2 KB each).
_DEDUP_BLOCK = 8192
PRECISIONS = ("float32", "int8")
#: How the int8 model is made from the float32 one (recorded in the docs and tests).
INT8_RECIPE = ("onnxruntime quantize_dynamic: QInt8 weights in a 7-bit range, one scale per output channel, "
               "MatMul with constant weights")


def _require(module: str, purpose: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(
            f"RETSim needs the '{module}' package ({purpose}), part of neardup's optional "
            f"'neural' extra. Install it with: {_EXTRA}"
        ) from err


def default_model_path() -> Path:
    """Path of the RETSim v1 ONNX model shipped inside the installed ``unisim`` package.

    The package is located without being imported: importing unisim probes for
    TensorFlow and a GPU and loads pandas and usearch, none of which RETSim needs.

    Raises
    ------
    ImportError
        When unisim is not installed (names the extra to install).
    FileNotFoundError
        When unisim is installed but holds no model file.
    """
    spec = importlib.util.find_spec("unisim")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "RETSim needs the 'unisim' package (it ships the RETSim model file), part of "
            f"neardup's optional 'neural' extra. Install it with: {_EXTRA}"
        )
    for root in spec.submodule_search_locations:
        path = Path(root).joinpath(*_MODEL_IN_UNISIM)
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"The installed unisim package has no {'/'.join(_MODEL_IN_UNISIM)}; "
        "reinstall it (pip install --force-reinstall --no-deps unisim) or pass model_path."
    )


def resolve_model_file(model: str | os.PathLike | None) -> Path:
    """The ONNX file of a RETSim model given as a file, a directory or a shipped name.

    Parameters
    ----------
    model : str, os.PathLike or None
        None: the v1 model of the unisim package (:func:`default_model_path`). A path to
        an ONNX file. A shipped model's name (``neardup/models/<name>/``, kind "retsim",
        e.g. ``"retsim-news"``) or a directory: its ``model.onnx`` (or the ``.onnx`` file
        its ``model.json`` lists under ``files``).

    Raises
    ------
    FileNotFoundError
        Nothing found (the message lists the shipped RETSim models).
    ValueError
        ``model`` names a shipped model of another kind.
    """
    if model is None:
        return default_model_path()
    path = Path(model)
    if path.is_file():
        return path
    if path.suffix == ".onnx":
        raise FileNotFoundError(f"RETSim: model file {str(path)!r} does not exist.")
    import json

    from neardup.models import resolve_model

    directory = resolve_model(model, "retsim")
    name = "model.onnx"
    meta = directory / "model.json"
    if meta.is_file():
        files = json.loads(meta.read_text(encoding="utf-8")).get("files") or []
        name = next((f for f in files if str(f).endswith(".onnx")), name)
    if not (directory / name).is_file():
        raise FileNotFoundError(f"RETSim: model directory {str(directory)!r} has no {name}.")
    return directory / name


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask, else the machine's count)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return max(os.cpu_count() or 1, 1)


def int8_model_file(model: Path) -> Path:
    """The int8 (dynamically quantized) version of the ONNX file ``model``, made on first
    use in the temporary directory and reused while the float32 file is unchanged.

    Weights of the MatMuls with constant weights (the dense layers) become int8 in a 7-bit
    range with one scale per output channel; activations are quantized on the fly. The attention
    products (two activations) stay float32: quantizing them too moves the embeddings
    further from float32 (figures: docs/neural-speed.md).
    """
    import hashlib
    import tempfile

    digest = hashlib.sha256(model.read_bytes()).hexdigest()[:16]
    # "w7" names the recipe: a file made by the earlier 8-bit recipe is never reused.
    target = Path(tempfile.gettempdir()) / "neardup-models" / f"retsim-{digest}-int8w7.onnx"
    if target.is_file():
        return target
    quantization = _require("onnxruntime.quantization", "to quantize the model to int8")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.tmp")
    # 7-bit weights (reduce_range): x86 CPUs without VNNI (AVX2 only) multiply u8 x s8 with
    # int16 intermediates that saturate; with 8-bit weights such a CPU put prose embeddings
    # outside the cosine bound of tests/embed/test_retsim.py, as the bi-encoder's exports
    # found (neardup.embed.onnx_encoder).
    quantization.quantize_dynamic(str(model), str(partial), per_channel=True, reduce_range=True,
                                  weight_type=quantization.QuantType.QInt8)
    os.replace(partial, target)  # atomic: concurrent workers never read half a file
    return target


@dataclass(frozen=True)
class _Session:
    session: Any  # onnxruntime.InferenceSession
    input_name: str
    output_name: str

    def run(self, batch: np.ndarray, out: np.ndarray) -> None:
        """Embed ``batch`` into ``out`` (C-contiguous float32 rows): ONNX Runtime writes
        the output in place through an I/O binding, and reads the input where it is."""
        binding = self.session.io_binding()
        binding.bind_cpu_input(self.input_name, batch)
        binding.bind_output(self.output_name, "cpu", element_type=np.float32,
                            shape=tuple(out.shape), buffer_ptr=out.ctypes.data)
        self.session.run_with_iobinding(binding)


class RETSim(Embedder):
    """RETSim near-duplicate and partial-duplicate text embeddings (CPU, ONNX Runtime).

    Parameters
    ----------
    batch_size : int, default 16
        Chunks per model call. On CPU, throughput changes little between 4 and 128,
        while ONNX Runtime's activation memory grows by about 9 MB per chunk of batch
        (unisim's default of 128 peaks near 1.4 GB); 8 to 32 is a good range.
    threads : int or None, default None
        ONNX Runtime intra-op threads. None: the cores this process may use
        (:func:`available_cores`). Use 1 when running one encoder per core in separate
        processes.
    model_path : str, os.PathLike or None, default None
        An ONNX file with RETSim's interface (input (batch, 512, 24) float32, output
        (batch, 256) float32), a directory holding one as ``model.onnx``, or the name
        of a shipped fine-tuned model (e.g. ``"retsim-news"``; see
        :func:`resolve_model_file`). None: the v1 model inside the installed unisim
        package.
    precision : {"float32", "int8"}, default "float32"
        "int8": the model's dense layers quantized to int8 on first use
        (:func:`int8_model_file`): faster, with embeddings close to float32 on news
        prose. Activations are scaled per batch, so an exotic chunk (emoji, control
        characters, mixed scripts) in a batch pulls the whole batch off: use it on clean
        prose only (figures: docs/neural-speed.md). "float32": the model as shipped,
        identical to unisim's.

    Notes
    -----
    Nothing is loaded until the first call to :meth:`encode` or :meth:`encode_chunks`; the
    session is then reused, and shared by threads (ONNX Runtime sessions are thread-safe).
    Pickling drops the session (each worker process loads its own).
    """

    name: ClassVar[str] = "retsim"

    def __init__(
        self,
        *,
        batch_size: int = 16,
        threads: int | None = None,
        model_path: str | os.PathLike | None = None,
        precision: str = "float32",
    ) -> None:
        super().__init__()
        self.batch_size = check_int("RETSim", "batch_size", batch_size, low=1)
        self.precision = check_choice("RETSim", "precision", precision, PRECISIONS)
        if threads is not None:
            threads = check_int(
                "RETSim", "threads", threads, low=1, hint="Use None for ONNX Runtime's default."
            )
        self.threads = threads
        if model_path is not None and not isinstance(model_path, (str, os.PathLike)):
            raise ValueError(
                f"RETSim: parameter 'model_path' must be a path or None; got {model_path!r}."
            )
        self.model_path = model_path

    @property
    def dim(self) -> int:
        return _DIM

    def _load(self) -> _Session:
        ort = _require("onnxruntime", "to run the model")
        path = resolve_model_file(self.model_path)
        if self.precision == "int8":
            path = int8_model_file(path)
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads or available_cores()
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only
        session = ort.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        (inp,), (out,) = session.get_inputs(), session.get_outputs()
        return _Session(session, inp.name, out.name)

    # -- public API ---------------------------------------------------------------------

    def encode(
        self,
        texts: Sequence[str],
        *,
        batch_size: int | None = None,
        progress: bool | None = None,
    ) -> np.ndarray:
        """Near-duplicate embeddings: one per text, the mean of its chunk embeddings.

        Parameters
        ----------
        texts : sequence of str
            Raw texts, any length and script.
        batch_size : int or None, default None
            Chunks per model call; None uses the instance's ``batch_size``.
        progress : bool or None, default None
            Progress bar over chunks; None: on when stderr is an interactive terminal.

        Returns
        -------
        ndarray of float32, shape (len(texts), 256)
            Unit-norm rows, in input order. The empty text gets the embedding of one chunk
            of padding (as in the reference); a text of exactly 512 characters averages its
            chunk with a padding chunk (also as in the reference).
        """
        chunks = self._chunk("RETSim.encode", texts)
        batch_size = self._batch_size("RETSim.encode", batch_size)
        embeddings = self._embed_chunks(chunks, None, batch_size, progress)
        return _mean_by_text(embeddings, chunks.offsets)

    def encode_chunks(
        self,
        texts: Sequence[str],
        *,
        batch_size: int | None = None,
        progress: bool | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Partial-duplicate embeddings: one per 512-character chunk of text.

        Chunks made only of padding are left out, so they cannot make unrelated texts
        match: the empty text has no chunk, and a text of exactly 512 characters has one.
        Otherwise the chunks are those :meth:`encode` averages (a last partial chunk of at
        most 256 characters is dropped from texts longer than 512).

        Returns
        -------
        embeddings : ndarray of float32, shape (n_chunks, 256)
            Unit-norm rows.
        offsets : ndarray of int64, shape (len(texts) + 1,)
            Text ``i``'s chunks are ``embeddings[offsets[i]:offsets[i + 1]]``; equal
            offsets mark a text with no chunk (the empty text).
        """
        chunks = self._chunk("RETSim.encode_chunks", texts)
        batch_size = self._batch_size("RETSim.encode_chunks", batch_size)
        rows = np.flatnonzero(chunks.lengths > 0)
        embeddings = self._embed_chunks(chunks, rows, batch_size, progress)
        # rows is sorted and grouped by text, so text i keeps the rows below its old offset.
        offsets = np.searchsorted(rows, chunks.offsets).astype(np.int64)
        return embeddings, offsets

    @staticmethod
    def partial_similarity(a_chunks: np.ndarray, b_chunks: np.ndarray) -> float:
        """Best cosine over chunk pairs of two texts; see :func:`partial_similarity`."""
        return partial_similarity(a_chunks, b_chunks)

    # -- internals ----------------------------------------------------------------------

    def _chunk(self, caller: str, texts: Sequence[str]) -> Chunks:
        if isinstance(texts, str):
            raise ValueError(
                f"{caller}: parameter 'texts' must be a sequence of str; got a single str "
                f"({texts[:40]!r}). Wrap it in a list: [text]."
            )
        try:
            return chunk_texts(texts)
        except TypeError:
            if not isinstance(texts, Sequence):
                got = type(texts).__name__
            else:
                i, item = next((i, t) for i, t in enumerate(texts) if not isinstance(t, str))
                got = f"item {i} of type {type(item).__name__} ({item!r:.40})"
        raise ValueError(f"{caller}: parameter 'texts' must be a sequence of str; got {got}.")

    def _batch_size(self, caller: str, batch_size: int | None) -> int:
        if batch_size is None:
            return self.batch_size
        return check_int(caller, "batch_size", batch_size, low=1)

    def _embed_chunks(
        self,
        chunks: Chunks,
        rows: np.ndarray | None,
        batch_size: int,
        progress: bool | None,
    ) -> np.ndarray:
        """Embeddings of chunks ``rows`` (default: all), float32 (len(rows), 256)."""
        if rows is None:
            rows = np.arange(len(chunks))
        out = np.empty((len(rows), _DIM), np.float32)
        if len(rows) == 0:
            return out
        session = self.model
        buffer = np.empty((min(batch_size, len(rows)), chunks.chunk_size, CODE_BITS), np.float32)
        with progress_bar("RETSim", total=len(rows), unit="chunks", enabled=progress) as advance:
            for lo in range(0, len(rows), _DEDUP_BLOCK):
                block = rows[lo : lo + _DEDUP_BLOCK]
                codes = chunks.codes(block)
                # Identical chunks give identical model input: embed each distinct one once.
                # np.unique sorts them by content; `inverse` restores the block's order.
                keys = codes.view(np.dtype((np.void, codes.itemsize * codes.shape[1])))
                _, first, inverse = np.unique(keys.ravel(), return_index=True, return_inverse=True)
                distinct = codes[first]
                embedded = np.empty((len(distinct), _DIM), np.float32)
                for b in range(0, len(distinct), batch_size):
                    part = distinct[b : b + batch_size]
                    inputs = binarize_codes(part, out=buffer[: len(part)])
                    session.run(inputs, embedded[b : b + len(part)])
                    advance(len(part))
                advance(len(block) - len(distinct))
                out[lo : lo + len(block)] = embedded[inverse.ravel()]
        return out


def _mean_by_text(embeddings: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per-text mean of chunk embeddings, renormalized; a single chunk is kept as is.

    Every text owns at least one chunk (see :func:`chunk_texts`).
    """
    n = len(offsets) - 1
    if n == 0:
        return np.zeros((0, _DIM), np.float32)
    counts = np.diff(offsets)
    result = embeddings[offsets[:-1]].copy()
    multi = np.flatnonzero(counts > 1)
    if multi.size:
        sums = np.add.reduceat(embeddings, offsets[:-1], axis=0)[multi]
        means = sums / counts[multi, None].astype(np.float32)
        means /= np.linalg.norm(means, axis=1, keepdims=True)
        result[multi] = means
    return result


def partial_similarity(a_chunks: np.ndarray, b_chunks: np.ndarray) -> float:
    """RETSim partial-duplicate similarity of two texts: the best cosine over chunk pairs.

    Parameters
    ----------
    a_chunks, b_chunks : ndarray of float32, shapes (m, d) and (k, d)
        Unit-norm chunk embeddings of two texts, e.g. slices of
        :meth:`RETSim.encode_chunks` output.

    Returns
    -------
    float
        ``max(a_chunks @ b_chunks.T)``, in [-1, 1]; NaN when either text has no chunk (an
        empty text is similar to nothing, and NaN passes no threshold).
    """
    a = np.asarray(a_chunks, dtype=np.float32)
    b = np.asarray(b_chunks, dtype=np.float32)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(
            "partial_similarity: parameters 'a_chunks' and 'b_chunks' must be 2-D arrays "
            f"with the same number of columns; got shapes {a.shape} and {b.shape}."
        )
    if a.shape[0] == 0 or b.shape[0] == 0:
        return float("nan")
    return float(np.max(a @ b.T))
