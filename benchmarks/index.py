"""Benchmark of the persistent index (#16): build, query latency, add, HTTP load test.

Phases (each its own process, so each reports its own peak memory):

* ``build``: index the first ``--docs`` documents of a scale corpus minus the last
  ``--add-docs`` (held out), in ``--batch-size`` transactions: time, docs/s, disk size,
  peak RSS.
* ``query``: ``--queries`` single-document queries (half stored documents, half held-out
  ones) one at a time: p50/p99 latency; then the same documents in batches of 1,000:
  throughput; peak RSS.
* ``add``: the ``--add-docs`` held-out documents added to the built index: time, docs/s.
* ``load``: ``neardup serve`` on a loopback port and ``--clients`` async clients for
  ``--seconds`` seconds, one in four adding 10 new documents per request, the others
  querying one document per request: requests/s, p50/p99 per kind, errors; then the
  server is stopped with SIGTERM and every acknowledged id is looked up (lost adds).

    python scripts/make_scale_corpus.py --docs 1000000 --out /tmp/neardup-scale/1M
    python -m benchmarks one index --corpus /tmp/neardup-scale/1M --docs 1000000 \\
        --work /tmp/neardup-index-1M --out benchmarks/results/archive/index_1M.json

Results are merged into ``--out`` (JSON) phase by phase.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _texts_at(corpus: str, positions: np.ndarray) -> list[str]:
    """Texts of the documents at ``positions`` (ascending) of the corpus's Parquet shards,
    each shard read once."""
    import pyarrow.parquet as pq

    out, seen = [], 0
    positions = np.asarray(positions)
    for shard in sorted(Path(corpus).glob("*.parquet")):
        n = pq.ParquetFile(shard).metadata.num_rows
        mine = positions[(positions >= seen) & (positions < seen + n)] - seen
        if mine.size:
            out.extend(pq.read_table(shard, columns=["text"]).column("text").take(mine).to_pylist())
        seen += n
    return out


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return round(usage.ru_utime + usage.ru_stime, 1)


def _timed_log():
    """A log callback printing each stage message with the seconds since the build began."""
    start = time.perf_counter()

    def log(message: str) -> None:
        print(f"{time.perf_counter() - start:7.0f} s  {message}", flush=True)

    return log


def _load_avg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def phase_build(args) -> dict:
    from neardup.index import Index

    if Path(args.work).exists():
        shutil.rmtree(args.work)
    n_build = args.docs - args.add_docs
    start = time.perf_counter()
    if args.bulk:
        with Index.create(args.work, args.method) as index:
            batches = ((texts, ids) for ids, texts in
                       shard_batches(args.corpus, n_build, args.batch_size))
            result = index.bulk_add(batches, log=_timed_log(), partitions=args.bulk_partitions)
            seconds = time.perf_counter() - start
            stats = index.stats()
        return {"docs": n_build, "path": "bulk_add", "seconds": round(seconds, 1),
                "docs_per_s": round(n_build / seconds),
                "stage_seconds": result.summary()["stage_seconds"],
                "disk_bytes": stats["disk_bytes"], "disk_gib": round(stats["disk_bytes"] / 2**30, 3),
                "postings": stats["postings"], "clusters": stats["clusters"],
                "largest_cluster": stats["largest_cluster"],
                "big_key_groups": stats["big_key_groups"], "cpu_s": _cpu_s(),
                "peak_rss_mib": round(_peak_rss_mib()), "batch_size": args.batch_size,
                "load_avg_after": _load_avg()}
    with Index.create(args.work, args.method) as index:
        # One read of a shard per batch would re-read it: read shard by shard instead.
        done = 0
        for ids, texts in shard_batches(args.corpus, n_build, args.batch_size):
            index.add(texts, ids)
            done += len(ids)
            if done % (args.batch_size * 10) == 0:
                print(f"build: {done} docs, {time.perf_counter() - start:.0f} s", flush=True)
        seconds = time.perf_counter() - start
        stats = index.stats()
    return {"docs": n_build, "seconds": round(seconds, 1), "docs_per_s": round(n_build / seconds),
            "disk_bytes": stats["disk_bytes"], "disk_gib": round(stats["disk_bytes"] / 2**30, 3),
            "postings": stats["postings"], "clusters": stats["clusters"],
            "largest_cluster": stats["largest_cluster"], "big_key_groups": stats["big_key_groups"],
            "peak_rss_mib": round(_peak_rss_mib()), "batch_size": args.batch_size,
            "cpu_s": _cpu_s(), "load_avg_after": _load_avg()}


def shard_batches(corpus: str, stop: int, size: int, start: int = 0):
    import pyarrow.parquet as pq

    seen = 0
    for shard in sorted(Path(corpus).glob("*.parquet")):
        n = pq.ParquetFile(shard).metadata.num_rows
        if seen + n <= start:
            seen += n
            continue
        if seen >= stop:
            break
        # Streamed batch by batch (a whole 100k-document shard as Arrow plus Python
        # strings held ~0.5 GB, which the build's peak memory counted).
        a, b = max(start - seen, 0), min(stop - seen, n)
        at = 0
        for record in pq.ParquetFile(shard).iter_batches(batch_size=size, columns=["id", "text"]):
            lo, hi = max(a - at, 0), min(b - at, record.num_rows)
            if lo < hi:
                part = record.slice(lo, hi - lo)
                yield ([str(i) for i in part.column(0).to_pylist()],
                       part.column(1).to_pylist())
            at += record.num_rows
            if at >= b:
                break
        seen += n


def phase_query(args) -> dict:
    from neardup.index import Index

    n_build = args.docs - args.add_docs
    rng = np.random.default_rng(0)
    half = args.queries // 2
    stored = np.sort(rng.choice(n_build, half, replace=False))
    unseen = np.sort(rng.choice(np.arange(n_build, args.docs), args.queries - half, replace=False))
    texts = _texts_at(args.corpus, stored) + _texts_at(args.corpus, unseen)
    order = rng.permutation(len(texts))
    texts = [texts[i] for i in order]
    with Index(args.work) as index:
        index.query(texts[:20])  # compile and warm the kernels
        latencies, matched = [], 0
        for t in texts:
            s = time.perf_counter()
            r = index.query([t])
            latencies.append(time.perf_counter() - s)
            matched += len(r) > 0
        s = time.perf_counter()
        for a in range(0, len(texts), 1000):
            index.query(texts[a:a + 1000])
        batch_seconds = time.perf_counter() - s
    ms = np.array(latencies) * 1000
    return {"queries": len(texts), "p50_ms": round(float(np.percentile(ms, 50)), 2),
            "p99_ms": round(float(np.percentile(ms, 99)), 2),
            "mean_ms": round(float(ms.mean()), 2), "max_ms": round(float(ms.max()), 1),
            "with_matches": matched,
            "batch_1000_docs_per_s": round(len(texts) / batch_seconds),
            "cpu_s": _cpu_s(), "peak_rss_mib": round(_peak_rss_mib()), "load_avg_after": _load_avg()}


def phase_add(args) -> dict:
    from neardup.index import Index

    n_build = args.docs - args.add_docs
    start = time.perf_counter()
    joined = 0
    with Index(args.work) as index:
        before = index.stats()["documents"]
        for ids, texts in shard_batches(args.corpus, args.docs, args.batch_size, start=n_build):
            joined += index.add(texts, ids).status.count("joined")
        seconds = time.perf_counter() - start
        stats = index.stats()
    return {"docs": args.add_docs, "index_docs_before": before, "seconds": round(seconds, 1),
            "docs_per_s": round(args.add_docs / seconds), "joined": joined,
            "disk_bytes_after": stats["disk_bytes"], "peak_rss_mib": round(_peak_rss_mib()),
            "cpu_s": _cpu_s(),
            "load_avg_after": _load_avg()}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _load(base: str, texts: list[str], clients: int, seconds: float) -> dict:
    import httpx

    stats = {"query": [], "add": []}
    errors: list[str] = []
    acknowledged: list[str] = []
    stop = time.perf_counter() + seconds
    rng = np.random.default_rng(1)

    async def client(c: int, http: httpx.AsyncClient) -> None:
        kind = "add" if c % 4 == 0 else "query"
        k = 0
        while time.perf_counter() < stop:
            if kind == "add":
                docs = [{"id": f"load-{c}-{k}-{i}", "text": texts[int(rng.integers(len(texts)))]}
                        for i in range(10)]
            else:
                docs = [{"text": texts[int(rng.integers(len(texts)))]}]
            s = time.perf_counter()
            try:
                r = await http.post(f"/{kind}", json={"documents": docs})
            except httpx.HTTPError as exc:
                errors.append(repr(exc))
                continue
            stats[kind].append(time.perf_counter() - s)
            if r.status_code != 200:
                errors.append(f"{r.status_code} {r.text[:200]}")
            elif kind == "add":
                acknowledged.extend(d["id"] for d in docs)
            k += 1

    async with httpx.AsyncClient(base_url=base, timeout=120,
                                 limits=httpx.Limits(max_connections=clients)) as http:
        await asyncio.gather(*(client(c, http) for c in range(clients)))
    out = {"clients": clients, "seconds": seconds, "errors": len(errors),
           "error_examples": errors[:3], "acknowledged_add_docs": len(acknowledged)}
    for kind, lat in stats.items():
        ms = np.array(lat) * 1000 if lat else np.zeros(1)
        out[kind] = {"requests": len(lat), "per_s": round(len(lat) / seconds, 1),
                     "p50_ms": round(float(np.percentile(ms, 50)), 2),
                     "p99_ms": round(float(np.percentile(ms, 99)), 2)}
    out["_acknowledged"] = acknowledged
    return out


def phase_load(args) -> dict:
    from neardup.index import Index

    n_build = args.docs - args.add_docs
    rng = np.random.default_rng(2)
    texts = _texts_at(args.corpus, np.sort(rng.choice(args.docs, 2000, replace=False)))
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen([sys.executable, "-m", "neardup", "serve", args.work, "--port",
                               str(port)], env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        import httpx

        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(base + "/health", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        httpx.post(base + "/query", json={"documents": [{"text": texts[0]}]}, timeout=60)
        result = asyncio.run(_load(base, texts, args.clients, args.seconds))
        status = Path(f"/proc/{server.pid}/status").read_text()
        hwm = [line for line in status.splitlines() if line.startswith("VmHWM")]
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=120)
    finally:
        if server.poll() is None:
            server.kill()
    acknowledged = result.pop("_acknowledged")
    with Index(args.work) as index:
        con = index._store.reader()
        present = 0
        for a in range(0, len(acknowledged), 500):
            chunk = acknowledged[a:a + 500]
            q = ",".join("?" * len(chunk))
            present += con.execute(f"SELECT count(*) FROM docs WHERE id IN ({q})", chunk).fetchone()[0]
    result["lost_adds"] = len(acknowledged) - present
    result["server_peak_rss_mib"] = round(int(hwm[0].split()[1]) / 1024) if hwm else None
    result["index_docs_before"] = n_build
    result["load_avg_after"] = _load_avg()
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--docs", type=int, required=True)
    parser.add_argument("--add-docs", type=int, default=100_000)
    parser.add_argument("--work", required=True)
    parser.add_argument("--method", default="minhash")
    parser.add_argument("--batch-size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--phases", default="build,query,add,load")
    parser.add_argument("--bulk", action="store_true",
                        help="Build with Index.bulk_add (one bulk load) instead of add per batch.")
    parser.add_argument("--bulk-partitions", type=int, default=None,
                        help="Index.bulk_add's partitions (default: its own, 256 linked in runs).")
    return parser


PHASES = {"build": phase_build, "query": phase_query, "add": phase_add, "load": phase_load}


def run(argv: list[str]) -> dict:
    args = _parser().parse_args(argv)
    record = {"setup": {"corpus": args.corpus, "docs": args.docs, "method": args.method,
                        "cpus": os.cpu_count(), "python": sys.version.split()[0]}}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.phases.split(","):
            # Each phase in its own process (in order: each reads what the last one built),
            # so each reports its own peak memory.
            out = Path(scratch) / f"{name}.json"
            subprocess.run([sys.executable, "-m", "benchmarks.index", name, str(out), *argv],
                           check=True, cwd=ROOT, env=env)
            record[name] = json.loads(out.read_text())
            print(json.dumps({name: record[name]}, indent=2), flush=True)
    return record


def _phase(name: str, out: str, argv: list[str]) -> None:
    """One phase, in the child process that :func:`run` starts: its result goes to ``out``."""
    print(f"phase {name} ...", flush=True)
    result = PHASES[name](_parser().parse_args(argv))
    Path(out).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    _phase(sys.argv[1], sys.argv[2], sys.argv[3:])
