"""A verifier's probabilities corrected to a user's labelled pairs.

A few dozen labels cannot retrain a verifier, but they can say where its probabilities
are wrong on the user's data. :class:`CorrectedClassifier` keeps the trained classifier
and changes its log-odds by a small linear model of the pair features::

    logit p' = slope * logit p + intercept + weights . (x - mean) / scale

fitted to the labels (``neardup.train.verifier.fit_correction``), pulled towards "no
change" (slope 1, weights 0) so that few labels move it little. The slope is kept
non-negative, so p' rises with p: the upper bound of
:class:`~neardup.methods.tree_bound.TreeEnsembleBound` on p still bounds p', and pairs
whose deferred features cannot matter are still rejected without computing them
(the correction never reads those features).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["CorrectedBound", "CorrectedClassifier", "logit"]

_EPS = 1e-12


def logit(p: np.ndarray) -> np.ndarray:
    """Log-odds of probabilities (clipped away from 0 and 1)."""
    p = np.clip(np.asarray(p, np.float64), _EPS, 1 - _EPS)
    return np.log(p) - np.log1p(-p)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -60, 60)))


class CorrectedClassifier:
    """``base`` (a fitted binary classifier with ``predict_proba``) with corrected log-odds.

    Parameters
    ----------
    base : classifier
    slope, intercept : float
    weights, mean, scale : ndarray, shape (n_features,)
        The linear term over the standardized features; a zero weight for every feature
        the correction does not read.
    """

    def __init__(self, base: Any, slope: float, intercept: float, weights: np.ndarray,
                 mean: np.ndarray, scale: np.ndarray) -> None:
        if slope < 0:
            raise ValueError(f"CorrectedClassifier: parameter 'slope' must be >= 0; got {slope}.")
        self.base = base
        self.slope = float(slope)
        self.intercept = float(intercept)
        self.weights = np.asarray(weights, np.float64)
        self.mean = np.asarray(mean, np.float64)
        self.scale = np.asarray(scale, np.float64)

    def correct(self, base_proba: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Corrected probabilities from the base's probabilities and the features."""
        z = self.slope * logit(base_proba) + self.intercept
        z = z + ((np.asarray(x, np.float64) - self.mean) / self.scale) @ self.weights
        return _sigmoid(z)

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        p = self.correct(self.base.predict_proba(x)[:, 1], x)
        return np.column_stack([1.0 - p, p])


class CorrectedBound:
    """An upper bound on a :class:`CorrectedClassifier`'s probability from the base's
    bound (the correction is monotone in p and does not read the free features)."""

    def __init__(self, base_bound: Any, classifier: CorrectedClassifier) -> None:
        self.base_bound = base_bound
        self.classifier = classifier

    @classmethod
    def from_classifier(cls, classifier: Any) -> CorrectedBound | None:
        from neardup.methods.tree_bound import TreeEnsembleBound

        if not isinstance(classifier, CorrectedClassifier):
            return None
        base = TreeEnsembleBound.from_classifier(classifier.base)
        return None if base is None else cls(base, classifier)

    def upper_proba(self, x: np.ndarray, free: np.ndarray) -> np.ndarray:
        if np.any(self.classifier.weights[np.asarray(free, bool)] != 0):
            raise ValueError("CorrectedBound: the correction reads a feature left free.")
        upper = self.base_bound.upper_proba(x, free)
        return self.classifier.correct(upper, x)
