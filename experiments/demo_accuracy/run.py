"""The bundled demo corpus: ARI and CPU of the default command and its alternatives.

    python -m experiments.demo_accuracy.run

Runs ``neardup eval DEMO [--method M ...] --json`` as child processes, as a user runs
it after ``make demo``, and records each one's ARI, pairwise precision and recall, its
CPU seconds (user + system, start-up included) and the method and profile it ran (what
``--method auto`` and ``--profile auto`` chose). The
demo corpus is neardup's own generator's (Reuters stories reprinted with its noise
model), so these figures flatter every method that was designed on that noise; the
independent sets in docs/choosing-a-method.md are the fairer test.

Writes experiments/demo_accuracy/results/demo_accuracy.json.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

from neardup.data import demo_corpus_path

OUT = Path(__file__).resolve().parent / "results" / "demo_accuracy.json"
#: Label in the docs -> the options after ``neardup eval DEMO``.
SETTINGS = {
    "`neardup dedup` (default: `--method auto`, which runs rerank here)": [],
    "`--method minhash` (`--profile auto`)": ["--method", "minhash"],
    "`--method minhash --profile clean`": ["--method", "minhash", "--profile", "clean"],
    "`--method ngram` (`--profile auto`)": ["--method", "ngram"],
    "`--method exact`": ["--method", "exact"],
    "`--method simhash`": ["--method", "simhash"],
}


def _run(args: list[str]) -> tuple[dict, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-m", "neardup", "eval", str(demo_corpus_path()),
                           *args, "--json"], capture_output=True, text=True, check=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(done.stdout), cpu


def main() -> None:
    rows = []
    for label, args in SETTINGS.items():
        report, cpu = _run(args)
        rows.append({"setting": label, "args": args, "ari": report["ari"],
                     "precision": report["precision"], "recall": report["recall"],
                     "n_docs": report["n_docs"], "cpu_seconds": round(cpu, 2),
                     "method": report["method"],
                     "profile": (report.get("profile") or {}).get("name")})
        print(json.dumps(rows[-1]), flush=True)
    OUT.write_text(json.dumps({"corpus": demo_corpus_path().name, "rows": rows}, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
