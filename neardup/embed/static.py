"""Static (model2vec) document embeddings: one stored vector per token, averaged.

A static model (model2vec; Tulkens & van Dongen 2024) is a table of token vectors
distilled from a sentence-transformer: the teacher embeds every vocabulary token once,
PCA reduces the vectors and SIF weighting scales down frequent tokens. A document's
embedding is the mean of its tokens' vectors, L2-normalized. No network runs at
embedding time: the cost is the tokenizer (Rust) plus one gather and one segmented sum
(numpy), hundreds of times cheaper per document than a transformer.

neardup ships ``static-minilm`` (distilled from all-MiniLM-L6-v2; see
``neardup/models/static-minilm/README.md`` and ``scripts/distill_static.py``). Any
model2vec model directory (``model.safetensors``, ``tokenizer.json``, ``config.json``) can
be passed instead; nothing is downloaded.

Inputs
    Any text. Lone surrogates become U+FFFD. Unknown tokens are dropped (as model2vec
    does). A text with no known token (emoji only, say) gets a unit vector drawn from a
    hash of its text, so it matches only an identical text.
Relations
    With ``max_tokens=None`` the embedding equals ``StaticModel.encode([text],
    max_length=None)`` of model2vec, up to float rounding.
Requirements
    ``tokenizers`` and ``safetensors`` (both come with the ``neural`` extra);
    model2vec itself is needed only to distill.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import scipy.sparse

from neardup.embed.base import Embedder
from neardup.embed.onnx_encoder import replace_lone_surrogates
from neardup.errors import check_int
from neardup.progress import progress_bar

__all__ = ["DEFAULT_STATIC_MODEL", "StaticEmbedder", "static_model_dir"]

#: The static model used when none is given (shipped inside neardup).
DEFAULT_STATIC_MODEL = "static-minilm"
_FILES = ("model.safetensors", "tokenizer.json")
#: Texts tokenized per call (bounds the memory of token lists).
_BLOCK = 4096
_EXTRA = "pip install 'neardup[neural]'"


def static_model_dir(model: str | os.PathLike) -> Path:
    """Directory of a static model: a shipped model's name (kind "static") or a
    model2vec model directory.

    Raises
    ------
    FileNotFoundError
        Not a shipped name nor a directory, or the directory lacks ``model.safetensors``
        or ``tokenizer.json`` (the message names what is missing).
    ValueError
        ``model`` names a shipped model of another kind.
    """
    from neardup.models import resolve_model

    directory = resolve_model(model, "static")
    missing = [name for name in _FILES if not (directory / name).is_file()]
    if missing:
        raise FileNotFoundError(
            f"StaticEmbedder: model directory {str(directory)!r} has no {' or '.join(missing)}; "
            "a static model is a model2vec directory (model.safetensors, tokenizer.json, "
            "config.json), e.g. written by scripts/distill_static.py."
        )
    return directory


@dataclass(frozen=True)
class _Loaded:
    tokenizer: Any  # tokenizers.Tokenizer
    vectors: np.ndarray  # (vocab, dim) float32
    unk_id: int | None


class StaticEmbedder(Embedder):
    """Mean of static token vectors, L2-normalized (see the module docstring).

    Parameters
    ----------
    model : str or os.PathLike, default "static-minilm"
        A static model shipped inside neardup (``neardup/models/<name>/``, kind "static")
        or a model2vec model directory.
    max_tokens : int or None, default None
        Tokens read per text (its head); None reads the whole text. Cost is linear in
        the tokens read.
    batch_size : int, default 4096
        Texts tokenized per call.

    Notes
    -----
    The model is read on first use, not in the constructor; pickling drops it.
    """

    name: ClassVar[str] = "static"

    def __init__(
        self,
        *,
        model: str | os.PathLike = DEFAULT_STATIC_MODEL,
        max_tokens: int | None = None,
        batch_size: int = _BLOCK,
    ) -> None:
        super().__init__()
        if not isinstance(model, (str, os.PathLike)):
            raise ValueError(
                "StaticEmbedder: parameter 'model' must be a shipped static model name or a "
                f"directory path; got {model!r}."
            )
        self._model_name = os.fspath(model)
        self.max_tokens = None if max_tokens is None else check_int(
            "StaticEmbedder", "max_tokens", max_tokens, low=1, hint="Use None for no limit.")
        self.batch_size = check_int("StaticEmbedder", "batch_size", batch_size, low=1)

    # The base class's ``model`` is the loaded model; here ``model`` is the constructor
    # parameter (what get_params reports); the loaded model is reached through _loaded().
    @property
    def model(self) -> str:  # type: ignore[override]
        """The ``model`` parameter: a shipped model name or a directory path."""
        return self._model_name

    def _loaded(self) -> _Loaded:
        return Embedder.model.fget(self)  # type: ignore[attr-defined]

    def _load(self) -> _Loaded:
        directory = static_model_dir(self._model_name)
        try:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as err:
            raise ImportError(
                "StaticEmbedder needs the 'tokenizers' and 'safetensors' packages, part of "
                f"neardup's optional 'neural' extra. Install it with: {_EXTRA}"
            ) from err
        tensors = load_file(str(directory / "model.safetensors"))
        if "embeddings" not in tensors or tensors["embeddings"].ndim != 2:
            raise ValueError(
                f"StaticEmbedder: {str(directory / 'model.safetensors')!r} holds no 2-D "
                "'embeddings' tensor; it is not a model2vec model."
            )
        vectors = tensors["embeddings"]
        if "weights" in tensors or "mapping" in tensors:
            # Vocabulary-quantized model2vec models: token -> cluster row, times a weight.
            mapping = tensors.get("mapping", np.arange(len(tensors.get("weights", vectors))))
            weights = tensors.get("weights", np.ones(len(mapping), np.float32))
            vectors = vectors[mapping].astype(np.float32) * weights[:, None].astype(np.float32)
        # Stored small (int8 or float16; the scale does not change a direction), summed in
        # float32.
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        unk = _unk_token(directory)
        unk_id = tokenizer.token_to_id(unk) if unk else None
        if tokenizer.get_vocab_size(with_added_tokens=True) > len(vectors):
            raise ValueError(
                f"StaticEmbedder: {str(directory)!r}: the tokenizer has "
                f"{tokenizer.get_vocab_size(with_added_tokens=True)} tokens but the table only "
                f"{len(vectors)} vectors."
            )
        return _Loaded(tokenizer, vectors, unk_id)

    @property
    def dim(self) -> int:
        return int(self._loaded().vectors.shape[1])

    def encode(
        self,
        texts: Sequence[str],
        *,
        batch_size: int | None = None,
        progress: bool | None = None,
    ) -> np.ndarray:
        if isinstance(texts, str) or not isinstance(texts, Sequence):
            got = f"a single str ({texts[:40]!r}); wrap it in a list" if isinstance(texts, str) \
                else type(texts).__name__
            raise ValueError(f"StaticEmbedder.encode: parameter 'texts' must be a sequence of str; got {got}.")
        block = self.batch_size if batch_size is None else check_int(
            "StaticEmbedder.encode", "batch_size", batch_size, low=1)
        loaded = self._loaded()
        out = np.empty((len(texts), loaded.vectors.shape[1]), np.float32)
        with progress_bar("static", total=len(texts), unit="texts", enabled=progress) as advance:
            for lo in range(0, len(texts), block):
                part = list(texts[lo : lo + block])
                for i, t in enumerate(part):
                    if not isinstance(t, str):
                        raise ValueError(
                            "StaticEmbedder.encode: parameter 'texts' must be a sequence of str; "
                            f"got item {lo + i} of type {type(t).__name__} ({t!r:.40})."
                        )
                out[lo : lo + len(part)] = self._embed_block(loaded, part)
                advance(len(part))
        return out

    def _embed_block(self, loaded: _Loaded, texts: list[str]) -> np.ndarray:
        cleaned = [replace_lone_surrogates(t) for t in texts]
        encodings = loaded.tokenizer.encode_batch_fast(cleaned, add_special_tokens=False)
        ids_lists = [e.ids for e in encodings]
        if self.max_tokens is not None:
            ids_lists = [ids[: self.max_tokens] for ids in ids_lists]
        counts = np.fromiter(map(len, ids_lists), np.int64, len(ids_lists))
        ids = np.fromiter(itertools.chain.from_iterable(ids_lists), np.int64, int(counts.sum()))
        # Drop unknown tokens, as model2vec does (they carry no meaning of their own).
        if loaded.unk_id is not None and ids.size:
            owner = np.repeat(np.arange(len(texts)), counts)
            keep = ids != loaded.unk_id
            ids, owner = ids[keep], owner[keep]
            counts = np.bincount(owner, minlength=len(texts))
        # Sum of each text's token vectors as one sparse product: (texts x vocabulary)
        # token counts times the (vocabulary x dim) table; no (tokens x dim) gather.
        offsets = np.zeros(len(texts) + 1, np.int64)
        np.cumsum(counts, out=offsets[1:])
        bag = scipy.sparse.csr_matrix((np.ones(ids.size, np.float32), ids, offsets),
                                      shape=(len(texts), loaded.vectors.shape[0]))
        sums = np.asarray(bag @ loaded.vectors, dtype=np.float32)
        # The mean's scale does not change its direction: normalize the sum.
        norms = np.linalg.norm(sums, axis=1)
        ok = norms > 0
        sums[ok] /= norms[ok, None]
        for i in np.flatnonzero(~ok).tolist():
            sums[i] = _hash_vector(cleaned[i], sums.shape[1])
        return sums


def _unk_token(directory: Path) -> str | None:
    """The unknown token's text: model2vec's ``config.json`` or the tokenizer model's."""
    try:
        spec = json.loads((directory / "tokenizer.json").read_text(encoding="utf-8"))
        return spec.get("model", {}).get("unk_token")
    except (OSError, ValueError):
        return None


def _hash_vector(text: str, dim: int) -> np.ndarray:
    """A unit vector drawn from ``text``'s hash: identical texts only come close."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return vector / np.linalg.norm(vector)
