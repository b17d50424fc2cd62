"""Step 4 of the verifier-cost study: a cheaper candidate sketch (fewer permutations).

    python -m experiments.verifier_cost.candidates [--perms 128 96 64 48 32] [--name NAME]

rerank's candidates are MinHash signatures of character 5-grams, 128 permutations, banded
for Jaccard 0.1 (64 bands x 2 rows) and checked by the signature estimate >= 0.1. With
fewer permutations (banding chosen for the same threshold by
:func:`~neardup.methods.lsh.optimal_bands`) the sketch costs less per document; what it
may lose is true pairs. Per *validation* split (test never read): candidate pairs, true
pairs among them (against the 128-permutation candidates), and the ARI of the shipped
verifier's decisions on them as rerank clusters them by default (threshold 0.9, Leiden at
resolution 0.4, dates; no template guard). Per document: the sketch's CPU on the first
``--docs`` stories of Reuters-21578 (one thread, best of 3).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from experiments.verifier_cost.cost import cpu, load
from experiments.verifier_cost.pairs import SETS, split_corpus

RESULTS = Path(__file__).resolve().parent / "results"


def method(num_perm: int):
    from neardup.methods.rerank import candidate_method
    from neardup.text import ShingleConfig

    return candidate_method("minhash", {"shingle": ShingleConfig("char", 5), "num_perm": num_perm})


def find(texts, dates, num_perm: int):
    from neardup.io import DocumentBatch
    from neardup.pipeline import sketch_corpus

    m = method(num_perm)
    batch = DocumentBatch(ids=[str(i) for i in range(len(texts))], texts=list(texts), dates=dates,
                          source="<study>", rows=np.arange(len(texts), dtype=np.int64))
    return m.find_pairs(sketch_corpus([batch], m, progress=False).sketch).canonical()


def verifier_ari(corpus, pairs, scorer) -> float:
    from sklearn.metrics import adjusted_rand_score

    from neardup.graph import Pairs
    from neardup.graph.cluster import cluster_pairs

    prob, keep = scorer.decide_positions(corpus.texts, pairs.left, pairs.right, corpus.dates,
                                         threshold=0.9)
    labels = cluster_pairs(Pairs(pairs.left[keep], pairs.right[keep], prob[keep]), len(corpus),
                           method="leiden", resolution=0.4).labels
    return float(adjusted_rand_score(np.asarray(corpus.clusters).astype(str), labels))


def main() -> None:
    from neardup.methods.lsh import optimal_bands
    from neardup.methods.rerank import VerifierScorer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--perms", nargs="*", type=int, default=[128, 96, 64, 48, 32])
    parser.add_argument("--sets", nargs="*", default=SETS)
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--name", default="candidates")
    args = parser.parse_args()
    scorer = VerifierScorer("verifier-news", threads=1)
    results: dict = {"perms": args.perms, "banding": {}, "sketch_ms_per_document": {},
                     "sets": {}}
    texts, dates = load("reuters", args.docs)
    for p in args.perms:
        results["banding"][p] = list(optimal_bands(0.1, p))
        results["sketch_ms_per_document"][p] = 1e3 * cpu(
            lambda p=p: find(texts, dates, p), 3) / len(texts)
        print(f"{p} permutations: bands x rows {results['banding'][p]}, "
              f"{results['sketch_ms_per_document'][p]:.3f} ms/doc (sketch + pairs)", flush=True)
    for name in args.sets:
        corpus = split_corpus(name, "validation")[0]
        labels = np.asarray(corpus.clusters).astype(str)
        rows, reference = {}, None
        for p in args.perms:
            t = time.process_time()
            pairs = find(corpus.texts, corpus.dates, p)
            true = labels[pairs.left] == labels[pairs.right]
            keys = set(zip(pairs.left[true].tolist(), pairs.right[true].tolist()))
            reference = keys if reference is None else reference
            rows[p] = {"pairs": int(len(pairs)), "true_pairs": int(true.sum()),
                       "true_pairs_of_128_kept": len(keys & reference) / max(len(reference), 1),
                       "ari": verifier_ari(corpus, pairs, scorer),
                       "cpu_s": time.process_time() - t}
            print(f"{name} {p}: {rows[p]}", flush=True)
        results["sets"][name] = rows
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {RESULTS / args.name}.json")


if __name__ == "__main__":
    main()
