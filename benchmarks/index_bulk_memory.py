"""Where the memory of a bulk index build goes: ``Index.bulk_add`` of a scale corpus's
first ``--docs`` documents with a sampler thread reading ``/proc/self/status`` every
50 ms: the peak resident memory per build stage, split into anonymous memory (the
process's own arrays, SQLite's cache) and file pages (memory maps: pages a map touched
count in RSS until it is unmapped).

    python -m benchmarks one index_bulk_memory --corpus /tmp/neardup-scale/1M --docs 500000 \\
        --work /tmp/idxwork-17/mem --out benchmarks/results/archive/index_bulk_memory_500k.json
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import threading
import time
from pathlib import Path

from benchmarks.index import shard_batches


def _status() -> dict[str, int]:
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
            out[name] = int(value.split()[0]) // 1024
    return out


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--docs", type=int, required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--batch-size", type=int, default=10_000)
    args = parser.parse_args(argv)

    from neardup.index import Index

    stage = ["start"]
    peaks: dict[str, dict[str, int]] = {}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            s = _status()
            p = peaks.setdefault(stage[0], {k: 0 for k in s})
            for k, v in s.items():
                p[k] = max(p[k], v)
            time.sleep(0.05)

    def log(message: str) -> None:
        name = message.split(":", 1)[1].split()[0] if ":" in message else message
        name = {"sketched": "sketch", "linked": "link+postings", "linking": "link+postings", "building": "indexes",
                "documents": "documents"}.get(name, name)
        if name != stage[0]:
            print(f"{time.strftime('%H:%M:%S')} {stage[0]} -> {name} {_status()}", flush=True)
        stage[0] = name

    if Path(args.work).exists():
        shutil.rmtree(args.work)
    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    t0, c0 = time.perf_counter(), time.process_time()
    with Index.create(args.work, "minhash") as index:
        result = index.bulk_add(((t, i) for i, t in shard_batches(args.corpus, args.docs,
                                                                     args.batch_size)), log=log)
        stage[0] = "after"
        summary = result.summary()
    stop.set()
    thread.join()
    record = {"docs": args.docs, "seconds": round(time.perf_counter() - t0, 1),
              "cpu_s": round(time.process_time() - c0, 1),
              "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
              "stage_peaks_mib": peaks, "stage_seconds": summary["stage_seconds"]}
    print(json.dumps(record, indent=2))
    return record
