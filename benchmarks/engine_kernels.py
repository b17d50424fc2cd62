"""Engine kernels against the way they were done before, measured in one run.

Each row times the current code and a reference that does the same work the old way
(the same inputs, results checked equal), best of ``--repeat`` runs; the ratio is what to
compare across machines.

- ``spill reads``: reading a spilled ``.npy`` run through ``engine.workdir.MappedArray``
  (header parsed once, data mapped per read) against ``np.load(mmap_mode="r")`` per read,
  as the out-of-core retrieval and statistics stages did; plus sanderson on the first
  2,500 demo documents out of core at a 1 MB memory limit (the regime that makes tens of
  thousands of reads) against the in-memory engine, same clusters.
- ``canonical``: ``Pairs.canonical`` (one int64 key per pair) against the three-key
  ``np.lexsort`` it used before, on random pairs.
- ``intersection``: the branch-free ``intersection_size`` against the branching merge it
  replaced, over random pairs of sorted hash sets (one thread).

    python -m benchmarks one engine_kernels [--repeat 3] [--pairs 3000000]
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.harness import machine


def best_of(repeat: int, fn) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def spill_reads(repeat: int) -> dict:
    from neardup.engine.workdir import MappedArray

    reads = 20_000
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.hash.npy"
        np.save(path, np.sort(np.random.default_rng(0).integers(0, 2**63, 50_000)).astype(np.uint64))
        mapped = MappedArray(path)
        probe = np.uint64(2**62)
        new, a = best_of(repeat, lambda: [int(np.searchsorted(mapped.read(), probe)) for _ in range(reads)][-1])
        old, b = best_of(repeat, lambda: [int(np.searchsorted(np.load(path, mmap_mode="r"), probe))
                                          for _ in range(reads)][-1])
    assert a == b
    return {"reads": reads, "mapped_array_s": new, "np_load_s": old, "ratio_old_over_new": old / new}


def sanderson_at_1mb(repeat: int) -> dict:
    import neardup
    from neardup.data import demo_corpus_path

    with gzip.open(demo_corpus_path(), "rt") as handle:
        texts = [json.loads(line)["text"] for line in handle][:2500]

    def spilled():
        with tempfile.TemporaryDirectory() as tmp:
            return neardup.dedup(texts, "sanderson", engine="local", pair_types=False,
                                 work_dir=f"{tmp}/w", memory_limit="1MB", batch_size=300)

    memory_s, memory = best_of(repeat, lambda: neardup.dedup(texts, "sanderson", engine="memory",
                                                             pair_types=False))
    local_s, local = best_of(repeat, spilled)
    assert (local.clusters == memory.clusters).all()
    return {"docs": len(texts), "local_1mb_s": local_s, "memory_s": memory_s,
            "ratio_local_over_memory": local_s / memory_s}


def canonical(repeat: int, n_pairs: int) -> dict:
    from neardup.graph.edges import Pairs

    rng = np.random.default_rng(0)
    pairs = Pairs(rng.integers(0, 5000, n_pairs), rng.integers(0, 5000, n_pairs),
                  rng.random(n_pairs).astype(np.float32))

    def lexsort():
        lo, hi = np.minimum(pairs.left, pairs.right), np.maximum(pairs.left, pairs.right)
        keep = lo != hi
        lo, hi, score = lo[keep], hi[keep], pairs.score[keep]
        order = np.lexsort((-score, hi, lo))
        lo, hi, score = lo[order], hi[order], score[order]
        first = np.ones(lo.size, dtype=bool)
        first[1:] = (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])
        return Pairs(lo[first], hi[first], score[first])

    new, a = best_of(repeat, pairs.canonical)
    old, b = best_of(repeat, lexsort)
    assert all((x == y).all() for x, y in zip(a, b))
    return {"pairs": n_pairs, "canonical_s": new, "lexsort_s": old, "ratio_old_over_new": old / new}


def intersection(repeat: int) -> dict:
    from numba import njit

    from neardup.methods.overlap_kernels import intersection_size

    @njit(inline="always")
    def branching(hashes, a0, a1, b0, b1):
        inter = 0
        while a0 < a1 and b0 < b1:
            x, y = hashes[a0], hashes[b0]
            if x == y:
                inter += 1
                a0 += 1
                b0 += 1
            elif x < y:
                a0 += 1
            else:
                b0 += 1
        return inter

    def over_pairs(kernel):
        @njit
        def run(hashes, offsets, left, right):
            out = np.empty(left.shape[0], np.int64)
            for p in range(left.shape[0]):
                i, j = left[p], right[p]
                out[p] = kernel(hashes, offsets[i], offsets[i + 1], offsets[j], offsets[j + 1])
            return out
        return run

    rng = np.random.default_rng(0)
    base = np.unique(rng.integers(0, 2**63, 3000)).astype(np.uint64)
    # Half the sets are 60% samples of one base set (copies), half unrelated.
    sets = [np.sort(base[rng.random(base.size) < 0.6]) if i % 2 else
            np.unique(rng.integers(0, 2**63, 1800)).astype(np.uint64) for i in range(400)]
    offsets = np.zeros(len(sets) + 1, np.int64)
    np.cumsum([s.size for s in sets], out=offsets[1:])
    hashes = np.concatenate(sets)
    left, right = rng.integers(0, len(sets), 5000), rng.integers(0, len(sets), 5000)
    result = {}
    for name, kernel in (("branch_free", intersection_size), ("branching", branching)):
        run = over_pairs(kernel)
        run(hashes, offsets, left, right)  # compile
        result[f"{name}_s"], result[name] = best_of(repeat, lambda: run(hashes, offsets, left, right))
    assert (result.pop("branch_free") == result.pop("branching")).all()
    result["pairs"] = int(left.size)
    result["mean_set_size"] = float(np.diff(offsets).mean())
    result["ratio_old_over_new"] = result["branching_s"] / result["branch_free_s"]
    return result


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=3_000_000, help="pairs for the canonical row")
    args = parser.parse_args(argv)
    results = {"machine": machine(), "repeat": args.repeat,
               "spill_reads": spill_reads(args.repeat), "sanderson_1mb": sanderson_at_1mb(args.repeat),
               "canonical": canonical(args.repeat, args.pairs), "intersection": intersection(args.repeat)}
    print(json.dumps(results, indent=2))
    return results

