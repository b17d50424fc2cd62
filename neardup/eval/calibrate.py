"""Fit a method's threshold to a few dozen labelled pairs (``neardup calibrate``).

A user without a labelled corpus can still choose a threshold for their data: score
candidate pairs with a threshold well below the method's default
(:func:`candidate_pairs`), label a few dozen pairs whose scores spread over the region
where the decision is made (:func:`boundary_sample`), and keep the threshold that best
separates the labels (:func:`fit_threshold`). The estimates of precision and recall are
among the labelled pairs, which over-represent the uncertain region: read them as the
quality of the decision near the boundary, not of the whole run.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from neardup.errors import check_float, check_int
from neardup.graph import Pairs

__all__ = ["MIN_GAIN", "Fit", "boundary_sample", "candidate_params", "fit_threshold", "score_to_threshold",
           "threshold_to_score"]

#: Low thresholds for the candidate run, in the method's own units (simhash: bits).
_LOW = {"minhash": 0.1, "ngram": 0.1, "wminhash": 0.1, "spotsigs": 0.1, "sanderson": 0.1,
        "simhash": 20, "retsim": 0.6, "retsim-partial": 0.6, "biencoder": 0.4, "static": 0.5,
        "rerank": 0.02}
#: The pair-score range sampled for labelling.
_RANGE = {"simhash": (1 - 20 / 64, 1.0)}


def candidate_params(method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with the threshold lowered so that pairs below the default are scored."""
    if method not in _LOW:
        raise ValueError(
            f"calibrate: parameter 'method' must be one of {', '.join(repr(m) for m in _LOW)} "
            f"(a method with a threshold); got {method!r}."
        )
    out = dict(params)
    out["threshold"] = _LOW[method]
    if method == "minhash":
        out.setdefault("verify", "signature")
    return out


def threshold_to_score(method: str, threshold: float) -> float:
    """A threshold in the method's units as a minimum pair score."""
    return 1.0 - float(threshold) / 64.0 if method == "simhash" else float(threshold)


def score_to_threshold(method: str, score: float) -> float | int:
    """A minimum pair score as the method's threshold (simhash: a Hamming distance)."""
    if method == "simhash":
        return int(math.floor((1.0 - score) * 64.0 + 1e-9))
    return round(float(score), 4)


def boundary_sample(pairs: Pairs, n: int, *, low: float, high: float = 1.0,
                    seed: int = 0) -> np.ndarray:
    """Positions of up to ``n`` pairs scored in [``low``, ``high``], spread evenly over the
    score ranks (one pair drawn at random from each of ``n`` equal rank strata), so the
    labels cover the whole uncertain region rather than its crowded low end."""
    n = check_int("boundary_sample", "n", n, low=1)
    score = np.asarray(pairs.score, dtype=np.float64)
    inside = np.flatnonzero((score >= low) & (score <= high))
    if inside.size <= n:
        return inside[np.argsort(score[inside], kind="stable")]
    order = inside[np.argsort(score[inside], kind="stable")]
    rng = np.random.default_rng(seed)
    edges = np.linspace(0, order.size, n + 1).astype(np.int64)
    picks = [int(rng.integers(a, b)) for a, b in zip(edges[:-1], edges[1:]) if b > a]
    return order[picks]


@dataclass
class Fit:
    """A threshold fitted to labelled pairs.

    Attributes
    ----------
    score : float
        Minimum pair score accepted.
    precision, recall, f1 : float
        Among the labelled pairs at that cut-off.
    n_labels, n_positive : int
    points : list of dict
        Every candidate cut-off: ``{"score", "precision", "recall", "f1"}``.
    kept_default : bool
        True when the ``default`` cut-off was kept (no fitted one beat it by more than
        ``min_gain``).
    """

    score: float
    precision: float
    recall: float
    f1: float
    n_labels: int
    n_positive: int
    points: list[dict[str, float]]
    kept_default: bool = False


#: Default of ``fit_threshold(min_gain=)`` and ``neardup calibrate --min-gain``.
MIN_GAIN = 0.1


def fit_threshold(scores: Sequence[float], labels: Sequence[bool], *,
                  min_precision: float | None = None, beta: float = 1.0,
                  default: float | None = None, min_gain: float = MIN_GAIN) -> Fit:
    """The cut-off that best separates labelled pairs.

    Candidate cut-offs are midpoints between consecutive distinct labelled scores (and
    just above the highest). Without ``min_precision`` the cut-off with the highest F1
    wins (ties: the higher cut-off); ``beta`` < 1 weighs precision more (F-beta), which
    suits connected components, where one false pair can merge two clusters; with it,
    the one with the highest recall whose precision reaches ``min_precision`` (none: the
    highest-precision cut-off).

    With ``default`` (the method's own cut-off, as a minimum score) and no
    ``min_precision``, the default is kept unless the best cut-off's F-beta among the
    labels beats the default's by more than ``min_gain``. Why: the labels over-represent
    the uncertain region and pairs chain into clusters, so a cut-off that is only a
    little better among a few dozen pairs is usually worse for the clusters (simulated
    on held-out sets in ``experiments/verifier_transfer/calibrate_verifier.py``: docs/transfer.md).

    Raises
    ------
    ValueError
        With no labels, or labels of one class only.
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=bool)
    if s.size == 0 or s.size != y.size:
        raise ValueError(
            f"fit_threshold: parameters 'scores' and 'labels' must be non-empty and of equal "
            f"length; got {s.size} and {y.size}."
        )
    if y.all() or not y.any():
        raise ValueError(
            "fit_threshold: parameter 'labels' must hold both duplicates and non-duplicates; "
            f"got {int(y.sum())} of {y.size} duplicates. Label more pairs (lower and higher "
            "scores) or pass pairs of both kinds."
        )
    if min_precision is not None:
        min_precision = check_float("fit_threshold", "min_precision", min_precision, low=0.0,
                                    high=1.0)
    min_gain = check_float("fit_threshold", "min_gain", min_gain, low=0.0)

    def point(cut: float) -> dict[str, float]:
        accept = s >= cut
        tp = int((accept & y).sum())
        precision = tp / int(accept.sum()) if accept.any() else 1.0
        recall = tp / int(y.sum())
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        b2 = beta * beta
        fb = ((1 + b2) * precision * recall / (b2 * precision + recall)
              if precision + recall else 0.0)
        return {"score": cut, "precision": precision, "recall": recall, "f1": f1, "fbeta": fb}

    distinct = np.unique(s)
    cuts = np.concatenate([[distinct[0]], (distinct[1:] + distinct[:-1]) / 2, [distinct[-1] + 1e-6]])
    points = [point(cut) for cut in cuts.tolist()]
    if min_precision is None:
        best = max(range(len(points)), key=lambda i: (points[i]["fbeta"], points[i]["score"]))
    else:
        ok = [i for i, p in enumerate(points) if p["precision"] >= min_precision]
        best = (max(ok, key=lambda i: (points[i]["recall"], points[i]["score"])) if ok
                else max(range(len(points)), key=lambda i: (points[i]["precision"], -i)))
    p = points[best]
    kept = False
    if default is not None and min_precision is None:
        at_default = point(float(default))
        if p["fbeta"] - at_default["fbeta"] <= min_gain:
            p, kept = at_default, True
            points.append(at_default)
    return Fit(score=p["score"], precision=p["precision"], recall=p["recall"], f1=p["f1"],
               n_labels=int(y.size), n_positive=int(y.sum()), points=points,
               kept_default=kept)


def labels_hash(rows: Sequence[tuple[str, str, bool]]) -> str:
    """Content hash of labelled pairs (recorded in the tuning file as its data hash)."""
    digest = hashlib.sha256()
    for a, b, label in sorted(rows):
        digest.update(f"{a}\t{b}\t{int(label)}\n".encode())
    return digest.hexdigest()
