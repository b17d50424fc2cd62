"""What reading and writing through an object store costs: ``neardup dedup`` over the same
corpus from a local file, from S3 (moto's S3 server on loopback, started here), and from
a Hugging Face dataset saved with ``save_to_disk``; wall time, peak memory, and whether
the clusters are identical.

Loopback has no network latency or bandwidth limit: the figures are the client-side cost
of fsspec/s3fs and of the staging and copying of outputs, not what a real bucket adds.

    HF_HUB_OFFLINE=1 python benchmarks/bench_storage.py [--docs N]

Writes benchmarks/results/storage/storage.json. Reuters-21578 (21,578 stories) when present, else the
bundled demo corpus.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import RESULTS, machine  # noqa: E402


def corpus(limit: int | None) -> list[dict]:
    from neardup.data import demo_corpus_path
    from neardup.io import ReaderConfig, iter_records
    from neardup.io.reuters import find_reuters_dir

    root = find_reuters_dir()
    if root is not None:
        files = sorted(str(p) for p in root.glob("reut2-*.sgm"))
        records = iter_records(files, ReaderConfig(limit=limit))
        return [{"id": r["id"], "text": r["text"]} for r in records]
    with gzip.open(demo_corpus_path(), "rt") as handle:
        rows = [json.loads(line) for line in handle]
    return [{"id": r["id"], "text": r["text"]} for r in rows[:limit]]


def timed(args: list[str], env: dict) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of ``python -m neardup ARGS`` in a child process
    (its own resource usage, from ``wait4``)."""
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "neardup", *args], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    if child.returncode != 0:
        raise SystemExit(f"neardup {' '.join(args)} failed:\n{stderr.decode()}")
    return seconds, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=None, help="documents (default: all)")
    options = parser.parse_args()
    import datasets
    import pyarrow.parquet as pq
    import s3fs
    from moto.server import ThreadedMotoServer

    records = corpus(options.docs)
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
           "AWS_DEFAULT_REGION": "us-east-1", "HF_HUB_OFFLINE": "1"}
    os.environ.update({k: env[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                           "AWS_DEFAULT_REGION")})
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    fs = s3fs.S3FileSystem(endpoint_url=endpoint)
    fs.mkdir("bench")
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    fs.pipe_file("bench/corpus.jsonl", data)
    runs = {}
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        (work / "corpus.jsonl").write_bytes(data)
        datasets.Dataset.from_list(records).save_to_disk(str(work / "saved"))
        common = ["dedup", "--id-field", "id", "--method", "minhash", "--engine", "local", "-q"]
        storage = ["--storage-option", f"endpoint_url={endpoint}"]
        variants = {
            "local file -> local outputs": [str(work / "corpus.jsonl"), "--clusters-out",
                                            str(work / "local.parquet"), "--out",
                                            str(work / "local-kept.jsonl")],
            "s3 -> s3 outputs": ["s3://bench/corpus.jsonl", "--clusters-out",
                                 "s3://bench/out/clusters.parquet", "--out",
                                 "s3://bench/out/kept.jsonl", *storage],
            "saved dataset -> local outputs": [str(work / "saved"), "--clusters-out",
                                               str(work / "saved.parquet"), "--out",
                                               str(work / "saved-kept.jsonl")],
        }
        for name, args in variants.items():
            seconds, peak = timed([*common, *args], env)
            runs[name] = {"seconds": round(seconds, 2), "peak_rss_mib": round(peak, 1)}
            print(f"{name:34s} {seconds:7.2f} s  {peak:7.1f} MiB", flush=True)
        local = pq.read_table(work / "local.parquet")
        with fs.open("bench/out/clusters.parquet", "rb") as handle:
            remote = pq.read_table(io.BytesIO(handle.read()))
        identical = {"s3": remote.equals(local),
                     "saved dataset": pq.read_table(work / "saved.parquet").equals(local)}
    server.stop()
    result = {"documents": len(records), "bytes": len(data), "runs": runs,
              "identical_clusters": identical, "machine": machine(),
              "command": "HF_HUB_OFFLINE=1 python benchmarks/bench_storage.py"
                         + (f" --docs {options.docs}" if options.docs else "")}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "storage.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(identical))


if __name__ == "__main__":
    main()
