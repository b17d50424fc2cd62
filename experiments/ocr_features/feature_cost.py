"""CPU cost of the OCR-tolerant features, as rerank computes them (validation splits only).

    python -m experiments.ocr_features.feature_cost

For reuters-news and multi-ocr *validation*: rerank's char5 MinHash candidates, then
(a) document profiles (normalize, shingle, sort: per document) and (b) the pair features
from the profiles (per pair), each for the shipped 21 features, the shipped 21 + the four
``ocr*`` features, and the shipped 21 + the two ``nospace5`` ones computed on
diacritic-folded texts; process CPU time, best of ``--repeat``, one thread.
Results: results/feature_cost.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from experiments.ocr_features.train_ocr_features import NOSPACE, OCR_FEATURES
from experiments.verifier_transfer.verifier_transfer import candidates
from neardup.eval import load_labeled
from neardup.methods.pair_features import document_profiles, profile_pair_features

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results"


def cpu(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from threadpoolctl import threadpool_limits

    from neardup.models import resolve_model

    shipped = json.loads((resolve_model("verifier-news", "verifier") / "model.json").read_text())["features"]
    plans = {"shipped 21": (shipped, False), "+ ocr4/ocr5 (4)": (shipped + OCR_FEATURES, False),
             "+ nospace5 (2), folded": (shipped + NOSPACE, True),
             "ocr4/ocr5 alone": (OCR_FEATURES, False)}
    out: dict = {}
    for name in ("reuters-news", "multi-ocr"):
        corpus = load_labeled(ROOT / "data" / name / "validation.jsonl.gz")
        pairs = candidates(corpus, "char5")
        texts = list(corpus.texts)
        row = {"documents": len(texts), "pairs": int(len(pairs.left))}
        with threadpool_limits(limits=1):
            for label, (feats, fold) in plans.items():
                prof = document_profiles(texts, features=feats, fold_diacritics=fold)
                doc_s = cpu(lambda: document_profiles(texts, features=feats, fold_diacritics=fold), args.repeat)
                pair_s = cpu(lambda: profile_pair_features(prof, pairs.left, pairs.right, features=feats,
                                                           threads=1), args.repeat)
                row[label] = {"profiles_cpu_s": round(doc_s, 3), "pairs_cpu_s": round(pair_s, 3),
                              "us_per_document": round(1e6 * doc_s / len(texts), 1),
                              "us_per_pair": round(1e6 * pair_s / max(1, len(pairs.left)), 2),
                              "profile_bytes": prof.nbytes()}
                print(name, label, row[label], flush=True)
        out[name] = row
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "feature_cost.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
