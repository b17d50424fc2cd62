"""Static-embedding near-duplicates (``--method static``): model2vec token vectors,
averaged per document, linked within a cosine threshold.

The embedding is the mean of stored token vectors (:class:`neardup.embed.static.StaticEmbedder`),
distilled offline from a sentence-transformer (the shipped ``static-minilm`` comes from
all-MiniLM-L6-v2), so it costs a tokenizer pass and a gather: the speed of
the lexical methods, with no transformer at run time. Everything after embedding is the
embedding methods' shared path (:class:`~neardup.methods.embedding.EmbeddingMethod`):
faiss range search in memory, the out-of-core vector stage on the local and Ray engines,
vectors in the index.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from neardup.errors import check_int
from neardup.methods.embedding import EmbeddingMethod, file_digest
from neardup.text.normalize import NormalizeConfig, normalize_batch

__all__ = ["StaticMethod"]


class StaticMethod(EmbeddingMethod):
    """Static (model2vec) embeddings + cosine threshold (``--method static``).

    Parameters
    ----------
    model : str or os.PathLike, default "static-minilm"
        A static model shipped inside neardup (``"static-minilm"``, distilled from
        all-MiniLM-L6-v2: 29,525 tokens x 128 dimensions, int8, 3.8 MB) or a model2vec
        model directory (e.g. one written by ``scripts/distill_static.py``). Resolved on
        first use.
    max_tokens : int or None, default None
        Tokens read per document (its head); None reads it whole.
    normalize : NormalizeConfig or None, default all steps on
        Tokenize the text after this normalization (:func:`neardup.text.normalize_batch`;
        by default invisible characters removed, NFKC, hyphenated line breaks joined,
        look-alike Cyrillic/Greek letters folded to Latin, punctuation dropped), so
        homoglyph and OCR noise reaches the tokenizer as ordinary letters (measured on
        look-alike noise: docs/static-embeddings.md). None: the raw text.
    threshold : float or None, default None
        Cosine at which documents are linked; None: the threshold tuned on validation
        for the shipped model (its ``model.json``), else 0.9, looked up on first use.
    batch_size : int, default 4096
        Texts tokenized per call.

    Others as :class:`~neardup.methods.embedding.EmbeddingMethod`.

    Examples
    --------
    >>> m = StaticMethod(threshold=0.8)                              # doctest: +SKIP
    >>> m.find_pairs(m.sketch(["Oil rose 2 pct.", "Oil rose 2 pct!", "Snow in Alps."]))  # doctest: +SKIP
    """

    name = "static"
    model_kind = "static"

    def __init__(
        self,
        *,
        model: str | os.PathLike = "static-minilm",
        max_tokens: int | None = None,
        normalize: NormalizeConfig | None = NormalizeConfig(),
        threshold: float | None = None,
        k: int | None = None,
        index: str = "auto",
        exact_limit: int = 50_000,
        batch_size: int = 4096,
        threads: int | None = None,
        cache_dir: str | os.PathLike | None = None,
    ) -> None:
        caller = type(self).__name__
        if not isinstance(model, (str, os.PathLike)):
            raise ValueError(
                f"{caller}: parameter 'model' must be a shipped static model name or a "
                f"directory; got {model!r}."
            )
        self.model = os.fspath(model)
        self.max_tokens = None if max_tokens is None else check_int(
            caller, "max_tokens", max_tokens, low=1, hint="Use None for the whole text.")
        if normalize is not None and not isinstance(normalize, NormalizeConfig):
            raise ValueError(
                f"{caller}: parameter 'normalize' must be a NormalizeConfig or None; got {normalize!r}.")
        self.normalize = normalize
        super().__init__(threshold=threshold, k=k, index=index, exact_limit=exact_limit,
                         batch_size=batch_size, threads=threads, cache_dir=cache_dir)

    def _encode(self, texts: list[str]) -> dict[str, np.ndarray]:
        if self.normalize is not None:
            texts = normalize_batch(texts, self.normalize)
        return super()._encode(texts)

    def sketch_key(self) -> str:
        """The parameters plus the digests of the model's files: a model re-distilled in
        place never reuses cached embeddings."""
        from neardup.embed.static import static_model_dir

        try:
            directory = static_model_dir(self.model)
            digests = [file_digest(str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns)
                       for p in (directory / "model.safetensors", directory / "tokenizer.json")]
        except (OSError, ValueError):
            digests = None  # not resolvable: loading the model reports why
        return json.dumps([super().sketch_key(), digests])

    def _make_embedder(self) -> Any:
        from neardup.embed.static import StaticEmbedder

        return StaticEmbedder(model=self.model, max_tokens=self.max_tokens,
                              batch_size=self.batch_size)
