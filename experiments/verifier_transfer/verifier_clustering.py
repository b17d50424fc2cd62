"""The verifier's accepted pairs clustered by other means than connected components,
compared on validation splits only.

    python -m experiments.verifier_transfer.verifier_clustering [--cache DIR] [--clusterings NAME ...]

``--method rerank`` links every pair the verifier accepts and takes connected components
(single linkage), so one false edge merges two stories (multi-latin's false merges) and
the threshold has to stay high, which drops the heavily noised copies (indep-nlpaug's
misses). neardup already offers clusterings that cut weak bridges (``--cluster leiden``,
``louvain``, ``hac``; Silcock et al. 2022, section 4 and appendix A.1). This measures
whether one of them transfers better, with the rules of ``experiments/verifier_transfer/verifier_variants.py``
and the pair-feature cache of ``experiments/verifier_transfer/verifier_transfer.py features`` (shipped features):

* **held-out rule**: for each set X, the verifier trained on the other sets' train
  splits (as ``verifier_variants.py``'s baseline), the threshold the maximin over the
  other sets' validation curves *under this clustering*, scored on X's validation split
  (and each language of the language-balanced splits); criterion: the worst of these;
* **shipping rule**: the shipped ``verifier-news`` under this clustering (worst
  validation curve at its default threshold, and at the maximin one), against the shipped
  model with connected components at its default threshold; and, under the same
  clustering, a verifier retrained on every train split (threshold by maximin) against the
  shipped one.

No test split is read. Results: experiments/verifier_transfer/results/verifier_clustering.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from experiments.verifier_transfer.verifier_transfer import (
    LANGUAGE_SPLIT,
    SETS,
    THRESHOLDS,
    maximin_threshold,
    verifier_scores,
)
from experiments.verifier_transfer.verifier_variants import SHIPPED, VARIANTS, fit, held_out_cells, load_cache

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results" / "verifier_clustering.json"

#: name -> keyword arguments of :func:`cluster`. ``edges``: which candidate pairs go to
#: the clustering: ``"accepted"`` (probability >= threshold, what rerank passes on) or
#: ``"all"`` (every candidate with its probability; for average linkage, whose merge
#: rule is the threshold itself, ``distance_threshold = 1 - threshold``).
CLUSTERINGS = {
    "components": {"method": "components"},
    "leiden": {"method": "leiden", "resolution": 1.0},
    "leiden-r0.5": {"method": "leiden", "resolution": 0.5},
    "leiden-r0.2": {"method": "leiden", "resolution": 0.2},
    "leiden-r0.3": {"method": "leiden", "resolution": 0.3},
    "leiden-r0.4": {"method": "leiden", "resolution": 0.4},
    "leiden-r0.6": {"method": "leiden", "resolution": 0.6},
    "leiden-r0.7": {"method": "leiden", "resolution": 0.7},
    "louvain-r0.5": {"method": "louvain", "resolution": 0.5},
    "hac-average-all": {"method": "hac", "linkage": "average", "edges": "all"},
    "hac-average-d0.5": {"method": "hac", "linkage": "average", "distance_threshold": 0.5},
}


def cluster(left, right, prob, n: int, t: float, spec: dict) -> np.ndarray:
    from neardup.graph import Pairs
    from neardup.graph.agglomerative import agglomerative_labels
    from neardup.graph.cluster import cluster_pairs

    if spec.get("edges") == "all":
        pairs = Pairs(left, right, prob)
        return agglomerative_labels(pairs, n, linkage=spec["linkage"],
                                    distance_threshold=min(1.0 - t, 0.999))
    keep = prob >= t
    pairs = Pairs(left[keep], right[keep], prob[keep])
    if spec["method"] == "hac":
        return agglomerative_labels(pairs, n, linkage=spec["linkage"],
                                    distance_threshold=spec["distance_threshold"])
    params = {k: v for k, v in spec.items() if k in ("resolution",)}
    return cluster_pairs(pairs, n, method=spec["method"], **params).labels


def curves(data: dict, probs: dict, spec: dict) -> dict[str, dict]:
    """A set's validation curves under ``spec``: ``"validation"`` and one per language of
    its language-balanced split (as ``verifier_transfer.validation_curves``, each split
    clustered once per threshold)."""
    from sklearn.metrics import adjusted_rand_score

    out: dict[str, dict] = {}
    for split in ("validation", LANGUAGE_SPLIT):
        if split not in probs:
            continue
        truth = data[f"{split}_clusters"]
        langs = (None,) if split == "validation" else sorted(
            set(data[f"{split}_lang"].tolist()) - {""})
        for t in THRESHOLDS:
            labels = cluster(data[f"{split}_left"], data[f"{split}_right"], probs[split],
                             len(truth), t, spec)
            for lang in langs:
                key = "validation" if lang is None else lang
                docs = slice(None) if lang is None else data[f"{split}_lang"] == lang
                out.setdefault(key, {})[t] = float(adjusted_rand_score(truth[docs], labels[docs]))
    return out


def test_curves(data: dict, prob: np.ndarray, spec: dict) -> dict[str, dict]:
    """Test ARI curves under ``spec``: ``"test"`` and one per language of the test split."""
    from sklearn.metrics import adjusted_rand_score

    truth, lang = data["test_clusters"], data["test_lang"]
    languages = sorted(set(lang.tolist()) - {""})
    out: dict[str, dict] = {}
    for t in THRESHOLDS:
        labels = cluster(data["test_left"], data["test_right"], prob, len(truth), t, spec)
        out.setdefault("test", {})[t] = float(adjusted_rand_score(truth, labels))
        for code in languages if len(languages) > 1 else ():
            out.setdefault(code, {})[t] = float(adjusted_rand_score(truth[lang == code],
                                                                    labels[lang == code]))
    return out


def test_figures(name: str, cache: Path, probs: dict, results: dict) -> dict:
    """Test ARI of a clustering already measured on validation (``results[name]``), at the
    thresholds its validation rules chose: held out and the shipped model (at its default
    threshold and at the maximin one). Read only after the choice."""
    spec = CLUSTERINGS[name]
    data = load_cache(cache)
    row = results[name]
    held = {}
    for s in SETS:
        t = row["held_out_validation"][s]["threshold"]
        c = test_curves(data[s], probs["held-out"][s][s]["test"], spec)
        held[s] = {"threshold": t, **{k: v[t] for k, v in c.items()}}
    shipped = {}
    for s in SETS:
        c = test_curves(data[s], probs["shipped"][s]["test"], spec)
        shipped[s] = {"at_default": {k: v[probs["shipped_default_threshold"]] for k, v in c.items()},
                      "at_maximin": {k: v[row["shipped"]["threshold"]] for k, v in c.items()}}
    all_sets = {}
    for s in SETS:
        c = test_curves(data[s], probs["all-sets"][s]["test"], spec)
        all_sets[s] = {k: v[row["all_sets"]["threshold"]] for k, v in c.items()}
    return {"held_out": held, "shipped": shipped, "all_sets": all_sets}


def probabilities(data: dict, seed: int = 0) -> dict:
    """Pair probabilities of every validation split: ``{"held-out": {X: {set: {split: p}}},
    "shipped": {set: {split: p}}}``; ``seed``: the retrained verifiers' seed."""
    import joblib

    from neardup.models import resolve_model

    def of(model, cols):
        return {s: {split: verifier_scores(model, data[s][f"{split}_x"][:, cols])
                    for split in ("validation", LANGUAGE_SPLIT, "test") if f"{split}_x" in data[s]}
                for s in SETS}

    out = {"held-out": {}}
    trainable = [s for s in SETS if "train_x" in data[s]]
    for held in SETS:
        model, cols = fit(data, [t for t in trainable if t != held], SHIPPED, VARIANTS["baseline"],
                          seed=seed)
        out["held-out"][held] = of(model, cols)
    model, cols = fit(data, trainable, SHIPPED, VARIANTS["baseline"], seed=seed)
    out["all-sets"] = of(model, cols)
    shipped_dir = resolve_model("verifier-news", "verifier")
    meta = json.loads((shipped_dir / "model.json").read_text())
    names = [str(f) for f in data[SETS[0]]["features"]]
    out["shipped"] = of(joblib.load(shipped_dir / meta["file"]),
                        [names.index(f) for f in meta["features"]])
    out["shipped_default_threshold"] = float(meta["tuned_thresholds"]["minhash"])
    return out


def run_clustering(name: str, cache: Path, probs: dict) -> dict:
    cpu = time.process_time()
    spec = CLUSTERINGS[name]
    data = load_cache(cache)
    held_out = {}
    for held in SETS:
        c = {s: curves(data[s], probs["held-out"][held][s], spec) for s in SETS}
        t, worst_other = maximin_threshold([v for s in SETS if s != held for v in c[s].values()])
        row = {"threshold": t, "worst_other_validation_ari": worst_other,
               "validation_ari": c[held]["validation"][t],
               "best_own_validation_ari": max(c[held]["validation"].values())}
        langs = {k: v[t] for k, v in c[held].items() if k != "validation"}
        if langs:
            row["language_validation"] = langs
        held_out[held] = row
    scores = [v for r in held_out.values()
              for v in [r["validation_ari"], *r.get("language_validation", {}).values()]]
    c = {s: curves(data[s], probs["shipped"][s], spec) for s in SETS}
    every = [v for s in SETS for v in c[s].values()]
    t, worst = maximin_threshold(every)
    default_t = probs["shipped_default_threshold"]
    c_all = {s: curves(data[s], probs["all-sets"][s], spec) for s in SETS}
    t_all, worst_all = maximin_threshold([v for s in SETS for v in c_all[s].values()])
    return {"spec": spec, "held_out_validation": held_out,
            "held_out_worst": float(min(scores)), "held_out_mean": float(np.mean(scores)),
            "shipped": {"threshold": t, "worst_validation_ari": worst,
                        "worst_validation_at_default": float(min(v[default_t] for v in every)),
                        "worst_validation_by_threshold": {x: float(min(v[x] for v in every))
                                                          for x in THRESHOLDS},
                        "validation_ari": {s: {k: v[t] for k, v in c[s].items()} for s in SETS}},
            "all_sets": {"threshold": t_all, "worst_validation_ari": worst_all,
                         "validation_ari": {s: {k: v[t_all] for k, v in c_all[s].items()}
                                            for s in SETS}},
            "cache": str(cache), "cpu_seconds": round(time.process_time() - cpu, 1)}


def markdown(results: dict) -> str:
    head = ("| clustering | worst held-out validation ARI | mean | shipped model: worst validation ARI "
            "at its default threshold (0.9) | at the maximin threshold | retrained on every set: worst validation ARI | "
            + " | ".join(SETS) + " |\n|---|---:|---:|---:|---:|---:|" + "---:|" * len(SETS) + "\n")
    rows = []
    for name, row in results.items():
        cells = held_out_cells(row)
        rows.append(f"| {name} | {row['held_out_worst']:.4f} | {row['held_out_mean']:.4f} | "
                    f"{row['shipped']['worst_validation_at_default']:.4f} | "
                    f"{row['shipped']['worst_validation_ari']:.4f} ({row['shipped']['threshold']:g}) | "
                    f"{row['all_sets']['worst_validation_ari']:.4f} ({row['all_sets']['threshold']:g}) | "
                    f"{cells} |")
    return head + "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/neardup-verifier-transfer"))
    parser.add_argument("--clusterings", nargs="*", default=list(CLUSTERINGS))
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the retrained verifiers (held out and on every set)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--table", action="store_true", help="print the table of --results and stop")
    parser.add_argument("--test", action="store_true",
                        help="add the test figures of --clusterings already in --results (read "
                             "them only after choosing on validation)")
    args = parser.parse_args()
    if args.table:
        print(markdown(json.loads(args.results.read_text())))
        return
    cpu = time.process_time()
    probs = probabilities(load_cache(args.cache), args.seed)
    print(f"probabilities: {time.process_time() - cpu:.0f} CPU s", flush=True)
    results = json.loads(args.results.read_text()) if args.results.exists() else {}
    if args.test:
        for name in args.clusterings:
            results[name]["test"] = test_figures(name, args.cache, probs, results)
            print(name, json.dumps(results[name]["test"]), flush=True)
        args.results.write_text(json.dumps(results, indent=1) + "\n")
        return
    with ProcessPoolExecutor(args.workers) as pool:
        jobs = {name: pool.submit(run_clustering, name, args.cache, probs) for name in args.clusterings}
        for name, job in jobs.items():
            row = results[name] = job.result()
            print(f"{name}: held-out validation worst {row['held_out_worst']:.4f} mean "
                  f"{row['held_out_mean']:.4f}; shipped worst {row['shipped']['worst_validation_ari']:.4f}"
                  f" at {row['shipped']['threshold']:g} (at default "
                  f"{row['shipped']['worst_validation_at_default']:.4f}); retrained worst "
                  f"{row['all_sets']['worst_validation_ari']:.4f} at {row['all_sets']['threshold']:g}; "
                  f"{row['cpu_seconds']} CPU s | "
                  + " ".join(f"{s} {r['validation_ari']:.3f}({r['threshold']:g})"
                             for s, r in row["held_out_validation"].items()), flush=True)
            args.results.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
