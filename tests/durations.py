"""Run the longest test files first, from the durations the last recording measured
(tests/durations.json), and record them again on request.

Under ``--dist worksteal`` each xdist worker takes one half of the collected tests in
order and, once idle, steals from the end of the other's: longest files first means the
tests left to steal at the end are the short ones, so no worker finishes a long file
alone while the other idles. The Ray lane's files come before all others, so that they
fall in one worker's half and only that worker starts a Ray cluster. Tests keep their order within a file (module fixtures are
set up once). Files the recording does not know (new ones) count as a median file.

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


def _recorded() -> dict[str, float]:
    try:
        return json.loads(DURATIONS_FILE.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # trylast: order what is left once every other hook (markers, -m) has run. The order
    # must be the same in every xdist worker: it depends only on the file and the nodeids.
    recorded = _recorded()
    if not recorded:
        return
    unknown = statistics.median(recorded.values())
    first_seen, on_ray = {}, set()
    for position, item in enumerate(items):
        first_seen.setdefault(_file_of(item.nodeid), position)
        if item.get_closest_marker("ray") is not None:
            on_ray.add(_file_of(item.nodeid))
    # The Ray lane's files first: they all fall in the first worker's half, so one worker
    # starts a Ray cluster (tests/conftest.py's ray_cluster, ~9 s and its processes'
    # CPU), not both.
    items.sort(key=lambda item: (_file_of(item.nodeid) not in on_ray,
                                 -recorded.get(_file_of(item.nodeid), unknown),
                                 first_seen[_file_of(item.nodeid)]))


class DurationRecorder:
    """Sums each file's reported durations (on the xdist controller, every worker's)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.failed = False

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[_file_of(report.nodeid)] += report.duration
        self.failed |= report.failed

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.failed or session.testsfailed:
            # A failing run's durations are not the suite's: keep the last good recording.
            session.config.get_terminal_writer().line(f"{DURATIONS_FILE.name} not written: tests failed")
            return
        # A lane's run (-m ray) updates its files and keeps the others' recordings.
        root = DURATIONS_FILE.parents[1]
        merged = {name: s for name, s in _recorded().items() if (root / name).exists()}
        merged.update((name, round(s, 1)) for name, s in self.seconds.items())
        ranked = dict(sorted(merged.items(), key=lambda pair: (-pair[1], pair[0])))
        DURATIONS_FILE.write_text(json.dumps(ranked, indent=1) + "\n", encoding="utf-8")


def pytest_configure(config: pytest.Config) -> None:
    # Only the controller records (workers' reports reach it); workers have workerinput.
    if config.getoption("--record-durations") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(DurationRecorder(), "neardup-duration-recorder")
