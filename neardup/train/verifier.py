"""Train the light verifier for ``--method rerank --param scorer=verifier``.

The verifier is a small scikit-learn classifier over pair features
(:mod:`neardup.methods.pair_features`: word and character n-gram Jaccard and containment,
digit-masked and number-set overlap, length ratio, rapidfuzz alignment scores, date
difference, and RETSim cosines when onnxruntime is installed). It re-scores candidate
pairs at thousands of pairs per second on one core, where a cross-encoder manages tens.

Training pairs (:func:`neardup.train.cross_encoder.training_pairs`) are the ones a
reranker must judge -- every candidate a fast method proposes on the *train* split,
labelled by the true clusters -- plus :func:`neardup.train.data.make_pairs` pairs
(positives capped per cluster, about two thirds hard negatives). The validation split
(never test) gives the reported ARI and the suggested probability threshold: its
candidates are scored and connected components are swept over thresholds
(:func:`neardup.train.validate.pairs_ari`).

The output folder holds ``model.joblib`` (the fitted classifier, a joblib pickle: load
only folders you trust), ``model.json`` (kind "verifier", feature names, threshold,
scores) and ``training.json``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from neardup.errors import check_choice, check_float, check_int
from neardup.eval.labeled import LabeledCorpus
from neardup.graph.edges import Pairs
from neardup.train.loop import EpochRecord, TrainingLog, cpu_seconds, seed_everything

__all__ = ["CLASSIFIERS", "Refit", "drop_dates", "fit_correction", "make_classifier",
           "refit_verifier", "save_refit", "train_verifier"]

CLASSIFIERS = ("hgb", "logistic")
_MODEL_FILE = "model.joblib"


def save_trees(model: Any, out: Path) -> list[str]:
    """Write a gradient-boosted ``model``'s trees as plain arrays into folder ``out``
    (``VerifierScorer.TREES_FILE``: rerank scores with them without loading
    scikit-learn); the file names written, none for another kind of model."""
    from neardup.methods.rerank import VerifierScorer
    from neardup.methods.tree_bound import TreeEnsembleBound

    trees = TreeEnsembleBound.from_classifier(model)
    if trees is None:
        return []
    trees.save(out / VerifierScorer.TREES_FILE)
    return [VerifierScorer.TREES_FILE]


def make_classifier(classifier: str, *, seed: int = 0) -> Any:
    """An unfitted scikit-learn classifier: ``"hgb"`` (histogram gradient boosting, which
    handles unscaled features and their interactions) or ``"logistic"`` (standardized
    features, logistic regression: smaller, calibrated, linear)."""
    check_choice("make_classifier", "classifier", classifier, CLASSIFIERS)
    if classifier == "hgb":
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier(
            max_iter=300, learning_rate=0.08, max_leaf_nodes=31, min_samples_leaf=40,
            l2_regularization=1.0, early_stopping=True, validation_fraction=0.1,
            n_iter_no_change=20, random_state=seed,
        )
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=5000))


def train_verifier(
    train_corpus: LabeledCorpus,
    validation_corpus: LabeledCorpus,
    *,
    output_dir: str | os.PathLike,
    negative_of: np.ndarray | None = None,
    classifier: str = "hgb",
    features: Sequence[str] | None = None,
    candidates: str = "retsim",
    candidate_params: dict | None = None,
    max_pairs: int | None = None,
    date_dropout: float = 0.25,
    seed: int = 0,
    threads: int | None = None,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Fit a verifier on train pairs and score it on the validation split.

    Parameters
    ----------
    train_corpus : LabeledCorpus
        Training documents with cluster labels (no test split).
    validation_corpus : LabeledCorpus
        Validation documents (no test split): scored for the report and the threshold.
    output_dir : path
        Folder for ``model.joblib``, ``model.json`` and ``training.json``.
    negative_of : ndarray or None
        Hard-negative links of ``train_corpus`` (from ``load_training_corpus``).
    classifier : {"hgb", "logistic"}, default "hgb"
        See :func:`make_classifier`.
    features : sequence of str or None, default None
        Feature names (:data:`neardup.methods.pair_features.FEATURES`); None: the lexical
        features plus the RETSim ones when onnxruntime and unisim are installed.
    candidates : {"retsim", "minhash", "biencoder"}, default "retsim"
        The fast method whose train-split candidates join the training pairs and whose
        validation candidates are scored (use the one the reranker will run with).
    candidate_params : dict or None
        Its parameters over :data:`neardup.methods.rerank.CANDIDATE_DEFAULTS`.
    max_pairs : int or None, default None
        Cap on training pairs (half candidates); None: all of them.
    date_dropout : float in [0, 1], default 0.25
        Share of training pairs whose date features are set to "missing", so that the
        model also scores well on data without dates.
    seed : int, default 0
    threads : int or None, default None
        Threads for feature computation (rapidfuzz, RETSim) and the candidate search.
    progress : bool or None, default None
        Accepted for the ``neardup train`` CLI; the verifier trains in seconds to minutes
        and draws no bar.

    Returns
    -------
    dict
        The training log (one record: ``best_validation_ari``, ``best_threshold``,
        ``cpu_seconds``...) plus ``output_dir``, ``pair_counts``, ``features``,
        ``feature_seconds`` and ``wall_seconds``.

    Raises
    ------
    ValueError
        Invalid parameters, unknown features, test-split documents in either corpus.
    """
    from neardup.methods.pair_features import FEATURES, default_features, pair_features
    from neardup.train.cross_encoder import PROBABILITY_THRESHOLDS, candidate_pairs, training_pairs
    from neardup.train.validate import pairs_ari

    caller = "train_verifier"
    check_choice(caller, "classifier", classifier, CLASSIFIERS)
    check_choice(caller, "candidates", candidates, ("retsim", "minhash", "biencoder"))
    check_int(caller, "seed", seed, low=0)
    check_float(caller, "date_dropout", date_dropout, low=0.0, high=1.0)
    if max_pairs is not None:
        check_int(caller, "max_pairs", max_pairs, low=2)
    if threads is not None:
        check_int(caller, "threads", threads, low=1)
    features = tuple(default_features() if features is None else features)
    unknown = [f for f in features if f not in FEATURES]
    if unknown or not features:
        raise ValueError(f"{caller}: parameter 'features' must be a non-empty list of "
                         f"{', '.join(FEATURES)}; got {list(features)!r}.")
    for name, corpus in (("train_corpus", train_corpus), ("validation_corpus", validation_corpus)):
        if not isinstance(corpus, LabeledCorpus):
            raise ValueError(f"{caller}: parameter '{name}' must be a LabeledCorpus; got "
                             f"{type(corpus).__name__}.")
        if corpus.splits is not None and np.any(corpus.splits == "test"):
            raise ValueError(f"{caller}: parameter '{name}' holds test-split documents; the "
                             "test split is for the final report only.")
    import joblib

    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    seed_everything(seed)
    wall0, cpu0 = time.perf_counter(), cpu_seconds()
    # Run-time settings (a cache folder, threads) do not describe the model.
    described = {k: v for k, v in (candidate_params or {}).items()
                 if k not in ("cache_dir", "threads")} or None
    config = {"classifier": classifier, "features": list(features), "candidates": candidates,
              "candidate_params": described, "max_pairs": max_pairs,
              "date_dropout": date_dropout, "seed": seed,
              "train_docs": len(train_corpus), "train_hash": train_corpus.content_hash(),
              "validation_hash": validation_corpus.content_hash()}

    data = training_pairs(train_corpus, negative_of=negative_of, max_pairs=max_pairs,
                          candidates=candidates, candidate_params=candidate_params, seed=seed,
                          threads=threads)
    t = time.perf_counter()
    x = pair_features(train_corpus.texts, data["left"], data["right"], dates=train_corpus.dates,
                      features=features, threads=threads)
    feature_seconds = time.perf_counter() - t
    drop_dates(x, features, date_dropout, seed)
    model = make_classifier(classifier, seed=seed)
    from threadpoolctl import threadpool_limits

    # HistGradientBoosting uses OpenMP over every core unless told otherwise.
    with threadpool_limits(limits=threads):
        model.fit(x, data["label"].astype(np.int64))

    # Validation: the candidates the reranker would score, thresholds swept.
    val = candidate_pairs(validation_corpus, candidates, candidate_params, threads)
    labels = np.asarray(validation_corpus.clusters).astype(str)
    t = time.perf_counter()
    xv = pair_features(validation_corpus.texts, val.left, val.right,
                       dates=validation_corpus.dates, features=features, threads=threads)
    with threadpool_limits(limits=threads):
        prob = (model.predict_proba(xv)[:, 1].astype(np.float32) if len(val)
                else np.zeros(0, np.float32))
    score_seconds = time.perf_counter() - t
    score = pairs_ari(Pairs(val.left, val.right, prob), labels, thresholds=PROBABILITY_THRESHOLDS)
    truth = labels[val.left] == labels[val.right]
    accuracy = float(np.mean((prob >= 0.5) == truth)) if len(val) else float("nan")

    cpu = cpu_seconds() - cpu0
    log = TrainingLog(config=config)
    log.add(EpochRecord(epoch=1, train_loss=float("nan"), validation_ari=float(score.ari),
                        threshold=float(score.threshold),
                        seconds=round(time.perf_counter() - wall0, 1), cpu_seconds=round(cpu, 1)))
    joblib.dump(model, out / _MODEL_FILE, compress=3)
    files = [_MODEL_FILE, *save_trees(model, out), "model.json", "training.json"]
    meta = {
        "kind": "verifier", "file": _MODEL_FILE, "classifier": classifier,
        "features": list(features), "threshold": float(score.threshold),
        "validation_ari": round(float(score.ari), 4),
        "validation_accuracy_at_0.5": round(accuracy, 4),
        "candidates": candidates, "candidate_params": described,
        # With its default candidates, --method rerank starts from this threshold.
        "tuned_thresholds": {} if candidate_params else {candidates: float(score.threshold)},
        "sklearn": __import__("sklearn").__version__,
        "files": files,
    }
    tmp = out / "model.json.tmp"
    tmp.write_text(json.dumps(meta, indent=2) + "\n")
    os.replace(tmp, out / "model.json")
    log.save(out / "training.json")
    return {**log.to_dict(), "output_dir": str(out), "pair_counts": data["counts"],
            "features": list(features), "validation_pairs": len(val),
            "validation_accuracy_at_0.5": accuracy,
            "feature_seconds": round(feature_seconds, 1),
            "validation_pairs_per_second": round(len(val) / max(score_seconds, 1e-9), 1),
            "wall_seconds": round(time.perf_counter() - wall0, 1)}


def drop_dates(x: np.ndarray, features: Sequence[str], share: float, seed: int) -> None:
    """Mark a random ``share`` of the rows of ``x`` (in place) as undated.

    Dates are often unknown at inference (the CLI reads them only with --date-field):
    the classifier sees a share of pairs without them, so "missing" is not "far apart".
    """
    features = list(features)
    if share <= 0 or "date_missing" not in features:
        return
    drop = np.random.default_rng(seed + 7).random(len(x)) < share
    x[drop, features.index("date_missing")] = 1.0
    if "date_days" in features:
        x[drop, features.index("date_days")] = 0.0


#: Default strength of the pull towards the verifier's own probabilities, in labels.
CORRECTION_L2 = 100.0


@dataclass
class Refit:
    """A verifier corrected to labelled pairs (:func:`refit_verifier`).

    Attributes
    ----------
    model : CorrectedClassifier
        The base classifier with the correction fitted to every label.
    out_of_fold : ndarray of float32
        Probability of each labelled pair from a correction fitted without it (``folds``
        fits, each without one fold of the labels): fit the threshold to these, not to
        the final model's probabilities, which have seen the labels.
    corrected : bool
        False when a class has a single label: then no correction is made (``model``
        gives the verifier's own probabilities) and only the threshold can be fitted.
    """

    model: Any
    out_of_fold: np.ndarray
    corrected: bool = True


def fit_correction(base: Any, x: np.ndarray, y: np.ndarray, *, features: Sequence[str],
                   l2: float = CORRECTION_L2, penalize_intercept: bool = False) -> Any:
    """A :class:`~neardup.methods.verifier_correction.CorrectedClassifier` of ``base``
    fitted to labelled pairs ``x`` (features) and ``y`` (True: duplicates).

    Minimises the labels' log-loss plus ``l2 * ((slope - 1)^2 + |weights|^2)`` (L-BFGS-B,
    slope >= 0): with few labels the correction stays near "no change"; the intercept is
    free (``penalize_intercept``: pulled to 0 as well, which lost on validation:
    docs/transfer.md), so a uniform shift costs nothing. The features the verifier
    computes last, for the pairs its bound cannot reject
    (``VerifierScorer.deferred_features``), get weight 0, so the bound still holds.
    """
    from scipy.optimize import minimize

    from neardup.methods.rerank import VerifierScorer
    from neardup.methods.verifier_correction import CorrectedClassifier, logit

    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    with _one_thread():
        base_logit = logit(base.predict_proba(x)[:, 1])
    used = np.array([f not in VerifierScorer.deferred_features for f in features])
    mean = np.where(used, x.mean(axis=0), 0.0)
    spread = x.std(axis=0)
    scale = np.where(used & (spread > 1e-6), spread, 1.0)
    z = (x - mean) / scale
    z[:, ~used] = 0.0
    width = x.shape[1]

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        slope, intercept, w = theta[0], theta[1], theta[2:]
        log_odds = slope * base_logit + intercept + z @ w
        p = 1.0 / (1.0 + np.exp(-np.clip(log_odds, -60, 60)))
        # log(1 + e^t) - y t: the log-loss in a form that does not overflow
        value = float(np.sum(np.logaddexp(0.0, log_odds) - y * log_odds))
        pull = intercept if penalize_intercept else 0.0
        value += l2 * ((slope - 1.0) ** 2 + pull ** 2 + float(w @ w))
        residual = p - y
        grad = np.concatenate([[residual @ base_logit + 2 * l2 * (slope - 1.0),
                                residual.sum() + 2 * l2 * pull],
                               z.T @ residual + 2 * l2 * w])
        return value, grad

    start = np.concatenate([[1.0, 0.0], np.zeros(width)])
    bounds = [(0.0, None), (None, None)] + [(None, None) if u else (0.0, 0.0) for u in used]
    theta = minimize(loss, start, jac=True, method="L-BFGS-B", bounds=bounds).x
    return CorrectedClassifier(base, slope=theta[0], intercept=theta[1], weights=theta[2:],
                               mean=mean, scale=scale)


def refit_verifier(base: Any, x: np.ndarray, y: np.ndarray, *, features: Sequence[str],
                   l2: float = CORRECTION_L2, folds: int = 5, seed: int = 0,
                   penalize_intercept: bool = False) -> Refit:
    """Correct a verifier's classifier to a user's labelled pairs.

    A few dozen labels cannot retrain a verifier; they can correct where its
    probabilities are wrong on the user's data (:func:`fit_correction`).

    Parameters
    ----------
    base : classifier
        The verifier's fitted classifier (``VerifierScorer.classifier``).
    x, y : ndarray
        The labelled pairs' features (the verifier's columns) and labels (True:
        duplicates).
    features : sequence of str
        The verifier's feature names.
    l2 : float > 0, default 100
        Pull towards the verifier's own probabilities (chosen on validation splits:
        docs/transfer.md).
    folds : int >= 2, default 5
        Folds of the labels for :attr:`Refit.out_of_fold` (fewer when a class has fewer
        labels).
    seed : int, default 0
    penalize_intercept : bool, default False
        See :func:`fit_correction`.

    Raises
    ------
    ValueError
        Mismatched shapes, labels of one class only, invalid parameters.
    """
    from sklearn.model_selection import StratifiedKFold

    caller = "refit_verifier"
    check_float(caller, "l2", l2, low=0.0)
    check_int(caller, "folds", folds, low=2)
    check_int(caller, "seed", seed, low=0)
    x = np.asarray(x, np.float32)
    y = np.asarray(y).astype(bool)
    width = len(list(features))
    if x.ndim != 2 or x.shape[1] != width:
        raise ValueError(f"{caller}: parameter 'x' must have one column per feature ({width}); "
                         f"got shape {x.shape}.")
    if len(x) != len(y):
        raise ValueError(f"{caller}: parameters 'x' and 'y' differ in length ({len(x)} and "
                         f"{len(y)}).")
    positives = int(y.sum())
    if positives == 0 or positives == len(y):
        raise ValueError(f"{caller}: the labels must hold both duplicates and non-duplicates; "
                         f"got {positives} of {len(y)} duplicates.")
    folds = min(folds, positives, len(y) - positives)
    out_of_fold = np.zeros(len(y), np.float32)
    if folds >= 2:
        split = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
        for kept, held in split.split(x, y):
            model = fit_correction(base, x[kept], y[kept], features=features, l2=l2,
                                   penalize_intercept=penalize_intercept)
            with _one_thread():
                out_of_fold[held] = model.predict_proba(x[held])[:, 1]
    else:
        # One label of a class: no correction can be checked on labels it did not see,
        # so none is made (the threshold alone is fitted to the verifier's probabilities).
        from neardup.methods.verifier_correction import CorrectedClassifier

        with _one_thread():
            out_of_fold[:] = base.predict_proba(x)[:, 1]
        zero = np.zeros(width)
        return Refit(model=CorrectedClassifier(base, 1.0, 0.0, zero, zero, np.ones(width)),
                     out_of_fold=out_of_fold, corrected=False)
    return Refit(model=fit_correction(base, x, y, features=features, l2=l2,
                                      penalize_intercept=penalize_intercept),
                 out_of_fold=out_of_fold, corrected=True)


def save_refit(refit: Refit, base_dir: str | os.PathLike, output_dir: str | os.PathLike, *,
               threshold: float, n_labels: int, n_positive: int, l2: float) -> Path:
    """Write a corrected verifier as a model folder (``--method rerank --model DIR``).

    The folder is written beside ``output_dir`` and renamed into place, so it appears
    whole or not at all; an existing non-empty ``output_dir`` is refused, never
    overwritten. ``model.json`` is the base model's with the new threshold and a record
    of the correction.
    """
    import shutil
    import tempfile

    import joblib

    base = Path(base_dir)
    out = Path(output_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"{out}: exists and is not an empty folder; choose a new folder "
                              "for the refitted verifier (nothing is overwritten).")
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = json.loads((base / "model.json").read_text(encoding="utf-8"))
    for stale in ("validation_ari", "validation_ari_is", "validation_accuracy_at_0.5",
                  "tuned_thresholds_source"):
        meta.pop(stale, None)
    meta.update({
        "threshold": float(threshold),
        "tuned_thresholds": {meta.get("candidates", "minhash"): float(threshold)},
        "corrected_to_labels": {
            "base_model": base.name, "labels": int(n_labels), "duplicates": int(n_positive),
            "l2": float(l2), "slope": round(refit.model.slope, 4),
            "threshold_from": "out-of-fold probabilities of the labelled pairs"},
        "files": [_MODEL_FILE, "model.json"],
    })
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        joblib.dump(refit.model, staging / _MODEL_FILE, compress=3)
        (staging / "model.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        if out.exists():
            out.rmdir()  # empty (checked above): replaced by the staged folder
        os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


def _one_thread():
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)
