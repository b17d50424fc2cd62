"""Counterfactual on the shipped verifier, multi-ocr *validation* (never test): for the true
candidate pairs it rejects at 0.9, set one feature at a time to the accepted true pairs'
median (or the column to its value on diacritic-folded text) and count how many would pass.

    python -m experiments.ocr_features.counterfactual > experiments/ocr_features/results/counterfactual.txt

The verifier is applied directly (no tree bound, no template guard), so its rejections
are close to but not exactly rerank's (the first line says how close).
"""

from __future__ import annotations

import json
from pathlib import Path

import joblib
import numpy as np

from experiments.ocr_languages.per_language import load_split_records
from neardup.eval.evaluate import build_method
from neardup.methods.pair_features import pair_features
from neardup.models import resolve_model

ROOT = Path(__file__).resolve().parents[2]
FIXED = ("date_days", "date_missing", "log_length_min", "log_length_max")


def main() -> None:
    corpus, _, _ = load_split_records(ROOT / "data" / "multi-ocr", "validation")
    method = build_method("rerank", {})
    sc = method.scored_candidates(method.sketch(corpus.texts))
    left, right, score = sc.left, sc.right, np.asarray(sc.score)
    labels = corpus.clusters
    true = labels[left] == labels[right]
    folder = resolve_model("verifier-news", "verifier")
    meta = json.loads((folder / "model.json").read_text())
    model = joblib.load(folder / meta["file"])
    names = meta["features"]
    x = pair_features(corpus.texts, left, right, dates=corpus.dates, features=names, threads=1)
    xf = pair_features(corpus.texts, left, right, dates=corpus.dates, features=names, threads=1,
                       fold_diacritics=True)
    p = model.predict_proba(x)[:, 1]
    pf = model.predict_proba(xf)[:, 1]
    fn, tp, fp = true & (p < 0.9), true & (p >= 0.9), ~true & (p >= 0.9)
    print("model p agrees with rerank score on accept:", ((p >= 0.9) == (score >= 0.9)).mean())
    print("FN", fn.sum(), "TP", tp.sum(), "FP", fp.sum())
    print("all features folded: FN accepted", (pf[fn] >= 0.9).sum(), " TP lost", (pf[tp] < 0.9).sum(),
          " new FP", ((pf >= 0.9) & ~true & (p < 0.9)).sum())
    med = np.median(x[tp], axis=0)
    for j, name in enumerate(names):
        y = x.copy()
        y[fn, j] = med[j] if name in FIXED else np.maximum(y[fn, j], med[j])
        q = model.predict_proba(y[fn])[:, 1]
        yf = x.copy()
        yf[:, j] = xf[:, j]
        qf = model.predict_proba(yf)[:, 1]
        print(f"{name:20s} set to TP median: {int((q >= 0.9).sum()):3d} of {fn.sum()} FN accepted; "
              f"folded col only: FN acc {int((qf[fn] >= 0.9).sum())}, FP {int(((qf >= 0.9) & ~true).sum())}")
    j = names.index("numbers_jaccard")
    print("FN numbers_jaccard<1:", (x[fn, j] < 1).sum(), "TP <1:", (x[tp, j] < 1).sum(),
          "FP <1:", (x[fp, j] < 1).sum())


if __name__ == "__main__":
    main()
