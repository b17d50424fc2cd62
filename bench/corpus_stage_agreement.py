"""Does the out-of-core corpus stage keep each method's quality? (#14)

For every method with a keyed corpus stage, clusters the standard benchmark's splits
with the in-memory stage (every candidate pair verified) and with the corpus stage (star
+ chain edges, verified in batches, tiny partitions and memory so everything spills),
and reports the ARI between the two clusterings and each one's ARI against the labels.
Thresholds are the methods' defaults and the validation-tuned ones from
docs/benchmarks.md; nothing here is tuned.

    python bench/corpus_stage_agreement.py [--splits validation test]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import machine, save

import neardup
from neardup.eval.labeled import load_labeled
from neardup.eval.metrics import adjusted_rand_index

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = [
] if False else [
    ("exact", {}),
    ("minhash", {}),
    ("minhash", {"threshold": 0.3}),
    ("minhash", {"threshold": 0.7}),
    ("minhash", {"shingle": "char", "ngram": 10, "threshold": 0.3}),
    ("simhash", {}),
    ("simhash", {"threshold": 6}),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", nargs="+", default=["validation", "test"])
    args = parser.parse_args()
    rows = []
    for split in args.splits:
        corpus = load_labeled(ROOT / "benchmarks" / "reuters-news" / f"{split}.jsonl.gz")
        texts = list(corpus.texts)
        for method, params in SETTINGS:
            params = dict(params)
            if "shingle" in params:
                from neardup.text import ShingleConfig

                params["shingle"] = ShingleConfig(unit=params.pop("shingle"), n=params.pop("ngram"))
            start = time.perf_counter()
            memory = neardup.dedup(texts, method, engine="memory", pair_types=False, **params)
            t_memory = time.perf_counter() - start
            with tempfile.TemporaryDirectory() as work:
                start = time.perf_counter()
                local = neardup.dedup(texts, method, engine="local", pair_types=False,
                                      work_dir=work, memory_limit="16MB", partitions=64,
                                      **params)
                t_local = time.perf_counter() - start
            row = {
                "split": split,
                "method": method,
                "params": {k: str(v) for k, v in params.items()},
                "docs": len(texts),
                "ari_local_vs_memory": adjusted_rand_index(memory.clusters, local.clusters),
                "ari_memory_vs_labels": adjusted_rand_index(corpus.clusters, memory.clusters),
                "ari_local_vs_labels": adjusted_rand_index(corpus.clusters, local.clusters),
                "pairs_memory": len(memory.pairs),
                "pairs_local": len(local.pairs),
                "seconds_memory": round(t_memory, 2),
                "seconds_local": round(t_local, 2),
            }
            rows.append(row)
            print(row, flush=True)
    save("corpus_stage_agreement", {"machine": machine(), "rows": rows})


if __name__ == "__main__":
    main()
