"""Issue 17: the bi-encoder fine-tuned on a mixture of generators, on held-out generators.

    # one model per fold (resumable; 2,879 / 2,692 CPU s, 54 min wall each on one thread),
    # then biencoder-news and the fold's mixture model on each fold's held-out sets
    # (768 / 693 CPU s)
    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python -m experiments.generator_mixtures.biencoder_mixture --train A
    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python -m experiments.generator_mixtures.biencoder_mixture --train B
    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python -m experiments.generator_mixtures.biencoder_mixture --evaluate A --evaluate B
    .venv/bin/python -m experiments.generator_mixtures.biencoder_mixture --table

The protocol of experiments/generator_mixtures/retsim_mixture.py, whose folds, mixture corpora and validation
subsets are imported from it (not copied): the eight independent sets are split in two
folds of four, reuters-adversarial is held out by both; model A is trained on the train
splits of reuters-news + fold B's sets, model B on reuters-news + fold A's sets (ids,
cluster and ``negative_of`` labels prefixed by the set's name), and the epoch is picked
on whole days (whole clusters for undated sets) of the *training* sets' validation
splits, at most ``--max-validation-docs / number of training sets`` documents per set.
No held-out set and no test split is read for training or epoch selection.

Training: :func:`neardup.train.biencoder.train_biencoder` with the settings of
scripts/train_biencoder_news.py (all-MiniLM-L6-v2, loss mnrl with hard negatives, 3
epochs, max-pairs 3000, batch 32, lr 2e-5, warmup 0.1, 128 tokens, seed 0, int8 ONNX
export) but one thread. The export (``/tmp/bimix/<fold>/onnx``) is what is evaluated,
as ``--method biencoder --param model=/tmp/bimix/<fold>/onnx``.

Evaluation, per fold and on its held-out sets plus reuters-adversarial, for the shipped
biencoder-news and the fold's mixture model, with experiments/method_comparison/compare_transfer.py's
``run_cell`` (method ``biencoder``, the threshold grid of compare_transfer's biencoder
entry (0.5-0.99) swept on the validation split, the same points on test, connected
components, one thread):

* **tuned**: test ARI at the threshold with the best validation ARI of that set;
* **leave-set-out**: test ARI at the threshold maximising the worst validation ARI over
  the *other* held-out sets of the same fold (``maximin`` of compare_transfer; for
  reuters-adversarial, over the fold's four held-out sets).

Test ARIs are only looked up at thresholds chosen on validation splits. Results go to
experiments/generator_mixtures/results/biencoder_mixture.json; ``--table`` prints the markdown table.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
from experiments.generator_mixtures import retsim_mixture as rm  # noqa: E402  (the protocol: folds, mixtures, validation subsets)

RESULTS = Path(__file__).resolve().parent / "results" / "biencoder_mixture.json"
OUT = Path("/tmp/bimix")
CACHE = OUT / "cache"

FOLDS = rm.FOLDS
TRAIN_SETTINGS = {"loss": "mnrl", "epochs": 3, "max_pairs": 3000, "batch_size": 32,
                  "lr": 2e-5, "warmup": 0.1, "max_tokens": 128, "seed": 0, "threads": 1,
                  "export": "int8"}


def onnx_dir(fold: str) -> Path:
    return OUT / fold / "onnx"


def train(fold: str, max_validation_docs: int) -> dict:
    from neardup.train.biencoder import train_biencoder

    def fit(corpus, validation, negative_of):
        return train_biencoder(corpus, validation, output_dir=OUT / fold,
                               negative_of=negative_of, max_validation_docs=max_validation_docs,
                               progress=None, **TRAIN_SETTINGS)

    return rm.train_mixture_model(fold, max_validation_docs, OUT, TRAIN_SETTINGS["seed"], fit)

# -- evaluation ------------------------------------------------------------------------------


NEWS = "biencoder (biencoder-news)"


def mixture_label(fold: str) -> str:
    return f"biencoder (mixture {fold})"


def grid() -> dict:
    """compare_transfer's biencoder grid (0.5-0.99), the one of docs/transfer.md."""
    ct = rm.compare_transfer_module()
    return next(e.grid for e in ct.ENTRIES if e.label == NEWS)


def entries(fold: str) -> list:
    """biencoder-news and the fold's mixture model (one thread, own cache)."""
    ct = rm.compare_transfer_module()
    base = {"cache_dir": str(CACHE), "threads": 1}
    return [ct.Entry(NEWS, "biencoder", {**base, "model": "biencoder-news"}, grid=grid(),
                     neural=True),
            ct.Entry(mixture_label(fold), "biencoder", {**base, "model": str(onnx_dir(fold))},
                     grid=grid(), neural=True)]


def load_results() -> dict:
    return rm.load_results(RESULTS)


def save_results(results: dict) -> None:
    rm.save_results(results, RESULTS)


def training_summary(fold: str) -> dict | None:
    """Key figures of the fold's training (and the mixture's composition)."""
    path = OUT / fold / "mixture.json"
    if not path.exists():
        return None
    result = json.loads(path.read_text(encoding="utf-8"))
    config = result.get("config", {})
    return {
        **{k: result.get(k) for k in ("best_epoch", "best_validation_ari", "best_threshold",
                                      "baseline", "loss_check", "export_check", "cpu_seconds",
                                      "wall_seconds", "call_cpu_seconds", "validation_docs",
                                      "training_data", "stopped_early", "epochs")},
        "training_sets": result["training_sets"], "validation_sets": result["validation_sets"],
        "label_collisions": result["label_collisions"],
        "config": {k: config.get(k) for k in ("loss", "epochs", "max_pairs", "batch_size", "lr",
                                              "warmup", "max_tokens", "seed", "data")},
        "model_sha256": rm.sha256_of(onnx_dir(fold) / "model.onnx"),
    }


def evaluate_fold(fold: str, results: dict) -> None:
    """Both entries on every held-out set of ``fold``."""
    models = {NEWS: "neardup/models/biencoder-news",
              **{mixture_label(f): str(onnx_dir(f)) for f in FOLDS}}
    rm.evaluate_paired(fold, results, model_file=onnx_dir(fold) / "model.onnx",
                       summary=training_summary(fold), entries=entries(fold), models=models,
                       train_settings=TRAIN_SETTINGS, analyse_fn=analyse, save_fn=save_results,
                       width=28, grid=grid())


def analyse(results: dict) -> dict:
    """Per fold, held-out set and entry: tuned and leave-set-out thresholds and test ARIs."""
    return rm.analyse(results, labels_of=lambda fold: (NEWS, mixture_label(fold)))


def table(results: dict) -> str:
    def training_line(fold: str, t: dict) -> str:
        base = t.get("baseline") or {}
        return (f"Mixture {fold}: trained on {', '.join(t['training_sets'])}; validation ARI "
                f"(mixed validation subset, {t['validation_docs']} documents) "
                f"{rm.fmt(base.get('ari'))} for all-MiniLM-L6-v2 before training, "
                f"{t['best_validation_ari']:.4f} after (best epoch {t['best_epoch']}); "
                f"{t['cpu_seconds']:.0f} CPU s training, {t['wall_seconds']:.0f} s wall.")

    return rm.paired_table(
        results, analyse(results), NEWS, mixture_label, news_name="biencoder-news",
        script="experiments/generator_mixtures/biencoder_mixture.py",
        setup="grid 0.5-0.99, connected components, one thread",
        training_line=training_line)


def main() -> int:
    return rm.cli(__doc__, train, evaluate_fold, table, load_results,
                  "evaluate this fold's model (and biencoder-news) on its held-out sets",
                  save_fn=save_results, analyse_fn=analyse)


if __name__ == "__main__":
    sys.exit(main())
