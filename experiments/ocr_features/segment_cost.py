"""CPU and memory of the segment-coverage features, as rerank computes them (validation
splits only).

    python -m experiments.ocr_features.segment_cost

As ``feature_cost`` (reuters-news and multi-ocr *validation*, rerank's char5 MinHash
candidates; process CPU, best of ``--repeat``, one thread): document profiles (per
document) and pair features from the profiles (per pair) for the shipped 21 features, the
shipped 21 + the eight ``seg_*`` features, and the ``seg_*`` features alone; and the
profiles' bytes. Results: results/segment_cost.json.
"""

from __future__ import annotations

import argparse
import json

from experiments.ocr_features.feature_cost import RESULTS, ROOT, cpu
from experiments.verifier_transfer.verifier_transfer import candidates
from neardup.eval import load_labeled
from neardup.methods.pair_features import SEGMENT_FEATURES, document_profiles, profile_pair_features


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import numba
    from threadpoolctl import threadpool_limits

    numba.set_num_threads(1)  # the merges are parallel over pairs: one thread, as feature_cost

    from neardup.models import resolve_model

    shipped = json.loads((resolve_model("verifier-news", "verifier") / "model.json").read_text())["features"]
    seg = list(SEGMENT_FEATURES)
    plans = {"shipped 21": shipped, "+ seg (8)": shipped + seg, "seg alone": seg}
    out: dict = {}
    for name in ("reuters-news", "multi-ocr"):
        corpus = load_labeled(ROOT / "data" / name / "validation.jsonl.gz")
        pairs = candidates(corpus, "char5")
        texts = list(corpus.texts)
        row = {"documents": len(texts), "pairs": int(len(pairs.left))}
        with threadpool_limits(limits=1):
            for label, feats in plans.items():
                prof = document_profiles(texts, features=feats)
                profile_pair_features(prof, pairs.left[:10], pairs.right[:10], features=feats, threads=1)
                doc_s = cpu(lambda: document_profiles(texts, features=feats), args.repeat)
                pair_s = cpu(lambda: profile_pair_features(prof, pairs.left, pairs.right, features=feats,
                                                           threads=1), args.repeat)
                row[label] = {"profiles_cpu_s": round(doc_s, 3), "pairs_cpu_s": round(pair_s, 3),
                              "us_per_document": round(1e6 * doc_s / len(texts), 1),
                              "us_per_pair": round(1e6 * pair_s / max(1, len(pairs.left)), 2),
                              "profile_bytes": prof.nbytes(),
                              "seg4_mask_bytes": int(prof.sets["seg4"].hashes.nbytes
                                                     + prof.sets["seg4"].offsets.nbytes)
                              if "seg4" in prof.sets else 0}
                print(name, label, row[label], flush=True)
        out[name] = row
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "segment_cost.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
