"""datatrove's MinHash de-duplication on the scale corpus, as a peer for benchmarks/scale.py (`--peers datatrove`).

Runs in its own environment (datatrove pins its own dependencies), e.g.

    python -m venv /tmp/dt-venv && /tmp/dt-venv/bin/pip install "datatrove[processing]" pyarrow
    /tmp/dt-venv/bin/python benchmarks/peer_datatrove.py OUT.npy WORK_DIR part-*.parquet

The four stages of datatrove's MinHash pipeline (signatures, buckets, clusters, filter)
with the LocalPipelineExecutor, one worker (so CPU and peak RSS are one process's), word
3-gram shingles and 32 bands of 4 hashes (128 hashes, as the other peers). Writes each
document's cluster label, in corpus order, to OUT.npy.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.dedup.minhash import (
    MinhashConfig,
    MinhashDedupBuckets,
    MinhashDedupCluster,
    MinhashDedupFilter,
    MinhashDedupSignature,
)
from datatrove.pipeline.readers import ParquetReader
from datatrove.pipeline.writers import JsonlWriter
from datatrove.utils.hashing import HashConfig


def main() -> None:
    out, work, files = Path(sys.argv[1]), Path(sys.argv[2]), [Path(f) for f in sys.argv[3:]]
    folder = files[0].parent
    config = MinhashConfig(n_grams=3, num_buckets=32, hashes_per_bucket=4,
                           hash_config=HashConfig(precision=32))
    tasks = len(files)

    def reader():
        return ParquetReader(str(folder), glob_pattern="part-*.parquet", text_key="text",
                             id_key="id", read_metadata=False)

    stages = [
        [reader(), MinhashDedupSignature(output_folder=str(work / "sigs"), config=config)],
        [MinhashDedupBuckets(input_folder=str(work / "sigs"), output_folder=str(work / "buckets"),
                             config=config)],
        [MinhashDedupCluster(input_folder=str(work / "buckets"), output_folder=str(work / "remove"),
                             config=config, save_cluster_id=True)],
        [reader(), MinhashDedupFilter(input_folder=str(work / "remove"), load_cluster_ids=True,
                                      exclusion_writer=JsonlWriter(str(work / "removed"))),
         JsonlWriter(str(work / "kept"))],
    ]
    task_counts = [tasks, config.num_buckets, 1, tasks]
    for k, (pipeline, n_tasks) in enumerate(zip(stages, task_counts)):
        LocalPipelineExecutor(pipeline=pipeline, tasks=n_tasks, workers=1,
                              logging_dir=str(work / f"logs-{k}")).run()

    cluster_of: dict[str, int] = {}
    for path in list((work / "kept").glob("*.jsonl.gz")) + list((work / "removed").glob("*.jsonl.gz")):
        with gzip.open(path, "rt") as handle:
            for line in handle:
                record = json.loads(line)
                cluster_of[record["id"]] = int(record["metadata"]["minhash_cluster_id"])
    ids = [i for f in files for i in pq.read_table(f, columns=["id"]).column("id").to_pylist()]
    labels = np.array([cluster_of.get(i, -1) for i in ids], dtype=np.int64)
    alone = labels < 0
    # Documents in no cluster are singletons: give each its own label.
    labels[alone] = labels.max(initial=0) + 1 + np.arange(int(alone.sum()))
    np.save(out, labels)


if __name__ == "__main__":
    main()
