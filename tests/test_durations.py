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


def _ordered(tmp_path, monkeypatch, recorded: dict[str, float], items: list) -> list[str]:
    """The nodeids of ``items`` in the order the suite runs them under ``recorded``."""
    path = tmp_path / "durations.json"
    path.write_text(json.dumps(recorded))
    monkeypatch.setattr(durations, "DURATIONS_FILE", path)
    durations.pytest_collection_modifyitems(items)
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
    durations.pytest_collection_modifyitems(items)
    assert [i.nodeid for i in items] == ["tests/a.py::t1", "tests/b.py::t1"]


def test_the_recording_maps_test_files_to_seconds_longest_first():
    # Entries of files renamed since are harmless (never matched): not checked here.
    recorded = json.loads(durations.DURATIONS_FILE.read_text(encoding="utf-8"))
    assert recorded, "tests/durations.json is empty: make test-durations"
    assert all(re.fullmatch(r"tests/[\w/]+\.py", name) for name in recorded)
    assert all(isinstance(s, float | int) and s >= 0 for s in recorded.values())
    assert list(recorded.values()) == sorted(recorded.values(), reverse=True)
