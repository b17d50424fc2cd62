"""Does the out-of-core corpus stage keep each method's quality? (#14)

For every method with a keyed corpus stage (ngram, rerank, and wminhash and sanderson
behind their statistics stage, included), clusters the standard benchmark's splits
with the in-memory stage (every candidate pair verified) and with the corpus stage (star
+ chain edges, verified in batches, tiny partitions and memory so everything spills),
and reports the ARI between the two clusterings and each one's ARI against the labels.
Thresholds are the methods' defaults and the validation-tuned ones from
docs/benchmarks.md; nothing here is tuned.

``--neural`` does the same for the embedding methods and the out-of-core vector stage
(neardup.engine.vectors) with a 1MB memory limit (shards of ~250 rows, so the search runs
over a dozen or more shards), plus the vector stage with float16 row storage. Embeddings
are cached in a temporary directory, so the model runs once per setting.

    python -m benchmarks one corpus_stage_agreement [--splits validation test]
    python -m benchmarks one corpus_stage_agreement --neural --splits validation
    python -m benchmarks one corpus_stage_agreement --methods ngram rerank spotsigs wminhash sanderson
    python -m benchmarks one corpus_stage_agreement --methods wminhash --only-params verify=exact
    python -m benchmarks one corpus_stage_agreement --methods minhash --only-params verify=exact
    python -m benchmarks one corpus_stage_agreement --methods rerank --only-params candidates=retsim --memory-limit 1MB
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import neardup
from benchmarks.harness import machine
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
    ("minhash", {"verify": "exact"}),
    ("minhash", {"threshold": 0.3, "verify": "exact"}),
    ("minhash", {"shingle": "char", "ngram": 10, "threshold": 0.3, "verify": "exact"}),
    ("simhash", {}),
    ("simhash", {"threshold": 6}),
    ("ngram", {}),
    ("ngram", {"shingle": "char", "ngram": 5, "threshold": 0.3}),
    ("rerank", {}),
    ("rerank", {"candidates": "retsim"}),  # on the vector stage (RETSim rows, texts scored)
    ("spotsigs", {}),
    ("spotsigs", {"threshold": 0.3}),
    ("wminhash", {}),
    ("wminhash", {"phrase_length": 3}),
    ("wminhash", {"verify": "exact"}),
    ("wminhash", {"phrase_length": 3, "verify": "exact"}),
    ("sanderson", {}),
]
NEURAL_SETTINGS = [
    ("retsim", {}),
    ("biencoder", {"model": "biencoder-news"}),
    ("retsim-partial", {"model": "retsim-news"}),
    ("retsim", {"model": "retsim-news"}),
    ("biencoder", {}),
]


def _float16_run(texts, method_name, params, cache):
    """The vector stage with float16 row storage (not an option of neardup.dedup): one
    batch of every text, as neardup.dedup reads them, so the embedding cache is hit."""
    import numpy as np

    from neardup.engine import CorpusStageConfig, run_vector_stage
    from neardup.graph.cluster import canonical_labels
    from neardup.io.batch import DocumentBatch
    from neardup.methods import make_method

    method = make_method(method_name, cache_dir=cache, **params)
    batch = DocumentBatch(ids=[str(i) for i in range(len(texts))], texts=texts, dates=None,
                          source="bench", rows=np.arange(len(texts)))
    stage = run_vector_stage([batch], method, storage="float16",
                             config=CorpusStageConfig(memory_limit="1MB"))
    return canonical_labels(stage.roots), len(stage.pairs)


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", nargs="+", default=["validation", "test"])
    parser.add_argument("--neural", action="store_true",
                        help="the embedding methods and the vector stage instead")
    parser.add_argument("--only", nargs="+", default=None, metavar="METHOD[:MODEL]",
                        help="--neural: only these settings (e.g. biencoder, retsim:retsim-news)")
    parser.add_argument("--cache-dir", default=None,
                        help="--neural: keep the embedding cache here (default: a temporary "
                             "directory)")
    parser.add_argument("--memory-limit", default="16MB",
                        help="the local stage's memory limit ('default': neardup's default)")
    parser.add_argument("--partitions", default="64",
                        help="the local stage's partitions ('default': sized by neardup)")
    parser.add_argument("--methods", nargs="+", default=None,
                        help="only these methods' settings (default: all)")
    parser.add_argument("--only-params", nargs="+", default=None, metavar="KEY=VALUE",
                        help="only the settings whose parameters include all of these "
                             "(e.g. verify=exact)")
    args = parser.parse_args(argv)
    if args.neural:
        return neural(args)
    memory_limit = None if args.memory_limit == "default" else args.memory_limit
    partitions = None if args.partitions == "default" else int(args.partitions)
    rows = []
    for split in args.splits:
        corpus = load_labeled(ROOT / "data" / "reuters-news" / f"{split}.jsonl.gz")
        texts = list(corpus.texts)
        for method, params in SETTINGS:
            if args.methods and method not in args.methods:
                continue
            if args.only_params and not all(
                    "=" in kv and str(params.get(kv.split("=", 1)[0])) == kv.split("=", 1)[1]
                    for kv in args.only_params):
                continue
            params = dict(params)
            if "shingle" in params:
                from neardup.text import ShingleConfig

                params["shingle"] = ShingleConfig(unit=params.pop("shingle"), n=params.pop("ngram"))
            start, cpu = time.perf_counter(), time.process_time()
            memory = neardup.dedup(texts, method, cluster="components", engine="memory", pair_types=False, **params)
            t_memory, cpu_memory = time.perf_counter() - start, time.process_time() - cpu
            with tempfile.TemporaryDirectory() as work:
                start, cpu = time.perf_counter(), time.process_time()
                local = neardup.dedup(texts, method, cluster="components", engine="local", pair_types=False,
                                      work_dir=work, memory_limit=memory_limit,
                                      partitions=partitions, **params)
                t_local, cpu_local = time.perf_counter() - start, time.process_time() - cpu
                # What the sketch stage stores per document to verify with (arrays, sets).
                arrays = Path(work) / "sketch" / "arrays"
                stored = {f.name: f.stat().st_size for f in arrays.iterdir()} if arrays.is_dir() else {}
                # The vector stage (rerank over RETSim): rows and the texts it scores.
                embed = Path(work) / "embed"
                stored.update({f.name: f.stat().st_size for f in embed.glob("*.*")
                               if f.name in ("rows.bin", "texts.bin", "texts.offsets.bin")} if embed.is_dir() else {})
                stage_stats = local.params.get("corpus_stage") or {}
            row = {
                "split": split,
                "method": method,
                "params": {k: str(v) for k, v in params.items()},
                "docs": len(texts),
                "engine_local": local.params["engine"],  # "memory" if the setting fell back
                "ari_local_vs_memory": adjusted_rand_index(memory.clusters, local.clusters),
                "ari_memory_vs_labels": adjusted_rand_index(corpus.clusters, memory.clusters),
                "ari_local_vs_labels": adjusted_rand_index(corpus.clusters, local.clusters),
                "pairs_memory": len(memory.pairs),
                "pairs_local": len(local.pairs),
                "verification_bytes_per_doc": round(sum(stored.values()) / max(len(texts), 1), 1),
                "verification_files": stored,
                "seconds_memory": round(t_memory, 2),
                "seconds_local": round(t_local, 2),
                "cpu_seconds_memory": round(cpu_memory, 2),
                "cpu_seconds_local": round(cpu_local, 2),
                "local_shards": stage_stats.get("shards"),
            }
            rows.append(row)
            print(row, flush=True)
    return {"machine": machine(), "rows": rows}


def neural(args) -> dict:
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        cache = args.cache_dir or scratch
        for split in args.splits:
            corpus = load_labeled(ROOT / "data" / "reuters-news" / f"{split}.jsonl.gz")
            texts = list(corpus.texts)
            for method, params in NEURAL_SETTINGS:
                label = method + (f":{params['model']}" if "model" in params else "")
                if args.only is not None and label not in args.only:
                    continue
                start = time.process_time()
                memory = neardup.dedup(texts, method, cluster="components", engine="memory", pair_types=False,
                                       cache_dir=cache, **params)
                cpu_memory = time.process_time() - start  # embedding included
                with tempfile.TemporaryDirectory() as work:
                    start = time.process_time()
                    local = neardup.dedup(texts, method, cluster="components", engine="local", pair_types=False,
                                          work_dir=work, memory_limit="1MB", cache_dir=cache,
                                          **params)
                    cpu_local = time.process_time() - start  # embeddings from the cache
                half_labels, half_pairs = _float16_run(texts, method, params, cache)
                row = {
                    "split": split,
                    "method": method,
                    "params": {k: str(v) for k, v in params.items()},
                    "docs": len(texts),
                    "ari_local_vs_memory": adjusted_rand_index(memory.clusters, local.clusters),
                    "identical_clusters": bool((memory.clusters == local.clusters).all()),
                    "ari_local_float16_vs_memory": adjusted_rand_index(memory.clusters, half_labels),
                    "identical_clusters_float16": bool((memory.clusters == half_labels).all()),
                    "ari_memory_vs_labels": adjusted_rand_index(corpus.clusters, memory.clusters),
                    "ari_local_vs_labels": adjusted_rand_index(corpus.clusters, local.clusters),
                    "pairs_memory": len(memory.pairs),
                    "forest_edges_local": len(local.pairs),
                    "forest_edges_local_float16": half_pairs,
                    "shards_local": local.params["corpus_stage"]["shards"],
                    "cpu_s_memory_with_embedding": round(cpu_memory, 2),
                    "cpu_s_local_from_cache": round(cpu_local, 2),
                }
                rows.append(row)
                print(row, flush=True)
    return {"machine": machine(), "rows": rows}

