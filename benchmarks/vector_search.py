"""The vector stage's search alone, without a model: CPU seconds and peak RSS per corpus size
and memory limit, and the pairs against the in-memory flat search (#14).

Rows are synthetic 256-d unit vectors (RETSim's dimension): 70% random singletons, the
rest near-copies of cluster centres (Gaussian noise, cosine ~0.95 to the centre), so the
range search at 0.9 finds real pairs. A stand-in method hands the precomputed rows to the
stage, so only storage, sharded flat search, rescoring and union-find are measured. Each
setting runs in a child process (CPU = user + system, peak RSS from ``os.wait4``).

    python -m benchmarks one vector_search --docs 20000 50000 --memory-limits 16MB 1GB
    python -m benchmarks one vector_search --docs 100000 --index auto --memory-limits 64MB --compare exact
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import machine

CHILD = r'''
import json, sys, time, resource
import numpy as np
sys.path.insert(0, sys.argv[5])
from neardup.engine import CorpusStageConfig, run_vector_stage
from neardup.graph.similarity import similarity_pairs
from neardup.io.batch import DocumentBatch
from neardup.methods.base import Capabilities, Method, Sketch, VectorSearch

n, limit, work, compare = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
index = sys.argv[6]
rng = np.random.default_rng(0)
d = 256
rows = rng.standard_normal((n, d)).astype(np.float32)
copies = rng.random(n) < 0.3
centres = rng.integers(0, max(n // 20, 1), n)
rows[copies] = rows[centres[copies]] + 0.33 * rng.standard_normal((int(copies.sum()), d)).astype(np.float32)
rows /= np.linalg.norm(rows, axis=1, keepdims=True)

class Precomputed(Method):
    """Hands the stage precomputed rows: text i is row i."""
    name = "precomputed"
    def __init__(self, *, threshold=0.9, index="flat"):
        self.threshold, self.index = threshold, index
    def sketch(self, texts):
        idx = np.array([int(t) for t in texts])
        return Sketch(np.ones(idx.size, np.int64), {"embedding": rows[idx]})
    def find_pairs(self, sketch):
        raise NotImplementedError
    @property
    def capabilities(self):
        # As EmbeddingMethod.capabilities: auto is flat up to 50,000 rows, IVF above.
        limit = {"auto": 50_000, "flat": None, "ivf": 0}[self.index]
        return Capabilities(vectors=VectorSearch(threshold=self.threshold, exact_limit=limit,
                                                 index="flat" if self.index == "flat" else "ivf"))
    def vector_rows(self, sketch):
        return sketch.arrays["embedding"], np.ones(len(sketch), np.int64)

def batches():
    for s in range(0, n, 10000):
        e = min(n, s + 10000)
        yield DocumentBatch(ids=[str(i) for i in range(s, e)], texts=[str(i) for i in range(s, e)],
                            dates=None, source="synthetic", rows=np.arange(s, e))

def labels_of(pairs):
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    g = coo_matrix((np.ones(len(pairs)), (pairs.left, pairs.right)), shape=(n, n))
    return connected_components(g, directed=False)[1]

def joined(labels, pairs):
    """Fraction of ``pairs`` whose two rows share a cluster in ``labels``."""
    return float((labels[pairs.left] == labels[pairs.right]).mean()) if len(pairs) else 1.0

t0 = time.process_time()
stage = run_vector_stage(batches(), Precomputed(index=index),
                         config=CorpusStageConfig(work_dir=work, memory_limit=limit))
cpu = time.process_time() - t0
out = {"index": index, "stage_cpu_s": round(cpu, 2), "stats": stage.stats,
       "components": int(np.unique(stage.roots).size),
       "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
stage_labels = np.unique(stage.roots, return_inverse=True)[1]
if compare in ("memory", "exact"):
    from sklearn.metrics import adjusted_rand_score
    # The in-memory search with the same index choice (auto: IVF above 50,000 rows).
    t0 = time.process_time()
    memory = similarity_pairs(rows, threshold=0.9, index=index)
    out["memory_cpu_s"] = round(time.process_time() - t0, 2)
    memory_labels = labels_of(memory)
    forest = set(zip(stage.pairs.left.tolist(), stage.pairs.right.tolist()))
    every = set(zip(memory.left.tolist(), memory.right.tolist()))
    out.update(pairs_in_memory=len(memory), forest_subset_of_memory_pairs=forest <= every,
               identical_components=bool((memory_labels == stage_labels).all()),
               ari_stage_vs_memory=adjusted_rand_score(memory_labels, stage_labels))
    if compare == "exact":
        t0 = time.process_time()
        exact = memory if index == "flat" else similarity_pairs(rows, threshold=0.9, index="flat")
        out["exact_cpu_s"] = round(time.process_time() - t0, 2)
        exact_labels = labels_of(exact)
        found = set(zip(memory.left.tolist(), memory.right.tolist()))
        out.update(
            pairs_exact=len(exact),
            # Of the exact search's pairs: found by the in-memory search, joined by each.
            memory_pair_recall=sum(p in found for p in zip(exact.left.tolist(), exact.right.tolist())) / max(len(exact), 1),
            memory_pairs_joined=joined(memory_labels, exact),
            stage_pairs_joined=joined(stage_labels, exact),
            ari_memory_vs_exact=adjusted_rand_score(exact_labels, memory_labels),
            ari_stage_vs_exact=adjusted_rand_score(exact_labels, stage_labels))
print(json.dumps(out))
'''


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[20000])
    parser.add_argument("--memory-limits", nargs="+", default=["16MB", "1GB"])
    parser.add_argument("--index", choices=["flat", "auto", "ivf"], default="flat",
                        help="the method's index (auto: flat up to 50,000 rows, IVF above)")
    parser.add_argument("--compare", nargs="?", const="memory", default="none",
                        choices=["none", "memory", "exact"],
                        help="memory: also run the in-memory search with the same index and "
                             "compare clusters (ARI); exact: also the exact flat search (pair "
                             "recall, ARI against it)")
    args = parser.parse_args(argv)
    root = str(Path(__file__).resolve().parents[1])
    rows = []
    for n in args.docs:
        for limit in args.memory_limits:
            with tempfile.TemporaryDirectory() as work:
                proc = subprocess.run([sys.executable, "-c", CHILD, str(n), limit, work,
                                       args.compare, root, args.index],
                                      capture_output=True, text=True, check=True)
            row = {"docs": n, "memory_limit": limit, **json.loads(proc.stdout.strip().splitlines()[-1])}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return {"machine": machine(), "rows": rows}

