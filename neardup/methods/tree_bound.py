"""An upper bound on a tree ensemble's score when some features are not yet known.

The light verifier (rerank's default scorer) is a gradient-boosted tree ensemble
(scikit-learn's ``HistGradientBoostingClassifier``) over pair features, one of which,
``align_partial`` (the best alignment of one text's head inside the other's), costs
about ten times all the others together. Most candidate pairs at scale are rejected, and
the features already known decide most of those rejections whatever the expensive
feature's value. :class:`TreeEnsembleBound` computes, per pair, the largest raw score
the ensemble can give over every value of the unknown ("free") features: in each tree,
a split on a known feature is followed as prediction follows it, a split on a free
feature explores both sides, and the tree contributes its largest reachable leaf. A pair
whose bound is below the decision threshold is rejected exactly as the full prediction
would reject it, without computing the free features.

Exactness in floating point: the bound adds the baseline and the trees' leaf values in
the order scikit-learn's prediction adds them, each term at least the one prediction
would add, and rounding is monotone, so the bound is never below the predicted raw
score; probabilities come from the same logistic function.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numba import njit
from scipy.special import expit

__all__ = ["TreeEnsembleBound"]


@njit(cache=True)
def _upper_raw(x, free, value, feature, threshold, missing_left, left, right, leaf, starts,
               baseline):  # pragma: no cover - compiled
    n = x.shape[0]
    n_trees = starts.shape[0] - 1
    out = np.full(n, baseline, np.float64)
    # Nodes still to visit: never more than a tree's node count.
    size = 1
    for t in range(n_trees):
        size = max(size, starts[t + 1] - starts[t])
    stack = np.empty(size + 1, np.int64)
    # Tree by tree, every row in turn: a tree's nodes stay in cache while the rows pass
    # (the ensemble as a whole does not fit). Each row still adds its trees' values in
    # tree order, as scikit-learn does.
    for t in range(n_trees):
        base = starts[t]
        splits_free = False
        for k in range(base, starts[t + 1]):
            if not leaf[k] and free[feature[k]]:
                splits_free = True
        for i in range(n):
            if not splits_free:  # one path to one leaf
                k = base
                while not leaf[k]:
                    v = x[i, feature[k]]
                    if np.isnan(v):
                        k = base + (left[k] if missing_left[k] else right[k])
                    elif v <= threshold[k]:
                        k = base + left[k]
                    else:
                        k = base + right[k]
                out[i] += value[k]
                continue
            best = -np.inf
            stack[0] = 0
            top = 1
            while top > 0:
                top -= 1
                k = base + stack[top]
                if leaf[k]:
                    if value[k] > best:
                        best = value[k]
                    continue
                f = feature[k]
                if free[f]:
                    stack[top] = left[k]
                    stack[top + 1] = right[k]
                    top += 2
                    continue
                v = x[i, f]
                if np.isnan(v):
                    stack[top] = left[k] if missing_left[k] else right[k]
                elif v <= threshold[k]:
                    stack[top] = left[k]
                else:
                    stack[top] = right[k]
                top += 1
            out[i] += best
    return out


class TreeEnsembleBound:
    """Upper bounds on a fitted binary ``HistGradientBoostingClassifier``'s probability
    over every value of some features.

    Use :meth:`from_classifier`, which returns None for any other model (or a
    scikit-learn whose fitted trees it cannot read): callers then compute every feature.

    Parameters
    ----------
    nodes : list of structured arrays
        Each tree's nodes (scikit-learn's ``TreePredictor.nodes``: value, feature_idx,
        num_threshold, missing_go_to_left, left, right, is_leaf).
    baseline : float
        The ensemble's initial raw score.
    """

    #: The node arrays :meth:`save` writes, and their types.
    _ARRAYS = {"value": np.float64, "feature": np.int64, "threshold": np.float64,
               "missing_left": np.bool_, "left": np.int64, "right": np.int64,
               "leaf": np.bool_, "starts": np.int64}

    def __init__(self, nodes: list[np.ndarray], baseline: float) -> None:
        sizes = [len(n) for n in nodes]
        table = np.concatenate(nodes)
        self._set_arrays({
            "value": table["value"], "feature": table["feature_idx"],
            "threshold": table["num_threshold"], "missing_left": table["missing_go_to_left"],
            "left": table["left"], "right": table["right"], "leaf": table["is_leaf"],
            "starts": np.concatenate(([0], np.cumsum(sizes)))}, baseline)

    def _set_arrays(self, arrays: dict[str, np.ndarray], baseline: float) -> None:
        for name, dtype in self._ARRAYS.items():
            setattr(self, f"_{name}", np.ascontiguousarray(arrays[name], dtype))
        self.baseline = float(baseline)
        self.n_features = int(self._feature[~self._leaf].max() + 1) if (~self._leaf).any() else 0

    def save(self, path: str | Path) -> None:
        """Write the ensemble to ``path`` (a ``.npz`` of plain arrays: loading it needs
        neither scikit-learn nor pickle)."""
        np.savez_compressed(path, baseline=np.float64(self.baseline),
                 **{name: getattr(self, f"_{name}") for name in self._ARRAYS})

    @classmethod
    def load(cls, path: str | Path) -> TreeEnsembleBound:
        """An ensemble written by :meth:`save`."""
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in cls._ARRAYS}
            baseline = float(data["baseline"])
        out = cls.__new__(cls)
        out._set_arrays(arrays, baseline)
        return out

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """The classifier's probability of the positive class (float64): the bound with
        no free feature, which adds the same leaf values in the same order as
        scikit-learn's prediction, so the two are equal bit for bit."""
        return self.upper_proba(x, np.zeros(np.shape(x)[1], np.bool_))

    @classmethod
    def from_classifier(cls, classifier: Any) -> TreeEnsembleBound | None:
        """The bound of a fitted binary ``HistGradientBoostingClassifier`` on numeric
        features, or None (another model, categorical splits, or fitted attributes this
        scikit-learn does not have)."""
        from sklearn.ensemble import HistGradientBoostingClassifier

        if not isinstance(classifier, HistGradientBoostingClassifier):
            return None
        try:
            predictors = classifier._predictors
            baseline = np.asarray(classifier._baseline_prediction, np.float64)
            if baseline.size != 1 or any(len(p) != 1 for p in predictors):
                return None  # multi-class: one tree per class and iteration
            nodes = [p[0].nodes for p in predictors]
            if any("is_categorical" in n.dtype.names and n["is_categorical"].any() for n in nodes):
                return None
            return cls(nodes, float(baseline.ravel()[0]))
        except (AttributeError, KeyError, TypeError, ValueError):
            return None

    def upper_raw(self, x: np.ndarray, free: np.ndarray) -> np.ndarray:
        """Per row of ``x`` (n, n_features; values of free columns ignored), the largest
        raw score over every value of the columns where ``free`` (bool, n_features) is
        True."""
        x = np.ascontiguousarray(x, np.float64)
        free = np.ascontiguousarray(free, np.bool_)
        if x.ndim != 2 or free.shape != (x.shape[1],) or x.shape[1] < self.n_features:
            raise ValueError(
                f"TreeEnsembleBound.upper_raw: x must be (n, {self.n_features}) or wider with "
                f"one free flag per column; got x {x.shape}, free {free.shape}."
            )
        if x.shape[0] == 0:
            return np.zeros(0, np.float64)
        return _upper_raw(x, free, self._value, self._feature, self._threshold,
                          self._missing_left, self._left, self._right, self._leaf,
                          self._starts, self.baseline)

    def upper_proba(self, x: np.ndarray, free: np.ndarray) -> np.ndarray:
        """:meth:`upper_raw` as a probability (the classifier's logistic link), float64."""
        return expit(self.upper_raw(x, free))

