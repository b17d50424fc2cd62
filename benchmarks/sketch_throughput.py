"""MinHash sketching throughput in MB of text per CPU-second (issue #14).

Stages of neardup's ``minhash`` sketch, each timed alone, then end to end, then the peers
on the same texts, all in one run:

* ``normalize``: :func:`neardup.text.normalize.normalize_codes` (all steps on; the code
  points the shingler reads) and ``normalize_batch`` (the same, as Python strings);
* ``shingle``: word 3-gram hashing of the normalized code points;
* ``signature``: 128 permutations over those shingle hashes;
* ``minhash end to end``: ``MinHash().signatures(texts)``, raw text to signatures
  (32-bit values, the default; and 64-bit);
* ``datasketch``: one ``datasketch.MinHash(num_perm=128)`` per text, ``update_batch`` with
  the UTF-8 word 3-grams of ``text.lower().split()``;
* ``rensa``: one ``rensa.RMinHash(num_perm=128)`` per text with the same 3-grams.

The peers get lower-cased whitespace tokens, no normalization: their figures include
less work than neardup's end to end.

Input: Reuters-21578 (title + body, read with neardup.io) repeated to ``--mb`` megabytes
of UTF-8; without Reuters, the bundled demo corpus. Texts are sketched in batches of
``--batch-size`` as ``neardup dedup`` does. Each figure is the text's UTF-8 megabytes
divided by the process's CPU seconds (``time.process_time``: every thread, so numba's
parallel kernels get no credit for using two cores); min and median over ``--repeat``
runs. ``--baseline-src DIR`` also runs the neardup rows with the neardup package found
in DIR (e.g. an older checkout), in a child process of the same run, for old/new ratios.

    python -m benchmarks one sketch_throughput --mb 100 --repeat 5 --baseline-src /tmp/old
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import ROOT, machine

NUM_PERM = 128
N = 3


def load_texts(target_mb: float, corpus: str) -> tuple[list[str], str]:
    """Reuters texts (or the demo corpus) repeated to about ``target_mb`` MB of UTF-8."""
    from neardup.io import ReaderConfig, read_corpus
    from neardup.io.reuters import find_reuters_dir

    root = find_reuters_dir() if corpus == "reuters" else None
    if root is not None:
        files = sorted(str(p) for p in root.glob("reut2-*.sgm"))
        source = f"Reuters-21578 ({root})"
    else:
        import neardup.data

        files = [str(Path(neardup.data.__file__).parent / "demo.jsonl.gz")]
        source = "bundled demo corpus" + (" (Reuters-21578 not found)" if corpus == "reuters" else "")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Reuters' one impossible date
        base = [t for batch in read_corpus(files, ReaderConfig()) for t in batch.texts]
    size = sum(len(t.encode("utf-8")) for t in base)
    copies = max(1, round(target_mb * 1e6 / size))
    return base * copies, f"{source}, {len(base):,} texts x {copies}"


def mb_of(texts: list[str]) -> float:
    return sum(len(t.encode("utf-8")) for t in texts) / 1e6


def batches(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def measure(fn, repeat: int) -> dict:
    cpu, wall = [], []
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return {"cpu_s": cpu, "wall_s": wall}


def word_shingles(text: str) -> list[str]:
    words = text.lower().split()
    if len(words) < N:
        return [" ".join(words)] if words else []
    return [" ".join(words[i : i + N]) for i in range(len(words) - N + 1)]


def neardup_cases(texts: list[str], batch_size: int) -> dict:
    """name -> (callable, MB it processes). Works with old checkouts too (feature tests)."""
    from neardup.methods.minhash import MinHash
    from neardup.text import ShingleConfig, hash_shingles, normalize_batch

    parts = batches(texts, batch_size)
    mb = mb_of(texts)
    config = ShingleConfig("word", N)
    wide = MinHash(num_perm=NUM_PERM, shingle=config)
    cases = {}
    try:
        from neardup.text.normalize import normalize_codes
        from neardup.text.shingle import shingle_codes
    except ImportError:  # before #14: strings only
        normalize_codes = shingle_codes = None
    if normalize_codes is not None:
        codes = [normalize_codes(p) for p in parts]
        sets = [shingle_codes(c, o, config) for c, o in codes]
        cases["normalize (code points)"] = lambda: [normalize_codes(p) for p in parts]
        cases["shingle"] = lambda: [shingle_codes(c, o, config) for c, o in codes]
    else:
        normalized = [normalize_batch(p) for p in parts]
        sets = [hash_shingles(n, config) for n in normalized]
        cases["shingle"] = lambda: [hash_shingles(n, config) for n in normalized]
    cases["normalize (strings)"] = lambda: [normalize_batch(p) for p in parts]
    cases["signature"] = lambda: [wide.signatures_from_sets(s) for s in sets]
    cases["minhash end to end"] = lambda: [wide.signatures(p) for p in parts]
    if "hash_bits" in MinHash.__init__.__code__.co_varnames:
        wide64 = MinHash(num_perm=NUM_PERM, shingle=config, hash_bits=64)
        cases["minhash end to end, 64-bit"] = lambda: [wide64.signatures(p) for p in parts]
        wide64.signatures(parts[0][:10])
    wide.signatures(parts[0][:10])  # compile or load the numba cache outside the timing
    return {name: (fn, mb) for name, fn in cases.items()}


PEERS = ("datasketch", "rensa")


def peer_cases(texts: list[str], names: list[str]) -> dict:
    """The named peers (of :data:`PEERS`) on ``texts``; a peer that is not installed is
    left out, saying so."""
    mb = mb_of(texts)
    cases = {}
    if "datasketch" in names:
        try:
            from datasketch import MinHash as DMinHash

            def run_datasketch():
                for t in texts:
                    m = DMinHash(num_perm=NUM_PERM, seed=1)
                    m.update_batch([s.encode("utf-8") for s in word_shingles(t)])

            cases["datasketch (update_batch)"] = (run_datasketch, mb)
        except ImportError:
            print("datasketch is not installed: left out", file=sys.stderr)
    if "rensa" in names:
        try:
            from rensa import RMinHash

            def run_rensa():
                for t in texts:
                    m = RMinHash(num_perm=NUM_PERM, seed=1)
                    m.update(word_shingles(t))
                    m.digest()

            cases["rensa (RMinHash)"] = (run_rensa, mb)
        except ImportError:
            print("rensa is not installed: left out", file=sys.stderr)
    return cases


def run_cases(cases: dict, repeat: int) -> dict:
    rows = {}
    for name, (fn, mb) in cases.items():
        timing = measure(fn, repeat)
        rates = sorted(mb / c for c in timing["cpu_s"])
        rows[name] = {
            "mb": mb,
            **timing,
            "mb_per_cpu_s_max": rates[-1],
            "mb_per_cpu_s_median": statistics.median(rates),
            "mb_per_cpu_s_min": rates[0],
        }
        print(f"  {name}: median {rows[name]['mb_per_cpu_s_median']:.1f} MB/CPU-s", file=sys.stderr)
    return rows


def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for package in ("numba", "numpy", "datasketch", "rensa"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            pass
    out["NUMBA_NUM_THREADS"] = os.environ.get("NUMBA_NUM_THREADS", "default")
    return out


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=100.0, help="text size for neardup rows")
    parser.add_argument("--peer-mb", type=float, default=10.0,
                        help="text size for datasketch and rensa (a prefix of the same texts)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per row")
    parser.add_argument("--batch-size", type=int, default=10_000, help="texts per sketch call")
    parser.add_argument("--baseline-src", type=Path, default=None,
                        help="directory holding an older neardup package to time as well")
    parser.add_argument("--corpus", choices=("reuters", "demo"), default="reuters",
                        help="Reuters-21578 (mostly ASCII; the demo corpus when absent) or the "
                        "bundled demo corpus (adversarial noise: a third of its texts are not ASCII)")
    parser.add_argument("--peers", nargs="*", default=list(PEERS), choices=list(PEERS),
                        help="peers timed on the same texts (default: all)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    texts, source = load_texts(args.mb, args.corpus)
    if args.child:  # neardup rows only, as JSON on stdout
        rows = run_cases(neardup_cases(texts, args.batch_size), args.repeat)
        json.dump({"source": source, "mb": mb_of(texts), "rows": rows}, sys.stdout)
        return {}
    import neardup

    print(f"neardup from {Path(neardup.__file__).parent}", file=sys.stderr)
    result = {
        "source": source,
        "mb": mb_of(texts),
        "docs": len(texts),
        "repeat": args.repeat,
        "batch_size": args.batch_size,
        "machine": machine(),
        "versions": versions(),
        "neardup": run_cases(neardup_cases(texts, args.batch_size), args.repeat),
    }
    if args.baseline_src is not None:
        from neardup.io.reuters import REUTERS_DIR_ENV, find_reuters_dir

        # The old package first, then this checkout for the benchmarks package; run from a
        # neutral directory so that the working directory does not shadow either.
        env = dict(os.environ, PYTHONPATH=f"{args.baseline_src.resolve()}{os.pathsep}{ROOT}")
        if find_reuters_dir() is not None:  # the same files, wherever the old package is
            env[REUTERS_DIR_ENV] = str(find_reuters_dir())
        child = subprocess.run(
            [sys.executable, "-m", "benchmarks.sketch_throughput", "--child", "--mb", str(args.mb), "--repeat",
             str(args.repeat), "--batch-size", str(args.batch_size), "--corpus", args.corpus],
            env=env, capture_output=True, text=True, check=True, cwd=tempfile.gettempdir(),
        )  # fmt: skip
        baseline = json.loads(child.stdout)
        if abs(baseline["mb"] - result["mb"]) > 1e-6:
            sys.exit(f"the baseline read other texts: {baseline['source']}, {baseline['mb']} MB")
        result["baseline_src"] = str(args.baseline_src)
        result["baseline"] = baseline["rows"]
    peers = texts
    budget = args.peer_mb * 1e6
    for i, t in enumerate(texts):
        budget -= len(t.encode("utf-8"))
        if budget <= 0:
            peers = texts[: i + 1]
            break
    result["peers"] = run_cases(peer_cases(peers, args.peers), args.repeat)
    result["peer_mb"] = mb_of(peers)

    e2e = result["neardup"]["minhash end to end"]["mb_per_cpu_s_median"]
    print(f"\n{source}; {result['mb']:.1f} MB, {len(texts):,} texts (peers: first "
          f"{result['peer_mb']:.1f} MB); {result['machine']}; {result['versions']}\n")
    header = "| step | MB/CPU-s median | min | max |"
    if "baseline" in result:
        header += " before (median) | speed-up |"
    print(header)
    print("|---|---:|---:|---:|" + ("---:|---:|" if "baseline" in result else ""))
    for group in ("neardup", "peers"):
        for name, row in result[group].items():
            line = (f"| {name} | {row['mb_per_cpu_s_median']:.1f} | {row['mb_per_cpu_s_min']:.1f} "
                    f"| {row['mb_per_cpu_s_max']:.1f} |")
            if "baseline" in result:
                old = result["baseline"].get(name)
                if old is not None:
                    ratio = row["mb_per_cpu_s_median"] / old["mb_per_cpu_s_median"]
                    line += f" {old['mb_per_cpu_s_median']:.1f} | {ratio:.2f}x |"
                else:
                    line += " | |"
            print(line)
    for name, row in result["peers"].items():
        print(f"neardup end to end / {name}: {e2e / row['mb_per_cpu_s_median']:.1f}x")
    return result


if __name__ == "__main__":  # the --child run of --baseline-src: neardup rows as JSON on stdout
    run(sys.argv[1:])
