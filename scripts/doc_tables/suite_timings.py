"""The test suite: `make test` timed in fresh clones by scripts/time_make_test.py
(docs/benchmarks.md)."""

from __future__ import annotations

import re

from doc_tables.formatting import Renderer, table
from doc_tables.results import load_text
from doc_tables.sources import SOURCES


#: The timed runs of the test-suite table, in row order (SOURCES names).
MAKE_TEST_RUNS: tuple[str, ...] = ("make-test-1", "make-test-2", "make-test-3", "make-test-fast-1", "make-test-4", "make-test-fast-2", "make-test-5", "make-test-fast-3", "make-test-6", "make-test-7", "make-test-8", "make-test-9", "make-test-fast-4", "make-test-10", "make-test-11", "make-test-12", "make-test-13", "make-test-14", "make-test-15", "make-test-16", "make-test-fast-5", "make-test-fast-6", "make-test-fast-7", "make-test-17", "make-test-18", "make-test-fast-8", "make-test-19", "make-test-fast-9")
_MAKE_TEST_HEADER = "# neardup make-test timing v1"
_MAKE_TEST_COUNTS = re.compile(r"(\d+) (passed|failed|skipped|errors?)")


def _minutes(seconds: float) -> str:
    whole = int(round(seconds))
    return f"{whole // 60}:{whole % 60:02d}"


def _make_test_runs() -> tuple[str, list[str]]:
    rows = []
    for name in MAKE_TEST_RUNS:
        lines = load_text(name).splitlines()
        if not lines or lines[0] != _MAKE_TEST_HEADER:
            raise SystemExit(f"docs_tables: {SOURCES[name].path} was not written by "
                             "scripts/time_make_test.py")
        about = lines[1].lstrip("# ").split("; ")
        commit = about[0].removeprefix("commit ")
        target = about[1].split(" in a fresh clone")[0].removeprefix("make ")
        shared = about[2].removeprefix("../shared ").split(" ")[0]
        figures = dict(line.split(" ", 1) for line in lines[-2:])
        summary = next((line for line in reversed(lines) if " in " in line and "passed" in line), "")
        counts = ", ".join(f"{int(n):,} {word}" for n, word in _MAKE_TEST_COUNTS.findall(summary.split(" in ")[0]))
        pytest_seconds = figures["pytest"]
        finished = about[3]  # written when the run ended
        rows.append([f"`make {target}`", f"`{commit}`", finished, shared, counts or "—",
                     "—" if pytest_seconds == "none" else _minutes(float(pytest_seconds)),
                     _minutes(float(figures["whole"]))])
    header = ["command", "commit", "finished", "`../shared`", "tests", "pytest (m:ss)", "whole command (m:ss)"]
    return table(header, ["l", "l", "l", "l", "l", "r", "r"], rows), list(MAKE_TEST_RUNS)


TABLES: dict[str, Renderer] = {
    "make-test-runs": _make_test_runs,
}
