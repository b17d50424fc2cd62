"""The suite's ordering (tests/durations.py): the Ray lane's files first, then longest
recorded files first, each file's tests together and in their order, unknown files as a
median one; the recording is a flat map of test files to seconds."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

from tests import durations


def _items(*nodeids: str, ray: tuple[str, ...] = ()) -> list[SimpleNamespace]:
    """Stand-ins of collected tests; those of the files in ``ray`` carry the ray marker."""
    def item(nodeid: str) -> SimpleNamespace:
        marked = nodeid.split("::")[0] in ray
        return SimpleNamespace(nodeid=nodeid, get_closest_marker=lambda name: (
            SimpleNamespace(name=name) if marked and name == "ray" else None))
    return [item(n) for n in nodeids]


def _ordered(tmp_path, monkeypatch, recorded: dict[str, float], items: list,
             workers: int | None = None) -> list[str]:
    """The nodeids of ``items`` in the order the suite runs them under ``recorded``, in a
    run without xdist or in each of ``workers`` xdist workers."""
    path = tmp_path / "durations.json"
    path.write_text(json.dumps(recorded))
    monkeypatch.setattr(durations, "DURATIONS_FILE", path)
    config = SimpleNamespace() if workers is None else SimpleNamespace(
        workerinput={"workercount": workers})
    durations.pytest_collection_modifyitems(items, config)
    return [i.nodeid for i in items]


def test_longest_files_first_each_file_kept_together_in_order(tmp_path, monkeypatch):
    items = _items("tests/a.py::t1", "tests/b.py::t1", "tests/a.py::t2", "tests/new.py::t1",
                   "tests/c.py::t[2]", "tests/c.py::t[1]", "tests/b.py::t2")
    recorded = {"tests/a.py": 1.0, "tests/b.py": 50.0, "tests/c.py": 5.0, "tests/d.py": 3.0}
    # new.py counts as the median file (4.0 s): after c (5.0), before a (1.0).
    assert _ordered(tmp_path, monkeypatch, recorded, items) == [
        "tests/b.py::t1", "tests/b.py::t2", "tests/c.py::t[2]", "tests/c.py::t[1]",
        "tests/new.py::t1", "tests/a.py::t1", "tests/a.py::t2"]


def test_ray_files_first_so_one_worker_starts_a_cluster(tmp_path, monkeypatch):
    items = _items("tests/a.py::t1", "tests/r.py::t1", "tests/b.py::t1", "tests/s.py::t1",
                   ray=("tests/r.py", "tests/s.py"))
    recorded = {"tests/a.py": 1.0, "tests/b.py": 50.0, "tests/r.py": 0.5, "tests/s.py": 9.0}
    assert _ordered(tmp_path, monkeypatch, recorded, items) == [
        "tests/s.py::t1", "tests/r.py::t1", "tests/b.py::t1", "tests/a.py::t1"]


def test_without_a_recording_the_collected_order_stays(tmp_path, monkeypatch):
    monkeypatch.setattr(durations, "DURATIONS_FILE", tmp_path / "absent.json")
    items = _items("tests/a.py::t1", "tests/b.py::t1")
    durations.pytest_collection_modifyitems(items, SimpleNamespace())
    assert [i.nodeid for i in items] == ["tests/a.py::t1", "tests/b.py::t1"]


def test_the_recording_maps_test_files_to_seconds_longest_first():
    # Entries of files renamed since are harmless (never matched): not checked here.
    recorded = json.loads(durations.DURATIONS_FILE.read_text(encoding="utf-8"))
    assert recorded, "tests/durations.json is empty: make test-durations"
    assert all(re.fullmatch(r"tests/[\w/]+\.py", name) for name in recorded)
    assert all(isinstance(s, float | int) and s >= 0 for s in recorded.values())
    assert list(recorded.values()) == sorted(recorded.values(), reverse=True)


def test_each_worker_first_takes_an_equal_share_of_the_recorded_seconds(tmp_path, monkeypatch):
    """Two workers: xdist hands each half the tests by count; the order puts half the
    recorded seconds in each half, long files whole and first, Ray's in the first."""
    recorded = {"tests/r.py": 30.0, "tests/big.py": 40.0, "tests/mid.py": 25.0,
                "tests/m2.py": 20.0, "tests/short.py": 1.0}
    items = _items(*[f"tests/short.py::t{i}" for i in range(12)], "tests/big.py::t1",
                   "tests/big.py::t2", "tests/mid.py::t1", "tests/m2.py::t1", "tests/r.py::t1",
                   ray=("tests/r.py",))
    order = _ordered(tmp_path, monkeypatch, recorded, items, workers=2)
    assert sorted(order) == sorted(i.nodeid for i in items)  # every test, once
    first, second = order[:len(order) // 2], order[len(order) // 2:]
    files = [{n.split("::")[0] for n in half} for half in (first, second)]
    # Ray (30) + mid (25) against big (40) + m2 (20): each long file in one half.
    assert files[0] - {"tests/short.py"} == {"tests/r.py", "tests/mid.py"}
    assert files[1] - {"tests/short.py"} == {"tests/big.py", "tests/m2.py"}
    assert first[0] == "tests/r.py::t1" and second[:2] == ["tests/big.py::t1", "tests/big.py::t2"]
    assert all(n.startswith("tests/short.py") for n in first[2:] + second[3:])
