"""The shipped ``verifier-fast`` (``--method rerank --param model=verifier-fast``): the
verifier without ``align_partial``, its ``align_ratio`` over 1,000 characters
(experiments/verifier_cost, experiments/rerank_cost/README.md "Fourth round")."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rapidfuzz")

import neardup  # noqa: E402
from neardup.eval.metrics import adjusted_rand_index  # noqa: E402
from neardup.methods.pair_features import pair_features  # noqa: E402
from neardup.methods.rerank import VerifierScorer  # noqa: E402
from neardup.models import shipped_models  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "rerank_fixtures", Path(__file__).resolve().parents[1] / "train" / "rerank_fixtures.py")
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)

pytestmark = pytest.mark.skipif("verifier-fast" not in shipped_models("verifier"),
                                reason="no shipped verifier-fast")


@pytest.fixture(scope="module")
def corpus():
    return _fixtures.make_corpus(n_stories=10, seed=11)


def test_fast_verifier_reads_no_head_alignment_and_aligns_1000_characters():
    scorer = VerifierScorer("verifier-fast", threads=1)
    assert "align_partial" not in scorer.features and "align_ratio" in scorer.features
    assert scorer.feature_options == {"fold_diacritics": False, "align_chars": 1000}
    # Two texts that agree on their first 1,000 normalized characters only: the model's
    # align_ratio sees a copy where a 4,000-character alignment would not.
    head = " ".join(f"word{i}" for i in range(200))
    texts = [head + " alpha" * 400, head + " omega" * 400]
    column = scorer.features.index("align_ratio")
    ours = scorer.features_of(texts, np.array([0]), np.array([1]))[0, column]
    assert ours == pair_features(texts, [0], [1], features=["align_ratio"], align_chars=1000)[0, 0]
    assert ours > 0.99 > pair_features(texts, [0], [1], features=["align_ratio"])[0, 0]
    assert max(map(len, scorer.document_profiles(texts).aligned)) == 1000


def test_a_model_without_align_chars_keeps_the_default(tmp_path):
    from neardup.models import resolve_model

    meta = json.loads((resolve_model("verifier-news", "verifier") / "model.json").read_text())
    assert "align_chars" not in meta
    assert VerifierScorer("verifier-news").feature_options == {"fold_diacritics": False}


def test_fast_verifier_decides_alike_on_texts_and_profiles(corpus):
    scorer = VerifierScorer("verifier-fast", threads=1)
    n = len(corpus.texts)
    left, right = np.triu_indices(n, 1)
    threshold = scorer.meta["threshold"]
    on_texts = scorer.decide_positions(corpus.texts, left, right, corpus.dates, threshold=threshold)
    on_profiles = scorer.decide_profiles(scorer.document_profiles(corpus.texts), left, right,
                                         corpus.dates, threshold=threshold)
    np.testing.assert_array_equal(on_texts[0], on_profiles[0])
    np.testing.assert_array_equal(on_texts[1], on_profiles[1])
    # Against the default verifier on the same pairs: noisy copies of one story found about
    # as often, pairs of different stories (these synthetic stories share their wording and
    # differ in figures) accepted about as rarely.
    truth = np.asarray(corpus.clusters)
    same = truth[left] == truth[right]
    default = VerifierScorer("verifier-news", threads=1)
    reference = default.decide_positions(corpus.texts, left, right, corpus.dates,
                                         threshold=default.meta["threshold"])[1]
    accepted = on_texts[1]
    assert accepted[same].mean() > 0.8 and accepted[same].mean() >= reference[same].mean() - 0.1
    assert accepted[~same].sum() <= reference[~same].sum() + 2 < 0.05 * (~same).sum()


def test_rerank_with_the_fast_verifier_finds_the_stories(corpus):
    truth = np.asarray(corpus.clusters)
    fast = neardup.dedup(corpus.texts, "rerank", model="verifier-fast", pair_types=False)
    default = neardup.dedup(corpus.texts, "rerank", pair_types=False)
    assert fast.params["method"]["model"] == "verifier-fast"
    # Both split the stories' "t" variants (other figures) from their copies alike.
    assert adjusted_rand_index(truth, fast.clusters) > max(
        0.8, adjusted_rand_index(truth, default.clusters) - 0.05)


# Two companies' dividend notices, and the first damaged by OCR (as test_rerank.py's).
_NOTICE = "Qtly div five cts vs five cts prior\n    Pay July 15\n    Record June 30\n Reuter"
_OTHER_COMPANY = "Qtly div five cts vs five cts prior\n    Pay July 28\n    Record June 30\n Reuter"
_OCR_COPY = "Qtly dlv five cts vs flve cts pri0r\n    Pay Ju1y 15\n    Rec0rd June 3O\n Reuter"


def test_the_template_guard_works_with_the_fast_verifier():
    result = neardup.dedup([_NOTICE, _OTHER_COMPANY, _OCR_COPY], "rerank", model="verifier-fast",
                           pair_types=False)
    assert result.clusters[0] == result.clusters[2] != result.clusters[1]
