"""The light verifier: pair features and training (tiny synthetic corpus, seconds)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("rapidfuzz")

from neardup.methods.pair_features import (  # noqa: E402
    FEATURES,
    LEXICAL_FEATURES,
    fold_marks,
    pair_features,
    retsim_available,
)
from neardup.methods.rerank import VerifierScorer  # noqa: E402
from neardup.train.verifier import train_verifier  # noqa: E402
from tests.train.rerank_fixtures import make_corpus  # noqa: E402

pytestmark = pytest.mark.train

_FAST = {"candidates": "minhash", "candidate_params": {"threshold": 0.05},
         "features": LEXICAL_FEATURES, "threads": 1}


def test_pair_features_values():
    texts = ["The cat sat on the mat today.", "The cat sat on the mat today!",
             "The cat sat on the mat today. And then it slept for a long while.",
             "Completely different words here.", ""]
    x = pair_features(texts, [0, 0, 0, 0], [1, 2, 3, 4], features=LEXICAL_FEATURES)
    col = {name: x[:, j] for j, name in enumerate(LEXICAL_FEATURES)}
    assert x.shape == (4, len(LEXICAL_FEATURES)) and x.dtype == np.float32
    assert col["word3_jaccard"][0] == 1.0 and col["align_ratio"][0] == 1.0
    assert col["word3_containment"][1] == 1.0 and col["word3_jaccard"][1] < 1.0  # excerpt
    assert col["word1_jaccard"][2] == 0.0 or col["word1_jaccard"][2] < 0.2
    assert np.all(col["date_missing"] == 1.0) and np.all(col["date_days"] == 0.0)
    assert col["length_ratio"][3] == 0.0  # the empty text
    ratios = [j for j, name in enumerate(LEXICAL_FEATURES)
              if name.endswith(("_jaccard", "_containment"))]
    assert np.all((x[:, ratios] >= 0) & (x[:, ratios] <= 1))


def test_character_features_need_no_word_boundaries():
    # Split and merged words (OCR, augmenters) and a script written without spaces.
    texts = ["the central bank bought bills outright today",
             "the cen tral bank boughtbills out right today",
             "今天天气很好我们去公园散步然后回家吃饭",
             "今天天气很好我们去了公园散步然后回家吃饭"]
    x = pair_features(texts, [0, 2], [1, 3], features=LEXICAL_FEATURES)
    col = {name: x[:, j] for j, name in enumerate(LEXICAL_FEATURES)}
    # White space removed, the split copy has the same character 5-grams.
    assert col["nospace5_jaccard"][0] == 1.0 > col["char5_jaccard"][0]
    assert col["word3_jaccard"][0] < 0.2
    # One added character in an unsegmented text: word features see different "words",
    # character n-grams the near-copy it is.
    assert col["word1_jaccard"][1] == 0.0
    assert col["char3_jaccard"][1] > 0.7 and col["nospace5_containment"][1] > 0.7


def test_numerals_ignore_digits_inside_words():
    # OCR/typing noise puts digits inside words ("0f", "8ec0nd"): number tokens then
    # disagree, whole numerals do not. Two texts without numerals agree (1.0).
    texts = ["Spain 0f the 8ec0nd 1987 tax of 10 pct", "spain of the second 1987 tax of 10 pct",
             "no figures here", "none here either"]
    x = pair_features(texts, [0, 2], [1, 3], features=["numbers_jaccard", "numerals_jaccard"])
    assert x[0, 0] == 0.5 and x[0, 1] == 1.0  # {0f, 8ec0nd, 1987, 10} vs {1987, 10}
    assert x[1].tolist() == [1.0, 1.0]


def test_fold_diacritics():
    assert fold_marks(["Übersetzung déjà żółć", "Ελληνικά άέή", "が 한국어"]) == [
        "Ubersetzung deja zołc", "Ελληνικα αεη", "が 한국어"]  # ł is a letter; kana, Hangul whole
    texts = ["Die Übersetzung ist frei", "Die Ubersetzung ist frei"]
    plain = pair_features(texts, [0], [1], features=["char4_jaccard"])
    folded = pair_features(texts, [0], [1], features=["char4_jaccard"], fold_diacritics=True)
    assert plain[0, 0] < 1.0 and folded[0, 0] == 1.0


def test_pair_features_dates_and_order():
    texts = ["a b c d", "a b c e", "x y z"]
    dates = np.array(["1987-03-01", "1987-03-04", "NaT"], dtype="datetime64[s]")
    x = pair_features(texts, [0, 0], [1, 2], dates=dates, features=["date_days", "date_missing"])
    assert x.tolist() == [[3.0, 0.0], [0.0, 1.0]]
    swapped = pair_features(texts, [1], [0], features=LEXICAL_FEATURES)
    assert np.allclose(swapped, pair_features(texts, [0], [1], features=LEXICAL_FEATURES))
    assert pair_features(texts, [], [], features=LEXICAL_FEATURES).shape == (0, len(LEXICAL_FEATURES))


def test_pair_features_rejects_bad_input():
    with pytest.raises(ValueError, match="features"):
        pair_features(["a", "b"], [0], [1], features=["nope"])
    with pytest.raises(ValueError, match="positions"):
        pair_features(["a", "b"], [0], [5])
    with pytest.raises(ValueError, match="one length"):
        pair_features(["a", "b"], [0, 1], [1])


@pytest.mark.skipif(not retsim_available(), reason="RETSim needs onnxruntime and unisim")
def test_retsim_features():
    texts = ["Oil prices rose sharply on Monday.", "Oil prices rose sharply on Monday!",
             "Heavy snow closed the mountain roads.", ""]
    x = pair_features(texts, [0, 0, 0], [1, 2, 3], features=FEATURES[-2:], threads=1)
    assert x[0, 0] > 0.9 and x[0, 0] > x[1, 0] and x[2].tolist() == [0.0, 0.0]
    assert np.all(x[:, 1] >= x[:, 0] - 1e-5)  # best chunk pair >= mean for one chunk


@pytest.mark.parametrize("classifier", ["hgb", "logistic"])
def test_train_verifier(tmp_path, classifier):
    train = make_corpus(seed=0, split="train")
    validation = make_corpus(seed=1, split="validation")
    report = train_verifier(train, validation, output_dir=tmp_path, classifier=classifier, **_FAST)
    meta = json.loads((tmp_path / "model.json").read_text())
    assert meta["kind"] == "verifier" and meta["features"] == list(LEXICAL_FEATURES)
    assert (tmp_path / "model.joblib").is_file() and (tmp_path / "training.json").is_file()
    assert report["best_validation_ari"] > 0.8
    assert report["pair_counts"]["candidate"] > 0 and report["pair_counts"]["positive"] > 0
    # Tree ensembles are saved as plain arrays too, and score as the pickle does.
    assert (VerifierScorer.TREES_FILE in meta["files"]) == (classifier == "hgb")
    assert (tmp_path / VerifierScorer.TREES_FILE).is_file() == (classifier == "hgb")
    scorer = VerifierScorer(tmp_path)
    copy = validation.texts[0]
    prob = scorer.score([copy, copy], [validation.texts[1], validation.texts[-1]])
    assert prob.dtype == np.float32 and np.all((prob >= 0) & (prob <= 1))
    if classifier == "hgb":
        x = scorer.features_of([copy, validation.texts[1]], [0], [1])
        np.testing.assert_array_equal(
            scorer._predict(x), scorer.classifier.predict_proba(x)[:, 1].astype(np.float32))


def test_train_verifier_refuses_test_split_and_bad_params(tmp_path):
    train = make_corpus(seed=0, split="train")
    test = make_corpus(seed=1, split="test")
    with pytest.raises(ValueError, match="test"):
        train_verifier(train, test, output_dir=tmp_path, **_FAST)
    with pytest.raises(ValueError, match="classifier"):
        train_verifier(train, train, output_dir=tmp_path, classifier="svm", **_FAST)
    with pytest.raises(ValueError, match="features"):
        train_verifier(train, train, output_dir=tmp_path, **{**_FAST, "features": ["nope"]})



def _correction_data(seed: int = 0):
    """A classifier that calls feature 0 above 0.5 a duplicate, and labels from data
    where duplicates need feature 0 above 0.5 *and* feature 1 above 0.5."""
    from neardup.train.verifier import make_classifier

    rng = np.random.default_rng(seed)
    base_x = rng.random((2000, 3)).astype(np.float32)
    base = make_classifier("logistic").fit(base_x, base_x[:, 0] > 0.5)
    x = rng.random((60, 3)).astype(np.float32)
    y = (x[:, 0] > 0.5) & (x[:, 1] > 0.5)
    return base, x, y


def test_refit_verifier_corrects_towards_the_labels():
    from neardup.train.verifier import fit_correction, refit_verifier

    base, x, y = _correction_data()
    names = ["a", "b", "c"]
    refit = refit_verifier(base, x, y, features=names, l2=1.0)
    assert refit.corrected and refit.out_of_fold.shape == (60,)
    probe = np.array([[0.9, 0.1, 0.5], [0.9, 0.9, 0.5], [0.1, 0.9, 0.5]], np.float32)
    before = base.predict_proba(probe)[:, 1]
    after = refit.model.predict_proba(probe)[:, 1]
    assert after[0] < before[0] - 0.2      # feature 1 low: the labels say not duplicates
    assert after[1] > 0.5 and after[2] < 0.5
    assert refit.model.weights[1] > 0 and refit.model.slope >= 0
    # The pull towards "no change": a strong l2 moves the slope and weights less.
    strong = fit_correction(base, x, y, features=names, l2=1e4)
    assert abs(strong.slope - 1) < abs(refit.model.slope - 1) + 1e-9
    assert np.abs(strong.weights).sum() < np.abs(refit.model.weights).sum()
    # Out of fold: the labels' probabilities from fits that did not see them separate
    # them nearly as well.
    from sklearn.metrics import roc_auc_score

    assert roc_auc_score(y, refit.out_of_fold) > 0.9
    # Uncorrected features get no weight.
    skip = fit_correction(base, x, y, features=["a", "align_partial", "c"], l2=1.0)
    assert skip.weights[1] == 0
    # One label of a class: nothing is corrected, the verifier's own probabilities stay.
    lonely = y.copy()
    lonely[:] = False
    lonely[0] = True
    kept = refit_verifier(base, x, lonely, features=names)
    assert not kept.corrected
    np.testing.assert_allclose(kept.model.predict_proba(x)[:, 1], base.predict_proba(x)[:, 1],
                               rtol=1e-5, atol=1e-9)
    with pytest.raises(ValueError, match="both duplicates"):
        refit_verifier(base, x, np.ones(60, bool), features=names)
    with pytest.raises(ValueError, match="one column per feature"):
        refit_verifier(base, x[:, :2], y, features=names)


def test_save_refit_writes_a_loadable_folder_and_never_overwrites(tmp_path):
    from neardup.models import resolve_model
    from neardup.train.verifier import refit_verifier, save_refit

    base_dir = resolve_model("verifier-news", "verifier")
    scorer = VerifierScorer(base_dir, threads=1)
    texts = ["The cat sat on the mat today.", "The cat sat on the mat today!",
             "Completely different words here.", "The dog ran in the park all day.",
             "The cat sat on the mat today, they said.", "Other words entirely, again."]
    x = scorer.features_of(texts, [0, 0, 2, 1, 0, 3], [1, 2, 3, 3, 4, 5])
    refit = refit_verifier(scorer.classifier, x, np.array([True, False, False, False, True,
                                                           False]),
                           features=scorer.features)
    out = save_refit(refit, base_dir, tmp_path / "mine", threshold=0.7, n_labels=6,
                     n_positive=2, l2=100.0)
    meta = json.loads((out / "model.json").read_text())
    assert meta["threshold"] == 0.7 and meta["corrected_to_labels"]["labels"] == 6
    assert meta["features"] == list(scorer.features) and "validation_ari" not in meta
    prob = VerifierScorer(out, threads=1).score(texts[:1], texts[1:2])
    assert prob.shape == (1,) and 0.0 <= prob[0] <= 1.0
    before = (out / "model.json").read_bytes()
    with pytest.raises(FileExistsError, match="nothing is overwritten"):
        save_refit(refit, base_dir, out, threshold=0.5, n_labels=6, n_positive=2, l2=100.0)
    assert (out / "model.json").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]  # no staging left behind
