"""What ``neardup dedup --report`` pays for the texts digest that lets ``neardup report``
tell whether its corpus changed (:class:`neardup.io.identity.TextsDigest`).

In one run, over the same corpus:

* ``read``: the corpus's batches as ``read_corpus`` gives them, then the digest of each
  batch alone (CPU seconds of this process);
* ``dedup``: ``neardup dedup --method minhash -q`` without and with ``--report`` as child
  processes, alternated, ``--repeat`` times each (CPU seconds: user + system).

    python -m benchmarks one texts_digest --corpus /tmp/neardup-scale/1M --repeat 2
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import machine, measure_command


def _digest_cost(files: list[str], reader) -> dict:
    from neardup.io import read_corpus
    from neardup.io.identity import TextsDigest

    docs, digest_cpu = 0, 0.0
    start = time.process_time()
    digest = TextsDigest()
    for batch in read_corpus(files, reader):
        before = time.process_time()
        digest.update(batch.texts)
        digest_cpu += time.process_time() - before
        docs += len(batch)
    return {"documents": docs, "read_and_digest_cpu_s": round(time.process_time() - start, 2),
            "digest_cpu_s": round(digest_cpu, 2)}


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/neardup-scale/1M"))
    parser.add_argument("--text-field", default="text")
    parser.add_argument("--id-field", default="id")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    from neardup.io import ReaderConfig

    files = sorted(str(p) for p in args.corpus.iterdir()) if args.corpus.is_dir() else [str(args.corpus)]
    reader = ReaderConfig(text_field=args.text_field, id_field=args.id_field)
    read = _digest_cost(files, reader)
    print(f"read: {read}")
    base = [sys.executable, "-m", "neardup", "dedup", str(args.corpus), "--method", "minhash",
            "--text-field", args.text_field, "--id-field", args.id_field, "-q"]
    runs: dict[str, list[float]] = {"without --report": [], "with --report": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):
            for name, extra in (("without --report", []),
                                ("with --report", ["--report", f"{tmp}/run.json"])):
                row = measure_command(base + extra)
                runs[name].append(row["cpu_s"])
                print(f"{name}: {row}")
    medians = {name: statistics.median(values) for name, values in runs.items()}
    return {"machine": machine(), "corpus": str(args.corpus), "read": read,
            "dedup_cpu_s": runs, "dedup_cpu_s_median": medians,
            "report_extra_cpu_s": round(medians["with --report"] - medians["without --report"], 2),
            "command": "python -m benchmarks one texts_digest " + " ".join(argv)}
