"""End-to-end `neardup dedup` with the neural methods on the first N Reuters-21578 stories.

Each configuration runs the whole command in a child process (reading, embedding or
signatures, similarity graph, clustering, writing the clusters); wall time and peak RSS
are measured with ``os.wait4``. Embedding caches are off, so every run embeds from
scratch. MinHash runs first as the reference; compare rows of one run (the load average
is printed).

    python -m benchmarks one neural_dedup [--docs 20000] [--only retsim retsim-news ...]

"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from benchmarks.harness import derived_corpus, machine, run_cli
from neardup.io.reuters import find_reuters_dir

# label -> `neardup dedup` options (the method and its model).
CONFIGS = {
    "minhash": ["--method", "minhash"],
    "retsim": ["--method", "retsim"],
    "retsim-news": ["--method", "retsim", "--model", "retsim-news"],
    # RETSim's chunks per model call (default 16): speed and ONNX Runtime's arena size.
    "retsim-news-batch256": ["--method", "retsim", "--model", "retsim-news",
                             "--param", "batch_size=256"],
    "retsim-news-batch8": ["--method", "retsim", "--model", "retsim-news",
                           "--param", "batch_size=8"],
    "biencoder": ["--method", "biencoder"],
    "biencoder-news": ["--method", "biencoder", "--model", "biencoder-news"],
    # Connected components, as measured (the verifier's default is now --cluster auto: Leiden).
    "rerank-verifier": ["--method", "rerank", "--param", "scorer=verifier", "--cluster", "components"],
    "rerank-cross-encoder": ["--method", "rerank", "--param", "scorer=cross-encoder"],
}


def _run(args: list[str]) -> dict:
    row = run_cli(args)  # exits with the command on failure
    return {"seconds": round(row["seconds"], 1), "peak_rss_mb": round(row["peak_rss_mb"]),
            "command": "neardup dedup " + " ".join(args)}


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--only", nargs="*", choices=list(CONFIGS), default=None)
    parser.add_argument("--work", type=Path, default=Path("/tmp/neardup-bench"))
    args = parser.parse_args(argv)
    if find_reuters_dir() is None:
        raise SystemExit("Reuters-21578 not found")
    args.work.mkdir(parents=True, exist_ok=True)
    corpus = derived_corpus(args.work / f"reuters-derived-{args.docs}.jsonl", args.docs)
    print(f"{machine()}; load average {os.getloadavg()[0]:.2f}; {args.docs:,} documents")
    rows = {}
    for label in args.only or list(CONFIGS):
        out = args.work / f"neural-{label}.parquet"
        row = _run([str(corpus), *CONFIGS[label], "--clusters-out", str(out), "-q"])
        row["docs_per_s"] = round(args.docs / row["seconds"], 1)
        rows[label] = row
        print(f"{label:22s} {row['seconds']:8.1f} s {row['docs_per_s']:8.1f} docs/s "
              f"{row['peak_rss_mb']:6d} MB", flush=True)
    return {"machine": machine(), "docs": args.docs,
                          "load_average": os.getloadavg()[0], "rows": rows}

