"""The statistics stage's spilled runs at 2,500 and 1,200 demo documents (decision 0046):
test_statistics_stage.py's wminhash settings at a 1 MB budget, batches of 300.
    NUMBA_NUM_THREADS=1 HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/results/tests/cuts-s50/wminhash_runs.py
"""
import gzip
import json
import tempfile

import neardup
from neardup.data import demo_corpus_path
from neardup.engine import statistics as stage

texts = [json.loads(line)["text"] for line in gzip.open(demo_corpus_path(), "rt")][:2500]
merged = []
real_merge = stage._merge_runs


def merge(runs, min_df, budget):
    merged.append(len(runs))
    return real_merge(runs, min_df, budget)


stage._merge_runs = merge
SETTINGS = [{}, {"phrase_length": 3, "threshold": 0.2}, {"weighting": "idf", "phrase_length": 3},
            {"divide_by_phrase_df": True, "rare_fraction": 0.01, "phrase_length": 3, "threshold": 0.2},
            {"weighting": "uniform", "rare_fraction": None, "phrase_length": 3, "threshold": 0.2},
            {"verify": "exact"}]
for n in (2500, 1200):
    for params in SETTINGS:
        merged.clear()
        with tempfile.TemporaryDirectory() as tmp:
            memory = neardup.dedup(texts[:n], "wminhash", engine="memory", pair_types=False, **params)
            spilled = neardup.dedup(texts[:n], "wminhash", engine="local", pair_types=False,
                                    work_dir=tmp + "/w", memory_limit="1MB", partitions=64,
                                    batch_size=300, **params)
        print(n, params, "runs merged per table:", merged, "clusters:", memory.n_clusters,
              "same:", bool((spilled.clusters == memory.clusters).all()))
