"""The shipped verifier's recipe with OCR-tolerant pair features added (issue 37).

    python -m experiments.ocr_features.train_ocr_features features --cache /tmp/ocrfeat-cache
    python -m experiments.ocr_features.train_ocr_features features --fold-diacritics --cache /tmp/ocrfeat-cache-fold
    python -m experiments.ocr_features.train_ocr_features fit --seed S --out /tmp/ocrfeat-models

``features`` is experiments/verifier_transfer's ``features`` step (char5 MinHash candidates,
``training_pairs`` with 10,000 pairs per set, seed 0, every feature of
``LEXICAL_FEATURES``, which now holds the ``ocr4_*``/``ocr5_*`` features) for each set's
*train* pairs and its *validation* and language-validation candidates, and multi-ocr's
validation candidates (it has no train split here: data/multi-ocr holds none). **No test
split is opened** (``splits`` excludes it). ``--fold-diacritics``: the same on texts without
diacritics (``pair_features(fold_diacritics=True)``), for the ``fold-nospace`` variant.

``fit`` fits, as verifier_transfer's all-sets model (HistGradientBoosting, ``--seed``, date
dropout 0.25) on the nine train splits the shipped model lists in ``trained_on``:

* ``baseline``: the shipped 21 features (cache without folding);
* ``ocr``: the shipped 21 + ``ocr4_jaccard``, ``ocr4_containment``, ``ocr5_jaccard``,
  ``ocr5_containment`` (the same cache);
* ``fold-nospace``: the shipped 21 + ``nospace5_jaccard``, ``nospace5_containment``, every
  feature computed on diacritic-folded texts (the fold cache; ``fold_diacritics: true`` in
  its model.json, which rerank reads).

Each is written to ``OUT/<variant>-s<seed>`` as a model folder (the shipped model.json's
fields, threshold 0.9, its own features and ``trained_on``, ``trees.npz``) that
``--param model=DIR`` loads. ``results/fit-s<seed>.json``: the connected-components ARI at
0.9 on each validation split per model (a quick check; the end-to-end numbers come from
rerank).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from experiments.ocr_verifier.train_ocr_verifier import write_model
from experiments.verifier_transfer.verifier_transfer import (
    SETS, compute_features, fit_model, validation_curves, verifier_scores)
from neardup.datasets.independent import LANGUAGE_SPLIT

RESULTS = Path(__file__).resolve().parent / "results"
OCR = "multi-ocr"
ALL_SETS = SETS + [OCR]
OCR_FEATURES = ["ocr4_jaccard", "ocr4_containment", "ocr5_jaccard", "ocr5_containment"]
NOSPACE = ["nospace5_jaccard", "nospace5_containment"]


def features(cache: Path, fold: bool, sets: list[str]) -> None:
    for name in sets:
        compute_features(name, "char5", cache, 10000, 0, fold_diacritics=fold,
                         splits=("validation", LANGUAGE_SPLIT))  # never "test"


def fit(cache: Path, fold_cache: Path, out: Path, seed: int, variants: list[str]) -> None:
    from neardup.models import resolve_model

    shipped = json.loads((resolve_model("verifier-news", "verifier") / "model.json").read_text())
    base = list(shipped["features"])
    plans = {"baseline": (cache, base, False), "ocr": (cache, base + OCR_FEATURES, False),
             "fold-nospace": (fold_cache, base + NOSPACE, True)}
    results: dict = {"seed": seed, "models": {}}
    for label in variants:
        where, names, fold = plans[label]
        data = {s: dict(np.load(where / f"{s}-char5.npz", allow_pickle=False)) for s in ALL_SETS}
        assert all(bool(d["fold_diacritics"]) == fold for d in data.values()), where
        all_names = [str(f) for f in data[SETS[0]]["features"]]
        cols = [all_names.index(f) for f in names]
        trainable = [s for s in SETS if "train_y" in data[s]]
        assert trainable == list(shipped["trained_on"]), trainable
        assert "train_y" not in data[OCR]
        t0 = time.perf_counter()
        model = fit_model([data[s]["train_x"] for s in trainable],
                          [data[s]["train_y"] for s in trainable], cols, names, seed=seed)
        seconds = time.perf_counter() - t0
        cc = {s: validation_curves(data[s], lambda x, m=model: verifier_scores(m, x[:, cols]))
              for s in ALL_SETS}
        results["models"][label] = {
            "features": names, "fold_diacritics": fold, "fit_seconds": round(seconds, 1),
            "trained_on": {s: int(len(data[s]["train_y"])) for s in trainable},
            "cc_ari_at_0.9": {s: {k: round(c[0.9], 4) for k, c in cc[s].items()} for s in ALL_SETS}}
        print(label, seed, {s: round(cc[s]["validation"][0.9], 3) for s in ALL_SETS}, flush=True)
        target = out / f"{label}-s{seed}"
        write_model(model, names, target, results["models"][label]["trained_on"],
                    f"{label}: the shipped recipe refitted, seed {seed} (experiments/ocr_features)")
        meta = json.loads((target / "model.json").read_text())
        meta["fold_diacritics"] = fold
        (target / "model.json").write_text(json.dumps(meta, indent=2) + "\n")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"fit-s{seed}.json").write_text(json.dumps(results, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["features", "fit"])
    parser.add_argument("--sets", nargs="*", default=ALL_SETS)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/ocrfeat-cache"))
    parser.add_argument("--fold-cache", type=Path, default=Path("/tmp/ocrfeat-cache-fold"))
    parser.add_argument("--fold-diacritics", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--variants", nargs="*", default=["baseline", "ocr", "fold-nospace"])
    parser.add_argument("--out", type=Path, default=Path("/tmp/ocrfeat-models"))
    args = parser.parse_args()
    if args.step == "features":
        features(args.fold_cache if args.fold_diacritics else args.cache, args.fold_diacritics, args.sets)
    else:
        fit(args.cache, args.fold_cache, args.out, args.seed, args.variants)


if __name__ == "__main__":
    main()
