"""Validation ARI threshold sweeps used by the trainers."""

from __future__ import annotations

import numpy as np
import pytest

from neardup.graph import Pairs
from neardup.train.loop import EpochRecord, TrainingLog
from neardup.train.validate import pairs_ari


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
