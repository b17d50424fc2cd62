"""Do the segment-coverage features separate the verifier's misses from its false accepts?

    python -m experiments.ocr_features.segment_diagnosis

On multi-ocr *validation* candidate pairs (the cached char5 MinHash candidates of
/tmp/ocrfeat-cache and /tmp/segfeat-cache, no test split), each baseline refit
(``baseline-s<seed>``) at 0.9 sorts the pairs into true accepted / true rejected (misses) /
false accepted / false rejected (a pair is true when both documents share a cluster). Per
group: medians of the ``seg_*`` features and of char4 containment, pooled over seeds; and
for the ``segments-s<seed>`` refits, the pair-level misses and false accepts (the pairs
alone, before Leiden). Results: results/segment_diagnosis.json.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import joblib
import numpy as np

from experiments.ocr_features.train_ocr_features import RESULTS

GROUPS = ("true accepted", "true rejected", "false accepted", "false rejected")


def _groups(truth: np.ndarray, accept: np.ndarray) -> dict[str, np.ndarray]:
    return {"true accepted": truth & accept, "true rejected": truth & ~accept,
            "false accepted": ~truth & accept, "false rejected": ~truth & ~accept}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-cache", type=Path, default=Path("/tmp/ocrfeat-cache"))
    parser.add_argument("--cache", type=Path, default=Path("/tmp/segfeat-cache"))
    parser.add_argument("--models", type=Path, default=Path("/tmp/ocrfeat-models"))
    parser.add_argument("--set", default="multi-ocr")
    args = parser.parse_args()
    old = np.load(args.base_cache / f"{args.set}-char5.npz", allow_pickle=False)
    seg = np.load(args.cache / f"{args.set}-char5.npz", allow_pickle=False)
    names = [str(f) for f in old["features"]] + [str(f) for f in seg["features"]]
    x = np.hstack([old["validation_x"], seg["validation_x"]])
    clusters = old["validation_clusters"]
    truth = clusters[old["validation_left"]] == clusters[old["validation_right"]]
    shown = ["char4_containment", "align_ratio"] + [str(f) for f in seg["features"]]
    out: dict = {"set": args.set, "pairs": int(truth.size), "true_pairs": int(truth.sum()),
                 "by_model": {}, "medians_under_baseline": {}}
    pooled: dict[str, list[np.ndarray]] = {g: [] for g in GROUPS}
    for variant in ("baseline", "segments"):
        for s in range(5):
            folder = args.models / f"{variant}-s{s}"
            meta = json.loads((folder / "model.json").read_text())
            model = joblib.load(folder / "model.joblib")
            cols = [names.index(f) for f in meta["features"]]
            prob = model.predict_proba(x[:, cols])[:, 1]
            groups = _groups(truth, prob >= meta["threshold"])
            out["by_model"][f"{variant}-s{s}"] = {g: int(m.sum()) for g, m in groups.items()}
            if variant == "baseline":
                for g, m in groups.items():
                    pooled[g].append(x[m])
    for g in GROUPS:
        rows = np.concatenate(pooled[g])
        out["medians_under_baseline"][g] = {
            "pairs_over_5_seeds": int(len(rows)),
            **{f: round(float(np.median(rows[:, names.index(f)])), 3) if len(rows) else None
               for f in shown}}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "segment_diagnosis.json").write_text(json.dumps(out, indent=1) + "\n")
    print("| feature | " + " | ".join(GROUPS) + " |")
    for f in shown:
        print(f"| {f} | " + " | ".join(f"{out['medians_under_baseline'][g][f]}" for g in GROUPS) + " |")
    for k, v in out["by_model"].items():
        print(k, v)


if __name__ == "__main__":
    main()
