"""rerank's CPU per document against MinHash's, and where rerank's CPU goes.

Three modes, each running the command a user runs (``neardup dedup FILES --method M``, the
method's own defaults: for rerank the shipped verifier over char-5 MinHash candidates at
Jaccard 0.1, clustered as ``--cluster auto`` says, Leiden at resolution 0.4):

* ``compare``: each method as its own process, alternated ``--repeats`` times; CPU is the
  child's user + system time (``resource.getrusage(RUSAGE_CHILDREN)``), so interpreter
  start-up and imports count for both, as they do for a user. Reports CPU per document and
  rerank's ratio to MinHash, with the median of the repeats. ``--rerank-variant`` adds
  more rerank runs (other parameters) to the same alternation, ``--env-variant`` a
  MinHash and a rerank run with more environment variables (``OMP_WAIT_POLICY=ACTIVE``:
  numba's threads spinning as before decision 0044).
* ``profile``: rerank in this process under cProfile with a CPU clock
  (``time.process_time``: every thread of the process, so rapidfuzz's and numba's
  threads count), split into candidates (sketching, band keys, MinHash's permissive
  check), document profiles and pair features, the tree ensemble (bound and
  prediction), the template guard, clustering and the rest (start-up, input, output).
* ``count``: rerank in this process, counting the candidate edges the corpus stage
  checks, those passing MinHash's estimate (the verifier's pairs), those accepted, and
  the document profiles computed (``--cache-mib``: the profile cache's size).

Data sets (``--data``, repeatable): ``reuters`` (Reuters-21578's SGML files, found under
``../shared/data/reuters21578`` from the repository root or ``--reuters DIR``),
``indep-NAME`` (``data/indep-NAME/validation.jsonl.gz``, with its dates), and
``scale:PATH`` (a Parquet file or directory of the seeded scale corpus, as written by
``python bench/scale_corpus.py --docs 20000 --out DIR``).

    python benchmarks/rerank_cost.py compare --data indep-nlpaug --data reuters --repeats 2
    python benchmarks/rerank_cost.py profile --data scale:/tmp/neardup-scale/20k

Raw results are written as JSON under ``benchmarks/results/rerank/`` (``--name``).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "rerank"

#: Profile sections: cumulative CPU of these functions (file suffix, function name).
#: Nested entries are subtracted from their parents below, so the sections add up.
SECTIONS = {
    "verifier": [("neardup/methods/rerank.py", "score_candidate_rows"),
                 ("neardup/methods/rerank.py", "scored_candidates"),
                 ("neardup/methods/rerank.py", "verify_screened_rows")],
    # The Screen step's own stage (estimates of every candidate, the partner table):
    # inside the candidates' section, reported as a part of it.
    "screen stage": [("neardup/engine/local.py", "_screen_stage")],
    "document profiles": [("neardup/methods/pair_features.py", "document_profiles")],
    "pair features": [("neardup/methods/pair_features.py", "profile_pair_features")],
    # Before document profiles: the one function computing both.
    "pair_features": [("neardup/methods/pair_features.py", "pair_features")],
    "tree ensemble": [("neardup/methods/rerank.py", "_predict"),
                      ("neardup/methods/tree_bound.py", "upper_proba")],
    "template guard": [("neardup/methods/rerank.py", "_template_pairs")],
    "corpus stage": [("neardup/engine/local.py", "run_corpus_stage")],
    "clustering": [("neardup/graph/community.py", "detect_communities"),
                   ("neardup/graph/cluster.py", "connected_components")],
}


def _inputs(data: str, reuters: Path | None) -> tuple[list[str], list[str], int]:
    """Input files, the CLI's field flags, and the number of documents."""
    if data == "reuters":
        directory = reuters or ROOT.parent / "shared" / "data" / "reuters21578"
        files = sorted(str(p) for p in directory.glob("reut2-*.sgm"))
        if not files:
            raise SystemExit(f"no reut2-*.sgm under {directory}; pass --reuters DIR")
        return files, [], 21578
    if data.startswith("indep-"):
        path = ROOT / "data" / data / "validation.jsonl.gz"
        import gzip

        with gzip.open(path, "rt") as handle:
            n = sum(1 for _ in handle)
        return [str(path)], ["--text-field", "text", "--id-field", "id",
                             "--date-field", "date"], n
    if data.startswith("scale:"):
        import pyarrow.parquet as pq

        path = Path(data[len("scale:"):])
        files = sorted(str(p) for p in path.glob("*.parquet")) if path.is_dir() else [str(path)]
        n = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        return files, ["--text-field", "text", "--id-field", "id"], n
    raise SystemExit(f"unknown --data {data!r}: reuters, indep-NAME or scale:PATH")


def _command(method: str, files: list[str], flags: list[str], out: Path,
             extra: list[str], rerank_extra: list[str] = ()) -> list[str]:
    own = list(rerank_extra) if method == "rerank" else []
    return ["dedup", *files, "--method", method, *flags, "--clusters-out", str(out), "-q",
            *own, *extra]


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _runs(args: argparse.Namespace) -> dict[str, tuple[str, list[str], dict[str, str]]]:
    """compare's runs: label -> (method, rerank's own --param flags, more environment).
    MinHash, rerank with ``--rerank-param``, each ``--rerank-variant`` on top of those,
    and for each ``--env-variant`` both methods with that environment."""
    runs = {"minhash": ("minhash", [], {}), "rerank": ("rerank", list(args.rerank_extra), {})}
    for label, params in args.variants:
        runs[f"rerank-{label}"] = ("rerank", [*args.rerank_extra, *params], {})
    for label, env in args.env_variants:
        runs[f"minhash-{label}"] = ("minhash", [], env)
        runs[f"rerank-{label}"] = ("rerank", list(args.rerank_extra), env)
    return runs


def _checkout(env: dict[str, str]) -> Path:
    """Where a run starts: ``python -m neardup`` imports neardup from its working
    directory before ``PYTHONPATH``, so a variant naming another checkout in
    ``PYTHONPATH`` (``'before:PYTHONPATH=DIR'``) runs from DIR."""
    return Path(env["PYTHONPATH"]) if "PYTHONPATH" in env else ROOT


def _env_variant(value: str) -> tuple[str, dict[str, str]]:
    """``LABEL:NAME=VALUE[;NAME=VALUE]`` -> (label, environment variables)."""
    label, sep, pairs = value.partition(":")
    env = dict(p.split("=", 1) for p in pairs.split(";") if "=" in p)
    if not sep or not label or not env:
        raise argparse.ArgumentTypeError(f"expected LABEL:NAME=VALUE[;NAME=VALUE]; got {value!r}")
    return label, env


def compare(args: argparse.Namespace) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    runs = _runs(args)
    rows = {}
    for data in args.data:
        files, flags, n_docs = _inputs(data, args.reuters)
        cpu: dict[str, list[float]] = {label: [] for label in runs}
        wall: dict[str, list[float]] = {label: [] for label in runs}
        # Largest resident set of any child so far (getrusage keeps only the maximum):
        # after rerank's runs, rerank's peak, which is above MinHash's.
        peak: dict[str, float] = {}
        with tempfile.TemporaryDirectory() as tmp:
            if args.warmup:  # compiled kernels cached (each checkout's), files in the page cache
                for method, own, more_env in runs.values():
                    subprocess.run([sys.executable, "-m", "neardup", *_command(
                        method, files, flags, Path(tmp) / "w.parquet", args.extra, own)],
                        check=True, env={**env, **more_env}, cwd=_checkout(more_env))
            for _ in range(args.repeats):
                # Alternated, so that a change in the machine's load falls on every run.
                for label, (method, own, more_env) in runs.items():
                    out = (args.clusters_dir or Path(tmp)) / f"{data.replace(':', '_').replace('/', '_')}-{label}.parquet"
                    before, start = _child_cpu(), time.perf_counter()
                    subprocess.run([sys.executable, "-m", "neardup",
                                    *_command(method, files, flags, out, args.extra, own)],
                                   check=True, env={**env, **more_env}, cwd=_checkout(more_env))
                    cpu[label].append(_child_cpu() - before)
                    wall[label].append(time.perf_counter() - start)
                    peak[label] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        med = {m: statistics.median(v) for m, v in cpu.items()}
        rows[data] = {
            "documents": n_docs,
            "cpu_s": cpu, "wall_s": wall, "children_peak_rss_mib": peak,
            "cpu_ms_per_doc": {m: 1000 * v / n_docs for m, v in med.items()},
            "rerank_over_minhash": med["rerank"] / med["minhash"],
        }
        for label in runs:
            if label.startswith("rerank-"):
                rows[data][f"{label}_over_minhash"] = med[label] / med["minhash"]
        print(f"{data}: {n_docs} docs; CPU s " + ", ".join(
            f"{m} {v:.2f} ({1000 * v / n_docs:.3f} ms a doc)" for m, v in med.items())
            + "; over minhash " + ", ".join(
            f"{m} {v / med['minhash']:.1f}x" for m, v in med.items() if m != "minhash"),
            flush=True)
    return rows


def _cumulative(stats: pstats.Stats, entries) -> float:
    total = 0.0
    for (filename, _, name), (_, _, _, cumtime, _) in stats.stats.items():
        if any(filename.endswith(f) and name == n for f, n in entries):
            total += cumtime
    return total


def profile(args: argparse.Namespace) -> dict:
    os.environ["HF_HUB_OFFLINE"] = "1"
    sys.path.insert(0, str(ROOT))
    from neardup.cli import main

    rows = {}
    for data in args.data:
        files, flags, n_docs = _inputs(data, args.reuters)
        with tempfile.TemporaryDirectory() as tmp:
            sys.argv = ["neardup", *_command("rerank", files, flags, Path(tmp) / "c.parquet",
                                             args.extra, args.rerank_extra)]
            if args.warmup:
                try:
                    main()
                except SystemExit as stop:
                    if stop.code not in (0, None):
                        raise
            profiler = cProfile.Profile(time.process_time)
            start = time.process_time()
            try:
                profiler.runcall(main)
            except SystemExit as stop:
                if stop.code not in (0, None):
                    raise
            total = time.process_time() - start
        stats = pstats.Stats(profiler)
        cum = {k: _cumulative(stats, v) for k, v in SECTIONS.items()}
        if cum["document profiles"] + cum["pair features"] == 0:  # code before profiles
            cum["pair features"] = cum["pair_features"]
        inside = cum["document profiles"] + cum["pair features"] + cum["tree ensemble"] \
            + cum["template guard"]
        sections = {
            "candidates (sketch, band keys, MinHash check)":
                cum["corpus stage"] - cum["verifier"],
            "document profiles": cum["document profiles"],
            "pair features": cum["pair features"],
            "tree ensemble": cum["tree ensemble"],
            "template guard": cum["template guard"],
            "verifier's other work (texts, cache, batching)": cum["verifier"] - inside,
            "clustering": cum["clustering"],
        }
        sections["rest (start-up, input, output)"] = total - sum(sections.values())
        sections["of which the Screen stage (in candidates)"] = cum["screen stage"]
        top = sorted(((v[3], f"{Path(k[0]).name}:{k[2]}") for k, v in stats.stats.items()),
                     reverse=True)
        own = sorted(((v[2], f"{Path(k[0]).name}:{k[2]}") for k, v in stats.stats.items()),
                     reverse=True)[:15]
        rows[data] = {"documents": n_docs, "cpu_s": total, "sections_cpu_s": sections,
                      "top_own_cpu_s": [[name, t] for t, name in own],
                      "top_cumulative_cpu_s": [[name, t] for t, name in top[:25]]}
        print(f"{data}: {n_docs} docs, {total:.2f} CPU s ({1000 * total / n_docs:.3f} ms a doc)")
        for name, seconds in sections.items():
            print(f"  {name:50s} {seconds:8.2f} s  {100 * seconds / total:5.1f}%")
        print("  own CPU, top functions:")
        for t, name in own:
            print(f"    {name:50s} {t:8.2f} s")
    return rows


def count(args: argparse.Namespace) -> dict:
    """rerank in this process with counters: candidate edges the corpus stage checks,
    edges passing MinHash's estimate (the verifier's pairs), edges accepted, and the
    document profiles computed (once per document would be the least)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    sys.path.insert(0, str(ROOT))
    import neardup.methods.pair_features as pair_features
    import neardup.methods.rerank as rerank
    from neardup.cli import main

    if args.cache_mib is not None:
        rerank.VerifierScorer.PROFILE_CACHE_BYTES = args.cache_mib << 20
    tally = {"candidate_edges": 0, "verified_edges": 0, "accepted_edges": 0,
             "profiles_computed": 0, "guard_pairs": 0, "guard_rejected": 0}
    score_verified, profiles = rerank.RerankMethod._score_verified, pair_features.document_profiles
    template_pairs = rerank._template_pairs

    def counted_score(self, rows, left, right, passed, estimate=None):
        prob, accept = score_verified(self, rows, left, right, passed, estimate)
        tally["candidate_edges"] += int(left.size)
        tally["verified_edges"] += int(passed.sum())
        tally["accepted_edges"] += int(accept.sum())
        return prob, accept

    def counted_profiles(texts, **kwargs):
        tally["profiles_computed"] += len(texts)
        return profiles(texts, **kwargs)

    def counted_guard(texts, left, right):
        guarded = template_pairs(texts, left, right)
        tally["guard_pairs"] += int(left.size)
        tally["guard_rejected"] += int(guarded.sum())
        return guarded

    rerank.RerankMethod._score_verified = counted_score
    rerank._template_pairs = counted_guard
    pair_features.document_profiles = counted_profiles
    rows = {}
    for data in args.data:
        files, flags, n_docs = _inputs(data, args.reuters)
        for key in tally:
            tally[key] = 0
        with tempfile.TemporaryDirectory() as tmp:
            sys.argv = ["neardup", *_command("rerank", files, flags, Path(tmp) / "c.parquet",
                                             args.extra, args.rerank_extra)]
            start = time.process_time()
            try:
                main()
            except SystemExit as stop:
                if stop.code not in (0, None):
                    raise
            cpu = time.process_time() - start
        # The process's peak so far: the run's own with one --data (each later one's
        # is at least the earlier ones').
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        rows[data] = {"documents": n_docs, "profile_cache_bytes":
                      rerank.VerifierScorer.PROFILE_CACHE_BYTES, "cpu_s": cpu,
                      "peak_rss_mb": peak_mb, **tally}
        print(data, rows[data], flush=True)
    return rows


def _variant(value: str) -> tuple[str, list[str]]:
    """``LABEL:NAME=VALUE[;NAME=VALUE]`` -> (label, rerank's --param flags)."""
    label, sep, params = value.partition(":")
    if not sep or not label or not params:
        raise argparse.ArgumentTypeError(f"expected LABEL:NAME=VALUE[;NAME=VALUE]; got {value!r}")
    return label, [f"--param={p}" for p in params.split(";")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("compare", "profile", "count"))
    parser.add_argument("--data", action="append", required=True,
                        help="reuters, indep-NAME or scale:PATH (repeatable)")
    parser.add_argument("--reuters", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--warmup", action="store_true",
                        help="run each command once, unmeasured, first (numba's cache)")
    parser.add_argument("--rerank-param", dest="rerank_extra", action="append", default=[],
                        type=lambda v: f"--param={v}",
                        help="a --param NAME=VALUE for rerank only (repeatable), e.g. "
                             "'candidate_params={\"threshold\": 0.2}'")
    parser.add_argument("--env-variant", dest="env_variants", action="append", default=[],
                        type=_env_variant,
                        help="compare: MinHash and rerank once more with these environment "
                             "variables, LABEL:NAME=VALUE[;NAME=VALUE] (repeatable), e.g. "
                             "'spin:OMP_WAIT_POLICY=ACTIVE', or another checkout's code, run "
                             "from that directory: 'before:PYTHONPATH=DIR'")
    parser.add_argument("--rerank-variant", dest="variants", action="append", default=[],
                        type=_variant,
                        help="compare: one more rerank run, LABEL:NAME=VALUE[;NAME=VALUE] "
                             "(repeatable; on top of --rerank-param), e.g. "
                             "'all:low_partners=null'")
    parser.add_argument("--extra", nargs=argparse.REMAINDER, default=[],
                        help="more dedup flags for both methods (last on the line)")
    parser.add_argument("--clusters-dir", type=Path, default=None,
                        help="compare: keep each method's clusters here (DATA-METHOD.parquet)")
    parser.add_argument("--cache-mib", type=int, default=None,
                        help="count: the verifier's profile cache in MiB (default: shipped)")
    parser.add_argument("--name", default=None, help="results file name (no extension)")
    args = parser.parse_args()
    rows = {"compare": compare, "profile": profile, "count": count}[args.mode](args)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=ROOT).stdout.strip()
    record = {"mode": args.mode, "commit": commit, "argv": sys.argv[1:],
              "load_average": os.getloadavg(), "results": rows}
    if args.name:
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / f"{args.name}.json"
        path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
