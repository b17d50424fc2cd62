"""Leakage on a constructed case: a test split seeded with known copies of training documents."""


import numpy as np
import pytest

from neardup.datasets.noise import ocr_noise
from neardup.io.batch import DocumentBatch
from neardup.leakage import find_leakage
from neardup.methods import make_method
from tests.decontaminate.planted import one_story_per_cluster


def _batch(texts, source, prefix):
    ids = [f"{prefix}{i}" for i in range(len(texts))]
    return [DocumentBatch(ids, list(texts), None, source, np.arange(len(texts)))]


@pytest.fixture(scope="module")
def constructed():
    stories = one_story_per_cluster(80)
    rng = np.random.default_rng(5)
    train, fresh = stories[:400], stories[400:500]
    exact_copies = [train[i] for i in range(0, 20, 2)]  # 10 exact copies
    near_sources = list(range(100, 130))  # 30 noisy copies
    near_copies = [ocr_noise(train[i], rng, severity=0.01) for i in near_sources]
    test = fresh + exact_copies + near_copies
    return train, test, near_sources


@pytest.mark.parametrize("method,params", [("minhash", {"threshold": 0.5}), ("ngram", {"threshold": 0.5})])
def test_leakage_recovers_planted_copies(constructed, method, params):
    train, test, near_sources = constructed
    report = find_leakage(_batch(train, "train.jsonl", "tr"), _batch(test, "test.jsonl", "te"),
                          make_method(method, **params))
    (entry,) = report.per_file
    assert entry["documents"] == 140 and entry["exact_leaks"] == 10
    pairs = report.pairs.to_pylist()
    near = {(p["test_id"], p["train_id"]) for p in pairs if p["kind"] == "near"}
    planted = {(f"te{110 + k}", f"tr{i}") for k, i in enumerate(near_sources)}
    assert len(planted & near) >= 28  # light OCR noise: (almost) all recovered
    leaked_fresh = {p["test_id"] for p in pairs if int(p["test_id"][2:]) < 100}
    assert leaked_fresh == set()  # no false alarms on genuinely new documents
    assert report.summary()["leaked"] == entry["leaked"] == 10 + entry["near_leaks"]


def test_exact_duplicates_inside_test_are_counted_once():
    train = ["alpha beta gamma delta epsilon zeta"]
    test = ["new text one here", "new text one here", "alpha beta gamma delta epsilon zeta"]
    report = find_leakage(_batch(train, "a", "tr"), _batch(test, "b", "te"), make_method("exact"))
    (entry,) = report.per_file
    assert entry["unique_texts"] == 2 and entry["exact_leaks"] == 1 and entry["near_leaks"] == 0
