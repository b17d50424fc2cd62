"""Step 3 of the verifier-cost study: verifiers without the costly features, on validation.

    python -m experiments.verifier_cost.ablate [--cache DIR] [--variants NAME ...] [--name NAME]

Reads the pairs of :mod:`experiments.verifier_cost.pairs`. For each variant (a feature
list, :data:`VARIANTS`) a HistGradientBoosting verifier is fitted on the *train* splits
of every set (as the shipped model: ``make_classifier("hgb", seed=0)``, 25% of the pairs'
dates dropped), and the candidates of every *validation* split (and each language of the
language-balanced ones) are scored and clustered as rerank clusters them by default
(Leiden at resolution 0.4 over the pairs at or above the threshold) and by connected
components. Thresholds: the shipped 0.9, and the maximin one (best worst validation ARI
over every split and language, as the shipped model's was chosen). The shipped model is
scored on the same pairs. The test splits are never read. Also written: the retrained
full model's split gain per feature (what the ensemble's trees use).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from experiments.verifier_cost.pairs import CACHE, SETS, VALIDATION_SPLITS

RESULTS = Path(__file__).resolve().parent / "results"
THRESHOLDS = [0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.98]
DEFAULT_THRESHOLD = 0.9
DATE_DROPOUT = 0.25
SHIPPED = ["word1_jaccard", "word1_containment", "word2_jaccard", "word2_containment",
           "word3_jaccard", "word3_containment", "word5_jaccard", "word5_containment",
           "char4_jaccard", "char4_containment", "char8_jaccard", "char8_containment",
           "masked3_jaccard", "numbers_jaccard", "length_ratio", "log_length_min",
           "log_length_max", "align_ratio", "align_partial", "date_days", "date_missing"]


def without(*names: str, base: list[str] = SHIPPED) -> list[str]:
    """``base`` without the features whose names start with any of ``names``."""
    return [f for f in base if not f.startswith(names)]


NO_ALIGN = without("align_")
#: Feature lists compared (the shipped model's 21 features, retrained, is the control).
VARIANTS: dict[str, list[str]] = {
    "retrained (shipped features)": SHIPPED,
    "no align_partial": without("align_partial"),
    "no alignments": NO_ALIGN,
    "no alignments, + nospace5": NO_ALIGN + ["nospace5_jaccard", "nospace5_containment"],
    "no alignments, + char5 + nospace5": NO_ALIGN + ["char5_jaccard", "char5_containment",
                                                     "nospace5_jaccard", "nospace5_containment"],
    "no align_partial, + nospace5": without("align_partial") + ["nospace5_jaccard",
                                                                "nospace5_containment"],
    "no alignments, no word2/word5/char8": without("align_", "word2", "word5", "char8"),
    "no align_partial, no word2/word5/char8": without("align_partial", "word2", "word5", "char8"),
    "no align_partial, no word2/word5": without("align_partial", "word2", "word5"),
    # ``align_ratio@N``: align_ratio over the first N normalized characters (shipped: 4,000).
    "no align_partial, align_ratio@1000": [f if f != "align_ratio" else "align_ratio@1000"
                                           for f in without("align_partial")],
    "no align_partial, align_ratio@500": [f if f != "align_ratio" else "align_ratio@500"
                                          for f in without("align_partial")],
    "align_ratio@1000 + align_partial": [f if f != "align_ratio" else "align_ratio@1000"
                                         for f in SHIPPED],
}


def load(cache: Path) -> dict[str, dict]:
    """Each set's cached pairs; ``align_ratio`` over N characters, where computed
    (``pairs --align-chars N``), joins them as column ``align_ratio@N``."""
    data = {s: dict(np.load(cache / f"{s}.npz", allow_pickle=False)) for s in SETS}
    for s, d in data.items():
        for path in sorted(cache.glob(f"{s}-align_ratio-*.npz")):
            extra = np.load(path, allow_pickle=False)
            d["features"] = np.append(d["features"], f"align_ratio@{path.stem.rsplit('-', 1)[1]}")
            for key in extra.files:
                d[key] = np.hstack([d[key], extra[key]])
    return data


def columns(data: dict, names: list[str]) -> list[int]:
    have = [str(f) for f in data["features"]]
    return [have.index(f) for f in names]


def fit(data: dict[str, dict], names: list[str], seed: int = 0):
    """A verifier on every set's train pairs (``verifier_transfer.fit_model``: the shipped
    model's classifier, one thread, 25% of the dates dropped)."""
    from experiments.verifier_transfer.verifier_transfer import fit_model

    sets = [s for s in SETS if "train_x" in data[s]]
    first = data[sets[0]]
    if any([str(f) for f in data[s]["features"]] != [str(f) for f in first["features"]] for s in sets):
        raise SystemExit("the cached sets hold different feature columns; recompute them")
    return fit_model([data[s]["train_x"] for s in sets], [data[s]["train_y"] for s in sets],
                     columns(first, names), names, seed=seed)


def probabilities(model, x: np.ndarray) -> np.ndarray:
    from threadpoolctl import threadpool_limits

    if len(x) == 0:
        return np.zeros(0, np.float32)
    with threadpool_limits(limits=1):
        return model.predict_proba(x)[:, 1].astype(np.float32)


def curves(d: dict, split: str, prob: np.ndarray, method: str) -> dict[str, dict[float, float]]:
    """ARI per threshold of the split's whole documents (``"validation"``) or, for the
    language-balanced split, of each language's documents."""
    from sklearn.metrics import adjusted_rand_score

    from neardup.graph import Pairs
    from neardup.graph.cluster import cluster_pairs

    truth = d[f"{split}_clusters"]
    left, right = d[f"{split}_left"], d[f"{split}_right"]
    langs = ([None] if split == "validation"
             else sorted(set(d[f"{split}_lang"].tolist()) - {""}))
    params = {"resolution": 0.4} if method == "leiden" else {}
    out: dict[str, dict[float, float]] = {}
    for t in THRESHOLDS:
        keep = prob >= t
        labels = cluster_pairs(Pairs(left[keep], right[keep], prob[keep]), len(truth),
                               method=method, **params).labels
        for lang in langs:
            docs = slice(None) if lang is None else d[f"{split}_lang"] == lang
            key = "validation" if lang is None else lang
            out.setdefault(key, {})[t] = float(adjusted_rand_score(truth[docs], labels[docs]))
    return out


def score(data: dict[str, dict], prob_of, method: str) -> dict[str, dict[float, float]]:
    """Every validation curve, keyed ``SET`` or ``SET/LANG``."""
    out = {}
    for s in SETS:
        for split in VALIDATION_SPLITS:
            if f"{split}_x" not in data[s]:
                continue
            for key, curve in curves(data[s], split, prob_of(s, split), method).items():
                out[s if key == "validation" else f"{s}/{key}"] = curve
    return out


def maximin(all_curves: dict[str, dict[float, float]]) -> tuple[float, float]:
    best = max(THRESHOLDS, key=lambda t: (min(c[t] for c in all_curves.values()), t))
    return best, min(c[best] for c in all_curves.values())


def summary(all_curves: dict[str, dict[float, float]]) -> dict:
    t, worst = maximin(all_curves)
    return {"maximin_threshold": t, "worst_at_maximin": worst,
            "at_maximin": {k: c[t] for k, c in all_curves.items()},
            "worst_at_default": min(c[DEFAULT_THRESHOLD] for c in all_curves.values()),
            "at_default": {k: c[DEFAULT_THRESHOLD] for k, c in all_curves.items()},
            "curves": all_curves}


def gains(model, names: list[str]) -> dict[str, float]:
    """Share of the ensemble's split gain per feature (non-leaf nodes of every tree)."""
    total = np.zeros(len(names))
    for predictors in model._predictors:  # noqa: SLF001 (scikit-learn keeps the trees here)
        nodes = predictors[0].nodes
        inner = ~nodes["is_leaf"].astype(bool)
        np.add.at(total, nodes["feature_idx"][inner], nodes["gain"][inner])
    share = total / total.sum()
    return {n: round(float(g), 4) for n, g in sorted(zip(names, share), key=lambda p: -p[1])}


def main() -> None:
    import joblib

    from neardup.models import resolve_model

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    parser.add_argument("--methods", nargs="*", default=["leiden", "components"])
    parser.add_argument("--save-models", type=Path, default=None,
                        help="write each variant's model folder under this directory")
    parser.add_argument("--seed", type=int, default=0, help="the classifiers' seed")
    parser.add_argument("--no-shipped", action="store_true", help="skip scoring the shipped model")
    parser.add_argument("--ship", type=Path, default=None,
                        help="write the first variant's model, with its full model.json, here")
    parser.add_argument("--name", default="ablation")
    args = parser.parse_args()
    data = load(args.cache)
    results: dict = {"sets": SETS, "thresholds": THRESHOLDS, "variants": {}}
    shipped_dir = resolve_model("verifier-news", "verifier")
    shipped = joblib.load(shipped_dir / "model.joblib")
    entries = [] if args.no_shipped else [("shipped verifier-news", SHIPPED, shipped)]
    results["seed"] = args.seed
    for label in args.variants:
        t0 = time.process_time()
        model = fit(data, VARIANTS[label], args.seed)
        print(f"fitted [{label}] in {time.process_time() - t0:.0f} CPU s", flush=True)
        entries.append((label, VARIANTS[label], model))
    for label, names, model in entries:
        row: dict = {"features": names, "gain_share": gains(model, names)}
        probs = {(s, split): probabilities(model, data[s][f"{split}_x"][:, columns(data[s], names)])
                 for s in SETS for split in VALIDATION_SPLITS if f"{split}_x" in data[s]}
        for method in args.methods:
            row[method] = summary(score(data, lambda s, split: probs[(s, split)], method))
            print(f"[{label}] {method}: worst {row[method]['worst_at_default']:.4f} at 0.9, "
                  f"{row[method]['worst_at_maximin']:.4f} at {row[method]['maximin_threshold']}; "
                  + " ".join(f"{k}={v:.4f}" for k, v in row[method]["at_default"].items()),
                  flush=True)
        results["variants"][label] = row
        if args.save_models is not None and label != "shipped verifier-news":
            save_model(model, names, row, args.save_models / slug(label))
        if args.ship is not None and label == args.variants[0]:
            save_model(model, names, row, args.ship, shipped=(label, args.seed, data))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {RESULTS / args.name}.json")


def slug(label: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in label).strip("-").replace("--", "-")


def save_model(model, names: list[str], row: dict, out: Path,
               shipped: tuple[str, int, dict] | None = None) -> None:
    """A model folder ``VerifierScorer`` loads (threshold: the Leiden maximin one over
    every validation split); ``shipped`` (variant, seed, data): also what a shipped
    model's ``model.json`` records of its training."""
    import joblib
    import sklearn

    out.mkdir(parents=True, exist_ok=True)
    joblib.dump(model, out / "model.joblib", compress=3)
    t = row["leiden"]["maximin_threshold"] if "leiden" in row else DEFAULT_THRESHOLD
    chars = {int(f.split("@")[1]) for f in names if "@" in f}
    meta = {"kind": "verifier", "file": "model.joblib", "classifier": "hgb",
            "features": [f.split("@")[0] for f in names], "threshold": t,
            **({"align_chars": chars.pop()} if chars else {}),
            "tuned_thresholds": {"minhash": t}, "candidates": "minhash",
            "candidate_params": None, "sklearn": sklearn.__version__,
            "recommended_cluster": {"algorithm": "leiden", "resolution": 0.4},
            "files": ["model.joblib", "model.json"]}
    if shipped is not None:
        label, seed, data = shipped
        meta.update({
            "validation_ari": round(row["leiden"]["worst_at_maximin"], 4),
            "validation_ari_is": "worst validation ARI over every set and language, Leiden "
                                 "at resolution 0.4 (maximin threshold)",
            "candidates_described": "rerank's default MinHash candidates: character 5-grams, "
                                    "Jaccard 0.1 (neardup.methods.rerank.CANDIDATE_DEFAULTS)",
            "tuned_thresholds_source": "maximin over the validation splits of every set in "
                                       "experiments/verifier_cost/ablate.py (MinHash candidates)",
            "trained_on": {s: int(len(d["train_y"])) for s, d in data.items() if "train_y" in d},
            "training": {"variant": label, "seed": seed, "date_dropout": DATE_DROPOUT,
                         "command": "python -m experiments.verifier_cost.pairs --align-chars 1000 && "
                                    f"python -m experiments.verifier_cost.ablate --variants '{label}' "
                                    f"--seed {seed} --ship {out.as_posix()} --name ship"},
        })
        meta["recommended_cluster"]["measured"] = (
            "experiments/verifier_cost/ablate.py (validation splits only): worst validation "
            f"ARI {row['leiden']['worst_at_maximin']:.4f} with Leiden at resolution 0.4 at "
            f"threshold {t}")
    (out / "model.json").write_text(json.dumps(meta, indent=2) + "\n")


if __name__ == "__main__":
    main()
