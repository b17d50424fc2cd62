"""Which training-pair mix suits the cross-encoder, judged without the test split.

The validation split holds 23 template stories, so it cannot tell whether a cross-encoder
separates template stories (same wording, other figures) from copies. This holds out a
third of the *train* split instead: template families and clusters joined by
hard-negative links are kept whole (every third family, in a seeded random order, is held
out), cross-encoders are trained on the other two thirds with each pair mix (epochs chosen
on the validation subset as usual), and the held-out third's RETSim candidates are
re-scored and clustered (connected components) at the best threshold and at 0.9.

    python -m experiments.cross_encoder_pair_mix.cross_encoder_pair_mix [--work runs/pair-mix] [--threads 2]
        [--cache-dir /tmp/neardup-embedding-cache]

Mixes (``neardup train cross-encoder`` options): ``base`` 2,400 pairs, half RETSim
candidates (the shipped recipe); ``linked`` 4,000 pairs, 40% candidates, 30% hard-negative
links; ``anchored`` as ``linked`` with half the linked budget spent on a copy of the
same linked story (``linked_anchor``); ``linked-128`` as ``linked`` reading 128 tokens
of each text instead of 64. Writes experiments/cross_encoder_pair_mix/results/cross_encoder_pair_mix.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from benchmarks.harness import machine, results_saver
from neardup.eval import load_labeled
from neardup.eval.metrics import adjusted_rand_index, pairwise_scores
from neardup.graph.cluster import connected_components
from neardup.graph.edges import Pairs
from neardup.methods.rerank import CrossEncoderScorer
from neardup.train.cross_encoder import PROBABILITY_THRESHOLDS, candidate_pairs, train_cross_encoder
from neardup.train.data import load_training_corpus
from neardup.train.validate import pairs_ari

save = results_saver(Path(__file__).resolve().parent / "results")

ROOT = Path(__file__).resolve().parents[2]
MIXES = {
    "base": {"max_pairs": 2400, "candidate_share": 0.5},
    "linked": {"max_pairs": 4000, "candidate_share": 0.4, "linked_share": 0.3},
    "anchored": {"max_pairs": 4000, "candidate_share": 0.4, "linked_share": 0.3,
                 "linked_anchor": True},
    "linked-128": {"max_pairs": 4000, "candidate_share": 0.4, "linked_share": 0.3,
                   "max_tokens": 128},
}


def held_out_families(corpus, negative_of) -> np.ndarray:
    """Boolean mask of the held-out third: families (clusters joined by links) whole."""
    clusters = np.asarray(corpus.clusters).astype(str)
    labels, codes = np.unique(clusters, return_inverse=True)
    parent = np.arange(len(labels))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    index = {label: k for k, label in enumerate(labels.tolist())}
    for i, target in enumerate(negative_of if negative_of is not None else []):
        if target is not None and str(target) in index:
            parent[find(codes[i])] = find(index[str(target)])
    family = np.array([find(c) for c in codes])
    # Every third family (in a seeded random order): template families are few and
    # large, so holding out whole days can leave almost none of them out.
    roots = np.unique(family)
    held = np.random.default_rng(0).permutation(len(roots)) % 3 == 2
    return np.isin(family, roots[held])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "pair-mix")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--only", nargs="*", default=list(MIXES), choices=list(MIXES))
    args = parser.parse_args()

    train, negative_of = load_training_corpus()
    kinds = np.array([json.loads(line)["kind"] for line in
                      gzip.open(ROOT / "data/reuters-news/train.jsonl.gz", "rt")])
    held = held_out_families(train, negative_of)
    fit, dev = train.select(np.flatnonzero(~held)), train.select(np.flatnonzero(held))
    fit_links = negative_of[~held]
    validation = load_labeled(str(ROOT / "data/reuters-news/validation.jsonl.gz"))
    validation = validation.select_split("validation")
    candidate_params = {"cache_dir": args.cache_dir} if args.cache_dir else None
    dev_pairs = candidate_pairs(dev, "retsim", candidate_params, args.threads)
    dev_labels = np.asarray(dev.clusters).astype(str)
    a = [dev.texts[i] for i in dev_pairs.left.tolist()]
    b = [dev.texts[i] for i in dev_pairs.right.tolist()]
    results = {"fit_docs": len(fit), "dev_docs": len(dev), "dev_pairs": len(dev_pairs),
               "dev_kinds": dict(Counter(kinds[held].tolist())),
               "fit_kinds": dict(Counter(kinds[~held].tolist())), "mixes": {}}
    print(json.dumps({k: v for k, v in results.items() if k != "mixes"}))
    for name in args.only:
        report = train_cross_encoder(
            fit, validation, output_dir=args.work / name, negative_of=fit_links, epochs=2,
            lr=8e-5, candidate_params=candidate_params, threads=args.threads, seed=0,
            progress=False, **{"max_tokens": 64, **MIXES[name]})
        prob = CrossEncoderScorer(args.work / name, threads=args.threads).score(a, b)
        scored = Pairs(dev_pairs.left, dev_pairs.right, prob)
        best = pairs_ari(scored, dev_labels, thresholds=PROBABILITY_THRESHOLDS)
        keep = prob >= 0.9
        predicted = connected_components(
            Pairs(dev_pairs.left[keep], dev_pairs.right[keep], prob[keep]), len(dev))
        pw = pairwise_scores(dev_labels, predicted)
        results["mixes"][name] = {
            "params": MIXES[name], "pair_counts": report["pair_counts"],
            "cpu_seconds": report["cpu_seconds"],
            "subset_validation_ari": round(report["best_validation_ari"], 4),
            "dev_best_ari": round(best.ari, 4), "dev_best_threshold": best.threshold,
            "dev_ari_at_0.9": round(adjusted_rand_index(dev_labels, predicted), 4),
            "dev_precision_at_0.9": round(pw["precision"], 4),
            "dev_recall_at_0.9": round(pw["recall"], 4),
        }
        print(name, json.dumps(results["mixes"][name]), flush=True)
    # Mixes run separately (--only) add to the results file instead of replacing it.
    previous = Path(__file__).resolve().parent / "results" / "cross_encoder_pair_mix.json"
    if previous.is_file() and set(args.only) != set(MIXES):
        results["mixes"] = {**json.loads(previous.read_text()).get("mixes", {}),
                            **results["mixes"]}
    path = save("cross_encoder_pair_mix", {"machine": machine(), **results})
    print(f"written to {path}")


if __name__ == "__main__":
    main()
