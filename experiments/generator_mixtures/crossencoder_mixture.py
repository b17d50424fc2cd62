"""Issue 17: the cross-encoder fine-tuned on a mixture of generators, on held-out generators.

    # one model per fold (resumable; 1,095 CPU s each in the trainer, 24.6 min wall with
    # both folds at once), then cross-encoder-news and the fold's mixture model on each
    # fold's held-out sets (4,128 / 4,168 CPU s for folds A / B, 70 min wall each, the two
    # folds at once in two checkouts, then merged)
    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python -m experiments.generator_mixtures.crossencoder_mixture \
        --train A --max-validation-docs 600
    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python -m experiments.generator_mixtures.crossencoder_mixture \
        --train B --max-validation-docs 600
    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python -m experiments.generator_mixtures.crossencoder_mixture --evaluate A
    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python -m experiments.generator_mixtures.crossencoder_mixture --evaluate B
    .venv/bin/python -m experiments.generator_mixtures.crossencoder_mixture --table

The protocol of experiments/generator_mixtures/retsim_mixture.py, whose folds, mixture corpora and validation
subsets are imported from it (not copied): the eight independent sets are split in two
folds of four, reuters-adversarial is held out by both; model A is trained on the train
splits of reuters-news + fold B's sets, model B on reuters-news + fold A's sets (ids,
cluster and ``negative_of`` labels prefixed by the set's name), and the epoch is picked
on whole days (whole clusters for undated sets) of the *training* sets' validation
splits, at most ``--max-validation-docs / number of training sets`` documents per set
(600 in total: the cross-encoder scores every validation candidate each epoch, at about
11 pairs per CPU-second in fp32). No held-out set and no test split is read for training
or epoch selection.

Training: :func:`neardup.train.cross_encoder.train_cross_encoder` with the settings of
scripts/train_cross_encoder_news.py (all-MiniLM-L6-v2, 2 epochs, 2,400 pairs of which half
from RETSim candidates, 64 tokens per text, batch 16, lr 8e-5, warmup 0.2, seed 0, one
thread), then int8 ONNX export to ``/tmp/cemix/<fold>/onnx``, which is what is evaluated,
as ``--method rerank --param scorer=cross-encoder --param model=/tmp/cemix/<fold>/onnx``.

Evaluation, per fold and on its held-out sets plus reuters-adversarial, for the shipped
cross-encoder-news and the fold's mixture model, with experiments/method_comparison/compare_transfer.py's
``run_cell`` (method ``rerank`` with the cross-encoder scorer and its default RETSim
candidates, the default probability grid swept on the validation split, the same points
on test, connected components, one thread):

* **tuned**: test ARI at the threshold with the best validation ARI of that set;
* **leave-set-out**: test ARI at the threshold maximising the worst validation ARI over
  the *other* held-out sets of the same fold (``maximin`` of compare_transfer; for
  reuters-adversarial, over the fold's four held-out sets).

Test ARIs are only looked up at thresholds chosen on validation splits. Results go to
experiments/generator_mixtures/results/crossencoder_mixture.json; when the two folds are evaluated at once in two
checkouts, ``--merge OTHER/experiments/generator_mixtures/results/crossencoder_mixture.json`` folds one into the
other (a cell both ran must agree). ``--table`` prints the markdown table.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
from experiments.generator_mixtures import retsim_mixture as rm  # noqa: E402  (the protocol: folds, mixtures, validation subsets)

RESULTS = Path(__file__).resolve().parent / "results" / "crossencoder_mixture.json"
OUT = Path("/tmp/cemix")

FOLDS = rm.FOLDS
TRAIN_SETTINGS = {"epochs": 2, "max_pairs": 2400, "candidate_share": 0.5, "max_tokens": 64,
                  "batch_size": 16, "lr": 8e-5, "warmup": 0.2, "seed": 0, "threads": 1}


def work_dir(fold: str) -> Path:
    return OUT / fold / "work"


def onnx_dir(fold: str) -> Path:
    return OUT / fold / "onnx"


def cache_dir(fold: str) -> Path:
    """RETSim embedding cache of the candidate search, one per fold (folds run at once)."""
    return OUT / fold / "cache"


def train(fold: str, max_validation_docs: int) -> dict:
    from neardup.train.cross_encoder import export_onnx, train_cross_encoder

    def fit(corpus, validation, negative_of):
        # validation_docs: the whole mixed subset (whole_days would cut it again).
        result = train_cross_encoder(corpus, validation, output_dir=work_dir(fold),
                                     negative_of=negative_of, validation_docs=len(validation),
                                     candidate_params={"cache_dir": str(cache_dir(fold))},
                                     progress=False, **TRAIN_SETTINGS)
        result["export"] = export_onnx(work_dir(fold), onnx_dir(fold))
        return result

    return rm.train_mixture_model(fold, max_validation_docs, OUT, TRAIN_SETTINGS["seed"], fit)

# -- evaluation ------------------------------------------------------------------------------


NEWS = "rerank cross-encoder (cross-encoder-news)"


def mixture_label(fold: str) -> str:
    return f"rerank cross-encoder (mixture {fold})"


def entries(fold: str) -> list:
    """cross-encoder-news and the fold's mixture model (RETSim candidates, one thread)."""
    ct = rm.compare_transfer_module()
    base = {"scorer": "cross-encoder", "threads": 1,
            "candidate_params": {"cache_dir": str(cache_dir(fold))}}
    components = {"algorithm": "components"}
    return [ct.Entry(NEWS, "rerank", {**base, "model": "cross-encoder-news"}, neural=True,
                     cluster=components),
            ct.Entry(mixture_label(fold), "rerank", {**base, "model": str(onnx_dir(fold))},
                     neural=True, cluster=components)]


def load_results(path: Path = RESULTS) -> dict:
    return rm.load_results(path)


def save_results(results: dict, path: Path = RESULTS) -> None:
    rm.save_results(results, path)


def training_summary(fold: str) -> dict | None:
    """Key figures of the fold's training (and the mixture's composition)."""
    path = OUT / fold / "mixture.json"
    if not path.exists():
        return None
    result = json.loads(path.read_text(encoding="utf-8"))
    return {
        **{k: result.get(k) for k in ("best_epoch", "best_validation_ari", "best_threshold",
                                      "loss_check", "cpu_seconds", "wall_seconds",
                                      "validation_docs", "validation_pairs", "pair_counts",
                                      "stopped_early", "epochs")},
        "training_sets": result["training_sets"], "validation_sets": result["validation_sets"],
        "label_collisions": result["label_collisions"],
        "export_bytes": (result.get("export") or {}).get("bytes"),
        "model_sha256": rm.sha256_of(onnx_dir(fold) / "model.onnx"),
    }


def evaluate_fold(fold: str, results: dict) -> None:
    """Both entries on every held-out set of ``fold``."""
    models = {NEWS: "neardup/models/cross-encoder-news",
              **{mixture_label(f): str(onnx_dir(f)) for f in FOLDS}}
    rm.evaluate_paired(fold, results, model_file=onnx_dir(fold) / "model.onnx",
                       summary=training_summary(fold), entries=entries(fold), models=models,
                       train_settings=TRAIN_SETTINGS, analyse_fn=analyse, save_fn=save_results,
                       width=44)


def analyse(results: dict) -> dict:
    """Per fold, held-out set and entry: tuned and leave-set-out thresholds and test ARIs."""
    return rm.analyse(results, labels_of=lambda fold: (NEWS, mixture_label(fold)))


def default_rows(results: dict) -> list[str]:
    """cross-encoder-news at its shipped default threshold against tuned, per held-out set
    (the defaults rule of docs/transfer.md)."""
    lines = ["", "cross-encoder-news at its default threshold (the one tuned on reuters-news "
             "validation) against the set's tuned threshold, test ARI:", "",
             "| held-out set | default (threshold) | tuned (threshold) | default minus tuned |",
             "|---|---:|---:|---:|"]
    seen = set()
    for fold in FOLDS:
        for name in rm.held_out_sets(fold):
            cell = results["cells"].get(f"{NEWS}|{name}")
            if cell is None or name in seen:
                continue
            seen.add(name)
            default, tuned = cell["default"]["test_ari"], cell["tuned"]["test_ari"]
            lines.append(f"| {name} | {default:.3f} ({cell['default_threshold']:g}) | "
                         f"{tuned:.3f} ({cell['tuned']['values']['threshold']:g}) | "
                         f"{default - tuned:+.3f} |")
    return lines


def table(results: dict) -> str:
    def training_line(fold: str, t: dict) -> str:
        return (f"Mixture {fold}: trained on {', '.join(t['training_sets'])}; validation ARI "
                f"(mixed validation subset, {t['validation_docs']} documents, "
                f"{t['validation_pairs']} candidate pairs) {t['best_validation_ari']:.4f} "
                f"(best epoch {t['best_epoch']}); {t['cpu_seconds']:.0f} CPU s training, "
                f"{t['wall_seconds']:.0f} s wall.")

    return rm.paired_table(
        results, analyse(results), NEWS, mixture_label, news_name="cross-encoder-news",
        script="experiments/generator_mixtures/crossencoder_mixture.py",
        setup="rerank with the cross-encoder scorer over RETSim candidates, default "
              "probability grid, connected components, one thread",
        training_line=training_line) + "\n".join(["", *default_rows(results)])


def main() -> int:
    return rm.cli(__doc__, train, evaluate_fold, table, load_results,
                  "evaluate this fold's model (and cross-encoder-news) on its held-out sets",
                  save_fn=save_results, analyse_fn=analyse)


if __name__ == "__main__":
    sys.exit(main())
