"""Issue 17: RETSim fine-tuned on a mixture of generators, on held-out generators.

    # one model per fold (resumable; about 1,500 CPU s each on one thread), then the
    # three RETSims on each fold's held-out sets (about 1,000 CPU s per fold)
    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python -m experiments.generator_mixtures.retsim_mixture --train A
    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python -m experiments.generator_mixtures.retsim_mixture --train B
    PYTHONPATH=. HF_HUB_OFFLINE=1 .venv/bin/python -m experiments.generator_mixtures.retsim_mixture --evaluate A --evaluate B
    .venv/bin/python -m experiments.generator_mixtures.retsim_mixture --table

Two-fold leave-half-out protocol. The eight independent sets are split in two folds of
four; reuters-adversarial (no train split) is held out by both:

* fold A holds out indep-nlpaug, indep-confusables, multi-latin, multi-greek; model A is
  trained on the train splits of reuters-news + fold B's sets;
* fold B holds out indep-augly, indep-noisocr, multi-cyrillic, multi-cjk; model B is
  trained on the train splits of reuters-news + fold A's sets.

Training: :func:`neardup.train.retsim_trainer.train_retsim` with the settings of
scripts/train_retsim_news.py (2 epochs, batch 32, 2 per cluster, lr 1e-3, seed 0, noisy
copies on, one thread). The training sets are concatenated with ids, cluster labels and
``negative_of`` labels prefixed by the set's name: all indep-* train splits are copies of
the same 328 Reuters stories of one day (1987-03-27) and 311 of those cluster labels are
reuters-news train clusters too, so without the prefix unrelated generators' clusters
(and their hard-negative ``~update`` clusters, made with other replaced sentences)
would be merged. Epochs are picked on the validation splits of the *training* sets only:
whole days (whole clusters for the undated multi-* sets) of each, at most
``--max-validation-docs / number of training sets`` documents per set, so every training
set weighs the same and the trainer keeps them all. No held-out set and no test split is
read for training or epoch selection.

Evaluation, per model and on its fold's held-out sets plus reuters-adversarial, for
off-the-shelf RETSim, the shipped retsim-news and the fold's mixture model, all in this
run with experiments/method_comparison/compare_transfer.py's ``run_cell`` (method ``retsim``, its default
threshold grid swept on the validation split, the same points on test, connected
components, one thread):

* **tuned**: test ARI at the threshold with the best validation ARI of that set;
* **leave-set-out**: test ARI at the threshold maximising the worst validation ARI over
  the *other* held-out sets of the same fold (``maximin`` of compare_transfer; for
  reuters-adversarial, over the fold's four held-out sets).

Test ARIs are only looked up at thresholds chosen on validation splits. Results (curves,
thresholds, test ARIs, CPU seconds, training-log figures) go to
experiments/generator_mixtures/results/retsim_mixture.json; ``--table`` prints the markdown table.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "data"
RESULTS = Path(__file__).resolve().parent / "results" / "retsim_mixture.json"
OUT = Path("/tmp/retsim-mix")
CACHE = OUT / "cache"

FOLDS = {
    "A": ["indep-nlpaug", "indep-confusables", "multi-latin", "multi-greek"],
    "B": ["indep-augly", "indep-noisocr", "multi-cyrillic", "multi-cjk"],
}
ALWAYS_HELD_OUT = "reuters-adversarial"
TRAIN_SETTINGS = {"epochs": 2, "batch_size": 32, "per_cluster": 2, "lr": 1e-3, "seed": 0,
                  "augment": True, "threads": 1}


def training_sets(fold: str) -> list[str]:
    """reuters-news plus the *other* fold's sets (those the fold does not hold out)."""
    other = "B" if fold == "A" else "A"
    return ["reuters-news", *FOLDS[other]]


def held_out_sets(fold: str) -> list[str]:
    return [*FOLDS[fold], ALWAYS_HELD_OUT]


# -- the mixture --------------------------------------------------------------------------


def _prefixed(corpus, name: str):
    """``corpus`` with ids and cluster labels prefixed by ``name/``."""
    from neardup.eval.labeled import LabeledCorpus

    prefix = np.asarray(f"{name}/", dtype=object)
    return LabeledCorpus(ids=prefix + corpus.ids.astype(str).astype(object),
                         texts=corpus.texts,
                         clusters=prefix + corpus.clusters.astype(str).astype(object),
                         splits=corpus.splits, dates=corpus.dates)


def concat(corpora: list):
    """One LabeledCorpus of several (already prefixed) ones; dates kept (NaT for undated
    sets) when any has them."""
    from neardup.eval.labeled import LabeledCorpus

    dates = None
    if any(c.dates is not None for c in corpora):
        dates = np.concatenate([c.dates if c.dates is not None
                                else np.full(len(c), np.datetime64("NaT"), "datetime64[s]")
                                for c in corpora])
    splits = None
    if all(c.splits is not None for c in corpora):
        splits = np.concatenate([c.splits for c in corpora])
    return LabeledCorpus(ids=np.concatenate([c.ids for c in corpora]),
                         texts=[t for c in corpora for t in c.texts],
                         clusters=np.concatenate([c.clusters for c in corpora]),
                         splits=splits, dates=dates)


def mixture_train(names: list[str]):
    """Train splits of ``names``, prefixed, with their prefixed ``negative_of``."""
    from neardup.train.data import load_training_corpus

    parts, negatives = [], []
    for name in names:
        corpus, negative_of = load_training_corpus([BENCH / name / "train.jsonl.gz"])
        parts.append(_prefixed(corpus, name))
        if negative_of is None:
            negative_of = np.full(len(corpus), None, dtype=object)
        negatives.append(np.asarray([None if v is None else f"{name}/{v}" for v in negative_of],
                                    dtype=object))
    corpus = concat(parts)
    ids = corpus.ids.astype(str)
    assert len(np.unique(ids)) == len(ids), "ids still collide after prefixing"
    return corpus, np.concatenate(negatives)


def mixture_validation(names: list[str], max_docs: int, seed: int):
    """Whole days (whole clusters when undated) of each set's validation split, at most
    ``max_docs // len(names)`` documents per set, prefixed and concatenated."""
    from neardup.eval import load_labeled
    from neardup.train.validate import whole_days

    per_set = max_docs // len(names)
    parts, sizes = [], {}
    for name in names:
        corpus = load_labeled(str(BENCH / name / "validation.jsonl.gz"))
        keep = whole_days(corpus, per_set, seed=seed)
        part = _prefixed(corpus.select(keep), name)
        sizes[name] = {"docs": len(part), "clusters": int(len(np.unique(part.clusters.astype(str))))}
        parts.append(part)
    return concat(parts), sizes


def label_collisions(names: list[str]) -> dict:
    """How many raw cluster labels (and ids) of the train splits are shared between sets."""
    import gzip

    labels, ids = {}, {}
    for name in names:
        with gzip.open(BENCH / name / "train.jsonl.gz", "rt", encoding="utf-8") as f:
            records = [json.loads(line) for line in f if line.strip()]
        labels[name] = {r["cluster"] for r in records}
        ids[name] = {r["id"] for r in records}
    out = {}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            shared = len(labels[a] & labels[b])
            if shared:
                out[f"{a} & {b}"] = {"clusters": shared, "ids": len(ids[a] & ids[b])}
    return out


def cross_set_batch_pairs(fold: str) -> dict:
    """Per epoch of the fold's training, how many pairs of clusters of *different* sets
    but the same raw label (copies of one Reuters story by two generators: duplicates the
    loss treats as negatives because of the prefixes) share a batch, out of all pairs of
    distinct clusters sharing a batch. Recomputes the trainer's batches (seeded)."""
    from neardup.train.data import hard_negative_links

    # The trainer's own (private) batch maker: the count must be of the very batches it trained on.
    from neardup.train.retsim_trainer import _epoch_batches

    corpus, negative_of = mixture_train(training_sets(fold))
    clusters = corpus.clusters.astype(str)
    links = hard_negative_links(corpus.clusters, negative_of)
    seed = TRAIN_SETTINGS["seed"]
    out = {}
    for epoch in range(TRAIN_SETTINGS["epochs"]):
        batches = _epoch_batches(corpus.clusters, links, batch_size=TRAIN_SETTINGS["batch_size"],
                                 per_cluster=TRAIN_SETTINGS["per_cluster"],
                                 seed=seed * 1000 + epoch + 1)
        same = total = 0
        for batch in batches:
            distinct = np.unique(clusters[batch])
            stories = np.unique(np.asarray([c.split("/", 1)[1] for c in distinct]),
                                return_counts=True)[1]
            same += int((stories * (stories - 1) // 2).sum())
            total += len(distinct) * (len(distinct) - 1) // 2
        out[f"epoch {epoch + 1}"] = {"batches": len(batches), "cross_set_same_story_pairs": same,
                                     "cluster_pairs_in_batches": total}
    return out


def train_mixture_model(fold: str, max_validation_docs: int, out: Path, seed: int,
                        fit) -> dict:
    """Train ``fold``'s model: ``fit(corpus, validation, negative_of)`` on the mixture of
    its training sets, with the mixed validation subset; the returned record (plus the
    mixture's composition) is written to ``out/<fold>/mixture.json``."""
    names = training_sets(fold)
    corpus, negative_of = mixture_train(names)
    validation, val_sizes = mixture_validation(names, max_validation_docs, seed)
    print(f"fold {fold}: training on {names}: {len(corpus)} docs, "
          f"{len(np.unique(corpus.clusters.astype(str)))} clusters; validation {val_sizes}",
          file=sys.stderr, flush=True)
    result = fit(corpus, validation, negative_of)
    result["training_sets"] = names
    result["validation_sets"] = val_sizes
    result["label_collisions"] = label_collisions(names)
    (out / fold / "mixture.json").write_text(json.dumps(result, indent=2, default=str) + "\n",
                                             encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "config"}, indent=2, default=str))
    return result


def train(fold: str, max_validation_docs: int) -> dict:
    from neardup.train.retsim_trainer import train_retsim

    def fit(corpus, validation, negative_of):
        return train_retsim(corpus, validation, output_dir=OUT / fold, negative_of=negative_of,
                            max_validation_docs=max_validation_docs, progress=None,
                            **TRAIN_SETTINGS)

    return train_mixture_model(fold, max_validation_docs, OUT, TRAIN_SETTINGS["seed"], fit)


# -- evaluation ------------------------------------------------------------------------------


def compare_transfer_module():
    """experiments/method_comparison/compare_transfer.py as a module (its run_cell, maximin, curves)."""
    from experiments.method_comparison import compare_transfer

    return compare_transfer


OFF, NEWS = "retsim (off-the-shelf)", "retsim (retsim-news)"


def mixture_label(fold: str) -> str:
    return f"retsim (mixture {fold})"


def entries(fold: str) -> list:
    """The three RETSims compared on ``fold``'s held-out sets (one thread, own cache)."""
    ct = compare_transfer_module()
    base = {"cache_dir": str(CACHE), "threads": 1}
    return [ct.Entry(OFF, "retsim", dict(base), neural=True),
            ct.Entry(NEWS, "retsim", {**base, "model": "retsim-news"}, neural=True),
            ct.Entry(mixture_label(fold), "retsim",
                     {**base, "model": str(OUT / fold / "model.onnx")}, neural=True)]


def load_results(path: Path = RESULTS) -> dict:
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    return {"cells": {}, "training": {}}


def save_results(results: dict, path: Path = RESULTS) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(results, indent=1, default=str) + "\n", encoding="utf-8")
    tmp.replace(path)


def training_summary(fold: str) -> dict | None:
    """Key figures of the fold's training log (and the mixture's composition)."""
    path = OUT / fold / "mixture.json"
    if not path.exists():
        return None
    result = json.loads(path.read_text(encoding="utf-8"))
    log = json.loads(Path(result["log"]).read_text(encoding="utf-8"))
    config = log.get("config", {})
    return {
        **{k: result[k] for k in ("best_epoch", "best_validation_ari", "best_threshold",
                                  "baseline_validation_ari", "baseline_threshold",
                                  "epochs_run", "stopped_early", "loss_check", "cpu_seconds",
                                  "wall_seconds", "validation_docs")},
        "training_sets": result["training_sets"], "validation_sets": result["validation_sets"],
        "label_collisions": result["label_collisions"],
        "config": {k: config.get(k) for k in ("train_docs", "train_clusters",
                                              "hard_negative_links", "batches_per_epoch",
                                              "validation_clusters", "mixed_precision")},
        "epochs": log.get("epochs"),
        "model_sha256": sha256_of(OUT / fold / "model.onnx"),
    }


def sha256_of(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def evaluate_fold(fold: str, results: dict) -> None:
    """Every entry on every held-out set of ``fold`` (cells already in ``results`` and
    made with the same model file are kept)."""
    if not (OUT / fold / "model.onnx").exists():
        raise SystemExit(f"no model for fold {fold}: run --train {fold} first")
    results["training"][fold] = training_summary(fold)
    results["training"][fold]["cross_set_batch_pairs"] = cross_set_batch_pairs(fold)
    results["protocol"] = {"folds_held_out": {f: held_out_sets(f) for f in FOLDS},
                           "training_sets": {f: training_sets(f) for f in FOLDS},
                           "train_settings": TRAIN_SETTINGS,
                           "models": {OFF: "unisim RETSim v1", NEWS: "neardup/models/retsim-news",
                                      **{mixture_label(f): str(OUT / f / "model.onnx")
                                         for f in FOLDS}}}
    # Off-the-shelf and the mixture first (the criterion), then retsim-news; set by
    # set, cheapest sets first, so that an interrupted run leaves complete comparisons.
    off, news, mixture = entries(fold)
    order = sorted(held_out_sets(fold), key=lambda n: (n.startswith("indep-"), n))
    run_cells([(e, n) for group in ((off, mixture), (news,)) for n in order for e in group],
              fold, results, mixture_label(fold), analyse, save_results, width=24)


def evaluate_paired(fold: str, results: dict, *, model_file: Path, summary, entries: list,
                    models: dict, train_settings: dict, analyse_fn, save_fn, width: int,
                    **protocol) -> None:
    """A shipped model against ``fold``'s mixture model (``entries``: shipped, mixture) on
    every held-out set of the fold, set by set and cheapest sets first, so that an
    interrupted run leaves complete comparisons (cells already in ``results`` and made
    with the same model file are kept). ``summary`` is the fold's training record;
    ``models`` (label -> file), ``train_settings`` and any other ``protocol`` items are
    recorded in ``results["protocol"]``."""
    if not model_file.exists():
        raise SystemExit(f"no model for fold {fold}: run --train {fold} first")
    results["training"][fold] = summary
    results["protocol"] = {"folds_held_out": {f: held_out_sets(f) for f in FOLDS},
                           "training_sets": {f: training_sets(f) for f in FOLDS},
                           "train_settings": train_settings, **protocol, "models": models}
    news, mixture = entries
    order = sorted(held_out_sets(fold), key=lambda n: (n.startswith("indep-"), n))
    run_cells([(e, n) for n in order for e in (mixture, news)], fold, results, mixture.label,
              analyse_fn, save_fn, width=width)


def run_cells(plan: list, fold: str, results: dict, mixture: str, analyse_fn, save_fn, *,
              width: int) -> None:
    """Run each (entry, set) of ``plan`` with compare_transfer's ``run_cell``, skipping
    cells already in ``results`` (the mixture's only if made with the same model file);
    ``results`` is analysed and saved after every cell, so an interrupted run resumes."""
    ct = compare_transfer_module()
    for entry, name in plan:
        key = f"{entry.label}|{name}"
        cell = results["cells"].get(key)
        if cell is not None and (entry.label != mixture or cell.get(
                "model_sha256") == results["training"][fold]["model_sha256"]):
            continue
        cell = ct.run_cell(entry, name)
        if entry.label == mixture:
            cell["model_sha256"] = results["training"][fold]["model_sha256"]
        results["cells"][key] = cell
        results["analysis"] = analyse_fn(results)
        save_fn(results)
        print(f"{entry.label:{width}} {name:20} tuned {cell['tuned']['test_ari']:.3f} "
              f"({cell['tuned']['values']['threshold']}) {cell['cpu_seconds']:.0f} CPU s",
              flush=True)


def analyse(results: dict, labels_of=lambda fold: (OFF, NEWS, mixture_label(fold))) -> dict:
    """Per fold, held-out set and entry (``labels_of(fold)``): tuned and leave-set-out
    thresholds and test ARIs."""
    ct = compare_transfer_module()
    cells = results["cells"]
    out: dict = {}
    for fold in FOLDS:
        sets = held_out_sets(fold)
        for label in labels_of(fold):
            for name in sets:
                cell = cells.get(f"{label}|{name}")
                if cell is None:
                    continue
                others = [cells[f"{label}|{s}"] for s in sets
                          if s != name and f"{label}|{s}" in cells]
                key, worst = ct.maximin(others)
                lso = None
                if key is not None and len(others) == len(sets) - 1:
                    lso = {"values": json.loads(key), "worst_validation_ari_others": worst,
                           "test_ari": ct._curve(cell, "test")[key]}
                out.setdefault(fold, {}).setdefault(name, {})[label] = {
                    "tuned": {"values": cell["tuned"]["values"],
                              "validation_ari": cell["tuned"]["validation_ari"],
                              "test_ari": cell["tuned"]["test_ari"]},
                    "leave_set_out": lso,
                    "cpu_seconds": cell["cpu_seconds"],
                }
    return out


def fmt(x) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def table(results: dict) -> str:
    analysis = analyse(results)
    lines = [
        "Test ARI (threshold). *tuned*: threshold with the best validation ARI of the set "
        "itself; *leave-set-out*: threshold maximising the worst validation ARI over the "
        "fold's other held-out sets (reuters-adversarial included). Mixture A was trained on "
        "reuters-news + fold B's sets, mixture B on reuters-news + fold A's sets; all three "
        "models run in the same `experiments/generator_mixtures/retsim_mixture.py --evaluate` (default RETSim grid "
        "0.60-0.96, connected components).",
        "",
        "| fold | held-out set | off-the-shelf tuned | retsim-news tuned | mixture tuned | "
        "off-the-shelf leave-set-out | retsim-news leave-set-out | mixture leave-set-out |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    diffs: dict = {"tuned": {OFF: [], NEWS: []}, "leave_set_out": {OFF: [], NEWS: []}}
    for fold in FOLDS:
        mix = mixture_label(fold)
        for name in held_out_sets(fold):
            row = analysis.get(fold, {}).get(name, {})
            texts = []
            for what in ("tuned", "leave_set_out"):
                for label in (OFF, NEWS, mix):
                    r = (row.get(label) or {}).get(what)
                    texts.append(f"{fmt(r['test_ari'])} ({r['values']['threshold']:g})"
                                 if r else "—")
                    m = (row.get(mix) or {}).get(what)
                    if r and m and label != mix:
                        diffs[what][label].append(m["test_ari"] - r["test_ari"])
            lines.append(f"| {fold} | {name} | " + " | ".join(texts) + " |")
    lines += ["", "| mixture minus ... (test ARI over the held-out cells above) | n | mean | "
              "min | cells >= -0.01 |", "|---|---:|---:|---:|---:|"]
    for what in ("tuned", "leave_set_out"):
        for label, short in ((OFF, "off-the-shelf"), (NEWS, "retsim-news")):
            d = diffs[what][label]
            if d:
                lines.append(f"| {short}, {what.replace('_', '-')} | {len(d)} | "
                             f"{np.mean(d):+.3f} | {min(d):+.3f} | "
                             f"{sum(x >= -0.01 for x in d)}/{len(d)} |")
    for fold in FOLDS:
        t = results.get("training", {}).get(fold)
        if t:
            lines.append("")
            lines.append(
                f"Mixture {fold}: trained on {', '.join(t['training_sets'])} "
                f"({t['config']['train_docs']} documents, {t['config']['train_clusters']} "
                f"clusters, {t['config']['batches_per_epoch']} batches per epoch); validation "
                f"ARI (mixed validation subset, {t['validation_docs']} documents) "
                f"{t['baseline_validation_ari']:.4f} before training, "
                f"{t['best_validation_ari']:.4f} after (best epoch {t['best_epoch']}); "
                f"{t['cpu_seconds']:.0f} CPU s, {t['wall_seconds']:.0f} s wall.")
    return "\n".join(lines)


def paired_table(results: dict, analysis: dict, news: str, mixture_label_of, *, news_name: str,
                 script: str, setup: str, training_line) -> str:
    """Markdown table of a shipped model (``news``) against each fold's mixture model:
    tuned and leave-set-out test ARIs per held-out set, the mixture-minus-shipped
    differences, and ``training_line(fold, record)`` per trained fold. ``script`` ran the
    cells with ``setup`` (grid, clustering, threads)."""
    lines = [
        "Test ARI (threshold); validation ARI of the tuned threshold in brackets after it. "
        "*tuned*: threshold with the best validation ARI of the set itself; "
        "*leave-set-out*: threshold maximising the worst validation ARI over the fold's "
        "other held-out sets (reuters-adversarial included). Mixture A was trained on "
        "reuters-news + fold B's sets, mixture B on reuters-news + fold A's sets; both models "
        f"run in `{script} --evaluate` ({setup}).",
        "",
        f"| fold | held-out set | {news_name} tuned | mixture tuned | "
        f"{news_name} leave-set-out | mixture leave-set-out | CPU s ({news_name} / mixture) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    diffs: dict = {"tuned": [], "leave_set_out": []}
    val_diffs: list = []
    for fold in FOLDS:
        mix = mixture_label_of(fold)
        for name in held_out_sets(fold):
            row = analysis.get(fold, {}).get(name, {})
            if mix not in row:  # the fold's mixture model not evaluated on it (yet)
                continue
            texts = []
            for what in ("tuned", "leave_set_out"):
                for label in (news, mix):
                    r = (row.get(label) or {}).get(what)
                    if r and what == "tuned":
                        texts.append(f"{fmt(r['test_ari'])} ({r['values']['threshold']:g}; "
                                     f"val {fmt(r['validation_ari'])})")
                    else:
                        texts.append(f"{fmt(r['test_ari'])} ({r['values']['threshold']:g})"
                                     if r else "—")
                n = (row.get(news) or {}).get(what)
                m = (row.get(mix) or {}).get(what)
                if n and m:
                    diffs[what].append(m["test_ari"] - n["test_ari"])
                    if what == "tuned":
                        val_diffs.append(m["validation_ari"] - n["validation_ari"])
            cpu = " / ".join(f"{row[label]['cpu_seconds']:.0f}" if label in row else "—"
                             for label in (news, mix))
            lines.append(f"| {fold} | {name} | " + " | ".join(texts) + f" | {cpu} |")
    lines += ["", f"| mixture minus {news_name} (over the cells above) | n | mean | min | "
              "cells >= -0.01 |", "|---|---:|---:|---:|---:|"]
    for what, d in (("validation ARI, tuned", val_diffs),
                    ("test ARI, tuned", diffs["tuned"]),
                    ("test ARI, leave-set-out", diffs["leave_set_out"])):
        if d:
            lines.append(f"| {what} | {len(d)} | {np.mean(d):+.3f} | {min(d):+.3f} | "
                         f"{sum(x >= -0.01 for x in d)}/{len(d)} |")
    for fold in FOLDS:
        record = results.get("training", {}).get(fold)
        if record:
            lines += ["", training_line(fold, record)]
    return "\n".join(lines)


def main() -> int:
    return cli(__doc__, train, evaluate_fold, table, load_results,
               "evaluate this fold's model (and the baselines) on its held-out sets")


def cli(doc: str, train_fn, evaluate_fn, table_fn, load_fn, evaluate_help: str, *,
        save_fn=None, analyse_fn=None) -> int:
    """The --train / --evaluate / --table command line of a mixture experiment (and
    --merge when ``save_fn`` and ``analyse_fn`` are given)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--train", choices=sorted(FOLDS), action="append", default=[])
    parser.add_argument("--evaluate", choices=sorted(FOLDS), action="append", default=[],
                        help=evaluate_help)
    parser.add_argument("--table", action="store_true")
    parser.add_argument("--max-validation-docs", type=int, default=2000)
    if save_fn is not None:
        parser.add_argument("--merge", type=Path, action="append", default=[],
                            help="fold the cells and training records of another results "
                                 "file of this experiment (e.g. one fold evaluated in "
                                 "another checkout) into the results")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    for fold in args.train:
        train_fn(fold, args.max_validation_docs)
    if getattr(args, "merge", None):
        results = load_fn()
        for path in args.merge:
            merge_results(results, load_fn(path))
        results["analysis"] = analyse_fn(results)
        save_fn(results)
    if args.evaluate:
        results = load_fn()
        for fold in args.evaluate:
            evaluate_fn(fold, results)
    if args.table:
        print(table_fn(load_fn()))
    return 0


def merge_results(results: dict, other: dict) -> None:
    """Add ``other``'s cells and training records to ``results``. A cell both have must
    agree on every validation and test ARI (the runs are deterministic); a fold both
    trained must have the same model file."""
    for key, cell in other["cells"].items():
        mine = results["cells"].get(key)
        if mine is None:
            results["cells"][key] = cell
        elif [p["ari"] for p in mine["validation"] + mine["test"]] != \
                [p["ari"] for p in cell["validation"] + cell["test"]]:
            raise SystemExit(f"cannot merge: cell {key} differs between the two files")
    for fold, record in other.get("training", {}).items():
        mine = results["training"].get(fold)
        if mine is None:
            results["training"][fold] = record
        elif record and mine.get("model_sha256") != record.get("model_sha256"):
            raise SystemExit(f"cannot merge: fold {fold} was trained twice (model files differ)")
    results.setdefault("protocol", other.get("protocol"))

if __name__ == "__main__":
    sys.exit(main())
