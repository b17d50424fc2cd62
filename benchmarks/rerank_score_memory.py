"""Peak memory of rerank's scorer on one linking step of near-duplicate pairs.

    python -m benchmarks one rerank_score_memory --pairs 8192 [--score-batch N]

Takes the first 2 x PAIRS documents of the 100k scale corpus in cluster order (copies of
one story next to each other), pairs each with the next one (same cluster: pairs that
pass MinHash's check and reach the verifier, as a step inside the giant cluster does)
and calls ``RerankMethod.score_candidate_rows`` on them once, as the corpus stage does
for one step. Prints the process's VmRSS / VmHWM (MB) before and after the call (the peak
is reset just before it);
``--score-batch`` sets ``RerankMethod.SCORE_BATCH`` (10**9: the whole step at once).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from neardup.methods.base import CandidateRows
from neardup.methods import make_method
from neardup.methods.rerank import RerankMethod


def _memory_mb() -> tuple[int, int]:
    status = Path("/proc/self/status").read_text()
    return tuple(int(re.search(rf"{key}:\s+(\d+)", status).group(1)) // 1024
                 for key in ("VmRSS", "VmHWM"))


class _Texts:
    def __init__(self, texts: list[str]) -> None:
        self.texts = texts

    def __len__(self) -> int:
        return len(self.texts)

    def take(self, positions) -> list[str]:
        return [self.texts[i] for i in positions]


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/neardup-scale/100k/part-00000.parquet"))
    parser.add_argument("--pairs", type=int, default=8192)
    parser.add_argument("--score-batch", type=int, default=None)
    args = parser.parse_args(argv)
    if args.score_batch is not None:
        RerankMethod.SCORE_BATCH = args.score_batch
    table = pq.read_table(args.corpus, columns=["text", "cluster"])
    order = np.argsort(table.column("cluster").to_numpy(), kind="stable")[: 2 * args.pairs]
    every = table.column("text").to_pylist()
    texts = [every[i] for i in order]
    clusters = table.column("cluster").to_numpy()[order]
    del every, table
    method = make_method("rerank")
    sketch = method.sketch(texts)
    rows = CandidateRows(np.arange(len(texts)), {name: sketch.arrays[name] for name in method.capabilities.reads.arrays})
    rows.texts = _Texts(texts)
    del sketch
    left = np.arange(args.pairs)
    right = left + 1
    print(f"pairs {args.pairs}, same cluster {np.mean(clusters[left] == clusters[right]):.2f}, "
          f"SCORE_BATCH {RerankMethod.SCORE_BATCH}")
    # Reset the peak (VmHWM) to the current RSS, so that "after" shows the call's own peak.
    Path("/proc/self/clear_refs").write_text("5")
    before = _memory_mb()
    print("before: VmRSS %d MB, VmHWM %d MB" % before)
    _, accept = method.score_candidate_rows(rows, left, right)
    after = _memory_mb()
    print("after:  VmRSS %d MB, VmHWM %d MB; accepted %d" % (*after, int(accept.sum())))
    return {"pairs": args.pairs, "score_batch": RerankMethod.SCORE_BATCH, "accepted": int(accept.sum()),
            "same_cluster_share": float(np.mean(clusters[left] == clusters[right])),
            "before_mb": {"rss": before[0], "hwm": before[1]}, "after_mb": {"rss": after[0], "hwm": after[1]}}
