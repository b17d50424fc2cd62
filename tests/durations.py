"""Run the longest test files first, from the durations the last recording measured
(tests/durations.json), and record them again on request.

Under ``--dist worksteal`` each xdist worker first takes an equal run of the collected
tests, by count, and once idle steals from the end of another's. The order gives each
run an equal share of the recorded seconds (the long files dealt out, the short tests
filling each run up to its count), long files first within a run: a worker then rarely
steals, and what it steals are short tests, not the tail of a long file whose module
fixtures would be set up twice. The Ray lane's files all go to the first run, so that
only that worker starts a Ray cluster. Tests keep their order within a file (module
fixtures are set up once). Files the recording does not know (new ones) count as a
median file.

Record after adding or reshaping slow tests (the whole suite, as ``make test`` runs it;
a run of one lane, with ``-m``, updates only that lane's files)::

    make test-durations

The file ordering only changes speed, never which tests run or what they check.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

import pytest

#: Seconds of work (setup, call and teardown) per test file, as the last recording measured.
DURATIONS_FILE = Path(__file__).resolve().parent / "durations.json"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--record-durations", action="store_true", default=False,
                     help=f"write each test file's seconds of work to {DURATIONS_FILE.name} "
                          "(which orders the files, longest first, on later runs)")


def recorded_seconds() -> dict[str, float]:
    try:
        return json.loads(DURATIONS_FILE.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


#: Files recorded at fewer seconds than this fill the workers' shares up to their number
#: of tests (and may be split between two workers); longer ones are placed whole.
FILLER_SECONDS = 2.0


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item], config: pytest.Config) -> None:
    # trylast: order what is left once every other hook (markers, -m) has run. The order
    # must be the same in every xdist worker: it depends only on the recording, the
    # nodeids and the number of workers.
    recorded = recorded_seconds()
    if not recorded:
        return
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    items[:] = ordered(items, recorded, workers)


def ordered(items: list, recorded: dict[str, float], workers: int) -> list:
    """``items`` in the order the workers take them: under ``--dist worksteal`` worker
    ``i`` first takes the ``i``-th of ``workers`` equal runs of tests, by count. Each run
    gets an equal share of the recorded seconds: the long files are dealt out, longest
    first, to the run with the fewest seconds so far, and the short tests fill each run
    up to its number of tests. Within a run the long files come first, longest first,
    so the tests a worker steals from another's end are short ones. The Ray lane's
    files all go to the first run, so one worker starts a Ray cluster."""
    unknown = statistics.median(recorded.values())
    by_file: dict[str, list] = {}
    on_ray = set()
    for item in items:
        name = file_of(item.nodeid)
        by_file.setdefault(name, []).append(item)
        if item.get_closest_marker("ray") is not None:
            on_ray.add(name)
    seconds = {name: recorded.get(name, unknown) for name in by_file}
    # Longest first; the collected order breaks ties (dicts keep it).
    ranked = sorted(by_file, key=lambda name: (name not in on_ray, -seconds[name]))
    runs: list[list] = [[] for _ in range(workers)]
    load = [0.0] * workers
    filler: list = []
    for name in ranked:
        if name in on_ray:
            target = 0
        elif seconds[name] >= FILLER_SECONDS and workers > 1:
            target = min(range(workers), key=lambda k: (load[k], k))
        else:
            filler.extend(by_file[name])
            continue
        runs[target].extend(by_file[name])
        load[target] += seconds[name]
    # xdist hands worker i len(pending) // (workers - i) of the tests still pending.
    sizes, left = [], len(items)
    for k in range(workers):
        sizes.append(left // (workers - k))
        left -= sizes[-1]
    for k in range(workers):
        room = max(0, sizes[k] - len(runs[k])) if k < workers - 1 else len(filler)
        runs[k].extend(filler[:room])
        del filler[:room]
    return [item for run in runs for item in run]


class DurationRecorder:
    """Sums each file's reported durations (on the xdist controller, every worker's)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.failed = False

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[file_of(report.nodeid)] += report.duration
        self.failed |= report.failed

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.failed or session.testsfailed:
            # A failing run's durations are not the suite's: keep the last good recording.
            session.config.get_terminal_writer().line(f"{DURATIONS_FILE.name} not written: tests failed")
            return
        # A lane's run (-m ray) updates its files and keeps the others' recordings.
        root = DURATIONS_FILE.parents[1]
        merged = {name: s for name, s in recorded_seconds().items() if (root / name).exists()}
        merged.update((name, round(s, 1)) for name, s in self.seconds.items())
        ranked = dict(sorted(merged.items(), key=lambda pair: (-pair[1], pair[0])))
        DURATIONS_FILE.write_text(json.dumps(ranked, indent=1) + "\n", encoding="utf-8")


def pytest_configure(config: pytest.Config) -> None:
    # Only the controller records (workers' reports reach it); workers have workerinput.
    if config.getoption("--record-durations") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(DurationRecorder(), "neardup-duration-recorder")
