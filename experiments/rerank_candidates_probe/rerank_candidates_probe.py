"""What rerank's verifier is asked to score on the scale corpus (#14): a slice of the 1M
corpus with its story structure intact, run through the local engine with every scored
pair logged.

The scale corpus builds every document from one of ~19,600 Reuters stories; at 1M
documents each story has ~39 bases (40% of its words replaced), most of them singletons.
Taking the documents of the first ``--stories`` stories (plus ``--giant`` copies of the
100,000-copy cluster) keeps that density at a size that runs in minutes.

    python -m experiments.rerank_candidates_probe.rerank_candidates_probe --stories 250 --giant 2000 --name rerank-probe-250

Writes experiments/rerank_candidates_probe/results/NAME.json: CPU seconds, pairs checked (the stage's verified edges),
how many passed the candidate method's own check (MinHash's estimate) and so reached the
verifier, accepted, rejected (by either), distinct rejected pairs, how many of those join
two bases of one story, and the stage's counts. (The extra candidate check per edge adds a
little CPU.)
``--rescore`` turns the stage's memory of rejected pairs off (every repeat scored again).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import neardup  # noqa: E402
from neardup.methods.rerank import RerankMethod  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/neardup-scale/1M"))
    parser.add_argument("--stories", type=int, default=250)
    parser.add_argument("--giant", type=int, default=2000)
    parser.add_argument("--rescore", action="store_true",
                        help="score a pair again every time it comes (no memory of rejections)")
    parser.add_argument("--score-batch", type=int, default=None,
                        help="pairs given to the scorer at once (RerankMethod.SCORE_BATCH; "
                             "default: the shipped value)")
    parser.add_argument("--name", default="rerank-probe")
    args = parser.parse_args()
    if args.score_batch is not None:
        RerankMethod.SCORE_BATCH = args.score_batch

    import scale_corpus

    n_stories = len(scale_corpus._stories())
    table = pa.concat_tables(pq.read_table(f) for f in sorted(args.corpus.glob("part-*.parquet")))
    base = table.column("cluster").to_numpy()
    keep = (base % n_stories < args.stories) & (base != 0)
    keep[np.flatnonzero(base == 0)[: args.giant]] = True
    table = table.filter(pa.array(keep))
    clusters = table.column("cluster").to_numpy()

    scored = []
    real = RerankMethod.score_candidate_rows

    def logging(self, rows, left, right):
        score, accept = real(self, rows, left, right)
        a, b = rows.docs[left], rows.docs[right]
        # Which edges passed the candidate method's own check and reached the verifier.
        passed = self.candidate.score_candidate_rows(rows, left, right)[1]
        scored.append((np.minimum(a, b), np.maximum(a, b), np.asarray(accept, bool),
                       np.asarray(passed, bool)))
        return score, accept

    RerankMethod.score_candidate_rows = logging
    if args.rescore:
        costly = RerankMethod.capabilities.fget
        RerankMethod.capabilities = property(lambda self: dataclasses.replace(
            costly(self), verification=dataclasses.replace(costly(self).verification, costly=False)))
    start = time.process_time()
    result = neardup.dedup(table.select(["id", "text"]), "rerank", id_field="id",
                           pair_types=False, cluster="components")
    cpu = time.process_time() - start
    left, right, accept, passed = (np.concatenate(c) for c in zip(*scored))
    lo, hi = left[~accept], right[~accept]
    codes = lo.astype(np.uint64) << np.uint64(32) | hi.astype(np.uint64)
    same_story = (clusters[lo] % n_stories) == (clusters[hi] % n_stories)
    row = {
        "command": "python -m experiments.rerank_candidates_probe.rerank_candidates_probe " + " ".join(sys.argv[1:]),
        "docs": int(table.num_rows), "clusters": int(np.unique(clusters).size),
        "cpu_s": round(cpu, 1), "pairs_scored": int(left.size),
        "passed_candidate_check": int(passed.sum()),
        "accepted": int(accept.sum()), "rejected": int(lo.size),
        "rejected_by_verifier": int((passed & ~accept).sum()),
        "distinct_rejected_pairs": int(np.unique(codes).size),
        "rejected_same_story_share": round(float(same_story.mean()), 3) if lo.size else None,
        "rejected_same_cluster": int((clusters[lo] == clusters[hi]).sum()),
        "corpus_stage": result.params.get("corpus_stage"),
    }
    print(json.dumps(row, indent=1))
    out = Path(__file__).resolve().parent / "results" / f"{args.name}.json"
    out.write_text(json.dumps(row, indent=1) + "\n")


if __name__ == "__main__":
    main()
