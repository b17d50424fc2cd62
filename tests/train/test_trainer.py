"""The one trainer (neardup.train.trainer) on a toy task: a linear map trained with SupCon.

Seconds of CPU: no pretrained model, 64 four-dimensional points in 8 clusters.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("accelerate")
pytest.importorskip("pytorch_metric_learning")

from neardup.train.losses import SupCon  # noqa: E402
from neardup.train.trainer import (  # noqa: E402
    AriEvaluator,
    TrainingTask,
    TrainSettings,
    fit,
)
from neardup.train.validate import ValidationScore  # noqa: E402

pytestmark = pytest.mark.train

_RNG = np.random.default_rng(0)
_CENTRES = _RNG.normal(size=(8, 4))
_X = np.repeat(_CENTRES, 8, axis=0) + 0.6 * _RNG.normal(size=(64, 4))
_LABELS = np.repeat(np.arange(8), 8)


def _build(evaluator=None):
    def build() -> TrainingTask:
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.1),
                                    torch.nn.Linear(8, 4))
        supcon = SupCon()
        x = torch.tensor(_X, dtype=torch.float32)

        def batches(epoch):
            order = np.random.default_rng([7, epoch]).permutation(len(_X))
            return [order[i : i + 16] for i in range(0, len(order), 16)]

        def collate(batch):
            idx = np.asarray(batch)
            return {"x": x[idx], "targets": torch.from_numpy(_LABELS[idx])}

        def embed(m):
            e = m(x).numpy()
            return e / np.linalg.norm(e, axis=1, keepdims=True)

        return TrainingTask(
            model=model, loss=lambda m, b: supcon(m(b["x"]), b["targets"]), collate=collate,
            batches=batches,
            evaluator=evaluator or AriEvaluator(_LABELS.astype(str), embed=embed))

    return build


_SETTINGS = TrainSettings(epochs=3, lr=1e-2, seed=0, patience=3, save_seconds=None,
                          baseline=True, progress=False)


def _fit(out, settings=_SETTINGS, config=None, evaluator=None):
    return fit(_build(evaluator), settings, output_dir=out, config=config or {"epochs": 3},
               caller="test")


def test_same_seed_same_weights_and_training_improves(tmp_path):
    a = _fit(tmp_path / "a")
    b = _fit(tmp_path / "b")
    for (name, p), q in zip(a.model.state_dict().items(), b.model.state_dict().values()):
        assert torch.equal(p, q), name
    c = fit(_build(), TrainSettings(**{**_SETTINGS.__dict__, "seed": 1}),
            output_dir=tmp_path / "c", config={"epochs": 3}, caller="test")
    assert not torch.equal(a.model[0].weight, c.model[0].weight)
    assert len(a.log.epochs) == 3 and a.steps_per_epoch == 4
    losses = [r.train_loss for r in a.log.epochs]
    assert losses[-1] < losses[0]
    assert a.log.best.validation_ari >= a.baseline["ari"]
    run = json.loads((tmp_path / "a" / "run.json").read_text())
    assert run["finished"] and run["log"]["best_epoch"] == a.log.best.epoch
    # A finished run is not trained again; other settings are refused.
    again = _fit(tmp_path / "a")
    assert again.finished_before and again.model is None
    assert [r.train_loss for r in again.log.epochs] == losses
    with pytest.raises(ValueError, match="other settings.*lr"):
        _fit(tmp_path / "a", config={"epochs": 3, "lr": 1})


def test_early_stopping_and_the_best_epoch_is_kept(tmp_path):
    scores = iter([0.5, 0.9, 0.4, 0.3, 0.2, 0.1])  # baseline, then epochs 1, 2, ...

    def scripted(model):
        return ValidationScore(ari=next(scores), threshold=0.5)

    settings = TrainSettings(**{**_SETTINGS.__dict__, "epochs": 5, "patience": 2})
    result = _fit(tmp_path, settings, {"epochs": 5}, evaluator=scripted)
    assert [r.validation_ari for r in result.log.epochs] == [0.9, 0.4, 0.3]
    assert result.stopped_early and result.log.best.epoch == 1
    assert result.baseline["ari"] == 0.5
