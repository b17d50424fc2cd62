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
from pathlib import Path
from typing import Any

import numpy as np

from neardup.errors import check_choice, check_float, check_int
from neardup.eval.labeled import LabeledCorpus
from neardup.graph.edges import Pairs
from neardup.train.loop import EpochRecord, TrainingLog, cpu_seconds, seed_everything

__all__ = ["CLASSIFIERS", "make_classifier", "train_verifier"]

CLASSIFIERS = ("hgb", "logistic")
_MODEL_FILE = "model.joblib"


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
    from neardup.train.cross_encoder import PROBABILITY_THRESHOLDS, _candidates, training_pairs
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
    # Dates are often unknown at inference (the CLI reads them only with --date-field):
    # show the classifier a share of pairs without them, so "missing" is not "far apart".
    if date_dropout > 0 and "date_missing" in features:
        drop = np.random.default_rng(seed + 7).random(len(x)) < date_dropout
        x[drop, features.index("date_missing")] = 1.0
        if "date_days" in features:
            x[drop, features.index("date_days")] = 0.0
    model = make_classifier(classifier, seed=seed)
    from threadpoolctl import threadpool_limits

    # HistGradientBoosting uses OpenMP over every core unless told otherwise.
    with threadpool_limits(limits=threads):
        model.fit(x, data["label"].astype(np.int64))

    # Validation: the candidates the reranker would score, thresholds swept.
    val = _candidates(validation_corpus, candidates, candidate_params, threads)
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
    meta = {
        "kind": "verifier", "file": _MODEL_FILE, "classifier": classifier,
        "features": list(features), "threshold": float(score.threshold),
        "validation_ari": round(float(score.ari), 4),
        "validation_accuracy_at_0.5": round(accuracy, 4),
        "candidates": candidates, "candidate_params": described,
        # With its default candidates, --method rerank starts from this threshold.
        "tuned_thresholds": {} if candidate_params else {candidates: float(score.threshold)},
        "sklearn": __import__("sklearn").__version__,
        "files": [_MODEL_FILE, "model.json", "training.json"],
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
