"""Index built in batches vs one-shot dedup on a scale corpus (#16): same clusters?

    python bench/index_equivalence.py --corpus /tmp/neardup-scale/100k --batches 10 \\
        --work /tmp/index-eq --out bench/results/index_equivalence_100k.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import neardup
from neardup.index import Index


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--method", default="minhash")
    parser.add_argument("--work", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    shards = sorted(Path(args.corpus).glob("*.parquet"))
    texts = pa.concat_tables([pq.read_table(s, columns=["text"]) for s in shards]) \
        .column("text").to_pylist()
    n = len(texts)
    start = time.time()
    expected = neardup.dedup(texts, args.method, pair_types=False).clusters
    dedup_seconds = time.time() - start
    if Path(args.work).exists():
        shutil.rmtree(args.work)
    start = time.time()
    with Index.create(args.work, args.method) as index:
        bounds = np.linspace(0, n, args.batches + 1).astype(int)
        for a, b in zip(bounds[:-1], bounds[1:]):
            index.add(texts[a:b], ids=[str(i) for i in range(a, b)])
        table = index.clusters()
        big = index.stats()["big_key_groups"]
    index_seconds = time.time() - start
    labels = np.empty(n, np.int64)
    labels[np.array(table.column("id").to_pylist(), int)] = table.column("cluster").to_numpy()
    a, b = labels.tolist(), expected.tolist()
    result = {
        "corpus": args.corpus, "docs": n, "method": args.method, "batches": args.batches,
        "same_partition": len(set(zip(a, b))) == len(set(a)) == len(set(b)),
        "clusters_index": len(set(a)), "clusters_dedup": len(set(b)),
        "big_key_groups": big, "dedup_seconds": round(dedup_seconds, 1),
        "index_seconds": round(index_seconds, 1), "load_avg_after": list(os.getloadavg()),
    }
    Path(args.out).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
