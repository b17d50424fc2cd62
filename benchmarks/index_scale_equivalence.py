"""An index built at scale (e.g. by benchmarks/index.py: bulk build + batch adds) vs one-shot
``neardup dedup`` of the same corpus: same partition? (#16)

    neardup dedup /tmp/neardup-scale/1M/part-*.parquet --method minhash --id-field id \\
        --clusters-out /tmp/dedup-1M.parquet --quiet
    python -m benchmarks one index_scale_equivalence --index /tmp/idxwork-bulk/1M/idx \\
        --dedup /tmp/dedup-1M.parquet
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import pyarrow.parquet as pq

from neardup.index import Index


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", required=True)
    parser.add_argument("--dedup", required=True, help="dedup --clusters-out (Parquet: id, cluster)")
    args = parser.parse_args(argv)
    with Index(args.index) as index:
        table = index.clusters()
        stats = index.stats()
    dedup = pq.read_table(args.dedup, columns=["id", "cluster"])
    # Align by id: the index keeps insertion order, dedup its input order (the same here).
    ids_index = table.column("id").to_numpy(zero_copy_only=False)
    ids_dedup = dedup.column("id").to_numpy(zero_copy_only=False).astype(str)
    same_order = ids_index.shape == ids_dedup.shape and bool((ids_index == ids_dedup).all())
    a = table.column("cluster").to_numpy()
    b = dedup.column("cluster").to_numpy()
    if not same_order:
        order = {i: k for k, i in enumerate(ids_dedup.tolist())}
        b = b[np.array([order[i] for i in ids_index.tolist()])]
    pairs = len(set(zip(a.tolist(), b.tolist())))
    result = {"index": args.index, "documents": int(a.size), "clusters_index": int(np.unique(a).size),
              "clusters_dedup": int(np.unique(b).size), "distinct_label_pairs": pairs,
              "same_partition": pairs == np.unique(a).size == np.unique(b).size,
              "index_stats": {k: stats[k] for k in ("documents", "clusters", "big_key_groups")}}
    print(json.dumps(result))
    return result
