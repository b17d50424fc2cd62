"""Memory against local (out of core) on the case of issue 36: how many documents land in
another cluster.

    python -m experiments.chain_rule.engines --rule one-chain             # this checkout
    python -m experiments.chain_rule.engines --rule two-chain --data DIR  # a copy of 9e47cf8

The demo corpus's first 2,500 documents, ngram on character 5-grams at containment 0.8
(default ``max_df``), in memory and out of core with a 1 MB budget and 16 key
partitions. A document counts as moved when its cluster's members differ between the
two. Writes results/engines-<rule>.json.
"""

from __future__ import annotations

import tempfile

import numpy as np

import neardup
from experiments.chain_rule.measure import arguments, demo_corpus, write_rows
from neardup.text import ShingleConfig

PARAMS = {"shingle": {"unit": "char", "n": 5}, "similarity": "containment", "threshold": 0.8}


def moved_documents(a: np.ndarray, b: np.ndarray) -> int:
    """Documents whose cluster (as a set of positions) differs between labelings a and b."""
    pairs = np.unique(np.stack([a, b], axis=1), axis=0)
    # A cluster of a maps to one cluster of b (and back) exactly when both agree on it.
    split_a = np.unique(pairs[:, 0], return_counts=True)
    split_b = np.unique(pairs[:, 1], return_counts=True)
    bad_a = split_a[0][split_a[1] > 1]
    bad_b = split_b[0][split_b[1] > 1]
    return int(np.count_nonzero(np.isin(a, bad_a) | np.isin(b, bad_b)))


def main() -> None:
    args = arguments(__doc__)
    texts = demo_corpus().texts
    params = {**PARAMS, "shingle": ShingleConfig(**PARAMS["shingle"])}
    memory = neardup.dedup(texts, "ngram", engine="memory", pair_types=False, **params)
    with tempfile.TemporaryDirectory() as work:
        local = neardup.dedup(texts, "ngram", engine="local", pair_types=False,
                              work_dir=f"{work}/w", memory_limit="1MB", partitions=16, **params)
    row = {"documents": len(texts), "memory_clusters": memory.n_clusters,
           "local_clusters": local.n_clusters,
           "moved_documents": moved_documents(memory.clusters, local.clusters)}
    print(row)
    write_rows(args.out / f"engines-{args.rule}.json", "experiments.chain_rule.engines", [row])


if __name__ == "__main__":
    main()
