"""Community detection out of core against in memory: the same clusters, and the cost of
keeping every accepted pair.

With ``--cluster leiden`` (or ``louvain``) the out-of-core corpus stage verifies every
candidate pair once instead of skipping pairs whose documents are already joined, and
keeps the accepted pairs for the clustering at the end. This runs each method on the
validation split of a few labelled sets four ways (components / Leiden at resolution
0.4, in memory / out of core), checks that both engines give the same clusters, and
records wall and CPU seconds and the pairs kept.

    python -m benchmarks one community_out_of_core
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from benchmarks.harness import machine
from neardup.eval import load_labeled
from neardup.io import DocumentBatch
from neardup.methods import make_method
from neardup.pipeline import ClusterConfig
from neardup.pipeline import run as run_pipeline

ROOT = Path(__file__).resolve().parents[1]
SETS = ["indep-nlpaug", "multi-latin", "reuters-news"]
METHODS = ["rerank", "minhash"]


def _batches(corpus, size: int = 500):
    n = len(corpus)
    for start in range(0, n, size):
        stop = min(n, start + size)
        yield DocumentBatch(ids=corpus.ids[start:stop].tolist(), texts=corpus.texts[start:stop],
                            dates=None if corpus.dates is None else corpus.dates[start:stop],
                            source="<labeled>", rows=np.arange(start, stop))


def run(argv: list[str]) -> dict:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    rows = []
    for name in SETS:
        corpus = load_labeled(ROOT / "data" / name / "validation.jsonl.gz")
        for method_name in METHODS:
            for algorithm in ("components", "leiden"):
                labels = {}
                for engine in ("memory", "local"):
                    # A fresh method each time: rerank caches scores on its sketch.
                    method = make_method(method_name)
                    wall, cpu = time.perf_counter(), time.process_time()
                    result = run_pipeline(_batches(corpus), method, engine=engine,
                                 cluster=ClusterConfig(algorithm=algorithm, resolution=0.4))
                    row = {"set": name, "method": method_name, "cluster": algorithm,
                           "engine": result.params["engine"],
                           "seconds": round(time.perf_counter() - wall, 2),
                           "cpu_seconds": round(time.process_time() - cpu, 2),
                           "pairs_kept": len(result.pairs), "clusters": int(result.n_clusters)}
                    labels[engine] = result.clusters
                    rows.append(row)
                    print(row, flush=True)
                rows[-1]["same_clusters_as_memory"] = bool(
                    np.array_equal(labels["memory"], labels["local"]))
    print("\n| set | method | clustering | in memory: s (pairs) | out of core: s (pairs) | same clusters |")
    print("|---|---|---|---:|---:|---|")
    for memory, local in zip(rows[::2], rows[1::2]):
        print(f"| {local['set']} | {local['method']} | {local['cluster']} | {memory['seconds']:.1f} "
              f"({memory['pairs_kept']:,}) | {local['seconds']:.1f} ({local['pairs_kept']:,}) | "
              f"{'yes' if local['same_clusters_as_memory'] else 'NO'} |")
    return {"machine": machine(), "rows": rows}

