"""Tests of neardup.train.biencoder: a tiny real fine-tuning run, checkpoints, resuming.

all-MiniLM-L6-v2 (the only model available offline) reads 32 tokens per text and trains
on 16 pairs of a synthetic news corpus, so a run takes a few seconds. Skipped without
torch or sentence-transformers; nothing is downloaded.
"""

from __future__ import annotations

import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

pytest.importorskip("torch")
pytest.importorskip("sentence_transformers")
pytest.importorskip("faiss")

from neardup.eval.labeled import LabeledCorpus  # noqa: E402
from neardup.train import biencoder as trainer  # noqa: E402
from neardup.train.biencoder import train_biencoder  # noqa: E402

pytestmark = pytest.mark.train

STORIES = [
    "Crude oil prices rose sharply on Monday after OPEC agreed to cut output",
    "The central bank left interest rates unchanged citing slowing inflation",
    "Heavy snow closed mountain roads and cut power to thousands of homes",
    "The home team won the football final with two late goals in the rain",
    "Shares of the carmaker fell after it reported a first quarter loss",
    "Farmers protested in the capital against lower grain support prices",
    "The airline ordered twenty new jets to replace its ageing fleet",
    "Gold futures slipped as the dollar strengthened against the yen",
]
EDITS = ["{} , officials said.", "UPDATE 1 - {}", "{} (Reuters) sources told reporters."]


def _corpus(stories: list[str], copies: int, singles: int, days: list[str]) -> LabeledCorpus:
    texts, clusters, dates = [], [], []
    for s, story in enumerate(stories):
        for c in range(copies):
            texts.append(EDITS[c % len(EDITS)].format(story))
            clusters.append(f"s{s}")
            dates.append(days[s % len(days)])
    for i in range(singles):
        texts.append(f"Unrelated brief number {i} about a local council meeting on parking.")
        clusters.append(f"single{i}")
        dates.append(days[i % len(days)])
    return LabeledCorpus(ids=[str(i) for i in range(len(texts))], texts=texts,
                         clusters=clusters, dates=np.array(dates, dtype="datetime64[s]"))


TRAIN = _corpus(STORIES[:6], copies=3, singles=4, days=["1987-03-01"])
VALIDATION = _corpus(STORIES[6:] + STORIES[:2], copies=2, singles=2,
                     days=["1987-04-01", "1987-04-02"])
SETTINGS = dict(epochs=1, max_pairs=24, batch_size=8, max_tokens=32, export=None, threads=1,
                max_validation_docs=100, progress=False)  # 24 pairs: three steps


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny")
    return out, train_biencoder(TRAIN, VALIDATION, output_dir=out, **SETTINGS)


def test_tiny_run_trains_checkpoints_and_loads_in_biencoder(tiny_run):
    from neardup.embed.biencoder import BiEncoder

    out, result = tiny_run
    (record,) = result["epochs"]
    assert np.isfinite(record["train_loss"]) and record["train_loss"] >= 0
    assert 0.0 <= result["best_validation_ari"] <= 1.0 and result["best_epoch"] == 1
    assert result["training_data"]["pairs"] == 24
    assert (out / "checkpoints").is_dir() and (out / "run.json").is_file()
    assert json.loads((out / "training.json").read_text())["best_epoch"] == 1
    assert 0.0 <= result["baseline"]["ari"] <= 1.0  # the base model, scored before training
    emb = BiEncoder(model=result["model_dir"], max_tokens=32, threads=1).encode(VALIDATION.texts)
    assert emb.shape == (len(VALIDATION), 384)
    # A finished run is not trained again: the same call returns the same log.
    again = train_biencoder(TRAIN, VALIDATION, output_dir=out, **SETTINGS)
    assert again["epochs"] == result["epochs"] and again["resumed_at"] == []
    assert again["training_data"] == result["training_data"]
    # Other settings never resume this checkpoint.
    with pytest.raises(ValueError, match="'output_dir' holds a checkpoint"):
        train_biencoder(TRAIN, VALIDATION, output_dir=out, **dict(SETTINGS, lr=1e-4))


def test_interrupted_run_resumes_mid_epoch_to_the_same_result(tiny_run, tmp_path, monkeypatch):
    from neardup.train import trainer as one_trainer

    _, straight = tiny_run
    monkeypatch.setattr(trainer, "_CHECKPOINT_SECONDS", 0.0)  # checkpoint after each step
    real_loss = one_trainer._TaskTrainer.compute_loss
    calls = {"n": 0}

    def failing_loss(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # killed during the third step
        return real_loss(self, *args, **kwargs)

    monkeypatch.setattr(one_trainer._TaskTrainer, "compute_loss", failing_loss)
    with pytest.raises(KeyboardInterrupt):
        train_biencoder(TRAIN, VALIDATION, output_dir=tmp_path, **SETTINGS)
    monkeypatch.setattr(one_trainer._TaskTrainer, "compute_loss", real_loss)
    resumed = train_biencoder(TRAIN, VALIDATION, output_dir=tmp_path, **SETTINGS)
    assert resumed["resumed_at"] == [1]
    # Same batches, same RNG and optimizer state: the same loss and validation score.
    assert resumed["epochs"][0]["train_loss"] == pytest.approx(
        straight["epochs"][0]["train_loss"], rel=1e-4)
    assert resumed["best_validation_ari"] == pytest.approx(straight["best_validation_ari"])


def test_same_seed_same_weights(tiny_run, tmp_path):
    from safetensors.torch import load_file

    out, _ = tiny_run
    train_biencoder(TRAIN, VALIDATION, output_dir=tmp_path, **SETTINGS)
    a = load_file(out / "best" / "model.safetensors")
    b = load_file(tmp_path / "best" / "model.safetensors")
    assert a.keys() == b.keys()
    assert all(torch_equal(a[k], b[k]) for k in a)


def torch_equal(a, b) -> bool:
    import torch

    return bool(torch.equal(a, b))


@pytest.mark.parametrize("loss", ["mnrl", "supcon"])
def test_cluster_batch_losses_train(tmp_path, loss):
    result = train_biencoder(TRAIN, VALIDATION, output_dir=tmp_path, loss=loss,
                             **dict(SETTINGS, max_pairs=8))
    assert np.isfinite(result["epochs"][0]["train_loss"])
    assert result["training_data"]["batches"] >= 1


def test_mnrl_batches_add_a_hard_negative_per_anchor_from_outside_the_batch():
    # s5's documents are hard negatives of s0 (say, an update of that story).
    negative_of = np.array(["s0" if c == "s5" else None for c in TRAIN.clusters], dtype=object)
    config = dict(loss="mnrl", hard_negatives=True, seed=0, batch_size=8, max_pairs=100)
    plan = trainer._TrainingData(TRAIN, negative_of, config)
    codes = np.unique(TRAIN.clusters.astype(str), return_inverse=True)[1]
    s0, s5 = (int(np.flatnonzero(np.unique(TRAIN.clusters.astype(str)) == c)[0]) for c in ("s0", "s5"))
    assert s5 in plan.links[s0].tolist()
    batches = plan.batches(0)
    assert batches
    for batch in batches:
        k = len(batch) // 3
        anchors, copies, negatives = batch[:k], batch[k : 2 * k], batch[2 * k :]
        assert len(negatives) == k
        assert np.array_equal(codes[anchors], codes[copies])
        assert not set(codes[negatives].tolist()) & set(codes[anchors].tolist())
        for a, n in zip(codes[anchors].tolist(), codes[negatives].tolist()):
            if a == s0 and s5 not in codes[anchors].tolist():
                assert n == s5
    plain = trainer._TrainingData(TRAIN, negative_of, dict(config, hard_negatives=False))
    assert all(len(b) % 2 == 0 for b in plain.batches(0)) and not plain.links


def test_supcon_loss_prefers_clustered_embeddings():
    import torch

    from neardup.train.losses import SupCon

    labels = torch.tensor([0, 0, 1, 1])
    tight = torch.tensor([[1.0, 0.0], [0.99, 0.1], [0.0, 1.0], [0.1, 0.99]])
    mixed = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.99, 0.1], [0.1, 0.99]])
    assert SupCon(0.1)(tight, labels) < SupCon(0.1)(mixed, labels)



@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"loss": "triplet"}, "'loss'"),
        ({"epochs": 0}, "'epochs'"),
        ({"lr": -1.0}, "'lr'"),
        ({"warmup": 1.5}, "'warmup'"),
        ({"max_tokens": 4}, "'max_tokens'"),
        ({"batch_size": 1}, "'batch_size'"),
        ({"loss": "supcon", "batch_size": 4}, "'batch_size'"),
        ({"export": "fp16"}, "'export'"),
        ({"threads": 0}, "'threads'"),
        ({"negative_of": [None]}, "'negative_of'"),
        ({"base": "no-such-model"}, "'base'"),
    ],
)
def test_invalid_parameters_raise(tmp_path, params, match):
    with pytest.raises(ValueError, match=match):
        train_biencoder(TRAIN, VALIDATION, output_dir=tmp_path, **{**SETTINGS, **params})


def test_test_split_is_refused(tmp_path):
    leaked = LabeledCorpus(ids=VALIDATION.ids, texts=VALIDATION.texts,
                           clusters=VALIDATION.clusters, splits=["test"] * len(VALIDATION))
    with pytest.raises(ValueError, match="test-split"):
        train_biencoder(TRAIN, leaked, output_dir=tmp_path, **SETTINGS)
    with pytest.raises(ValueError, match="'train_corpus' must be a LabeledCorpus"):
        train_biencoder(TRAIN.texts, VALIDATION, output_dir=tmp_path, **SETTINGS)
