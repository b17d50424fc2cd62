"""The tree-ensemble bound that lets the verifier reject pairs without its costliest feature."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression

from neardup.methods.tree_bound import TreeEnsembleBound

_spec = importlib.util.spec_from_file_location(
    "rerank_fixtures", Path(__file__).resolve().parents[1] / "train" / "rerank_fixtures.py")
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3000, 5))
    x[rng.random(x.shape) < 0.02] = np.nan  # missing values take the trees' learnt side
    y = (np.nan_to_num(x[:, 0]) + 0.8 * np.nan_to_num(x[:, 3]) * np.nan_to_num(x[:, 1]) > 0.2)
    model = HistGradientBoostingClassifier(max_iter=60, random_state=0).fit(x, y)
    return model, rng.normal(size=(800, 5))


@pytest.mark.slow
def test_no_free_feature_gives_the_prediction_exactly(fitted):
    model, x = fitted
    bound = TreeEnsembleBound.from_classifier(model)
    raw = model._raw_predict(x)[:, 0]
    np.testing.assert_array_equal(bound.upper_raw(x, np.zeros(5, bool)), raw)
    np.testing.assert_array_equal(bound.upper_proba(x, np.zeros(5, bool)), model.predict_proba(x)[:, 1])


@pytest.mark.parametrize("free", [[3], [1, 3], [0, 1, 2, 3, 4]])
@pytest.mark.slow
def test_bound_holds_for_every_value_of_the_free_features(fitted, free):
    model, x = fitted
    bound = TreeEnsembleBound.from_classifier(model)
    mask = np.isin(np.arange(5), free)
    upper = bound.upper_raw(x, mask)
    rng = np.random.default_rng(1)
    for _ in range(20):  # the free columns replaced by anything, NaN included
        other = x.copy()
        other[:, mask] = rng.normal(scale=3, size=(len(x), mask.sum()))
        other[rng.random(other.shape) < 0.05 * mask] = np.nan
        assert (model._raw_predict(other)[:, 0] <= upper).all()
    assert (upper > model._raw_predict(x)[:, 0]).any()  # a bound, not the prediction
    if len(free) == 5:
        assert np.unique(upper).size == 1  # nothing known: one bound for every row


@pytest.mark.slow
def test_saved_trees_load_without_scikit_learn_and_predict_as_the_classifier(fitted, tmp_path):
    import subprocess
    import sys

    model, x = fitted
    TreeEnsembleBound.from_classifier(model).save(tmp_path / "trees.npz")
    np.save(tmp_path / "x.npy", x)
    script = ("import sys, numpy as np; from neardup.methods.tree_bound import TreeEnsembleBound; "
              f"t = TreeEnsembleBound.load({str(tmp_path / 'trees.npz')!r}); "
              f"np.save({str(tmp_path / 'p.npy')!r}, t.predict_proba(np.load({str(tmp_path / 'x.npy')!r}))); "
              "assert 'sklearn' not in sys.modules")
    subprocess.run([sys.executable, "-c", script], check=True)
    np.testing.assert_array_equal(np.load(tmp_path / "p.npy"), model.predict_proba(x)[:, 1])


def test_other_models_have_no_bound():
    x = np.random.default_rng(0).normal(size=(100, 3))
    y = x[:, 0] > 0
    assert TreeEnsembleBound.from_classifier(LogisticRegression().fit(x, y)) is None
    with pytest.raises(ValueError, match="free flag per column"):
        TreeEnsembleBound.from_classifier(HistGradientBoostingClassifier(max_iter=5).fit(x, y)
                                          ).upper_raw(x, np.zeros(2, bool))


def test_shipped_verifier_decides_exactly_as_with_every_feature(monkeypatch):
    pytest.importorskip("rapidfuzz")
    from neardup.methods.rerank import load_scorer

    scorer = load_scorer("verifier", threads=1)
    texts = list(_fixtures.make_corpus(n_stories=10, seed=7).texts)[:90]
    left, right = np.triu_indices(len(texts), 1)
    deferred_pairs = _decides_exactly(scorer, texts, left, right, monkeypatch)
    # Most pairs of different stories were rejected without the alignment feature.
    assert 0 < max(deferred_pairs) < len(left) // 2


def _decides_exactly(scorer, texts, left, right, monkeypatch) -> list[int]:
    """Check ``decide_positions`` against every feature at thresholds 0.5 and 0.9; returns
    how many pairs each call computed the deferred features for."""
    from neardup.methods import pair_features

    full = scorer.score_positions(texts, left, right)
    deferred_pairs = []
    real = pair_features.profile_pair_features

    def spying(profiles, left_, right_, **kwargs):
        if list(kwargs["features"]) == list(scorer.deferred_features):
            deferred_pairs.append(len(left_))
        return real(profiles, left_, right_, **kwargs)

    monkeypatch.setattr(pair_features, "profile_pair_features", spying)
    for threshold in (0.5, 0.9):
        score, accept = scorer.decide_positions(texts, left, right, threshold=threshold)
        np.testing.assert_array_equal(accept, full >= threshold)
        np.testing.assert_array_equal(score[accept], full[accept])
        assert (score[~accept] >= full[~accept]).all() and (score[~accept] < threshold).all()
        assert accept.any() and (~accept).any()
    return deferred_pairs



@pytest.mark.slow
def test_corrected_verifier_keeps_the_bound_and_decides_exactly(monkeypatch, tmp_path):
    """A verifier corrected to labels (neardup calibrate --fit-verifier) still rejects
    pairs without its deferred feature, and exactly as with every feature."""
    pytest.importorskip("rapidfuzz")
    from neardup.methods.rerank import VerifierScorer, load_scorer
    from neardup.methods.verifier_correction import CorrectedBound, CorrectedClassifier
    from neardup.models import resolve_model
    from neardup.train.verifier import refit_verifier, save_refit

    base = load_scorer("verifier", threads=1)
    corpus = _fixtures.make_corpus(n_stories=10, seed=7)
    texts = list(corpus.texts)[:90]
    clusters = np.asarray(corpus.clusters)[:90]
    left, right = np.triu_indices(len(texts), 1)
    labelled = np.random.default_rng(3).choice(len(left), 60, replace=False)
    y = clusters[left[labelled]] == clusters[right[labelled]]
    y[:5] = ~y[:5]  # labels that disagree with the truth: the correction must move
    x = base.features_of(texts, left[labelled], right[labelled])
    refit = refit_verifier(base.classifier, x, y, features=base.features, l2=1.0)
    assert refit.corrected and refit.model.slope >= 0
    assert refit.model.weights[list(base.features).index("align_partial")] == 0
    out = save_refit(refit, resolve_model("verifier-news", "verifier"), tmp_path / "mine",
                     threshold=0.9, n_labels=60, n_positive=int(y.sum()), l2=1.0)
    scorer = VerifierScorer(out, threads=1)
    assert isinstance(scorer.classifier, CorrectedClassifier)
    assert not np.allclose(scorer.score_positions(texts, left, right),
                           base.score_positions(texts, left, right))
    deferred_pairs = _decides_exactly(scorer, texts, left, right, monkeypatch)
    assert isinstance(scorer._bound, CorrectedBound)
    assert 0 < min(deferred_pairs) < len(left) // 2  # at 0.9 most pairs skip the alignment
    reads_free = CorrectedClassifier(base.classifier, 1.0, 0.0, np.ones(len(base.features)),
                                     np.zeros(len(base.features)), np.ones(len(base.features)))
    with pytest.raises(ValueError, match="reads a feature left free"):
        CorrectedBound.from_classifier(reads_free).upper_proba(
            x[:2], np.isin(np.array(base.features), ["align_partial"]))
