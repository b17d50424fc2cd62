"""Fine-tuning RETSim with the multi-similarity loss: a tiny real run, resumption, export."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("pytorch_metric_learning")
if importlib.util.find_spec("unisim") is None:
    pytest.skip("unisim (which ships the RETSim model) is not installed", allow_module_level=True)

from neardup.eval.labeled import LabeledCorpus  # noqa: E402
from neardup.train import retsim_trainer  # noqa: E402
from neardup.train.data import hard_negative_links  # noqa: E402
from neardup.train.retsim_trainer import train_retsim  # noqa: E402

pytestmark = pytest.mark.train

_COMMON = "the of and to in said it was for on that with by at from has its will would year".split()
_MARKERS = {
    "grain": "wheat maize harvest tonnes",
    "oil": "crude barrel refinery opec",
    "money": "interest rate dollar yen",
    "ships": "port strike dock cargo",
}


def _corpus(seed: int, per_topic: int = 6) -> LabeledCorpus:
    """Clusters off-the-shelf RETSim does not separate: documents of one cluster share
    three marker words among ten common ones, so positives and negatives overlap in
    cosine and the loss has something to learn."""
    rng = np.random.default_rng(seed)
    texts, clusters = [], []
    for topic, markers in _MARKERS.items():
        for _ in range(per_topic):
            words = [*rng.choice(_COMMON, 10), *rng.choice(markers.split(), 3)]
            rng.shuffle(words)
            texts.append(" ".join(words))
            clusters.append(topic)
    n = len(texts)
    return LabeledCorpus(
        ids=np.array([f"{seed}-{i}" for i in range(n)], dtype=object),
        texts=texts,
        clusters=np.array(clusters, dtype=object),
    )


_SETTINGS = dict(epochs=2, batch_size=8, per_cluster=4, lr=3e-3, threads=1, progress=False,
                 patience=5, max_validation_docs=24)


def _ms_loss(model, corpus) -> float:
    """Multi-similarity loss of the whole corpus as one batch."""
    from pytorch_metric_learning import losses, miners

    _, codes = np.unique(corpus.clusters.astype(str), return_inverse=True)
    labels = torch.from_numpy(codes.astype(np.int64))
    with torch.no_grad():
        emb = retsim_trainer._document_embeddings(model, corpus.texts)
        loss = losses.MultiSimilarityLoss(alpha=4, beta=40, base=0.5)
        return float(loss(emb, labels, miners.MultiSimilarityMiner(0.1)(emb, labels)))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("retsim-run")
    result = train_retsim(_corpus(0), _corpus(1), output_dir=out, **_SETTINGS)
    return out, result


def test_loss_decreases_and_the_log_is_complete(trained):
    from neardup.train.retsim_torch import from_onnx

    out, result = trained
    assert result["best_epoch"] > 0  # model.onnx is a trained epoch, not the base model
    base = from_onnx()
    tuned = from_onnx(result["model"])
    assert _ms_loss(tuned, _corpus(0)) < 0.9 * _ms_loss(base, _corpus(0))
    log = json.loads((out / "training.json").read_text())
    losses = [e["train_loss"] for e in log["epochs"]]
    assert len(losses) == 2 and all(loss > 0 for loss in losses)
    assert log["config"]["loss"] == {"name": "MultiSimilarityLoss", "alpha": 4.0, "beta": 40.0,
                                     "base": 0.5}
    assert log["config"]["miner"]["epsilon"] == 0.1
    assert log["baseline"]["ari"] == result["baseline_validation_ari"]
    assert result["epochs_run"] == 2 and result["validation_docs"] == 24
    assert result["cpu_seconds"] > 0
    assert result["best_validation_ari"] >= result["baseline_validation_ari"]


def test_output_model_runs_in_retsim(trained):
    from neardup.embed import RETSim

    out, result = trained
    texts = _corpus(2).texts
    emb = RETSim(threads=1, model_path=result["model"]).encode(texts)
    assert emb.shape == (len(texts), 256)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    if result["best_epoch"] > 0:  # the fine-tuned model differs from the base model
        base = RETSim(threads=1).encode(texts)
        assert np.abs(emb - base).max() > 1e-3


def test_interrupted_run_resumes_to_the_same_result(trained, tmp_path, monkeypatch):
    from neardup.train import trainer as one_trainer

    out, _ = trained
    evaluate = one_trainer._TaskTrainer.evaluate
    calls = []

    def crash_on_second_epoch(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:  # at the end of epoch 2, before its checkpoint
            raise KeyboardInterrupt
        return evaluate(self, *args, **kwargs)

    monkeypatch.setattr(one_trainer._TaskTrainer, "evaluate", crash_on_second_epoch)
    with pytest.raises(KeyboardInterrupt):
        train_retsim(_corpus(0), _corpus(1), output_dir=tmp_path, **_SETTINGS)
    assert not (tmp_path / "training.json").exists()

    monkeypatch.setattr(one_trainer._TaskTrainer, "evaluate", evaluate)
    train_retsim(_corpus(0), _corpus(1), output_dir=tmp_path, **_SETTINGS)
    resumed = json.loads((tmp_path / "training.json").read_text())
    full = json.loads((out / "training.json").read_text())
    assert resumed["resumed_at"] == [2]  # resumed in epoch 2, from epoch 1's checkpoint
    for a, b in zip(resumed["epochs"], full["epochs"], strict=True):
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-4)
        assert a["validation_ari"] == pytest.approx(b["validation_ari"], abs=1e-6)

    # Re-running a finished run trains nothing more.
    again = train_retsim(_corpus(0), _corpus(1), output_dir=tmp_path, **_SETTINGS)
    assert again["epochs_run"] == 2


def test_changed_settings_are_refused(trained):
    out, _ = trained
    with pytest.raises(ValueError, match="other settings.*lr"):
        train_retsim(_corpus(0), _corpus(1), output_dir=out, **{**_SETTINGS, "lr": 1e-4})


def test_batches_hold_hard_negatives_and_noisy_copies():
    codes = np.repeat(np.arange(10), 3)
    labels = np.array([f"c{i}" for i in range(10)])
    negative_of = np.array([None] * 27 + ["c0", "c0", "c0"], dtype=object)  # c9 mimics c0
    links = hard_negative_links(labels[codes], negative_of)
    assert {k: v.tolist() for k, v in links.items()} == {0: [9]}
    batches = retsim_trainer._epoch_batches(labels[codes], links, batch_size=6, per_cluster=2, seed=3)
    with_c0 = next(b for b in batches if 0 in codes[b])
    assert (codes[with_c0] == 9).sum() >= 2
    assert all(len(np.unique(b)) == len(b) for b in batches)
    texts = ["The wheat harvest rose sharply. Farmers sold more grain abroad."] * 4
    rng = np.random.default_rng(0)
    out, out_labels = retsim_trainer._augment(texts, np.array([1, 1, 2, 2]), rng)
    assert len(out) == 6 and sorted(out_labels[4:].tolist()) == [1, 2]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epochs": 0}, "parameter 'epochs' must be an integer >= 1"),
        ({"per_cluster": 1}, r"parameter 'per_cluster' must be an integer in \[2, 32\]"),
        ({"lr": 0.0}, "parameter 'lr' must be > 0"),
        ({"augment": "yes"}, "parameter 'augment' must be True or False"),
        ({"negative_of": [None]}, "parameter 'negative_of' must have one entry"),
    ],
)
def test_invalid_parameters(kwargs, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        train_retsim(_corpus(0), _corpus(1), output_dir=tmp_path, **kwargs)


def test_test_split_is_refused(tmp_path):
    corpus = _corpus(0)
    tagged = LabeledCorpus(ids=corpus.ids, texts=corpus.texts, clusters=corpus.clusters,
                           splits=np.array(["test"] * len(corpus), dtype=object))
    with pytest.raises(ValueError, match="test-split"):
        train_retsim(tagged, _corpus(1), output_dir=tmp_path)
