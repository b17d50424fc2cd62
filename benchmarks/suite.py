"""The suite runner: reads a config, runs its benchmarks one child process each (so each
reports its own peak memory and one failure does not stop the rest), and writes every raw
result with the command, the machine and the date to ``results/<config>/<benchmark>.json``.

    python -m benchmarks run smoke               # every benchmark of configs/smoke.toml
    python -m benchmarks run 1m --only scale     # one benchmark of a config
    python -m benchmarks list                    # configs and benchmarks
    python -m benchmarks one minhash_signatures --docs 2000   # one benchmark, ad hoc options
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import shlex
import subprocess
import sys
import time
import tomllib
from pathlib import Path

from benchmarks.harness import ROOT, machine, write_json

HERE = Path(__file__).resolve().parent
CONFIGS = HERE / "configs"
RESULTS = HERE / "results"

#: Benchmark name -> module of this package with ``run(argv: list[str]) -> dict``.
BENCHMARKS = {
    "minhash_signatures": "MinHash signatures from raw text: neardup vs datasketch vs rensa",
    "sketch_throughput": "MinHash sketch stages in MB of text per CPU-second, with peers",
    "dedup_scale": "end-to-end `neardup dedup --method minhash` on Reuters and a derived corpus",
    "scale": "`neardup dedup` on the scale corpus: wall, CPU, peak RSS, ARI; peers alongside",
    "engine_kernels": "engine kernels against the way they were done before",
    "vector_search": "the vector stage's search alone, by corpus size and memory limit",
    "similarity_graph": "embedding similarity graph by index (flat, HNSW, IVF)",
    "index": "the persistent index: build, query latency, add, HTTP load",
    "index_bulk_memory": "where the memory of a bulk index build goes, by stage",
    "index_equivalence": "index built in batches and by one bulk add vs one-shot dedup: time, same clusters",
    "index_scale_equivalence": "an index built at scale vs `neardup dedup` of the same corpus",
    "corpus_stage_agreement": "in-memory vs out-of-core corpus stage on the standard benchmark: agreement, time",
    "community_out_of_core": "Leiden out of core vs in memory: same clusters, cost of keeping pairs",
    "ray_engine": "the Ray engine against the local engine on the scale corpus",
    "embedders": "throughput of each neural encoder on CPU",
    "retsim_embed": "RETSim embeddings: neardup vs unisim",
    "neural_dedup": "end-to-end `neardup dedup` with the neural methods",
    "rerank_score_memory": "peak memory of rerank's scorer on one linking step",
    "report": "`neardup report` on a large synthetic run: build, size, load in Chromium",
    "before_after": "the same `neardup dedup` from two checkouts: time, memory, same clusters",
    "texts_digest": "what `neardup dedup --report` pays for the digest of the input's texts",
}


def load_config(name: str) -> dict:
    """The config ``configs/<name>.toml``: ``description``, optional ``[corpus]`` (a scale
    corpus to build first: ``docs``, ``path``) and ``[[benchmark]]`` tables (``name``,
    ``args``: its options, ``peers``: peers run alongside, passed as ``--peers``)."""
    path = CONFIGS / f"{name}.toml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in CONFIGS.glob("*.toml")))
        raise SystemExit(f"no config {name!r} (known: {known})")
    config = tomllib.loads(path.read_text())
    for entry in config.get("benchmark", []):
        if entry.get("name") not in BENCHMARKS:
            raise SystemExit(f"{path}: unknown benchmark {entry.get('name')!r} (known: {', '.join(BENCHMARKS)})")
    return config


def benchmark_argv(entry: dict, corpus: str | None) -> list[str]:
    """A config entry's options as a command line: ``{corpus}`` stands for the config's
    scale corpus directory; peers become ``--peers``."""
    argv = [str(a).replace("{corpus}", corpus or "{corpus}") for a in entry.get("args", [])]
    if "peers" in entry:
        argv += ["--peers", *entry["peers"]]
    return argv


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    return out.stdout.strip() + ("-dirty" if dirty else "")


def run_one(name: str, argv: list[str], out: Path, command: str, config: str) -> bool:
    """Run benchmark ``name`` with ``argv`` in a child process; write its record to ``out``."""
    started = dt.datetime.now(dt.timezone.utc)
    wall = time.perf_counter()
    with_raw = out.with_suffix(".raw.json")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    print(f"== {name}: {shlex.join(argv)}", flush=True)
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.suite", "_child", name, str(with_raw), *argv],
                            cwd=ROOT, env=env)
    _, wait_status, usage = os.wait4(proc.pid, 0)
    status = os.waitstatus_to_exitcode(wait_status)
    record = {
        "benchmark": name, "config": config, "command": command,
        "benchmark_args": argv, "machine": machine(), "load_average": os.getloadavg(),
        "date": started.isoformat(timespec="seconds"), "commit": git_commit(),
        "python": sys.version.split()[0], "wall_s": round(time.perf_counter() - wall, 1),
        # The benchmark's own process (its children's children are in its result).
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "status": "ok" if status == 0 else f"failed (exit {status})",
    }
    if status == 0 and not with_raw.exists():
        # Nothing measured (``--help``): the raw results of the last run stay as they are.
        print(f"== {name}: nothing measured, {out} left as it was", flush=True)
        return True
    if status == 0:
        record["result"] = json.loads(with_raw.read_text())
    with_raw.unlink(missing_ok=True)
    write_json(out, record)
    return status == 0


def _child(name: str, out: str, argv: list[str]) -> None:
    module = importlib.import_module(f"benchmarks.{name}")
    write_json(Path(out), module.run(argv))


def ensure_corpus(spec: dict) -> str:
    """Build the config's scale corpus when it is not there yet (shards already written
    are kept); return its directory."""
    from neardup.datasets import make_scale_corpus

    path = Path(spec["path"])
    shards = -(-int(spec["docs"]) // 100_000)
    if len(list(path.glob("part-*.parquet"))) < shards:
        print(f"== building the scale corpus: {spec['docs']:,} documents in {path}", flush=True)
        make_scale_corpus(int(spec["docs"]), path, giant=spec.get("giant"))
    return str(path)


def run_config(config_name: str, only: list[str] | None = None) -> int:
    config = load_config(config_name)
    entries = [e for e in config["benchmark"] if not only or e["name"] in only]
    corpus = ensure_corpus(config["corpus"]) if "corpus" in config else None
    command = shlex.join(["python", "-m", "benchmarks", "run", config_name, *(["--only", *only] if only else [])])
    failed = []
    for entry in entries:
        argv = benchmark_argv(entry, corpus)
        if not run_one(entry["name"], argv, RESULTS / config_name / f"{entry['name']}.json", command, config_name):
            failed.append(entry["name"])
    print(f"\n{len(entries) - len(failed)} of {len(entries)} benchmarks ran; results in {RESULTS / config_name}")
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_child"]:
        _child(argv[1], argv[2], argv[3:])
        return
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a config's benchmarks")
    run.add_argument("config", help="a config of benchmarks/configs/ (smoke, 100k, 1m, 10m)")
    run.add_argument("--only", nargs="+", metavar="BENCHMARK", help="only these benchmarks of the config")
    one = sub.add_parser("one", help="run one benchmark with its own options (results/adhoc/)")
    one.add_argument("benchmark", choices=list(BENCHMARKS))
    one.add_argument("args", nargs=argparse.REMAINDER, help="the benchmark's options")
    sub.add_parser("list", help="the configs and the benchmarks")
    args = parser.parse_args(argv)
    if args.command == "list":
        for path in sorted(CONFIGS.glob("*.toml")):
            config = load_config(path.stem)
            print(f"{path.stem}: {config.get('description', '')}")
            for entry in config["benchmark"]:
                print(f"    {entry['name']} {shlex.join(benchmark_argv(entry, None))}")
        print("\nbenchmarks:")
        for name, what in BENCHMARKS.items():
            print(f"    {name}: {what}")
        return
    if args.command == "one":
        command = shlex.join(["python", "-m", "benchmarks", "one", args.benchmark, *args.args])
        ok = run_one(args.benchmark, args.args, RESULTS / "adhoc" / f"{args.benchmark}.json", command, "adhoc")
        sys.exit(0 if ok else 1)
    sys.exit(run_config(args.config, args.only))


if __name__ == "__main__":
    main()
