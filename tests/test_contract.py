"""One contract, checked for every method (in the spirit of sklearn's estimator checks)."""

import numpy as np
import pytest

import neardup
from neardup.eval.metrics import adjusted_rand_index
from neardup.methods import METHODS, NEURAL_METHODS
from neardup.text.shingle import ShingleConfig

HOSTILE = [
    "",
    " ",
    "\u200b\u200b",
    "x",
    "😀😀😀 🙈",
    "日本語のテキストです。日本語のテキストです。",
    "Мама мыла раму. Мама мыла раму.",
    "\x00\x01\x02 control \x7f chars",
    "\ud800 lone surrogate",
    "a" * 10_000,
    "mixed ｆｕｌｌ width and العربية and עברית",
]

BASE = [
    "The central bank raised its key interest rate by half a point on Tuesday, citing inflation.",
    "Wheat futures fell sharply in Chicago as rain improved the outlook for the winter crop.",
    "The company said first quarter profit rose to 12 mln dlrs from eight mln dlrs a year ago.",
    "Oil prices climbed after the cartel agreed to extend its output cuts through the summer.",
]


def _corpus():
    texts = []
    labels = []
    for i, t in enumerate(BASE):
        texts += [t, t.upper(), t.replace(",", "") + " ", t[:-1] + "!"]
        labels += [i] * 4
    return texts, labels


def _skip_unavailable(name):
    """Skip methods whose optional dependencies or shipped model are missing."""
    if name == "rerank":
        import importlib.util

        from neardup.methods.rerank import DEFAULT_MODELS
        from neardup.models import shipped_models

        for module in ("rapidfuzz", "joblib"):
            if importlib.util.find_spec(module) is None:
                pytest.skip(f"rerank needs {module}")
        if DEFAULT_MODELS["verifier"] not in shipped_models("verifier"):
            pytest.skip("the shipped verifier model is missing")


# The methods that load a model run in the neural lane (pyproject.toml's markers).
@pytest.fixture(params=[pytest.param(name, marks=pytest.mark.neural) if name in NEURAL_METHODS else name
                        for name in sorted(METHODS)])
def method(request):
    _skip_unavailable(request.param)
    return request.param


def _check_result(r, n):
    assert r.n_docs == n
    assert r.clusters.shape == (n,) and r.cluster_size.shape == (n,)
    # every cluster has exactly one representative
    reps_per_cluster = np.bincount(r.clusters[r.representative], minlength=r.n_clusters)
    assert np.all(reps_per_cluster == 1)
    assert np.array_equal(r.cluster_size, np.bincount(r.clusters)[r.clusters])
    assert r.clusters_table().num_rows == n


def test_every_document_once_and_duplicates_found(method):
    texts, labels = _corpus()
    r = neardup.dedup(texts, method=method)
    _check_result(r, len(texts))
    assert adjusted_rand_index(labels, r.clusters) == 1.0


@pytest.mark.slow
def test_deterministic(method):
    texts, _ = _corpus()
    a = neardup.dedup(texts + HOSTILE, method=method, seed=7)
    b = neardup.dedup(texts + HOSTILE, method=method, seed=7)
    assert np.array_equal(a.clusters, b.clusters)
    assert np.array_equal(a.pairs.left, b.pairs.left)
    assert np.array_equal(a.pairs.score, b.pairs.score)


def test_empty_corpus(method):
    r = neardup.dedup([], method=method)
    _check_result(r, 0)


def test_single_document(method):
    r = neardup.dedup(["just one"], method=method)
    _check_result(r, 1)
    assert r.representative.tolist() == [True]


def test_hostile_unicode_and_empties(method):
    texts = HOSTILE + ["", "   "]
    r = neardup.dedup(texts, method=method)
    _check_result(r, len(texts))
    empty = np.flatnonzero(r.status == "empty")
    assert {0, 1, 2, len(texts) - 2, len(texts) - 1} <= set(empty.tolist())
    # empty documents are never matched, not even to each other
    assert np.all(r.cluster_size[empty] == 1)


def test_invalid_parameter_raises(method):
    with pytest.raises(ValueError, match="does not take parameter"):
        neardup.dedup(["a"], method=method, no_such_param=1)


def test_settings_given_as_mappings_are_built_and_other_types_refused_by_name():
    # A JSON --param (candidate_params={"shingle": {...}}) spells a ShingleConfig as a
    # mapping: it is built into one, not left to fail inside the method.
    texts = ["the quick brown fox jumps over the lazy dog today"] * 2 + ["another text"]
    as_mapping = neardup.dedup(texts, method="minhash", shingle={"unit": "char", "n": 5})
    as_object = neardup.dedup(texts, method="minhash", shingle=ShingleConfig("char", 5))
    np.testing.assert_array_equal(as_mapping.clusters, as_object.clusters)
    with pytest.raises(ValueError, match=r"parameter 'shingle' must be a ShingleConfig or a dict of its fields"):
        neardup.dedup(texts, method="minhash", shingle="char")
    with pytest.raises(ValueError, match=r"dict of its fields \(unit, n\); got .* \(no field\(s\) m\)"):
        neardup.dedup(texts, method="minhash", shingle={"unit": "char", "m": 5})
    with pytest.raises(ValueError, match=r"NormalizeConfig: parameter 'casefold' must be one of True, False"):
        neardup.dedup(texts, method="minhash", normalize={"casefold": "x"})
    rerank = neardup.dedup(texts, method="rerank", candidate_params={"shingle": {"unit": "word", "n": 3}})
    assert rerank.clusters[0] == rerank.clusters[1]


def test_unknown_method():
    with pytest.raises(ValueError, match="'minhash'"):
        neardup.dedup(["a"], method="nope")
