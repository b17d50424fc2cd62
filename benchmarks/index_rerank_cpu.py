"""CPU time of an index with rerank verification (the shipped verifier over MinHash
candidates): ``add`` of the first demo-corpus documents in three batches, then ``query``
of the next ones. Run against a source tree to compare two commits (``PYTHONPATH`` picks
the tree whose ``neardup`` is imported):

    PYTHONPATH=. python benchmarks/index_rerank_cpu.py --label head --docs 1500 --queries 300

Raw results: benchmarks/results/rerank/index-rerank-cpu-<label>.json (CPU seconds of this
process: less sensitive to other work on the machine than wall time).
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results" / "rerank"


def main() -> None:
    import neardup
    from neardup.data import demo_corpus_path
    from neardup.index import Index

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", required=True)
    parser.add_argument("--docs", type=int, default=1500)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    with gzip.open(demo_corpus_path(), "rt") as handle:
        texts = [json.loads(line)["text"] for line in handle][: args.docs + args.queries]
    stored, probes = texts[: args.docs], texts[args.docs:]
    with tempfile.TemporaryDirectory() as tmp, \
            Index.create(Path(tmp) / "idx", "minhash", rerank="verifier", threshold=0.2) as index:
        index.query(["warm the scorer up: load its model"])
        cpu = time.process_time()
        step = -(-len(stored) // 3)
        for start in range(0, len(stored), step):
            index.add(stored[start:start + step], [str(i) for i in range(start, min(start + step, len(stored)))])
        add_cpu = time.process_time() - cpu
        cpu = time.process_time()
        found = index.query(probes, top_k=10)
        query_cpu = time.process_time() - cpu
        clusters = index.clusters().column("cluster").to_numpy()
    out = {"label": args.label, "neardup": neardup.__file__, "docs": len(stored),
           "queries": len(probes), "add_cpu_seconds": round(add_cpu, 2),
           "query_cpu_seconds": round(query_cpu, 2), "clusters": int(np.unique(clusters).size),
           "matches": int(len(found.score))}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"index-rerank-cpu-{args.label}.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
