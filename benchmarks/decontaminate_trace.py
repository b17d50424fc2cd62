"""Where does ``neardup decontaminate`` hold more memory per training document? The CLI
run of benchmarks/peers_decontaminate.py (its data: train.parquet, eval.jsonl), cut to the
first ``--docs`` training documents with ``--limit``, run in this process with resident
memory sampled every few seconds; with ``--trace`` also tracemalloc (6 frames), whose
snapshots a quarter of the way in and at the end are compared by allocation site.

    python -m benchmarks.peers_decontaminate --train-docs 1000000 --eval-items 10000 \
        --planted 400 --tools neardup          # the data (once)
    python -m benchmarks.decontaminate_trace --docs 200000 --label before
    python -m benchmarks.decontaminate_trace --docs 50000 --trace --label before-traced

Raw results: benchmarks/results/decontaminate/trace-<docs>-<label>.json. KiB per document
is the growth of resident memory from the first sample past 10% of the documents to the
last, over the documents read in between.
"""

from __future__ import annotations

import argparse
import ctypes
import threading
import time
import tracemalloc
from pathlib import Path

from benchmarks.harness import results_saver

save = results_saver(Path(__file__).resolve().parent / "results" / "decontaminate")


def _rss_kib() -> int:
    with open("/proc/self/status") as handle:
        return int(handle.read().split("VmRSS:")[1].split()[0])


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _native_kib() -> dict:
    """glibc's heap: bytes in use and bytes freed but kept (fragmentation); Arrow's pool."""
    import pyarrow as pa

    out = {"arrow_pool_kib": pa.total_allocated_bytes() // 1024}
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        info = libc.mallinfo2()
        out.update(malloc_in_use_kib=(info.uordblks + info.hblkhd) // 1024,
                   malloc_free_kept_kib=info.fordblks // 1024)
    except (OSError, AttributeError):  # not glibc
        pass
    return out


def slopes(samples: list[dict], docs: int) -> dict:
    """KiB per document: the least-squares slope of each memory figure against the
    documents read, over the samples past the first 10% of the documents (resident
    memory swings by a batch's working set, so two samples alone say little)."""
    import numpy as np

    steady = [s for s in samples if s["documents"] >= docs // 10]
    out = {}
    if len({s["documents"] for s in steady}) < 2:
        return out
    x = np.array([s["documents"] for s in steady], float)
    for key in ("rss_kib", "arrow_pool_kib", "malloc_in_use_kib", "traced_kib"):
        if all(key in s for s in steady):
            y = np.array([s[key] for s in steady], float)
            out[f"{key.removesuffix('_kib')}_kib_per_document"] = round(float(np.polyfit(x, y, 1)[0]), 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path,
                        default=Path("/tmp/neardup-bench-decontaminate/1000000-10000"))
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("--every", type=float, default=5.0, help="seconds between samples")
    parser.add_argument("--label", default="run")
    args = parser.parse_args()
    from neardup.cli import main as cli

    samples: list[dict] = []
    snapshots: list = []
    done = threading.Event()
    counted = {"documents": 0}

    def sampler():
        start = time.perf_counter()
        while not done.wait(args.every):
            sample = {"seconds": round(time.perf_counter() - start, 1), "rss_kib": _rss_kib(),
                      "documents": counted["documents"], **_native_kib()}
            if args.trace:
                sample["traced_kib"] = tracemalloc.get_traced_memory()[0] // 1024
                if not snapshots and counted["documents"] >= args.docs // 4:
                    snapshots.append((counted["documents"], tracemalloc.take_snapshot()))
            samples.append(sample)

    # The documents read so far: the batches the stage timer sees (one "read" per batch).
    from neardup.decontaminate import run as decontaminate_run

    timed = decontaminate_run.timed_batches

    def counting(batches, *a, **k):
        for batch in timed(batches, *a, **k):
            counted["documents"] += len(batch)
            yield batch

    decontaminate_run.timed_batches = counting
    work = Path(f"/tmp/neardup-decontaminate-trace-{args.docs}-{args.label}")
    work.mkdir(parents=True, exist_ok=True)
    command = ["decontaminate", str(args.data / "train.parquet"), "--against",
               str(args.data / "eval.jsonl"), "--id-field", "id", "--quiet", "--limit",
               str(args.docs), "--leaks-out", str(work / "leaks.parquet"), "--report",
               str(work / "report.json")]
    if args.trace:
        tracemalloc.start(6)
    thread = threading.Thread(target=sampler, daemon=True)
    thread.start()
    began = time.perf_counter()
    try:
        cli.main(command, standalone_mode=False)
    finally:
        done.set()
        thread.join()
        decontaminate_run.timed_batches = timed
    seconds = time.perf_counter() - began
    result = {"command": "python -m benchmarks.decontaminate_trace " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if k not in ("trace",))
        + (" --trace" if args.trace else ""), "neardup_args": command, "seconds": round(seconds, 1),
        "samples": samples}
    result.update(slopes(samples, args.docs))
    if args.trace and snapshots:
        at, early = snapshots[0]
        final = tracemalloc.take_snapshot()
        growth = final.compare_to(early, "traceback")[:15]
        result["growth_from_document"] = at
        result["top_growth"] = [{"kib": stat.size_diff // 1024, "count": stat.count_diff,
                                 "where": [f"{f.filename}:{f.lineno}" for f in stat.traceback]}
                                for stat in growth]
        tracemalloc.stop()
    save(f"trace-{args.docs}-{args.label}", result)
    print({k: v for k, v in result.items() if k not in ("samples", "top_growth")})
    for entry in result.get("top_growth", [])[:8]:
        print(entry["kib"], "KiB", entry["count"], entry["where"][-3:])


if __name__ == "__main__":
    main()
