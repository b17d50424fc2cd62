"""Validation ARI threshold sweeps used by the trainers."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from neardup.graph import Pairs
from neardup.train.loop import EpochRecord, TrainingLog
from neardup.eval.labeled import LabeledCorpus
from neardup.train.validate import pairs_ari, whole_days

pytestmark = pytest.mark.train


def test_pairs_ari_picks_the_threshold_that_separates_clusters():
    clusters = np.array(["a", "a", "b", "b", "c"], dtype=object)
    # true edges score 0.9; one false edge at 0.7 joins a and b below 0.8.
    pairs = Pairs(np.array([0, 2, 1]), np.array([1, 3, 2]), np.array([0.9, 0.9, 0.7], np.float32))
    score = pairs_ari(pairs, clusters, thresholds=[0.6, 0.8, 0.95])
    assert score.ari == pytest.approx(1.0)
    assert score.threshold == 0.8
    assert score.curve[0.95] < 1.0 and score.curve[0.6] < 1.0


def test_embedding_ari_on_separated_embeddings():
    pytest.importorskip("faiss")
    from neardup.train.validate import embedding_ari

    rng = np.random.default_rng(0)
    centres = rng.normal(size=(5, 16))
    clusters = np.repeat(np.arange(5), 4)
    x = centres[clusters] + 0.05 * rng.normal(size=(20, 16))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    assert embedding_ari(x.astype(np.float32), clusters.astype(str)).ari == pytest.approx(1.0)


def test_training_log_early_stopping_and_round_trip(tmp_path):
    log = TrainingLog(config={"loss": "x"})
    for epoch, ari in enumerate([0.5, 0.7, 0.69, 0.68], start=1):
        log.add(EpochRecord(epoch, 1.0 / epoch, ari, 0.8, 1.0, 2.0))
    assert log.best.epoch == 2
    assert log.should_stop(patience=2) and not log.should_stop(patience=3)
    log.save(tmp_path / "training.json")
    import json

    again = TrainingLog.from_dict(json.loads((tmp_path / "training.json").read_text()))
    assert again.best.epoch == 2 and again.to_dict()["cpu_seconds"] == 8.0


def _dated_corpus(days_per_doc: list[int]) -> LabeledCorpus:
    n = len(days_per_doc)
    dates = np.array([f"1987-03-{1 + d:02d}T0{i % 10}:00" for i, d in enumerate(days_per_doc)],
                     dtype="datetime64[s]")
    return LabeledCorpus(ids=[f"d{i}" for i in range(n)], texts=[f"text {i}" for i in range(n)],
                         clusters=np.array([f"c{i // 2}" for i in range(n)]), dates=dates)


@pytest.mark.parametrize("seed", [None, 0, 7])
@pytest.mark.parametrize("at_least", [False, True])
def test_whole_days_takes_whole_days(seed, at_least):
    corpus = _dated_corpus([0] * 5 + [1] * 9 + [2] * 4 + [3] * 6 + [4] * 3)
    keep = whole_days(corpus, 10, seed=seed, at_least=at_least)
    day = corpus.dates.astype("datetime64[D]")
    chosen = np.unique(day[keep])
    assert np.array_equal(keep, np.sort(keep))
    assert len(keep) == sum(int(np.sum(day == d)) for d in chosen)  # whole days only
    assert len(keep) >= 10 if at_least else 2 <= len(keep) <= 10
    if seed is None:  # earliest first
        assert chosen[0] == day.min()
    assert np.array_equal(keep, whole_days(corpus, 10, seed=seed, at_least=at_least))


def test_whole_days_falls_back_to_clusters_then_cuts():
    corpus = _dated_corpus([0] * 6 + [1] * 6)
    assert np.array_equal(whole_days(corpus, 100), np.arange(12))  # everything fits
    keep = whole_days(corpus, 4)  # no day fits: whole clusters (pairs) instead
    assert len(keep) == 4 and set(np.asarray(corpus.clusters)[keep]) == {"c0", "c1"}
    undated = LabeledCorpus(ids=corpus.ids, texts=corpus.texts, clusters=np.array(["a"] * 12))
    assert len(whole_days(undated, 5)) == 5  # one group bigger than the budget: cut


def test_seeding_imports_no_torch_and_seeds_it_once_loaded():
    # The verifier's trainer seeds the process but never uses torch: importing torch only
    # to seed it cost each of its runs seconds of start-up.
    code = (
        "import sys\n"
        "from neardup.train.loop import seed_everything\n"
        "seed_everything(3)\n"
        "assert 'torch' not in sys.modules\n"
        "import torch\n"
        "seed_everything(3); first = torch.rand(2)\n"
        "seed_everything(3); assert torch.equal(torch.rand(2), first)\n"
    )
    pytest.importorskip("torch")
    subprocess.run([sys.executable, "-c", code], check=True)
