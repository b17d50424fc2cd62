"""The vector stage's search alone, without a model: CPU seconds and peak RSS per corpus size
and memory limit, and the pairs against the in-memory flat search (#14).

Rows are synthetic 256-d unit vectors (RETSim's dimension): 70% random singletons, the
rest near-copies of cluster centres (Gaussian noise, cosine ~0.95 to the centre), so the
range search at 0.9 finds real pairs. A stand-in method hands the precomputed rows to the
stage, so only storage, sharded flat search, rescoring and union-find are measured. Each
setting runs in a child process (CPU = user + system, peak RSS from ``os.wait4``).

    python bench/bench_vector_search.py --docs 20000 50000 --memory-limits 16MB 1GB
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import machine, save

CHILD = r'''
import json, sys, time, resource
import numpy as np
sys.path.insert(0, sys.argv[5])
from neardup.engine import CorpusStageConfig, run_vector_stage
from neardup.graph.similarity import similarity_pairs
from neardup.io.batch import DocumentBatch
from neardup.methods.base import Method, Sketch, VectorSearch

n, limit, work, compare = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4] == "1"
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
    def __init__(self, *, threshold=0.9):
        self.threshold = threshold
    def sketch(self, texts):
        idx = np.array([int(t) for t in texts])
        return Sketch(np.ones(idx.size, np.int64), {"embedding": rows[idx]})
    def find_pairs(self, sketch):
        raise NotImplementedError
    @property
    def vector_search(self):
        return VectorSearch(threshold=self.threshold)
    def vector_rows(self, sketch):
        return sketch.arrays["embedding"], np.ones(len(sketch), np.int64)

def batches():
    for s in range(0, n, 10000):
        e = min(n, s + 10000)
        yield DocumentBatch(ids=[str(i) for i in range(s, e)], texts=[str(i) for i in range(s, e)],
                            dates=None, source="synthetic", rows=np.arange(s, e))

t0 = time.process_time()
stage = run_vector_stage(batches(), Precomputed(), config=CorpusStageConfig(work_dir=work, memory_limit=limit))
cpu = time.process_time() - t0
out = {"stage_cpu_s": round(cpu, 2), "stats": stage.stats,
       "components": int(np.unique(stage.roots).size),
       "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
if compare:
    memory = similarity_pairs(rows, threshold=0.9, index="flat")
    forest = set(zip(stage.pairs.left.tolist(), stage.pairs.right.tolist()))
    every = set(zip(memory.left.tolist(), memory.right.tolist()))
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    g = coo_matrix((np.ones(len(memory)), (memory.left, memory.right)), shape=(n, n))
    _, labels = connected_components(g, directed=False)
    same = bool((np.unique(labels, return_inverse=True)[1] ==
                 np.unique(stage.roots, return_inverse=True)[1]).all())
    out.update(pairs_in_memory=len(memory), forest_subset_of_memory_pairs=forest <= every,
               identical_components=same)
print(json.dumps(out))
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[20000])
    parser.add_argument("--memory-limits", nargs="+", default=["16MB", "1GB"])
    parser.add_argument("--compare", action="store_true",
                        help="also run the in-memory flat search and compare components")
    parser.add_argument("--name", default="vector_search")
    args = parser.parse_args()
    root = str(Path(__file__).resolve().parents[1])
    rows = []
    for n in args.docs:
        for limit in args.memory_limits:
            with tempfile.TemporaryDirectory() as work:
                proc = subprocess.run([sys.executable, "-c", CHILD, str(n), limit, work,
                                       "1" if args.compare else "0", root],
                                      capture_output=True, text=True, check=True)
            row = {"docs": n, "memory_limit": limit, **json.loads(proc.stdout.strip().splitlines()[-1])}
            rows.append(row)
            print(json.dumps(row), flush=True)
    save(args.name, {"machine": machine(), "rows": rows,
                     "command": "python bench/bench_vector_search.py " + " ".join(sys.argv[1:])})


if __name__ == "__main__":
    main()
