"""Rerank verification of an index's candidates (``Index.create(..., rerank=...)``,
``neardup index create --rerank verifier``).

With rerank verification on, the index verifies its candidate edges with the method of
``dedup --method rerank`` itself (:class:`~neardup.methods.rerank.RerankMethod` with the
index's MinHash as its candidate method): its ``score_candidate_rows`` runs the MinHash
check, then the pair classifier (the light verifier or the cross-encoder) on the edges
that pass, then the template guard (short notices whose figures differ both ways are
kept apart: docs/decisions/0011-rerank-template-guard.md). An edge is accepted when its
duplicate probability reaches the rerank threshold, and its score is that probability.
The index links key groups as the corpus stage does, and scores every candidate edge
that passes the MinHash check (rerank's ``low_partners`` cap ranks a document's partners
over a whole corpus, which an index that grows by batches never holds), so its clusters
are those of one-shot ``dedup --method rerank --param candidates=minhash --param
'candidate_params={...the index's parameters...}' --param low_partners=null`` (tested; no
dates: the index keeps none), as long as no key group exceeds the method's bucket cap (above it the index,
like the corpus stage, chains the group where in-memory ``dedup`` pairs LSH candidates
its own way).

The scorer needs the stored side's text: with rerank on, the index keeps each document's
raw text (cut to ``max_chars``), zstd-compressed, in its own table ``rerank_text(doc,
text)``; without it nothing is stored. The configuration (scorer, model, threshold,
max_chars, template_guard and a digest of the model's ``model.json``) is recorded in the
index's metadata; opening or querying it with another one raises IndexMismatchError. An
index recorded before the template guard existed has none (``template_guard`` False).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.engine.rows import LazyTexts, TextSource
from neardup.index._store import stored_texts
from neardup.methods.base import CandidateRows, Method

__all__ = ["RERANK_METHODS", "IndexTexts", "candidate_rows", "describe_rerank",
           "rerank_config", "rerank_method"]

#: Index methods rerank verification applies to (SimHash links some key groups by its own
#: block rule without a verification call; the embedding methods have no candidate keys).
RERANK_METHODS = ("minhash",)
_CODEC = "zstd"
_SETTINGS = ("scorer", "model", "threshold", "max_chars", "template_guard")


def rerank_config(spec: Any, *, template_guard: bool = True) -> dict[str, Any] | None:
    """The recorded configuration of a rerank option: None (off), a scorer name
    ("verifier", "cross-encoder") or a dict with ``scorer``, ``model``, ``threshold``,
    ``max_chars``, ``template_guard``. Resolves the defaults as ``RerankMethod`` does (the
    shipped model of the scorer; the threshold tuned on validation for it with MinHash
    candidates); ``template_guard`` is the guard's default when the spec leaves it out."""
    if spec is None or spec is False:
        return None
    from neardup.methods.rerank import DEFAULT_MODELS, RerankMethod
    from neardup.models import resolve_model

    if isinstance(spec, str):
        spec = {"scorer": spec}
    if not isinstance(spec, dict):
        raise ValueError(
            f"Index.create: parameter 'rerank' must be None, a scorer name ('verifier', "
            f"'cross-encoder') or a dict ({', '.join(_SETTINGS)}); got {spec!r}.")
    unknown = set(spec) - {*_SETTINGS, "model_digest"}
    if unknown:
        raise ValueError(f"Index.create: unknown rerank settings {sorted(unknown)}; "
                         f"give {', '.join(_SETTINGS)}.")
    # Validates the settings and resolves the tuned default threshold exactly as dedup
    # --method rerank does with MinHash candidates.
    method = RerankMethod(scorer=spec.get("scorer", "verifier"), model=spec.get("model"),
                          threshold=spec.get("threshold"), candidates="minhash",
                          max_chars=spec.get("max_chars", 20_000),
                          template_guard=spec.get("template_guard", template_guard))
    model = method.model or DEFAULT_MODELS[method.scorer]
    try:
        directory = resolve_model(model, method.scorer)
    except FileNotFoundError as exc:
        raise ValueError(f"Index: rerank model: {exc}") from exc
    digest = hashlib.sha256((directory / "model.json").read_bytes()).hexdigest()[:16]
    return {"scorer": method.scorer, "model": str(model), "threshold": float(method.threshold),
            "max_chars": int(method.max_chars), "template_guard": method.template_guard,
            "model_digest": digest}


def describe_rerank(config: dict[str, Any] | None) -> str:
    """A rerank setting in words (no dict reprs in messages)."""
    if not config:
        return "no rerank verification"
    parts = [f"{key.replace('_', ' ')} {config[key]}"
             for key in ("model", "threshold", "max_chars", "template_guard")
             if config.get(key) is not None]
    return (f"rerank verification by the {config.get('scorer')}"
            + (f" ({', '.join(parts)})" if parts else ""))


def recorded_config(config: dict[str, Any] | None) -> dict[str, Any] | None:
    """A configuration as read from an index's metadata: one recorded before the template
    guard existed verifies without it, as it was built."""
    if config is None:
        return None
    return {**config, "template_guard": bool(config.get("template_guard", False))}


def rerank_method(config: dict[str, Any], method: Method):
    """The :class:`~neardup.methods.rerank.RerankMethod` of a recorded configuration over
    the index's ``method`` as its candidate method: what verifies the index's edges."""
    from neardup.methods.rerank import RerankMethod

    # Every candidate that passes the MinHash check is scored: rerank's low_partners
    # ranks a document's partners over a whole corpus, which an index that grows by
    # batches never holds.
    reranked = RerankMethod(scorer=config["scorer"], model=config["model"],
                            threshold=config["threshold"], candidates="minhash",
                            candidate_params=method.get_params(), max_chars=config["max_chars"],
                            template_guard=config["template_guard"], low_partners=None)
    if reranked.candidate.get_params() != method.get_params():
        raise ValueError(f"Index: rerank cannot take the index's {method.name!r} "
                         f"{method.get_params()} as its candidate method.")
    return reranked


def compress_texts(texts: Sequence[str], max_chars: int) -> list[bytes]:
    """Each text cut to ``max_chars`` characters, UTF-8, zstd (4-byte length first)."""
    out = []
    for t in texts:
        raw = t[:max_chars].encode("utf-8", "surrogatepass")
        out.append(len(raw).to_bytes(4, "little") + pa.compress(raw, codec=_CODEC, asbytes=True))
    return out


def decompress_text(blob: bytes) -> str:
    size = int.from_bytes(blob[:4], "little")
    if size == 0:
        return ""
    return pa.decompress(blob[4:], decompressed_size=size, codec=_CODEC,
                         asbytes=True).decode("utf-8", "surrogatepass")


class IndexTexts(TextSource):
    """The scorer's texts by index position: positions from ``new_base`` on are new
    documents (``new_texts[position - new_base]``), the others are read from the
    database's text table. One object per add, query or re-link: the scorer's profile
    cache keys documents by position within one such source."""

    def __init__(self, con, new_base: int, new_texts: Sequence[str], max_chars: int) -> None:
        self.con, self.new_base = con, new_base
        self.new_texts = [t[:max_chars] for t in new_texts]

    def texts(self, docs: np.ndarray) -> list[str]:
        docs = np.asarray(docs, np.int64)
        stored = docs[docs < self.new_base]
        known = self._stored(stored) if stored.size else {}
        return [self.new_texts[p - self.new_base] if p >= self.new_base else known.get(p, "")
                for p in docs.tolist()]

    def _stored(self, docs: np.ndarray) -> dict[int, str]:
        return {d: decompress_text(blob) for d, blob in stored_texts(self.con, docs).items()}


def candidate_rows(docs: np.ndarray, arrays: dict[str, np.ndarray], reader: TextSource | None = None,
                   positions: np.ndarray | None = None) -> CandidateRows:
    """What a verification reads of documents ``docs``: their candidate arrays and, with
    a text ``reader``, their texts by index position (``positions``, default ``docs``)."""
    texts = None if reader is None else LazyTexts(reader, docs if positions is None else positions)
    return CandidateRows(docs, arrays, texts=texts)
