"""Whether rerank's alignment feature ``align_partial`` can be cut short (issue #41 item 3).

``align_partial`` is rapidfuzz's ``partial_ratio`` of one text's first 300 normalized
characters inside the other's first 1,500, the verifier's dearest feature. On a sample
of rerank's candidate pairs this measures, with one thread:

* its CPU with and without rapidfuzz's ``score_cutoff`` (at the ensemble's smallest split
  threshold on the feature, which would keep every prediction exact, and higher);
* a lower bound, the ratio of the short head with the long head's first window (never
  above ``partial_ratio`` if the bound is sound: checked on the sample), and how many
  accepted pairs it places above the ensemble's largest split threshold on the feature,
  where the exact value no longer changes the prediction.

    python benchmarks/rerank_alignment_bounds.py --data reuters-news --data scale:/tmp/neardup-scale/20k

``--data``: a ``data/`` set name (its validation split) or ``scale:PATH``, as in
``benchmarks/rerank_routes.py``. Raw results: ``benchmarks/results/rerank/NAME.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _split_thresholds(classifier, column: int) -> np.ndarray:
    """The distinct split thresholds of a HistGradientBoostingClassifier on one column."""
    found = [tree.nodes["num_threshold"][(tree.nodes["is_leaf"] == 0)
                                         & (tree.nodes["feature_idx"] == column)]
             for trees in classifier._predictors for tree in trees]
    return np.unique(np.concatenate(found))


def measure(data: str, n_pairs: int, seed: int) -> dict:
    from rapidfuzz import fuzz, process

    from benchmarks.rerank_routes import _load
    from neardup.methods.pair_features import document_profiles
    from neardup.methods.rerank import RerankMethod

    texts, dates, _ = _load(data)
    method = RerankMethod()
    pairs = method.candidate.find_pairs(method.sketch(texts)).canonical()
    pick = np.sort(np.random.default_rng(seed).choice(len(pairs), min(n_pairs, len(pairs)),
                                                      replace=False))
    left, right = pairs.left[pick], pairs.right[pick]
    scorer = method._get_scorer()
    accepted = scorer.score_positions(texts, left, right, dates) >= method.threshold
    docs, local = np.unique(np.concatenate([left, right]), return_inverse=True)
    profiles = document_profiles([texts[i] for i in docs.tolist()])
    a, b = local[: left.size], local[left.size:]
    first_short = profiles.lengths[a] <= profiles.lengths[b]
    short = [profiles.short_heads[i] for i in np.where(first_short, a, b).tolist()]
    long = [profiles.long_heads[i] for i in np.where(first_short, b, a).tolist()]

    thresholds = _split_thresholds(scorer.classifier, scorer.features.index("align_partial"))
    cpu = {}
    for cutoff in (0.0, float(thresholds.min()) * 100, 80.0):
        start = time.process_time()
        exact = process.cpdist(short, long, scorer=fuzz.partial_ratio, workers=1,
                               score_cutoff=cutoff, dtype=np.float32) / 100
        cpu[f"cutoff {cutoff:.2f}"] = time.process_time() - start
        if cutoff == 0.0:
            value = exact
    start = time.process_time()
    window = [lng[: len(sht)] for sht, lng in zip(short, long)]
    bound = process.cpdist(short, window, scorer=fuzz.ratio, workers=1, dtype=np.float32) / 100
    cpu["first-window bound"] = time.process_time() - start
    top = float(thresholds[thresholds < 1.0].max())
    settled = bound > top
    return {
        "pairs": int(left.size), "accepted": int(accepted.sum()), "cpu_s": cpu,
        "bound_above_value": int(np.count_nonzero(bound > value)),
        "largest_split_threshold": top, "smallest_split_threshold": float(thresholds.min()),
        "accepted_settled_by_bound": int(np.count_nonzero(settled & accepted)),
        "share_of_accepted_settled": float(np.count_nonzero(settled & accepted)
                                           / max(int(accepted.sum()), 1)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", action="append", required=True)
    parser.add_argument("--pairs", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default=None, help="results file name (no extension)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from benchmarks.rerank_routes import run_sets

    run_sets(args.data, lambda data: measure(data, args.pairs, args.seed),
             lambda data, result: print(data, json.dumps(result), flush=True), args.name)


if __name__ == "__main__":
    main()
