"""Time ``make test`` (or another make target) in a fresh clone, as a newcomer runs it.

    python scripts/time_make_test.py                      # make test, clone in a temporary directory
    python scripts/time_make_test.py --target test-fast
    python scripts/time_make_test.py --beside-shared      # clone beside ../shared (Reuters tests run)

Clones the committed state of this checkout, runs ``make TARGET`` there (which creates
``.venv`` and installs), and writes ``benchmarks/results/tests/make-TARGET-COMMIT[-N].txt``:
a header saying how it ran, make's last output lines (the slowest tests and pytest's
summary), then ``pytest SECONDS`` (pytest's own clock) and ``whole SECONDS`` (the make
command's wall time, the install included). The docs' test-suite table reads these files
(``python scripts/docs_tables.py``). Run it with nothing else running: the figures are wall
times.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "tests"
#: First line of a result file this script wrote (the table reads only those).
HEADER = "# neardup make-test timing v1"
_SUMMARY = re.compile(r"^(?P<counts>.*(passed|failed).*) in (?P<seconds>[0-9.]+)s \(")
#: Lines of make's output kept (the slowest tests and the summary come last).
KEEP_LINES = 60


def _commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout.strip()


def _output_path(target: str, commit: str) -> Path:
    base = RESULTS / f"make-{target}-{commit}.txt"
    n = 2
    while base.exists():
        base = RESULTS / f"make-{target}-{commit}-{n}.txt"
        n += 1
    return base


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="test", help="the make target (default: test)")
    parser.add_argument("--beside-shared", action="store_true",
                        help="clone next to this checkout (where ../shared is), not in /tmp")
    args = parser.parse_args(argv)
    if subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True,
                      text=True).stdout.strip():
        print("time_make_test: the checkout has uncommitted changes; the clone would not "
              "hold them. Commit first.", file=sys.stderr)
        return 2
    commit = _commit()
    if args.beside_shared:  # the clone itself next to ../shared, as the tests look for it
        parent = None
        clone = Path(tempfile.mkdtemp(prefix="neardup-make-", dir=ROOT.parent))
        clone.rmdir()
    else:
        parent = Path(tempfile.mkdtemp(prefix="neardup-make-"))
        clone = parent / "fresh"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    shared = (clone.parent / "shared").exists()
    load = os.getloadavg()
    start = time.perf_counter()
    run = subprocess.run(["make", args.target], cwd=clone, capture_output=True, text=True)
    whole = time.perf_counter() - start
    lines = (run.stdout + run.stderr).splitlines()
    pytest_seconds = None
    for line in reversed(lines):
        match = _SUMMARY.match(line.strip("= "))
        if match:
            pytest_seconds = float(match.group("seconds"))
            break
    out = _output_path(args.target, commit)
    header = [
        HEADER,
        f"# commit {commit}; make {args.target} in a fresh clone ({clone}); "
        f"../shared {'present' if shared else 'absent'}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; exit {run.returncode}",
        "# command: python scripts/time_make_test.py"
        + (f" --target {args.target}" if args.target != "test" else "")
        + (" --beside-shared" if args.beside_shared else ""),
    ]
    footer = [f"pytest {pytest_seconds:.2f}" if pytest_seconds is not None else "pytest none",
              f"whole {whole:.2f}"]
    out.write_text("\n".join(header + lines[-KEEP_LINES:] + footer) + "\n", encoding="utf-8")
    shutil.rmtree(parent or clone, ignore_errors=True)
    print(f"{out.relative_to(ROOT)}: exit {run.returncode}, pytest {pytest_seconds} s, "
          f"whole {whole:.1f} s")
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
