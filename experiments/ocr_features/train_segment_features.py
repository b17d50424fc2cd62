"""The shipped verifier's recipe with segment-coverage pair features added (issue 37).

    python -m experiments.ocr_features.train_segment_features features --cache /tmp/segfeat-cache
    python -m experiments.ocr_features.train_segment_features fit --seed S --out /tmp/ocrfeat-models

S = 6: ``python -m experiments.ocr_features.with_segments 6 experiments.ocr_features.train_segment_features
features --cache /tmp/segfeat6-cache`` and ``... fit --cache /tmp/segfeat6-cache --label segments6``.

``features``: the ``seg_*`` features (:data:`neardup.methods.pair_features.SEGMENT_FEATURES`)
of exactly the pairs of ``train_ocr_features``' cache (/tmp/ocrfeat-cache): each set's train
pairs (``training_pairs``, 10,000 per set, seed 0, char5 MinHash candidates, as
verifier_transfer's ``compute_features``) and its *validation* and language-validation
candidates; checked against that cache (same labels, same candidate pairs). **No test split
is opened.**

``fit``: the ``segments`` variant, the shipped 21 features + the 8 ``seg_*`` features
(columns of both caches side by side), fitted as ``train_ocr_features fit`` does (nine train
splits of the shipped model's ``trained_on``, HistGradientBoosting, ``--seed``, date
dropout 0.25) into ``OUT/segments-s<seed>``; ``results/fit-segments-s<seed>.json``: the
connected-components ARI at 0.9 per validation split.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from experiments.ocr_features.train_ocr_features import ALL_SETS, OCR, RESULTS
from experiments.ocr_verifier.train_ocr_verifier import write_model
from experiments.verifier_transfer.verifier_transfer import (
    CANDIDATES, ROOT, SETS, candidates, fit_model, validation_curves, verifier_scores)
from neardup.datasets.independent import LANGUAGE_SPLIT

SPLITS = ("validation", LANGUAGE_SPLIT)  # never "test"


def features(cache: Path, base: Path, sets: list[str]) -> None:
    from neardup.eval import load_labeled
    from neardup.methods.pair_features import SEGMENT_FEATURES, pair_features
    from neardup.train.cross_encoder import training_pairs
    from neardup.train.data import load_training_corpus

    names = list(SEGMENT_FEATURES)
    for name in sets:
        old = np.load(base / f"{name}-char5.npz", allow_pickle=False)
        out = {"features": np.array(names), "fold_diacritics": np.array(False)}
        t0 = time.perf_counter()
        train_path = ROOT / "data" / name / "train.jsonl.gz"
        if train_path.exists():
            corpus, negative_of = load_training_corpus(train_path)
            data = training_pairs(corpus, negative_of=negative_of, max_pairs=10000,
                                  candidates="minhash", candidate_params=CANDIDATES["char5"],
                                  seed=0, threads=1)
            assert np.array_equal(data["label"].astype(np.int8), old["train_y"]), name
            out["train_x"] = pair_features(corpus.texts, data["left"], data["right"],
                                           features=names, threads=1)
            out["train_y"] = data["label"].astype(np.int8)
        for split in SPLITS:
            path = ROOT / "data" / name / f"{split}.jsonl.gz"
            if not path.exists():
                continue
            corpus = load_labeled(path)
            pairs = candidates(corpus, "char5")
            assert np.array_equal(pairs.left, old[f"{split}_left"]), (name, split)
            assert np.array_equal(pairs.right, old[f"{split}_right"]), (name, split)
            out[f"{split}_x"] = pair_features(corpus.texts, pairs.left, pairs.right,
                                              features=names, threads=1)
        cache.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(cache / f"{name}-char5.npz", **out)
        print(name, len(out.get("train_y", [])), "train pairs",
              f"{time.perf_counter() - t0:.0f} s", flush=True)


def fit(cache: Path, base: Path, out: Path, seed: int, label: str = "segments") -> None:
    from neardup.methods.pair_features import SEGMENTS
    from neardup.models import resolve_model

    shipped = json.loads((resolve_model("verifier-news", "verifier") / "model.json").read_text())
    data = {}
    for s in ALL_SETS:
        old = dict(np.load(base / f"{s}-char5.npz", allow_pickle=False))
        seg = dict(np.load(cache / f"{s}-char5.npz", allow_pickle=False))
        assert not bool(old["fold_diacritics"])
        merged = dict(old)
        merged["features"] = np.concatenate([old["features"], seg["features"]])
        for key in seg:
            if key.endswith("_x"):
                merged[key] = np.hstack([old[key], seg[key]])
        data[s] = merged
    names = list(shipped["features"]) + [str(f) for f in data[SETS[0]]["features"]
                                         if str(f).startswith("seg_")]
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
    results = {"seed": seed, "models": {label: {
        "features": names, "fold_diacritics": False, "fit_seconds": round(seconds, 1),
        "trained_on": {s: int(len(data[s]["train_y"])) for s in trainable},
        "cc_ari_at_0.9": {s: {k: round(c[0.9], 4) for k, c in cc[s].items()} for s in ALL_SETS}}}}
    print(label, seed, {s: round(cc[s]["validation"][0.9], 3) for s in ALL_SETS}, flush=True)
    target = out / f"{label}-s{seed}"
    write_model(model, names, target, results["models"][label]["trained_on"],
                f"{label}: the shipped recipe refitted, seed {seed} (experiments/ocr_features)")
    meta = json.loads((target / "model.json").read_text())
    meta["fold_diacritics"] = False
    meta["segments"] = SEGMENTS  # not read by the library (S = 4); see with_segments
    (target / "model.json").write_text(json.dumps(meta, indent=2) + "\n")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"fit-{label}-s{seed}.json").write_text(json.dumps(results, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=["features", "fit"])
    parser.add_argument("--sets", nargs="*", default=ALL_SETS)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/segfeat-cache"))
    parser.add_argument("--base-cache", type=Path, default=Path("/tmp/ocrfeat-cache"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("/tmp/ocrfeat-models"))
    parser.add_argument("--label", default="segments", help="model name prefix (segments6 for S = 6)")
    args = parser.parse_args()
    if args.step == "features":
        features(args.cache, args.base_cache, args.sets)
    else:
        fit(args.cache, args.base_cache, args.out, args.seed, args.label)


if __name__ == "__main__":
    main()
