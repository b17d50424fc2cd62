"""Models shipped inside the neardup package, and how ``--model`` finds them.

Each shipped model is a folder ``neardup/models/<name>/`` holding the weights, a
``model.json`` (``{"kind": ..., "files": ..., "base": ...}``) and a ``README.md`` model
card (base model, training data command, loss, epochs, CPU time, validation and test
scores, the command that reproduces it). ``kind`` says which component loads it:

* ``"retsim"``: an ONNX file with RETSim's interface, for ``--method retsim`` /
  ``retsim-partial``;
* ``"biencoder"``: a text encoder, for ``--method biencoder``;
* ``"cross-encoder"``: a pair classifier, for ``--method rerank``;
* ``"verifier"``: the light pair-feature classifier, for ``--method rerank``;
* ``"static"``: a model2vec static embedding model, for ``--method static``.

:func:`resolve_model` turns a ``--model`` value (a shipped name or a directory) into a
directory, checking that its kind matches. A ``model.json`` may also hold
``tuned_thresholds``: per setting (the method using the model, or a scorer's candidate
method), the threshold ``neardup tune`` chose on the validation split;
:func:`tuned_threshold` reads it, and the methods use it when no threshold is given.
"""

from __future__ import annotations

import json
import os
from typing import Any
from pathlib import Path

__all__ = ["MODELS_DIR", "recommended_cluster", "resolve_model", "shipped_models", "tuned_threshold"]

MODELS_DIR = Path(__file__).resolve().parent
KINDS = ("retsim", "biencoder", "cross-encoder", "verifier", "static")


def shipped_models(kind: str | None = None) -> dict[str, dict]:
    """Shipped models by name (their ``model.json``), optionally only one ``kind``."""
    found: dict[str, dict] = {}
    for meta_path in sorted(MODELS_DIR.glob("*/model.json")):
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if kind is None or meta.get("kind") == kind:
            found[meta_path.parent.name] = meta
    return found


def resolve_model(model: str | os.PathLike, kind: str) -> Path:
    """Directory of ``model``: a shipped model's name, or a directory path.

    Raises
    ------
    ValueError
        ``kind`` is unknown, or ``model`` names a shipped model of another kind.
    FileNotFoundError
        ``model`` is neither a shipped name nor an existing directory (lists the shipped
        names of this kind).
    """
    if kind not in KINDS:
        raise ValueError(f"resolve_model: parameter 'kind' must be one of {KINDS}; got {kind!r}.")
    if isinstance(model, str) and (MODELS_DIR / model / "model.json").is_file():
        meta = json.loads((MODELS_DIR / model / "model.json").read_text(encoding="utf-8"))
        if meta.get("kind") != kind:
            raise ValueError(
                f"Shipped model {model!r} is a {meta.get('kind')} model, not a {kind} model."
            )
        return MODELS_DIR / model
    path = Path(model)
    if path.is_dir():
        return path
    names = ", ".join(shipped_models(kind)) or "none"
    raise FileNotFoundError(
        f"Model {str(model)!r} is neither a shipped {kind} model (shipped: {names}) nor an "
        "existing directory."
    )


def _meta(model: str | os.PathLike | None, kind: str) -> dict[str, Any]:
    """``model``'s ``model.json``, or ``{}`` when the model is None, does not resolve or
    its file does not parse (its users then keep their generic defaults; loading reports
    a bad model)."""
    if model is None:
        return {}
    try:
        meta = json.loads((resolve_model(model, kind) / "model.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def tuned_threshold(model: str | os.PathLike | None, kind: str, setting: str) -> float | None:
    """The threshold tuned on validation for ``model`` used in ``setting`` (its
    ``model.json``'s ``tuned_thresholds[setting]``), or None when the model is None, does
    not resolve, or has none for that setting (its users then keep their generic
    default; loading reports a bad model)."""
    value = _meta(model, kind).get("tuned_thresholds", {}).get(setting)
    return float(value) if isinstance(value, (int, float)) else None


def recommended_cluster(model: str | os.PathLike | None, kind: str) -> dict[str, Any]:
    """The clustering ``model`` was measured best with on held-out data (its
    ``model.json``'s ``recommended_cluster``: ``algorithm`` and its parameters, e.g.
    ``{"algorithm": "leiden", "resolution": 0.4}``), or ``{}`` when it records none or
    does not resolve."""
    value = _meta(model, kind).get("recommended_cluster")
    if not isinstance(value, dict) or "algorithm" not in value:
        return {}
    return {k: v for k, v in value.items() if k in ("algorithm", "resolution")}
