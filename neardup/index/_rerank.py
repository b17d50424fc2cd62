"""Rerank verification of an index's candidates (``Index.create(..., rerank=...)``,
``neardup index create --rerank verifier``).

The index's method (MinHash) finds and verifies candidates as usual; with rerank
verification on, every candidate edge the method accepts is then scored by a pair
classifier of :mod:`neardup.methods.rerank` (the light verifier or the cross-encoder),
and becomes an edge only if its duplicate probability is at least the rerank threshold.
The edge's score is then that probability. This is ``dedup --method rerank`` with the
index's method as the candidate method: the same scorer reads the same text (each
document's raw text cut to ``max_chars`` characters; no dates), so the clusters are
those of one-shot ``dedup --method rerank --param candidates=minhash --param
'candidate_params={...the index's parameters...}'`` (tested), as long as no key group
exceeds the method's bucket cap (above it the index, like the corpus stage, chains the
group where in-memory ``dedup`` pairs LSH candidates its own way).

The scorer needs the stored side's text: with rerank on, the index keeps each document's
raw text (cut to ``max_chars``), zstd-compressed, in its own table ``rerank_text(doc,
text)``; without it nothing is stored. The configuration (scorer, model, threshold,
max_chars and a digest of the model's ``model.json``) is recorded in the index's metadata;
opening or querying it with another one raises IndexMismatchError.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.methods.base import Method

__all__ = ["DOC_ARRAY", "RERANK_METHODS", "TEXT_TABLE", "RerankVerifier", "RerankedMethod",
           "rerank_config"]

#: The table of compressed texts (created only when rerank verification is on).
TEXT_TABLE = "rerank_text"
TEXT_SCHEMA = f"CREATE TABLE IF NOT EXISTS {TEXT_TABLE} (doc INTEGER PRIMARY KEY, text BLOB NOT NULL)"
#: A pseudo candidate array carrying each row's index position, so that a verification
#: call can look the texts up (stripped before the method's own verification).
DOC_ARRAY = "__doc"
#: Index methods rerank verification applies to (SimHash links some key groups by its own
#: block rule without a verification call; the embedding methods have no candidate keys).
RERANK_METHODS = ("minhash",)
_CODEC = "zstd"


def rerank_config(spec: Any) -> dict[str, Any] | None:
    """The recorded configuration of a rerank option: None (off), a scorer name
    ("verifier", "cross-encoder") or a dict with ``scorer``, ``model``, ``threshold``,
    ``max_chars``. Resolves the defaults as ``RerankMethod`` does (the shipped model of
    the scorer; the threshold tuned on validation for it with MinHash candidates)."""
    if spec is None or spec is False:
        return None
    from neardup.methods.rerank import DEFAULT_MODELS, RerankMethod
    from neardup.models import resolve_model

    if isinstance(spec, str):
        spec = {"scorer": spec}
    if not isinstance(spec, dict):
        raise ValueError(
            f"Index.create: parameter 'rerank' must be None, a scorer name ('verifier', "
            f"'cross-encoder') or a dict (scorer, model, threshold, max_chars); got {spec!r}.")
    unknown = set(spec) - {"scorer", "model", "threshold", "max_chars", "model_digest"}
    if unknown:
        raise ValueError(f"Index.create: unknown rerank settings {sorted(unknown)}; "
                         "give scorer, model, threshold, max_chars.")
    scorer = spec.get("scorer", "verifier")
    # Validates the scorer, model and threshold and resolves the tuned default threshold
    # exactly as dedup --method rerank does with MinHash candidates.
    method = RerankMethod(scorer=scorer, model=spec.get("model"), threshold=spec.get("threshold"),
                          candidates="minhash", max_chars=spec.get("max_chars", 20_000))
    model = method.model or DEFAULT_MODELS[method.scorer]
    try:
        directory = resolve_model(model, method.scorer)
    except FileNotFoundError as exc:
        raise ValueError(f"Index: rerank model: {exc}") from exc
    digest = hashlib.sha256((directory / "model.json").read_bytes()).hexdigest()[:16]
    return {"scorer": method.scorer, "model": str(model), "threshold": float(method.threshold),
            "max_chars": int(method.max_chars), "model_digest": digest}


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


class RerankVerifier:
    """Confirms accepted candidate edges with the configured scorer.

    Parameters
    ----------
    config : dict
        From :func:`rerank_config` (as recorded in the index).
    """

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = dict(config)
        self.threshold = float(config["threshold"])
        self.max_chars = int(config["max_chars"])
        self._scorer: Any = None

    @property
    def scorer(self):
        if self._scorer is None:
            from neardup.methods.rerank import load_scorer

            self._scorer = load_scorer(self.config["scorer"], self.config["model"])
        return self._scorer

    def cut(self, texts: Sequence[str]) -> list[str]:
        return [t[: self.max_chars] for t in texts]

    def probabilities(self, texts: list[str], left: np.ndarray, right: np.ndarray) -> np.ndarray:
        """Duplicate probability of each pair of positions in ``texts``."""
        from neardup.methods.rerank import VerifierScorer

        if left.size == 0:
            return np.zeros(0, np.float32)
        scorer = self.scorer
        if isinstance(scorer, VerifierScorer):
            return np.asarray(scorer.score_positions(texts, left, right), np.float32)
        return np.asarray(scorer.score([texts[i] for i in left.tolist()],
                                       [texts[i] for i in right.tolist()]), np.float32)

    def confirm(self, score: np.ndarray, accept: np.ndarray, left: np.ndarray,
                right: np.ndarray, texts_of: Callable[[np.ndarray], list[str]]):
        """``(score, accept)`` after re-scoring the accepted edges (``left``/``right``:
        index positions; ``texts_of(sorted unique positions) -> texts``): an accepted
        edge stays accepted if its probability reaches the threshold, and its score
        becomes the probability."""
        score = np.array(score, np.float32)
        accept = np.array(accept, bool)
        at = np.flatnonzero(accept)
        if at.size == 0:
            return score, accept
        need = np.unique(np.concatenate((left[at], right[at])))
        texts = texts_of(need)
        prob = self.probabilities(texts, np.searchsorted(need, left[at]),
                                  np.searchsorted(need, right[at]))
        score[at] = prob
        accept[at] = prob >= self.threshold
        return score, accept


class RerankedMethod:
    """What the corpus stage's linker (:func:`neardup.engine.link_key_rows`) links an
    index's key rows with when rerank verification is on: the index's keyed method (its
    keys and bucket rule), each edge it accepts then confirmed by the rerank verifier,
    as ``dedup --method rerank`` verifies its candidate method's edges. Declares the
    method's capabilities; the rows it is given also carry :data:`DOC_ARRAY` (index
    positions, for the text lookup). Nothing else is forwarded."""

    def __init__(self, method: Method, verifier: RerankVerifier,
                 texts_of: Callable[[np.ndarray], list[str]]) -> None:
        caps = method.capabilities
        if not caps.fixed_width or caps.keyed.links_buckets:
            raise ValueError(
                f"RerankedMethod: rerank verification needs a keyed method verified from "
                f"fixed-width rows by the stage's own linking; got {method.name!r}.")
        self._method, self._verifier, self._texts_of = method, verifier, texts_of
        self.name = method.name
        self.capabilities = caps

    def score_candidates(self, left: dict[str, np.ndarray], right: dict[str, np.ndarray]):
        a = {k: v for k, v in left.items() if k != DOC_ARRAY}
        b = {k: v for k, v in right.items() if k != DOC_ARRAY}
        score, accept = self._method.score_candidates(a, b)
        return self._verifier.confirm(score, accept, left[DOC_ARRAY], right[DOC_ARRAY],
                                      self._texts_of)

    def score_candidate_rows(self, rows, left: np.ndarray, right: np.ndarray):
        return self.score_candidates({k: v[left] for k, v in rows.arrays.items()},
                                     {k: v[right] for k, v in rows.arrays.items()})


def stored_texts(con, docs: np.ndarray) -> dict[int, str]:
    """Stored texts of index positions ``docs`` (one temp-table join)."""
    con.execute("CREATE TEMP TABLE IF NOT EXISTS qr(doc INTEGER PRIMARY KEY)")
    con.execute("DELETE FROM qr")
    con.executemany("INSERT INTO qr(doc) VALUES (?)", ((d,) for d in np.unique(docs).tolist()))
    return {d: decompress_text(blob) for d, blob in con.execute(
        f"SELECT t.doc, t.text FROM qr CROSS JOIN {TEXT_TABLE} t ON t.doc = qr.doc")}


def texts_lookup(con, new_base: int, new_texts: Sequence[str]) -> Callable[[np.ndarray], list[str]]:
    """``texts_of(positions)`` for positions that are new (``>= new_base``: position -
    new_base in ``new_texts``, already cut) or stored (read from ``con``)."""

    def texts_of(pos: np.ndarray) -> list[str]:
        pos = np.asarray(pos, np.int64)
        stored = pos[pos < new_base]
        known = stored_texts(con, stored) if stored.size else {}
        return [new_texts[p - new_base] if p >= new_base else known.get(p, "")
                for p in pos.tolist()]

    return texts_of
