"""``neardup train``: the command line around the trainers."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.io import write_records
from tests.train.rerank_fixtures import make_corpus

pytestmark = pytest.mark.train


def _write(path: Path, corpus, split: str) -> Path:
    write_records(path, (
        {"id": i, "text": t, "cluster": c, "split": split, "date": str(d)}
        for i, t, c, d in zip(corpus.ids, corpus.texts, corpus.clusters, corpus.dates)
    ))
    return path


def test_every_subcommand_documents_its_options():
    runner = CliRunner()
    for kind in ("retsim", "biencoder", "cross-encoder", "verifier"):
        result = runner.invoke(main, ["train", kind, "--help"])
        assert result.exit_code == 0, result.output
        assert "--out" in result.output and "--train" in result.output


def test_train_verifier_from_files(tmp_path):
    pytest.importorskip("rapidfuzz")
    train = _write(tmp_path / "train.jsonl", make_corpus(seed=0), "train")
    validation = _write(tmp_path / "validation.jsonl", make_corpus(seed=1), "validation")
    out = tmp_path / "model"
    result = CliRunner().invoke(main, [
        "train", "verifier", "--train", str(train), "--validation", str(validation),
        "--out", str(out), "--candidates", "minhash", "--threads", "1", "--quiet",
    ])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "model.json").read_text())["kind"] == "verifier"
    log = json.loads((out / "training.json").read_text())
    assert log["best_validation_ari"] > 0.5


def test_test_split_training_data_is_refused(tmp_path):
    test = _write(tmp_path / "test.jsonl", make_corpus(seed=0), "test")
    result = CliRunner().invoke(main, [
        "train", "verifier", "--train", str(test), "--validation", str(test),
        "--out", str(tmp_path / "m"), "--quiet",
    ])
    assert result.exit_code != 0
    assert "test" in result.output


def _capture_trainer(tmp_path, monkeypatch, kind, module, function):
    """Replace a trainer by one that records its options; the base arguments of a run."""
    pytest.importorskip("torch")
    trainers = importlib.import_module(module)
    seen = {}

    def fake_trainer(train_corpus, validation_corpus, **kwargs):
        seen.update(kwargs)
        return {"best_epoch": 1}

    # The CLI filters options by the real signature.
    fake_trainer.__wrapped__ = getattr(trainers, function)
    monkeypatch.setattr(trainers, function, fake_trainer)
    train = _write(tmp_path / "train.jsonl", make_corpus(seed=0), "train")
    validation = _write(tmp_path / "validation.jsonl", make_corpus(seed=1), "validation")
    return seen, ["train", kind, "--train", str(train), "--validation", str(validation),
                  "--out", str(tmp_path / "m"), "--quiet"]


def test_biencoder_options_reach_the_trainer(tmp_path, monkeypatch):
    seen, args = _capture_trainer(tmp_path, monkeypatch, "biencoder",
                                  "neardup.train.biencoder", "train_biencoder")
    args = [*args, "--loss", "mnrl"]
    assert CliRunner().invoke(main, args).exit_code == 0
    assert seen["loss"] == "mnrl" and "hard_negatives" not in seen  # the trainer's default
    assert CliRunner().invoke(main, [*args, "--no-hard-negatives"]).exit_code == 0
    assert seen["hard_negatives"] is False


def test_cross_encoder_pair_shares_reach_the_trainer(tmp_path, monkeypatch):
    seen, args = _capture_trainer(tmp_path, monkeypatch, "cross-encoder",
                                  "neardup.train.cross_encoder", "train_cross_encoder")
    assert CliRunner().invoke(main, args).exit_code == 0
    assert "linked_share" not in seen and "candidate_share" not in seen
    result = CliRunner().invoke(main, [*args, "--linked-share", "0.3", "--candidate-share", "0.4"])
    assert result.exit_code == 0, result.output
    assert seen["linked_share"] == 0.3 and seen["candidate_share"] == 0.4
    assert "linked_anchor" not in seen
    assert CliRunner().invoke(main, [*args, "--linked-anchor"]).exit_code == 0
    assert seen["linked_anchor"] is True
