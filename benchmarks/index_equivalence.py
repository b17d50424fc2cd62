"""Index built in batches (and by one bulk add) vs one-shot dedup on a scale corpus (#16):
same clusters? Wall and CPU seconds of each (CPU: this process, all threads).

    python -m benchmarks one index_equivalence --corpus /tmp/neardup-scale/100k --batches 10 \\
        --work /tmp/index-eq
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


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--method", default="minhash")
    parser.add_argument("--work", required=True)
    parser.add_argument("--modes", default="batches,bulk",
                        help="batches (add in --batches transactions) and/or bulk (bulk_add).")
    args = parser.parse_args(argv)
    shards = sorted(Path(args.corpus).glob("*.parquet"))
    texts = pa.concat_tables([pq.read_table(s, columns=["text"]) for s in shards]) \
        .column("text").to_pylist()
    n = len(texts)
    start, cpu = time.time(), time.process_time()
    expected = neardup.dedup(texts, args.method, pair_types=False).clusters
    dedup_seconds, dedup_cpu = time.time() - start, time.process_time() - cpu
    b = expected.tolist()
    result = {"corpus": args.corpus, "docs": n, "method": args.method, "batches": args.batches,
              "clusters_dedup": len(set(b)), "dedup_seconds": round(dedup_seconds, 1),
              "dedup_cpu_s": round(dedup_cpu, 1)}
    for mode in args.modes.split(","):
        if Path(args.work).exists():
            shutil.rmtree(args.work)
        start, cpu = time.time(), time.process_time()
        with Index.create(args.work, args.method) as index:
            if mode == "bulk":
                index.bulk_add((texts[a:a + 10_000], [str(i) for i in range(a, min(a + 10_000, n))])
                               for a in range(0, n, 10_000))
            else:
                bounds = np.linspace(0, n, args.batches + 1).astype(int)
                for lo, hi in zip(bounds[:-1], bounds[1:]):
                    index.add(texts[lo:hi], ids=[str(i) for i in range(lo, hi)])
            table = index.clusters()
            stats = index.stats()
        seconds, cpu_s = time.time() - start, time.process_time() - cpu
        labels = np.empty(n, np.int64)
        labels[np.array(table.column("id").to_pylist(), int)] = table.column("cluster").to_numpy()
        a = labels.tolist()
        key = "index" if mode == "batches" else "bulk"
        result.update({
            f"same_partition_{key}": len(set(zip(a, b))) == len(set(a)) == len(set(b)),
            f"clusters_{key}": len(set(a)), f"{key}_seconds": round(seconds, 1),
            f"{key}_cpu_s": round(cpu_s, 1), f"{key}_disk_bytes": stats["disk_bytes"],
            "big_key_groups": stats["big_key_groups"],
        })
    result["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result))
    return result
