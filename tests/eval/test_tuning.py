"""Threshold tuning (neardup/eval/tuning.py) and the protocol that keeps test data out."""

from __future__ import annotations

import json

import numpy as np
import pytest

from neardup.errors import InputError
from neardup.eval.evaluate import evaluate
from neardup.eval.labeled import LabeledCorpus
from neardup.eval.tuning import DEFAULT_GRIDS, default_grid, load_tuning, tune
from neardup.methods import METHODS

WORDS = ("wire story bank rate wheat corn oil price market senate house vote storm fire "
         "river bridge mayor city council school board police court judge jury").split()

# Small grids keep the protocol test fast while still running every method several times.
SMALL_GRIDS = {
    "minhash": {"threshold": [0.3, 0.6]},
    "ngram": {"threshold": [0.2, 0.5]},
    "simhash": {"threshold": [3, 10]},
    "exact": {},
    "sanderson": {"threshold": [0.5, 0.8]},
    "spotsigs": {"threshold": [0.3, 0.6]},
    "wminhash": {"threshold": [0.2, 0.5]},
    "retsim": {"threshold": [0.8, 0.9]},
    "retsim-partial": {"threshold": [0.8, 0.9]},
    "biencoder": {"threshold": [0.8, 0.9]},
    "static": {"threshold": [0.8, 0.9]},
    "rerank": {"threshold": [0.5, 0.8]},
}


def split_corpus(seed=0, per_split=6):
    """Validation and test documents, each split with its own planted duplicate clusters;
    every test text carries a marker word so leaks are easy to spot."""
    rng = np.random.default_rng(seed)
    ids, texts, labels, splits = [], [], [], []
    for split in ("validation", "test"):
        for c in range(per_split):
            base = rng.choice(WORDS, 40).tolist()
            for copy in range(int(rng.integers(1, 4))):
                words = list(base)
                for _ in range(2 * copy):
                    words[int(rng.integers(len(words)))] = str(rng.choice(WORDS))
                marker = " TESTONLY" if split == "test" else ""
                ids.append(f"{split[0]}{c}-{copy}")
                texts.append(" ".join(words) + marker)
                labels.append(f"{split[0]}{c}")
                splits.append(split)
    return LabeledCorpus(ids=ids, texts=texts, clusters=labels, splits=splits)


@pytest.fixture(scope="module")
def corpus():
    return split_corpus()


@pytest.mark.parametrize("split", ["test", "Test", " TEST "])
def test_tuning_on_test_is_refused(corpus, split):
    with pytest.raises(ValueError, match="must not be .*validation split"):
        tune(corpus, "minhash", split=split)


@pytest.mark.parametrize("method", [
    pytest.param(m, marks=pytest.mark.neural) if m in ("retsim", "retsim-partial", "biencoder") else m
    for m in sorted(METHODS)])
def test_tune_never_shows_a_test_text_to_the_method(corpus, method, monkeypatch):
    """The acceptance test: record every text any method sketches during tune."""
    seen: list[str] = []
    cls = METHODS[method]
    original = cls.sketch

    def recording_sketch(self, texts):
        seen.extend(texts)
        return original(self, texts)

    monkeypatch.setattr(cls, "sketch", recording_sketch)
    result = tune(corpus, method, split="validation", grid=SMALL_GRIDS[method])
    test_texts = set(corpus.select_split("test").texts)
    validation_texts = corpus.select_split("validation").texts
    assert seen, "the method was never run"
    assert not test_texts & set(seen)
    assert not any("TESTONLY" in text for text in seen)
    # Every sketch saw exactly the validation split, in order (points that differ only
    # in pair-stage parameters share one sketch).
    n_points = max(1, int(np.prod([len(v) for v in SMALL_GRIDS[method].values()])))
    n_sketches = len(seen) // len(validation_texts)
    assert 1 <= n_sketches <= n_points
    assert seen == validation_texts * n_sketches
    assert result.n_docs == len(validation_texts)
    assert result.data_hash == corpus.select_split("validation").content_hash()


def test_tune_needs_a_split_when_the_corpus_has_them(corpus):
    with pytest.raises(ValueError, match="must name the split to tune on"):
        tune(corpus, "minhash", split=None)
    with pytest.raises(ValueError, match="one of 'test', 'validation'"):
        tune(corpus, "minhash", split="train")


def test_tune_without_splits_uses_everything():
    data = split_corpus().select_split("validation")
    data = LabeledCorpus(data.ids, data.texts, data.clusters)  # drop the split field
    result = tune(data, "minhash", split=None, grid={"threshold": [0.5]})
    assert result.split is None and result.n_docs == len(data)


def test_best_point_is_the_max_ari_and_points_match_evaluate(corpus):
    grid = {"threshold": [0.9, 0.5, 0.2]}
    result = tune(corpus, "minhash", grid=grid)
    aris = [p["ari"] for p in result.points]
    assert [p["values"] for p in result.points] == [{"threshold": t} for t in grid["threshold"]]
    assert result.best_index == int(np.argmax(aris))
    assert result.best_score == max(aris)
    assert result.params["threshold"] == grid["threshold"][result.best_index]
    # The chosen parameters reproduce the chosen score on the tuning split.
    again = evaluate(corpus.select_split("validation"), "minhash", params=result.params,
                     cluster=result.cluster)
    assert again["ari"] == result.best_score


def test_ties_go_to_the_first_point_in_grid_order():
    # Exact copies only: every threshold finds them all, so every ARI is 1.0.
    texts = ["alpha beta gamma delta epsilon"] * 2 + ["one two three four five six"] * 2
    data = LabeledCorpus(ids=list("abcd"), texts=texts, clusters=list("xxyy"),
                         splits=["validation"] * 4)
    result = tune(data, "minhash", grid={"threshold": [0.7, 0.3, 0.5]})
    assert [p["ari"] for p in result.points] == [1.0, 1.0, 1.0]
    assert result.best_index == 0 and result.params["threshold"] == 0.7


def test_grid_is_a_cartesian_product_and_dotted_names_reach_nested_configs(corpus):
    grid = {"threshold": [0.3, 0.6], "shingle.n": [2, 4]}
    result = tune(corpus, "ngram", grid=grid)
    assert [p["values"] for p in result.points] == [
        {"threshold": 0.3, "shingle.n": 2},
        {"threshold": 0.3, "shingle.n": 4},
        {"threshold": 0.6, "shingle.n": 2},
        {"threshold": 0.6, "shingle.n": 4},
    ]
    best = result.best["values"]
    assert result.params["shingle"] == {"unit": "word", "n": best["shingle.n"]}


def test_cluster_parameters_are_swept_with_the_method_parameters(corpus):
    grid = {"threshold": [0.2], "cluster.distance_threshold": [0.05, 0.9]}
    result = tune(corpus, "ngram", grid=grid, cluster={"algorithm": "hac"})
    assert [p["values"] for p in result.points] == [
        {"threshold": 0.2, "cluster.distance_threshold": 0.05},
        {"threshold": 0.2, "cluster.distance_threshold": 0.9},
    ]
    best = result.best["values"]["cluster.distance_threshold"]
    assert result.cluster["algorithm"] == "hac"
    assert result.cluster["distance_threshold"] == best
    # The chosen clustering reproduces the chosen score.
    again = evaluate(corpus.select_split("validation"), "ngram", params=result.params,
                     cluster=result.cluster)
    assert again["ari"] == result.best_score
    with pytest.raises(ValueError, match="clustering parameter"):
        tune(corpus, "ngram", grid={"cluster.nonsense": [1]})


def test_base_params_are_kept_and_may_not_overlap_the_grid(corpus):
    result = tune(corpus, "minhash", grid={"threshold": [0.5]}, base_params={"num_perm": 64})
    assert result.params["num_perm"] == 64 and result.base_params == {"num_perm": 64}
    with pytest.raises(ValueError, match="both fixed .* and swept"):
        tune(corpus, "minhash", base_params={"threshold": 0.5})


def test_bad_grid_fails_before_any_run(corpus, monkeypatch):
    calls = []
    cls = METHODS["minhash"]
    original = cls.sketch
    monkeypatch.setattr(cls, "sketch", lambda self, texts: calls.append(1) or original(self, texts))
    with pytest.raises(ValueError, match="threshold"):
        tune(corpus, "minhash", grid={"threshold": [0.5, 2.0]})
    with pytest.raises(ValueError, match="not a parameter of method 'minhash'"):
        tune(corpus, "minhash", grid={"bogus": [1]})
    with pytest.raises(ValueError, match="non-empty list"):
        tune(corpus, "minhash", grid={"threshold": []})
    assert calls == []


def test_default_grids():
    assert default_grid("minhash")["threshold"][0] == 0.05
    assert default_grid("minhash")["threshold"][-1] == 0.9
    assert default_grid("ngram")["threshold"][0] == 0.05
    assert default_grid("simhash")["threshold"] == list(range(21))
    assert default_grid("exact") == {}
    assert set(DEFAULT_GRIDS) == set(METHODS)
    with pytest.raises(ValueError, match="must be one of"):
        default_grid("nope")


def test_exact_has_nothing_to_tune(corpus):
    result = tune(corpus, "exact")
    assert len(result.points) == 1 and result.points[0]["values"] == {}
    assert result.params == evaluate(corpus, "exact")["params"]


def test_save_and_load_round_trip(corpus, tmp_path):
    result = tune(corpus, "simhash", grid={"threshold": [2, 6]})
    path = tmp_path / "out" / "tuning.json"
    result.save(path)
    data = json.loads(path.read_text())
    assert data["format"] == "neardup-tuning/1"
    assert data["method"] == "simhash" and data["split"] == "validation"
    assert data["data_hash"] == corpus.select_split("validation").content_hash()
    loaded = load_tuning(path)
    assert loaded == result
    # The loaded parameters run as they are (nested configs come back from dicts).
    test = corpus.select_split("test")
    report = evaluate(test, loaded.method, params=loaded.params, cluster=loaded.cluster)
    assert report["params"] == result.params


def test_load_tuning_rejects_other_files(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_tuning(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="not a readable JSON"):
        load_tuning(bad)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"method": "minhash"}))
    with pytest.raises(InputError, match="not a neardup tuning file"):
        load_tuning(other)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"format": "neardup-tuning/1", "method": "minhash"}))
    with pytest.raises(InputError, match="malformed tuning file"):
        load_tuning(wrong)


def test_threshold_sweep_sketches_the_corpus_once(corpus, monkeypatch):
    calls = []
    original = METHODS["minhash"].sketch

    def counting_sketch(self, texts):
        calls.append(len(texts))
        return original(self, texts)

    monkeypatch.setattr(METHODS["minhash"], "sketch", counting_sketch)
    tune(corpus, "minhash", grid={"threshold": [0.2, 0.5, 0.8]})
    assert sum(calls) == len(corpus.select_split("validation"))
    calls.clear()
    tune(corpus, "minhash", grid={"threshold": [0.5], "num_perm": [32, 64]})
    assert sum(calls) == 2 * len(corpus.select_split("validation"))


def test_cluster_parameters_take_their_schema_names_and_the_old_ones_still_work(corpus):
    """Issue #36: a clustering parameter has one name (neardup.params) in dedup and in tune
    grids; the older "cluster.<field>" spelling sweeps the same field."""
    new = tune(corpus, "ngram", grid={"threshold": [0.2], "distance_threshold": [0.05, 0.9]},
               cluster={"algorithm": "hac"})
    old = tune(corpus, "ngram", grid={"threshold": [0.2], "cluster.distance_threshold": [0.05, 0.9]},
               cluster={"algorithm": "hac"})
    assert [p["ari"] for p in new.points] == [p["ari"] for p in old.points]
    assert new.cluster == old.cluster
    swept = tune(corpus, "ngram", grid={"threshold": [0.2], "cluster": ["components", "hac"]})
    assert [p["values"]["cluster"] for p in swept.points] == ["components", "hac"]
    with pytest.raises(ValueError, match="not a clustering parameter; clustering accepts: cluster"):
        tune(corpus, "ngram", grid={"cluster.speed": [1]})
