"""Does the out-of-core vector stage give the in-memory clusters and pairs for Leiden and
HAC, and what does keeping every accepted pair cost against a spanning forest?

Runs ``static`` (the cheapest embedding method, its shipped model; ``--methods`` for others)
over the bundled demo corpus (4,919 documents) in memory and on the local engine with a
small memory limit (many shards), clustered by components, Leiden and HAC; records for
each run whether its clusters and pairs equal the in-memory run's, the number of pairs
kept, CPU and wall seconds. Embeddings are cached in a temporary directory, so each model
encodes the corpus once and every run times the search, link and clustering.

    python -m experiments.vector_every_pair.vector_every_pair [--methods static retsim] [--memory-limit 1MB]
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import time
from pathlib import Path

import numpy as np

import neardup
from benchmarks.harness import machine
from neardup.data import demo_corpus_path

HERE = Path(__file__).resolve().parent
CLUSTERINGS = ("components", "leiden", "hac")


def _pairs(result) -> set:
    return set(zip(result.pairs.left.tolist(), result.pairs.right.tolist()))


def _timed(records, method, cache, **options):
    cpu, wall = time.process_time(), time.perf_counter()
    result = neardup.dedup(records, method, id_field="id", pair_types=False, cache_dir=cache,
                           **options)
    return result, round(time.process_time() - cpu, 2), round(time.perf_counter() - wall, 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="+", default=["static"])
    parser.add_argument("--memory-limit", default="1MB")
    parser.add_argument("--name", default="demo")
    args = parser.parse_args(argv)
    with gzip.open(demo_corpus_path(), "rt") as handle:
        records = [{"id": str(r["id"]), "text": r["text"]} for r in map(json.loads, handle)]
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        for method in args.methods:
            neardup.dedup(records, method, id_field="id", pair_types=False, cache_dir=cache,
                          engine="memory")  # fills the embedding cache
            for cluster in CLUSTERINGS:
                memory, m_cpu, m_wall = _timed(records, method, cache, engine="memory", cluster=cluster)
                with tempfile.TemporaryDirectory() as work:
                    local, l_cpu, l_wall = _timed(records, method, cache, engine="local", cluster=cluster,
                                                  work_dir=work, memory_limit=args.memory_limit)
                stats = local.params.get("corpus_stage", {})
                rows.append({
                    "method": method, "cluster": cluster, "docs": len(records),
                    "fallback": local.params.get("engine_fallback", ""),
                    "shards": stats.get("shards"),
                    "same_clusters": bool(np.array_equal(local.clusters, memory.clusters)),
                    "same_representatives": bool(np.array_equal(local.representative,
                                                                memory.representative)),
                    "memory_pairs": len(memory.pairs), "local_pairs": len(local.pairs),
                    "same_pairs": _pairs(local) == _pairs(memory),
                    "local_pairs_subset": _pairs(local) <= _pairs(memory),
                    "n_clusters": int(memory.n_clusters),
                    "memory_cpu_s": m_cpu, "memory_wall_s": m_wall,
                    "local_cpu_s": l_cpu, "local_wall_s": l_wall,
                })
                print(json.dumps(rows[-1]), flush=True)
    out = HERE / "results" / f"{args.name}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"machine": machine(), "memory_limit": args.memory_limit,
                               "rows": rows}, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
