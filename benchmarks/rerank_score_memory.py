"""Peak memory of rerank's scorer on one linking step of near-duplicate pairs.

    python benchmarks/rerank_score_memory.py --pairs 8192 [--score-batch N]

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

from neardup.engine.corpus import CandidateRows
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/neardup-scale/100k/part-00000.parquet"))
    parser.add_argument("--pairs", type=int, default=8192)
    parser.add_argument("--score-batch", type=int, default=None)
    args = parser.parse_args()
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
    rows = CandidateRows(np.arange(len(texts)), {name: sketch.arrays[name] for name in method.candidate_arrays})
    rows.texts = _Texts(texts)
    del sketch
    left = np.arange(args.pairs)
    right = left + 1
    print(f"pairs {args.pairs}, same cluster {np.mean(clusters[left] == clusters[right]):.2f}, "
          f"SCORE_BATCH {RerankMethod.SCORE_BATCH}")
    # Reset the peak (VmHWM) to the current RSS, so that "after" shows the call's own peak.
    Path("/proc/self/clear_refs").write_text("5")
    print("before: VmRSS %d MB, VmHWM %d MB" % _memory_mb())
    _, accept = method.score_candidate_rows(rows, left, right)
    print("after:  VmRSS %d MB, VmHWM %d MB; accepted %d" % (*_memory_mb(), int(accept.sum())))


if __name__ == "__main__":
    main()
