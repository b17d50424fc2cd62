"""Recorded seconds in each xdist worker's first run of tests, as tests/durations.py orders
them (``worksteal`` first hands worker ``i`` the ``i``-th of equal runs by count).

    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python scripts/test_split.py --workers 2

A file's recorded seconds are shared evenly by its tests.
"""

from __future__ import annotations

import argparse
from collections import Counter

import pytest

from tests import durations


class _Collected:
    items: list = []

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list) -> None:
        _Collected.items = list(items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    workers = parser.parse_args().workers
    pytest.main(["--co", "-q", "-p", "no:cacheprovider", "tests"], plugins=[_Collected()])
    recorded = durations.recorded_seconds()
    items = _Collected.items
    per_file = Counter(durations.file_of(i.nodeid) for i in items)
    order = durations.ordered(items, recorded, workers)
    left, start = len(order), 0
    for k in range(workers):
        size = left // (workers - k)
        run = order[start:start + size]
        seconds = sum(recorded.get(durations.file_of(i.nodeid), 0.0)
                      / per_file[durations.file_of(i.nodeid)] for i in run)
        print(f"worker {k}: {len(run)} tests, {seconds:.1f} recorded s")
        start, left = start + size, left - size


if __name__ == "__main__":
    main()
