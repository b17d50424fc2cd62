"""The Ray engine (#15) against the local engine on the scale corpus: wall time, CPU, peak
memory per process, overhead ratio Ray/local.

Each configuration runs in a fresh child process (`neardup dedup`'s work: de-duplicate
the Parquet shards with ``minhash`` defaults, or ``--method``, clustered by components or
``--cluster``, and write the clusters table; ``same_clusters_as_local`` compares which
documents share a cluster):

* ``local``  - the local out-of-core engine (one process);
* ``ray1``   - the Ray engine on a one-node cluster started by the child (2 CPUs);
* ``ray2``   - the Ray engine on two local nodes of 1 CPU each (ray.cluster_utils), the
  nodes started with the workers' environment and no ``runtime_env`` sent
  (``NEARDUP_RAY_RUNTIME_ENV=0``: a cluster whose machines have neardup installed);
* ``ray2-runtime-env`` - the same two nodes, the workers' environment sent as the job's
  ``runtime_env`` (what ``--ray-address`` does by default).

The child's whole process tree (driver, raylets, GCS, workers) is sampled from /proc
every 0.25 s: CPU = the sum over processes of their last seen user + system time (plus
the exit accounting of wait4, whichever is larger), peak memory = the largest RSS of any
one process and the peak of the tree's summed RSS. The machine is shared with other
work, so wall time is noisy; CPU seconds are the steadier figure.

    python scripts/make_scale_corpus.py --docs 100000 --out /tmp/neardup-scale/100k
    python -m benchmarks one ray_engine --corpus /tmp/neardup-scale/100k
    python -m benchmarks one ray_engine --corpus /tmp/neardup-scale/1M --configs local ray1 ray2
    python -m benchmarks one ray_engine --corpus /tmp/neardup-scale/1M --files 3 --configs local ray1
    python -m benchmarks one ray_engine --corpus /tmp/neardup-scale/100k --configs local ray1 --method ngram
    python -m benchmarks one ray_engine --corpus /tmp/neardup-scale/1M --configs local ray1 ray2 ray2-idle
    python -m benchmarks one ray_engine --corpus /tmp/neardup-scale/1M --configs ray2 --partitions 8
    python -m benchmarks one ray_engine --corpus /tmp/neardup-scale/100k --configs local ray1 --method rerank \
        --cluster leiden --resolution 0.4

``ray1-idle`` / ``ray2-idle`` (after ``ray1`` / ``ray2`` in ``--configs``): the same
cluster started and left idle, no job, for as long as that job ran: the CPU its daemons
spend whatever the job (start-up, agents' reporting), for telling neardup's cost from the
cluster's.

Both "nodes" of ``ray2`` run on this machine and share its cores (1 CPU of Ray resources
each): it measures the cost of the exchanges between two raylets and object stores, not
a speed-up. The CPU breakdown by process name (workers, driver, Ray's daemons) is in
the JSON (``cpu_s_by_process_name``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.harness import machine

ROOT = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")

CHILD = r'''
import json, sys, time
from pathlib import Path
config, out, method_name, partitions, algorithm, resolution, files = (
    sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]) or None, sys.argv[5], float(sys.argv[6]),
    sys.argv[7:])
start = time.perf_counter()
from neardup.io import ReaderConfig, read_corpus, write_table
from neardup.methods import make_method
method = make_method(method_name)
reader = ReaderConfig(id_field="id")


def membership(table):
    """A digest of the clustering (which ids share a cluster, not the cluster ids)."""
    import hashlib
    frame = table.select(["id", "cluster"]).to_pandas().sort_values("id")
    first = frame.groupby("cluster")["id"].transform("first")
    return hashlib.sha256("\n".join(first + " " + frame["id"]).encode()).hexdigest()[:16]


if config == "local":
    from neardup.pipeline import ClusterConfig, run
    result = run(read_corpus(files, reader), method,
                 cluster=ClusterConfig(algorithm=algorithm, resolution=resolution))
    write_table(out / "clusters.parquet", result.clusters_table())
    summary, timings, stats = result.summary(), result.timings, result.params["corpus_stage"]
    summary["membership"] = membership(result.clusters_table())
else:
    import os
    import ray
    from neardup.engine.ray import (RUNTIME_ENV_ENV, RayConfig, RayInputs, RayRun,
                                    connect, worker_env, write_outputs)
    if config.startswith("ray2"):
        from ray.cluster_utils import Cluster
        if config in ("ray2", "ray2-idle"):
            # Nodes started with the workers' environment (as `NUMBA_NUM_THREADS=1 ray start`
            # on machines with neardup installed) and no runtime_env sent.
            os.environ.update(worker_env())
            os.environ[RUNTIME_ENV_ENV] = "0"
        nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": 2 << 30})
        nodes.add_node(num_cpus=1, object_store_memory=2 << 30)
        connect(nodes.address)  # ray2-runtime-env: the job's runtime_env
    else:
        connect(None, num_cpus=2, object_store_memory=4 << 30)
    ready = time.perf_counter()
    if config.endswith("-idle"):  # the cluster alone, no job, for as long as the job ran
        time.sleep(float(files[0]))
        ray.shutdown()
        print(json.dumps({"summary": None, "timings": {"cluster start": ready - start}, "stats": {},
                          "seconds": time.perf_counter() - start}))
        raise SystemExit(0)
    # trace_memory: the peak allocation of the components and assign tasks
    run_ = RayRun(RayInputs(tuple(files), reader), method,
                  config=RayConfig(partitions=partitions, trace_memory=True),
                  every_edge=algorithm != "components")
    run_.execute()
    summary = write_outputs(run_, clusters_out=out / "clusters", algorithm=algorithm, resolution=resolution)
    import pyarrow.parquet as pq
    summary["membership"] = membership(pq.read_table(out / "clusters"))
    timings, stats = {"cluster start": ready - start, **run_.timer.seconds}, run_.stats
    ray.shutdown()
print(json.dumps({"summary": summary, "timings": timings, "stats": stats,
                  "seconds": time.perf_counter() - start}))
'''


def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def _sample(pid: int) -> tuple[float, int, str] | None:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            text = handle.read()
        with open(f"/proc/{pid}/statm") as handle:
            rss = int(handle.read().split()[1]) * PAGE
    except (OSError, ValueError):
        return None
    name = text[text.index("(") + 1:text.rindex(")")]
    if name == "python":  # Ray's helper scripts (log monitor, ...) and the driver share the name
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                args = handle.read().split(b"\0")
            script = next((a.decode(errors="replace") for a in args[1:] if a.endswith(b".py")), None)
            if script is not None:
                name = f"python {Path(script).name}"
        except OSError:
            pass
    fields = text.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK, rss, name


def measure(cmd: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    env.pop("RAY_ADDRESS", None)  # ray1 starts its own cluster
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env)
    cpu: dict[int, float] = {}
    names: dict[int, str] = {}
    peak: dict[int, tuple[int, str]] = {}
    tree_peak = [0]
    done = threading.Event()

    def sampler() -> None:
        while not done.is_set():
            total = 0
            for pid in _tree(proc.pid):
                got = _sample(pid)
                if got is None:
                    continue
                cpu[pid], total = got[0], total + got[1]
                if got[2] != "python" or pid not in names:  # an exiting daemon's cmdline is
                    names[pid] = got[2]                       # empty: keep its script's name
                if got[1] > peak.get(pid, (0, ""))[0]:
                    peak[pid] = (got[1], got[2])
            tree_peak[0] = max(tree_peak[0], total)
            time.sleep(0.25)

    thread = threading.Thread(target=sampler, daemon=True)
    thread.start()
    output = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    done.set()
    thread.join()
    if status != 0:
        raise SystemExit(f"{cmd[3]} failed with status {status}")
    biggest = sorted(peak.values(), reverse=True)[:4]
    by_name: dict[str, float] = {}
    for pid, seconds in cpu.items():
        by_name[names[pid]] = by_name.get(names[pid], 0.0) + seconds
    return {
        "wall_s": round(wall, 2),
        "cpu_s_sampled": round(sum(cpu.values()), 2),
        "cpu_s_wait4": round(usage.ru_utime + usage.ru_stime, 2),
        "processes": len(peak),
        "cpu_s_by_process_name": {k: round(v, 2) for k, v in sorted(by_name.items(), key=lambda kv: -kv[1])},
        "processes_by_name": {n: sum(1 for m in names.values() if m == n) for n in sorted(set(names.values()))},
        "peak_rss_mb_largest_processes": [[name, round(rss / 2**20)] for rss, name in biggest],
        "peak_rss_mb_tree": round(tree_peak[0] / 2**20),
        # A Ray worker is named after the task it runs (ray::_large_star_task, 15 chars):
        # the largest RSS seen per name is the peak of a worker while running that task.
        "peak_rss_mb_by_process_name": {n: round(r / 2**20) for r, n in sorted(
            ((max(r for r, m in peak.values() if m == n), n) for n in {m for _, m in peak.values()}),
            reverse=True)},
        **json.loads(output.decode().strip().splitlines()[-1]),
    }


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="directory of Parquet shards")
    parser.add_argument("--configs", nargs="+", default=["local", "ray1", "ray2"])
    parser.add_argument("--files", type=int, default=None,
                        help="use only the first N Parquet files (a scaling curve on one corpus)")
    parser.add_argument("--method", default="minhash", help="method (defaults) to de-duplicate with")
    parser.add_argument("--partitions", type=int, default=None,
                        help="key partitions of the Ray configs (RayConfig.partitions; default: the engine's)")
    parser.add_argument("--cluster", default="components", choices=["components", "leiden", "louvain"],
                        help="clustering of every config (leiden/louvain keep every accepted pair)")
    parser.add_argument("--resolution", type=float, default=1.0, help="--cluster leiden/louvain: resolution")
    args = parser.parse_args(argv)
    files = sorted(str(p) for p in args.corpus.glob("*.parquet"))[:args.files]
    rows = []
    for config in args.configs:
        inputs = files
        if config.endswith("-idle"):
            # As long as the same cluster's job ran (its row, earlier in --configs).
            job = next(r for r in rows if r["config"] == config[:-len("-idle")])
            inputs = [str(round(job["seconds"] - job["timings"]["cluster start"], 1))]
        with tempfile.TemporaryDirectory(prefix="neardup-bench-ray-") as out:
            row = {"config": config, **measure([sys.executable, "-c", CHILD, config, out, args.method,
                                                   str(args.partitions or 0), args.cluster,
                                                   str(args.resolution), *inputs])}
        rows.append(row)
        print(json.dumps({k: row[k] for k in ("config", "wall_s", "cpu_s_sampled", "cpu_s_wait4",
                                               "peak_rss_mb_tree", "timings")}), flush=True)
    local = next((r for r in rows if r["config"] == "local"), None)
    if local is not None:
        for row in rows:
            row["wall_ratio_vs_local"] = round(row["wall_s"] / local["wall_s"], 2)
            row["cpu_ratio_vs_local"] = round(max(row["cpu_s_sampled"], row["cpu_s_wait4"])
                                              / max(local["cpu_s_sampled"], local["cpu_s_wait4"]), 2)
            if row["summary"] is not None:
                row["same_clusters_as_local"] = row["summary"]["membership"] == local["summary"]["membership"]
    return {"machine": machine(), "corpus": str(args.corpus), "files": len(files), "method": args.method,
                 "partitions": args.partitions, "cluster": args.cluster, "resolution": args.resolution,
                 "rows": rows,
                 "load_average_after": os.getloadavg(),
                 "command": " ".join(["python", "benchmarks/ray_engine.py", *argv])}

