"""Community detection out of core against in memory: the same clusters, and the cost of
keeping every accepted pair.

With ``--cluster leiden`` (or ``louvain``) the out-of-core corpus stage verifies every
candidate pair once instead of skipping pairs whose documents are already joined, and
keeps the accepted pairs for the clustering at the end. This runs each method on the
validation split of a few labelled sets four ways (components / Leiden at resolution
0.4, in memory / out of core), checks that both engines give the same clusters, and
records wall and CPU seconds and the pairs kept.

    python benchmarks/community_out_of_core.py      # raw: benchmarks/results/archive/community_out_of_core.json
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from benchmarks.harness import machine, save
from neardup.eval import load_labeled
from neardup.io import DocumentBatch
from neardup.methods import make_method
from neardup.pipeline import ClusterConfig, run

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


def main() -> None:
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
                    result = run(_batches(corpus), method, engine=engine,
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
    save("community_out_of_core", {"machine": machine(), "rows": rows})


if __name__ == "__main__":
    main()
