"""Embedding similarity graph: time and peak memory of ``similarity_pairs`` by index.

Synthetic corpus shaped like news embeddings: 256-d unit vectors, half of the documents
singletons and the rest in clusters of 2-20 noisy copies (copies have median cosine
~0.93; unrelated documents ~0.45, as every centre leans towards one shared direction).
Pairs are taken at cosine >= 0.9. Each (size, index) case runs in a fresh process whose
peak-RSS mark is reset (Linux /proc/self/clear_refs) just before the call: "peak RSS" is
the process's peak during ``similarity_pairs`` (interpreter, libraries and the n * 256 * 4
bytes of embeddings included), "search MB" that peak minus the RSS before the call
(after a small warm-up call, so one-time BLAS/OpenMP buffers are not counted).
Recall is measured against the flat (exact) result of the same size. "hnsw" builds its
graph with one thread (``deterministic=True``, the default), "hnsw-par" with all.

    python -m benchmarks one similarity_graph [--sizes 20000 200000] [--indexes flat hnsw]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.harness import ROOT, machine

DIM = 256
THRESHOLD = 0.9


def clustered_embeddings(n: int, d: int = DIM, seed: int = 0) -> tuple[np.ndarray, int]:
    """(float32 (n, d) unit rows, number of true duplicate pairs), built in blocks."""
    rng = np.random.default_rng(seed)
    # 11 of 12 clusters are singletons, the rest have 2-20 copies (mean 11): about half
    # of the documents have a duplicate.
    draws = np.where(rng.random(n) < 11 / 12, 1, rng.integers(2, 21, n))
    sizes = draws[: int(np.searchsorted(np.cumsum(draws), n)) + 1]
    sizes[-1] -= int(sizes.sum()) - n
    common = rng.standard_normal(d).astype(np.float32)
    common /= np.linalg.norm(common)
    centres = common + rng.standard_normal((sizes.size, d)).astype(np.float32) / np.sqrt(d)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    cluster = np.repeat(np.arange(sizes.size), sizes)
    x = np.empty((n, d), dtype=np.float32)
    for start in range(0, n, 16384):
        ids = cluster[start : start + 16384]
        v = centres[ids] + 0.25 * rng.standard_normal((ids.size, d)).astype(np.float32) / np.sqrt(d)
        x[start : start + 16384] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return x, int((sizes * (sizes - 1) // 2).sum())


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0  # kB
    raise KeyError(field)


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) of this process; False if unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def run_case(n: int, index: str, out: str, args: argparse.Namespace) -> dict:
    import faiss  # noqa: F401 - loaded before the peak is reset: ~80 MB of libraries

    from neardup.graph.similarity import similarity_pairs

    x, true_pairs = clustered_embeddings(n)
    # Warm-up: BLAS and OpenMP allocate their per-thread buffers on first use.
    similarity_pairs(x[:2000], threshold=THRESHOLD, index="flat", progress=False)
    rss_before = _status_mb("VmRSS")
    if not reset_peak_rss():  # the peak then includes building the corpus
        print("warning: cannot reset peak RSS; peaks include corpus generation", file=sys.stderr)
    options = {"deterministic": False} if index == "hnsw-par" else {}
    if args.k is not None:
        options["k"] = args.k
    if args.ef_search is not None:
        options["ef_search"] = args.ef_search
    kind = "hnsw" if index == "hnsw-par" else index
    start = time.perf_counter()
    pairs = similarity_pairs(
        x, threshold=THRESHOLD, index=kind, threads=args.threads, progress=False, **options
    )
    seconds = time.perf_counter() - start
    peak = _status_mb("VmHWM")
    np.savez(out, left=pairs.left, right=pairs.right)
    return {
        "docs": n,
        "index": index,
        "k": args.k,
        "ef_search": args.ef_search,
        "seconds": seconds,
        "pairs": len(pairs),
        "true_pairs": true_pairs,
        "peak_rss_mb": peak,
        "rss_before_mb": rss_before,
        "search_mb": peak - rss_before,
    }


def pair_keys(path: str, n: int) -> np.ndarray:
    data = np.load(path)
    return np.sort(data["left"] * n + data["right"])


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 200_000])
    parser.add_argument("--indexes", nargs="+", default=["flat", "hnsw", "hnsw-par", "ivf"],
                        help="flat, hnsw (one-thread build), hnsw-par (parallel build), ivf")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--k", type=int, default=None,
                        help="neighbours per document (default: range search / 100)")
    parser.add_argument("--ef-search", type=int, default=None, help="HNSW efSearch (default 128)")
    parser.add_argument("--case", nargs=3, metavar=("N", "INDEX", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.case:  # child process: one measurement, JSON on stdout
        n, index, out = int(args.case[0]), args.case[1], args.case[2]
        print(json.dumps(run_case(n, index, out, args)))
        return {}

    import faiss

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            exact = None
            for index in args.indexes:
                out = str(Path(tmp) / f"{n}-{index}.npz")
                cmd = [sys.executable, "-m", "benchmarks.similarity_graph", "--case", str(n), index, out]
                for flag, value in (("--threads", args.threads), ("--k", args.k),
                                    ("--ef-search", args.ef_search)):
                    if value is not None:
                        cmd += [flag, str(value)]
                child = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT)
                result = json.loads(child.stdout)
                keys = pair_keys(out, n)
                if index == "flat":
                    exact = keys
                result["recall"] = (
                    float(np.isin(exact, keys).mean()) if exact is not None and exact.size else None
                )
                rows.append(result)
                print(f"{n} {index}: {result['seconds']:.1f} s", file=sys.stderr, flush=True)

    settings = f"k={args.k or 'range/100'}, efSearch={args.ef_search or 128}"
    print(f"\nsimilarity_pairs, {DIM}-d clustered embeddings, threshold {THRESHOLD}, {settings}; "
          f"faiss {faiss.__version__}; {machine()}\n")
    print("| docs | index | time (s) | pairs | recall vs flat | peak RSS (MB) | search (MB) |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for r in rows:
        recall = "-" if r["recall"] is None else f"{r['recall']:.4f}"
        print(f"| {r['docs']:,} | {r['index']} | {r['seconds']:.1f} | {r['pairs']:,} | {recall} | "
              f"{r['peak_rss_mb']:.0f} | {r['search_mb']:.0f} |")
    return {"machine": machine(), "faiss": faiss.__version__, "dim": DIM,
                                     "threshold": THRESHOLD, "rows": rows}


if __name__ == "__main__":  # the --case child: one measurement, JSON on stdout
    run(sys.argv[1:])
