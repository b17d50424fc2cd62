"""End-to-end `neardup dedup --method minhash` on Reuters-21578 and on 200,000 derived documents.

Reports wall time and peak RSS of the whole command (a child process, measured with
``os.wait4``), for: the 21,578 Reuters stories (SGML input), and a 200,000-document JSONL
corpus derived from them (every story repeated with seeded OCR-style noise, so the corpus
is full of near-duplicates). Targets: 200k documents in under 2 minutes, peak RSS < 2 GB.

    python -m benchmarks one dedup_scale [--docs 200000] [--work /tmp/neardup-bench]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from benchmarks.harness import derived_corpus, machine, run_cli
from neardup.io.reuters import find_reuters_dir


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/neardup-bench"))
    args = parser.parse_args(argv)
    root = find_reuters_dir()
    if root is None:
        raise SystemExit("Reuters-21578 not found")
    args.work.mkdir(parents=True, exist_ok=True)
    sgm = sorted(str(p) for p in root.glob("reut2-*.sgm"))
    start = time.perf_counter()
    big = derived_corpus(args.work / f"reuters-derived-{args.docs}.jsonl", args.docs)
    print(f"derived corpus ready in {time.perf_counter() - start:.0f} s: {big}", file=sys.stderr)
    rows = {
        "reuters-21578 (21,578 docs)": run_cli(
            [*sgm, "--method", "minhash", "--clusters-out", str(args.work / "c1.parquet"), "-q"]
        ),
        f"reuters-derived ({args.docs:,} docs)": run_cli(
            [str(big), "--method", "minhash", "--clusters-out", str(args.work / "c2.parquet"), "-q"]
        ),
    }
    print(f"{machine()}\n")
    print("| corpus | wall time | peak RSS |")
    print("|---|---:|---:|")
    for name, row in rows.items():
        print(f"| {name} | {row['seconds']:.1f} s | {row['peak_rss_mb']:,.0f} MB |")
    return {"rows": rows, "machine": machine()}

