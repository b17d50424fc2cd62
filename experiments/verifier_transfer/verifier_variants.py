"""Variants of the mixture-trained verifier, compared on validation splits only.

    python -m experiments.verifier_transfer.verifier_variants [--cache DIR] [--variants NAME ...]

Reads the pair-feature cache of ``experiments/verifier_transfer/verifier_transfer.py features`` and, for each
variant (feature subset, monotone constraints, per-set sample weights, ...), runs the
leave-one-set-out protocol **on validation splits only**: for each set X, a verifier
trained on the other sets' train splits, its threshold the maximin over the other sets'
validation splits, scored on **X's validation split** ("held-out validation ARI").
The selection criterion is the worst held-out validation ARI over the ten sets and
the languages of the language-balanced validation splits (multi-latin, multi-cjk; ties:
the mean); the all-sets model's worst validation ARI (the shipping rule of
``verifier_transfer.py``) is reported too. No test split is read.

Results: experiments/verifier_transfer/results/verifier_variants.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from experiments.verifier_transfer.verifier_transfer import (
    SETS,
    language_scores,
    maximin_threshold,
    validation_curves,
    verifier_scores,
)
from neardup.methods.pair_features import LEXICAL_FEATURES

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results" / "verifier_variants.json"
SHIPPED = ["word1_jaccard", "word1_containment", "word2_jaccard", "word2_containment",
           "word3_jaccard", "word3_containment", "word5_jaccard", "word5_containment",
           "char4_jaccard", "char4_containment", "char8_jaccard", "char8_containment",
           "masked3_jaccard", "numbers_jaccard", "length_ratio", "log_length_min",
           "log_length_max", "align_ratio", "align_partial", "date_days", "date_missing"]
NO_LOG_LENGTH = [f for f in SHIPPED if not f.startswith("log_length")]
NUMERALS = [("numerals_jaccard" if f == "numbers_jaccard" else f) for f in SHIPPED]
#: Direction a feature may move the duplicate probability in (monotone constraints):
#: similarities up, date difference down, lengths and the missing-date flag either way.
DIRECTION = {"date_days": -1, "date_missing": 0, "log_length_min": 0, "log_length_max": 0}
DATE_DROPOUT = 0.25

VARIANTS = {
    "baseline": {"features": SHIPPED},
    "monotone": {"features": SHIPPED, "monotone": True},
    "balanced": {"features": SHIPPED, "balanced": True},
    "no-log-length": {"features": NO_LOG_LENGTH},
    "no-numbers": {"features": [f for f in SHIPPED if f != "numbers_jaccard"]},
    "monotone+no-log-length": {"features": NO_LOG_LENGTH, "monotone": True},
    "monotone+balanced": {"features": SHIPPED, "monotone": True, "balanced": True},
    "numerals": {"features": NUMERALS},
    "numerals+monotone": {"features": NUMERALS, "monotone": True},
    "numerals+balanced": {"features": NUMERALS, "balanced": True},
    "numerals+no-log-length": {"features": [f for f in NUMERALS if not f.startswith("log_length")]},
    "monotone+balanced+no-log-length": {"features": NO_LOG_LENGTH, "monotone": True,
                                        "balanced": True},
    # Every lexical feature: char 3/5-grams, white-space-free 5-grams and both number
    # features on top of the shipped ones.
    "all-lexical": {"features": list(LEXICAL_FEATURES)},
    # Off-the-shelf RETSim's similarities (a cache from ``features --retsim``).
    "retsim": {"features": SHIPPED + ["retsim_near", "retsim_partial"]},
    "retsim+numerals": {"features": NUMERALS + ["retsim_near", "retsim_partial"]},
}


def fit(data: dict, train_sets: list[str], names: list[str], spec: dict, seed: int = 0):
    from threadpoolctl import threadpool_limits

    from neardup.train.verifier import make_classifier

    all_names = list(data[train_sets[0]]["features"])
    cols = [all_names.index(f) for f in names]
    x = np.concatenate([data[s]["train_x"] for s in train_sets])[:, cols].copy()
    y = np.concatenate([data[s]["train_y"] for s in train_sets]).astype(np.int64)
    if "date_missing" in names:  # as train_verifier: a share of pairs shown without dates
        drop = np.random.default_rng(seed + 7).random(len(x)) < DATE_DROPOUT
        x[drop, names.index("date_missing")] = 1.0
        if "date_days" in names:
            x[drop, names.index("date_days")] = 0.0
    weight = None
    if spec.get("balanced"):
        # Every set weighs the same in the loss, whatever its number of pairs.
        sizes = [len(data[s]["train_y"]) for s in train_sets]
        weight = np.concatenate([np.full(n, len(y) / (len(sizes) * n)) for n in sizes])
    model = make_classifier("hgb", seed=seed)
    if spec.get("monotone"):
        model.set_params(monotonic_cst=[DIRECTION.get(f, 1) for f in names])
    with threadpool_limits(limits=1):
        model.fit(x, y, sample_weight=weight)
    return model, cols


def run_variant(data: dict, spec: dict) -> dict:
    names = list(spec["features"])
    trainable = [s for s in SETS if "train_x" in data[s]]
    held_out = {}
    for held in SETS:
        model, cols = fit(data, [t for t in trainable if t != held], names, spec)
        curves = {s: validation_curves(data[s], lambda x: verifier_scores(model, x[:, cols])) for s in SETS}
        t, worst_other = maximin_threshold([c for s in SETS if s != held for c in curves[s].values()])
        held_out[held] = {"threshold": t, "worst_other_validation_ari": worst_other,
                          "validation_ari": curves[held]["validation"][t],
                          "best_own_validation_ari": max(curves[held]["validation"].values())}
        if len(curves[held]) > 1:
            held_out[held]["language_validation"] = language_scores(curves[held], t)
    model, cols = fit(data, trainable, names, spec)
    curves = {s: validation_curves(data[s], lambda x: verifier_scores(model, x[:, cols])) for s in SETS}
    t, worst = maximin_threshold([c for s in SETS for c in curves[s].values()])
    # Every held-out figure counts: each set's validation split and each language of the
    # language-balanced ones.
    scores = [v for r in held_out.values()
              for v in [r["validation_ari"], *r.get("language_validation", {}).values()]]
    return {"spec": {k: v for k, v in spec.items() if k != "features"}, "features": names,
            "held_out_validation": held_out,
            "held_out_worst": float(min(scores)), "held_out_mean": float(np.mean(scores)),
            "all_sets": {"threshold": t, "worst_validation_ari": worst,
                         "validation_ari": {s: curves[s]["validation"][t] for s in SETS},
                         "language_validation": {
                             s: language_scores(curves[s], t) for s in SETS if len(curves[s]) > 1}}}


def load_cache(cache: Path) -> dict:
    """Every set's arrays from a ``verifier_transfer.py features`` cache (MinHash character
    5-gram candidates), cluster labels as integers (the same ARI, computed faster)."""
    data = {s: dict(np.load(cache / f"{s}-char5.npz", allow_pickle=False)) for s in SETS}
    for d in data.values():
        for split in ("validation", "language_validation", "test"):
            if f"{split}_clusters" in d:
                d[f"{split}_clusters"] = np.unique(d[f"{split}_clusters"], return_inverse=True)[1]
    return data


def held_out_cells(row: dict) -> str:
    """A result row's held-out validation ARI per set (threshold; languages), as table cells."""
    return " | ".join(
        f"{row['held_out_validation'][s]['validation_ari']:.3f} "
        f"({row['held_out_validation'][s]['threshold']:g})"
        + "".join(f"; {k} {v:.3f}"
                  for k, v in row["held_out_validation"][s].get("language_validation", {}).items())
        for s in SETS)


def markdown(results: dict) -> str:
    """The variants table of docs/transfer.md."""
    head = ("| variant (cache) | worst held-out validation ARI | mean | all-sets worst validation ARI | "
            + " | ".join(SETS) + " |\n|---|---:|---:|---:|" + "---:|" * len(SETS) + "\n")
    rows = []
    for name, row in results.items():
        cells = held_out_cells(row)
        rows.append(f"| {name} ({Path(row['cache']).name}) | {row['held_out_worst']:.4f} | "
                    f"{row['held_out_mean']:.4f} | {row['all_sets']['worst_validation_ari']:.4f} | "
                    f"{cells} |")
    return head + "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/neardup-verifier-transfer"))
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    parser.add_argument("--label", default="", help="suffix for the result keys (e.g. the cache)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--table", action="store_true", help="print the table of --results and stop")
    args = parser.parse_args()
    if args.table:
        print(markdown(json.loads(args.results.read_text())))
        return
    data = load_cache(args.cache)
    results = json.loads(args.results.read_text()) if args.results.exists() else {}
    for name in args.variants:
        cpu = time.process_time()
        row = run_variant(data, VARIANTS[name])
        row["cache"] = str(args.cache)
        row["cpu_seconds"] = round(time.process_time() - cpu, 1)
        results[name + args.label] = row
        print(f"{name + args.label}: held-out validation worst {row['held_out_worst']:.4f} "
              f"mean {row['held_out_mean']:.4f}; all-sets worst {row['all_sets']['worst_validation_ari']:.4f}"
              f" | " + " ".join(f"{s} {r['validation_ari']:.3f}({r['threshold']:g})"
                               + "".join(f" {k} {v:.3f}" for k, v in r.get("language_validation", {}).items())
                               for s, r in row["held_out_validation"].items()), flush=True)
        args.results.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
