"""Scale runs of `neardup dedup` on the scale corpus (#14): wall, CPU, peak RSS, accuracy.

Each run is a child process measured with ``os.wait4`` (CPU = user + system seconds, peak
RSS = ru_maxrss). Accuracy is the ARI of the run's clusters against the corpus's
``cluster`` column (scripts/make_scale_corpus.py writes it). Peers in the same run, on the same
texts and word 3-gram shingles, 128 permutations, threshold 0.5: datasketch (MinHash +
MinHashLSH, query then insert) and rensa (RMinHash + RMinHashLSH, 32 bands of 4 rows: rensa needs bands dividing 128), clusters by union-find
over the LSH matches.

    python scripts/make_scale_corpus.py --docs 1000000 --out /tmp/neardup-scale/1M
    python -m benchmarks one scale --corpus /tmp/neardup-scale/1M --methods minhash exact simhash

datatrove (``--datatrove-python``) runs in its own environment; see benchmarks/peer_datatrove.py.

A run too long for one sitting (rerank at 1M) can be given ``--extra --work-dir DIR
--resume`` and rerun after an interruption: its row then adds the CPU seconds that the
earlier invocations recorded with the stages they finished (``earlier_invocations``) and
keeps the larger peak RSS; work lost to the interruption is not counted.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from benchmarks.harness import machine, measure_command

PEER = r'''
import sys, json, time
import numpy as np, pyarrow.parquet as pq
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
kind, out, files = sys.argv[1], sys.argv[2], sys.argv[3:]
texts = [t for f in files for t in pq.read_table(f, columns=["text"]).column("text").to_pylist()]
def shingles(text):
    w = text.lower().split()
    return [" ".join(w[i:i + 3]) for i in range(max(len(w) - 2, 1))]
left, right = [], []
if kind == "datasketch":
    from datasketch import MinHash, MinHashLSH
    lsh = MinHashLSH(threshold=0.5, num_perm=128)
    for i, t in enumerate(texts):
        m = MinHash(num_perm=128)
        m.update_batch([s.encode() for s in shingles(t)])
        for j in lsh.query(m):
            left.append(i); right.append(j)
        lsh.insert(i, m)
else:
    from rensa import RMinHash, RMinHashLSH
    lsh = RMinHashLSH(threshold=0.5, num_perm=128, num_bands=32)
    for i, t in enumerate(texts):
        m = RMinHash(num_perm=128, seed=42)
        m.update(shingles(t))
        for j in lsh.query(m):
            left.append(i); right.append(j)
        lsh.insert(i, m)
n = len(texts)
g = coo_matrix((np.ones(len(left)), (left, right)), shape=(n, n))
_, labels = connected_components(g, directed=False)
np.save(out, labels)
'''


def ari(truth: np.ndarray, labels: np.ndarray) -> float:
    from neardup.eval.metrics import adjusted_rand_index

    return round(adjusted_rand_index(truth, labels), 5)


def recorded_usage(extra: list[str]) -> dict | None:
    """CPU seconds and peak RSS that earlier invocations recorded with the stages already
    complete in ``--work-dir`` (given in ``extra`` with ``--resume``), so that a run
    resumed over several invocations (say, across machine sessions) is reported whole:
    the sketch and screen stages' and each finished link partition's ``cpu_seconds``/``peak_rss_mb``
    (neardup.engine.local). None: not a resumed run, or nothing done yet."""
    if "--resume" not in extra or "--work-dir" not in extra:
        return None
    work = Path(extra[extra.index("--work-dir") + 1])
    records = []
    for stage in ("sketch", "screen"):  # screen: rerank's Screen step
        done = work / stage / "_DONE.json"
        if done.exists():
            records.append(json.loads(done.read_text())["facts"])
    link = sorted((work / "link").glob("p-*.json")) if (work / "link").is_dir() else []
    records += [json.loads(p.read_text()) for p in link]
    if not records:
        return None
    if any("cpu_seconds" not in r for r in records):
        raise SystemExit(f"{work} holds stages finished by a neardup that did not record "
                         "their CPU; start the run in a new work directory")
    return {"cpu_s": round(sum(r["cpu_seconds"] for r in records), 1),
            "peak_rss_mb": max(r["peak_rss_mb"] for r in records),
            "sketch_done": (work / "sketch" / "_DONE.json").exists(), "link_partitions_done": len(link)}


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="directory of part-*.parquet")
    parser.add_argument("--methods", nargs="*", default=["minhash"])
    parser.add_argument("--peers", nargs="*", default=[], choices=["datasketch", "rensa", "datatrove"],
                        help="peers run on the same corpus (datatrove: its MinHash pipeline, "
                             "benchmarks/peer_datatrove.py, with --datatrove-python)")
    parser.add_argument("--datatrove-python", type=Path, default=Path(sys.executable),
                        help="python of an environment with datatrove installed (default: this one)")
    parser.add_argument("--first", type=int, default=None,
                        help="run on the corpus's first N documents only (a Parquet copy in "
                             "a temporary directory), e.g. for the slow neural methods")
    parser.add_argument("--extra", nargs=argparse.REMAINDER, default=[],
                        help="further options for neardup dedup")
    args = parser.parse_args(argv)
    files = sorted(str(p) for p in args.corpus.glob("part-*.parquet"))
    rows = []
    with tempfile.TemporaryDirectory(dir=args.corpus.parent) as tmp:
        source = f"{args.corpus}/part-*.parquet"
        if args.first is not None:
            import pyarrow as pa

            table = pa.concat_tables(pq.read_table(f) for f in files).slice(0, args.first)
            files = [str(Path(tmp) / "part-00000.parquet")]
            pq.write_table(table, files[0])
            source = f"(first {args.first:,} documents of {args.corpus}/part-*.parquet)"
            del table
        truth = np.concatenate([pq.read_table(f, columns=["cluster"]).column("cluster").to_numpy()
                                for f in files])
        for method in args.methods:
            out = Path(tmp) / f"{method}.parquet"
            report = Path(tmp) / f"{method}-report.json"
            # Components unless --extra names a clustering: the published runs' (rerank's
            # default became --cluster auto, Leiden, after them). The row's command says so.
            flags = [*(() if "--cluster" in args.extra else ("--cluster", "components")), *args.extra]
            cmd = [sys.executable, "-m", "neardup", "dedup", *files, "--method", method,
                   "--text-field", "text", "--id-field", "id", "--clusters-out", str(out),
                   "--report", str(report), "--quiet", *flags]
            earlier = recorded_usage(args.extra)
            row = {"tool": "neardup", "method": method, "docs": int(truth.size), **measure_command(cmd)}
            if earlier is not None:
                # This invocation's figures plus the earlier ones' (their wall time is
                # not known: wall_s is this invocation's).
                row["earlier_invocations"] = earlier
                row["cpu_s_this_invocation"] = row["cpu_s"]
                row["cpu_s"] = round(row["cpu_s"] + earlier["cpu_s"], 1)
                row["peak_rss_mb"] = max(row["peak_rss_mb"], earlier["peak_rss_mb"])
            row["command"] = (f"neardup dedup {source} --method {method} "
                              f"--text-field text --id-field id --clusters-out OUT --quiet "
                              + " ".join(flags)).strip()
            saved = json.loads(report.read_text())
            row["stage_seconds"] = saved.get("timings_seconds")
            row["corpus_stage"] = (saved.get("params") or {}).get("corpus_stage")
            if method != "exact":
                row["ari_vs_truth"] = ari(truth, pq.read_table(out, columns=["cluster"]).column("cluster").to_numpy())
            rows.append(row)
            print(json.dumps(row), flush=True)
        for peer in [p for p in args.peers if p != "datatrove"]:
            out = Path(tmp) / f"{peer}.npy"
            row = {"tool": peer, "method": "minhash", "docs": int(truth.size),
                   **measure_command([sys.executable, "-c", PEER, peer, str(out), *files])}
            row["command"] = f"{peer} MinHash+LSH (benchmarks/scale.py PEER script)"
            row["ari_vs_truth"] = ari(truth, np.load(out))
            rows.append(row)
            print(json.dumps(row), flush=True)
        if "datatrove" in args.peers:
            out = Path(tmp) / "datatrove.npy"
            script = Path(__file__).with_name("peer_datatrove.py")
            row = {"tool": "datatrove", "method": "minhash", "docs": int(truth.size),
                   **measure_command([str(args.datatrove_python), str(script), str(out),
                                      str(Path(tmp) / "datatrove-work"), *files])}
            row["command"] = "datatrove MinHash pipeline (benchmarks/peer_datatrove.py), 1 worker"
            row["ari_vs_truth"] = ari(truth, np.load(out))
            rows.append(row)
            print(json.dumps(row), flush=True)
    return {"machine": machine(), "rows": rows}

