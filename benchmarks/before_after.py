"""The same `neardup dedup` command from two checkouts, alternately: wall, CPU, peak RSS,
and whether the clusters are identical (issue #36's "behaviour unchanged" record).

    git archive COMMIT | tar -x -C /tmp/before
    python -m benchmarks one before_after --before /tmp/before \\
        --input '/tmp/neardup-scale/10M/part-*.parquet' --method minhash --repeats 1

Each run is a child process started in its checkout's root, so ``python -m neardup``
imports that checkout's package (the current directory comes first on ``sys.path``);
``--after`` defaults to this repository. Runs alternate before, after, before, after, so
that a change in the machine's load falls on both; with ``--side-by-side`` the two run at
once instead (each repeat starts both and waits for both), for commands too long to run
one after the other in a session. Each process's CPU and peak memory are its own
(``wait4``); its wall time ends when it exits. The clusters of every run are compared
as partitions of the document ids (the engines may number clusters differently).
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from benchmarks.harness import ROOT, machine


def _partition(path: Path) -> np.ndarray:
    """Each document's cluster renumbered by first appearance in id order: equal arrays
    mean equal partitions."""
    table = pq.read_table(path, columns=["id", "cluster"])
    ids = table.column("id").to_numpy(zero_copy_only=False)
    clusters = table.column("cluster").to_numpy()
    order = np.argsort(ids, kind="stable")
    _, first, inverse = np.unique(clusters[order], return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return rank[inverse]


def _measure_together(jobs: list[tuple[str, Path, list[str]]]) -> dict[str, dict]:
    """Start every ``(label, tree, cmd)`` at once; each one's wall, CPU and peak RSS."""
    started = {}
    for label, tree, cmd in jobs:
        proc = subprocess.Popen(cmd, cwd=tree, stdout=subprocess.DEVNULL,
                                env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": ""})
        started[proc.pid] = (label, tree, cmd, time.perf_counter())
    rows = {}
    while started:
        pid, status, usage = os.wait4(-1, 0)
        if pid not in started:
            continue
        label, tree, cmd, start = started.pop(pid)
        if status != 0:
            raise SystemExit(f"command failed ({status}) in {tree}: {' '.join(cmd)}")
        rows[label] = {"wall_s": round(time.perf_counter() - start, 1),
                       "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
                       "peak_rss_mb": round(usage.ru_maxrss / 1024.0)}
        if len(jobs) > 1:  # said as each ends: a long run stopped early keeps what finished
            print(f"{label} finished: {rows[label]}", flush=True)
    return rows


def _measure(tree: Path, cmd: list[str]) -> dict:
    return _measure_together([("run", tree, cmd)])["run"]


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="root of the earlier checkout")
    parser.add_argument("--after", type=Path, default=ROOT, help="root of the later checkout")
    parser.add_argument("--input", required=True, help="input files (a glob)")
    parser.add_argument("--method", default="minhash")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--python", default=None, help="interpreter (default: this one)")
    parser.add_argument("--warmup", default=None,
                        help="a small input (a glob) each checkout runs once first, unmeasured: "
                             "numba compiles and caches its kernels on a checkout's first run")
    parser.add_argument("--side-by-side", action="store_true",
                        help="run the two checkouts at once in each repeat, not one after the other")
    parser.add_argument("--extra", nargs=argparse.REMAINDER, default=[],
                        help="further options for neardup dedup, given to both")
    args = parser.parse_args(argv)
    files = sorted(glob.glob(args.input))
    if not files:
        raise SystemExit(f"no input matches {args.input!r}")
    python = args.python or sys.executable
    runs = []
    partitions: dict[str, np.ndarray] = {}
    with tempfile.TemporaryDirectory(dir=Path(files[0]).parent.parent) as tmp:
        for tree in (args.before, args.after) if args.warmup else ():
            _measure(tree.resolve(), [python, "-m", "neardup", "dedup", *sorted(glob.glob(args.warmup)),
                                      "--method", args.method, "--text-field", "text",
                                      "--quiet", *args.extra])
        for repeat in range(args.repeats):
            jobs = []
            for label, tree in (("before", args.before), ("after", args.after)):
                out = Path(tmp) / f"{label}-{repeat}.parquet"
                jobs.append((label, tree.resolve(), [
                    python, "-m", "neardup", "dedup", *files, "--method", args.method,
                    "--text-field", "text", "--id-field", "id", "--clusters-out", str(out),
                    "--quiet", *args.extra]))
            measured = (_measure_together(jobs) if args.side_by_side
                        else {label: _measure(tree, cmd) for label, tree, cmd in jobs})
            for label, _, _ in jobs:
                out = Path(tmp) / f"{label}-{repeat}.parquet"
                row = {"checkout": label, "repeat": repeat, **measured[label]}
                labels = _partition(out)
                row["clusters"] = int(labels.max()) + 1 if labels.size else 0
                row["identical_to_first_before"] = (
                    bool(np.array_equal(labels, partitions["before"])) if "before" in partitions
                    else None)
                partitions.setdefault(label, labels)
                out.unlink()
                runs.append(row)
                print(row, flush=True)

    def mean(label: str, key: str) -> float:
        return float(np.mean([r[key] for r in runs if r["checkout"] == label]))

    return {"machine": machine(), "side_by_side": args.side_by_side, "input": args.input, "warmup": args.warmup, "docs": int(partitions["after"].size),
            "method": args.method, "extra": args.extra, "before": str(args.before),
            "after": str(args.after), "runs": runs,
            "identical_clusters": all(r["identical_to_first_before"] in (None, True) for r in runs),
            "cpu_after_over_before": round(mean("after", "cpu_s") / mean("before", "cpu_s"), 3),
            "wall_after_over_before": round(mean("after", "wall_s") / mean("before", "wall_s"), 3),
            "peak_rss_after_over_before": round(mean("after", "peak_rss_mb")
                                                / mean("before", "peak_rss_mb"), 3)}
