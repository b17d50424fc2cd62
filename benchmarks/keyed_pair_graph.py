"""The keyed stage's pair graph (every accepted pair, for Leiden, Louvain and HAC) against
its spanning forest and the in-memory stage, for the methods whose out-of-core search
skips pairs already joined under connected components (ngram and spotsigs: the pair-count
exchange; sanderson: mutual retrieval). Over Reuters-21578 (all, or the first ``--limit``),
each method runs: local components, local Leiden (the every-pair mode), memory Leiden;
CPU seconds (``time.process_time``) and wall seconds of each run, pairs kept, and whether
the local Leiden clusters and pairs equal the in-memory ones. One process, runs in
sequence (numba compiles before the first timed run: a warm-up run on 200 stories).

    python benchmarks/keyed_pair_graph.py --limit 5000 --name keyed-pair-graph-5k
    python benchmarks/keyed_pair_graph.py --name keyed-pair-graph-reuters

Raw results: ``benchmarks/results/keyed-graph/NAME.json``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import neardup  # noqa: E402
from benchmarks.harness import machine, reuters_texts, write_json  # noqa: E402

RUNS = (("local", "components"), ("local", "leiden"), ("memory", "leiden"))


def run_once(texts: list[str], method: str, engine: str, cluster: str) -> tuple[dict, neardup.Result]:
    options = {"memory_limit": "64MB"} if engine == "local" else {}
    with tempfile.TemporaryDirectory() as work:
        if engine == "local":
            options["work_dir"] = work
        cpu, wall = time.process_time(), time.perf_counter()
        result = neardup.dedup(texts, method, engine=engine, cluster=cluster, pair_types=False,
                               progress=False, **options)
        row = {"method": method, "engine": result.params["engine"], "cluster": cluster,
               "cpu_s": round(time.process_time() - cpu, 2), "wall_s": round(time.perf_counter() - wall, 2),
               "pairs": len(result.pairs), "clusters": int(result.n_clusters)}
    return row, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="stories (default: all)")
    parser.add_argument("--methods", nargs="+", default=["ngram", "spotsigs", "sanderson"])
    parser.add_argument("--name", default="keyed-pair-graph")
    args = parser.parse_args(argv)
    texts = reuters_texts(args.limit)
    rows = []
    for method in args.methods:
        run_once(texts[:200], method, "local", "leiden")  # compiles
        results = {}
        for engine, cluster in RUNS:
            row, results[engine, cluster] = run_once(texts, method, engine, cluster)
            rows.append(row)
            print(row, flush=True)
        local, memory = results["local", "leiden"], results["memory", "leiden"]
        same_pairs = (np.array_equal(local.pairs.left, memory.pairs.left)
                      and np.array_equal(local.pairs.right, memory.pairs.right)
                      and np.allclose(local.pairs.score, memory.pairs.score, atol=1e-6))
        rows[-2]["same_clusters_as_memory"] = bool(np.array_equal(local.clusters, memory.clusters))
        rows[-2]["same_pairs_as_memory"] = bool(same_pairs)
    write_json(ROOT / "benchmarks" / "results" / "keyed-graph" / f"{args.name}.json",
               {"docs": len(texts), "machine": machine(), "command": " ".join(["python", *sys.argv]),
                "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
