"""The shipped verifier's recipe with and without a real-OCR train split in its mixture.

    python -m experiments.ocr_verifier.train_ocr_verifier features --ocr-train DIR/train.jsonl.gz
    python -m experiments.ocr_verifier.train_ocr_verifier fit --out-baseline /tmp/verifier-baseline \
        --out-variant /tmp/verifier-ocr

``features`` is experiments/verifier_transfer/verifier_transfer.py's ``features`` step
(char5 MinHash candidates, ``training_pairs`` with 10000 pairs per set, seed 0, the shipped
model's lexical features) restricted to what this experiment reads: each set's *train*
pairs and its *validation* (and language-validation) candidates. Test splits are never
opened. ``multi-ocr``'s train pairs come from ``--ocr-train`` (a train split built by
``scripts/make_ocr_set.py --splits train``), its validation candidates from
data/multi-ocr/validation.jsonl.gz.

``fit`` fits, as ``verifier_transfer evaluate`` fits its all-sets model (HistGradientBoosting,
seed 0, date dropout 0.25): the **baseline** on the nine train splits the shipped model was
trained on, and the **variant** on those plus multi-ocr's train split. Each is written as a
model folder (the shipped ``model.json``'s fields, threshold 0.9, its own ``trained_on``)
that ``--param model=DIR`` loads. It also reports, per model, the connected-components ARI
curves over thresholds on every validation split (the recipe's maximin rule), and checks
whether the baseline predicts exactly as the shipped model does on the validation
candidates.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import numpy as np

from experiments.verifier_transfer.verifier_transfer import (
    SETS, THRESHOLDS, fit_model, maximin_threshold, validation_curves, verifier_scores)
from experiments.verifier_transfer.verifier_transfer import compute_features as transfer_features
from neardup.datasets.independent import LANGUAGE_SPLIT

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results"
OCR = "multi-ocr"
ALL_SETS = SETS + [OCR]


def compute_features(name: str, cache: Path, ocr_train: Path | None, max_pairs: int = 10000,
                     seed: int = 0) -> None:
    """verifier_transfer's feature step without the test half (validation splits only),
    multi-ocr's train pairs taken from ``ocr_train``."""
    transfer_features(name, "char5", cache, max_pairs, seed,
                      splits=("validation", LANGUAGE_SPLIT),  # never "test"
                      train_path=ocr_train if name == OCR else None)


def write_model(model, names: list[str], out: Path, trained_on: dict[str, int], note: str) -> None:
    import joblib

    from neardup.models import resolve_model
    from neardup.train.verifier import save_trees

    shipped = json.loads((resolve_model("verifier-news", "verifier") / "model.json").read_text())
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    joblib.dump(model, out / "model.joblib", compress=3)
    written = save_trees(model, out)
    meta = {**shipped, "features": names, "trained_on": trained_on, "threshold": 0.9,
            "tuned_thresholds": {"minhash": 0.9},
            "tuned_thresholds_source": "kept at the shipped model's 0.9 (experiments/ocr_verifier)",
            "validation_ari": None, "validation_ari_is": None, "note": note,
            "files": ["model.joblib", *written, "model.json"]}
    import sklearn
    meta["sklearn"] = sklearn.__version__
    (out / "model.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"wrote {out}", flush=True)


def fit(cache: Path, out_baseline: Path, out_variant: Path, seed: int = 0,
        ocr_repeat: int = 1) -> None:
    import joblib

    from neardup.models import resolve_model

    data = {s: dict(np.load(cache / f"{s}-char5.npz", allow_pickle=False)) for s in ALL_SETS}
    all_names = [str(f) for f in data[SETS[0]]["features"]]
    shipped_dir = resolve_model("verifier-news", "verifier")
    shipped_meta = json.loads((shipped_dir / "model.json").read_text())
    names = list(shipped_meta["features"])
    cols = [all_names.index(f) for f in names]
    shipped_train = list(shipped_meta["trained_on"])
    trainable = [s for s in SETS if "train_y" in data[s]]
    assert trainable == shipped_train, (trainable, shipped_train)
    results: dict = {"features": names, "thresholds": THRESHOLDS, "seed": seed,
                     "ocr_repeat": ocr_repeat}
    models = {"shipped": joblib.load(shipped_dir / shipped_meta["file"])}
    t0 = time.perf_counter()
    models["baseline"] = fit_model([data[s]["train_x"] for s in trainable],
                                   [data[s]["train_y"] for s in trainable], cols, names, seed=seed)
    variant_sets = trainable + [OCR]
    # --ocr-repeat k: multi-ocr's train rows k times (its weight in the mixture; 1 = as is)
    reps = [ocr_repeat if s == OCR else 1 for s in variant_sets]
    models["variant"] = fit_model([np.tile(data[s]["train_x"], (k, 1)) for s, k in zip(variant_sets, reps)],
                                  [np.tile(data[s]["train_y"], k) for s, k in zip(variant_sets, reps)],
                                  cols, names, seed=seed)
    results["fit_seconds"] = time.perf_counter() - t0
    results["trained_on"] = {
        "baseline": {s: int(len(data[s]["train_y"])) for s in trainable},
        "variant": {s: int(len(data[s]["train_y"])) for s in variant_sets},
        "shipped": shipped_meta["trained_on"]}
    results["train_positives"] = {s: int(data[s]["train_y"].sum()) for s in variant_sets}
    # Does the baseline reproduce the shipped model?
    same = {}
    for s in ALL_SETS:
        x = data[s]["validation_x"][:, cols]
        same[s] = bool(np.array_equal(verifier_scores(models["shipped"], x),
                                      verifier_scores(models["baseline"], x)))
    results["baseline_predicts_as_shipped_on_validation"] = same
    print("baseline == shipped on validation candidates:", same, flush=True)
    results["curves"] = {}
    for label, model in models.items():
        curves = {s: validation_curves(data[s], lambda x, m=model: verifier_scores(m, x[:, cols]))
                  for s in ALL_SETS}
        every = [c for s in ALL_SETS for c in curves[s].values()]
        without_ocr = [c for s in SETS for c in curves[s].values()]
        results["curves"][label] = {
            "validation_cc_ari": {s: {k: {str(t): v for t, v in c.items()} for k, c in curves[s].items()}
                                  for s in ALL_SETS},
            "maximin_every_validation_incl_ocr": maximin_threshold(every),
            "maximin_validation_without_ocr": maximin_threshold(without_ocr),
            "at_0.9": {s: curves[s]["validation"][0.9] for s in ALL_SETS},
            "worst_at_0.9_without_ocr": min(c[0.9] for c in without_ocr),
        }
        print(label, "CC ARI at 0.9:", {s: round(curves[s]["validation"][0.9], 3) for s in ALL_SETS},
              "maximin(no ocr):", maximin_threshold(without_ocr),
              "maximin(all):", maximin_threshold(every), flush=True)
    name = "fit" + (f"-seed{seed}" if seed else "") + (f"-ocr-repeat{ocr_repeat}" if ocr_repeat > 1 else "")
    (RESULTS / f"{name}.json").write_text(json.dumps(results, indent=1) + "\n")
    write_model(models["baseline"], names, out_baseline, results["trained_on"]["baseline"],
                "baseline: the shipped recipe refitted (experiments/ocr_verifier)")
    write_model(models["variant"], names, out_variant, results["trained_on"]["variant"],
                "variant: the shipped recipe plus a real-OCR train split (experiments/ocr_verifier)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["features", "fit"])
    parser.add_argument("--sets", nargs="*", default=ALL_SETS)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/ocr-verifier-cache"))
    parser.add_argument("--ocr-train", type=Path, default=Path("/tmp/ocr-train-set/train.jsonl.gz"))
    parser.add_argument("--out-baseline", type=Path, default=Path("/tmp/verifier-baseline"))
    parser.add_argument("--out-variant", type=Path, default=Path("/tmp/verifier-ocr"))
    parser.add_argument("--seed", type=int, default=0,
                        help="fit: the classifier's and the date dropout's seed (the shipped "
                             "recipe: 0); other seeds measure how far a refit moves by chance")
    parser.add_argument("--ocr-repeat", type=int, default=1,
                        help="fit: multi-ocr's train rows this many times in the variant's mixture")
    args = parser.parse_args()
    if args.step == "features":
        for name in args.sets:
            compute_features(name, args.cache, args.ocr_train)
    else:
        fit(args.cache, args.out_baseline, args.out_variant, args.seed, args.ocr_repeat)


if __name__ == "__main__":
    main()
