"""The test lanes stay whole: every file of a lane carries its marker, every test module
that uses Ray is in the ray lane and shares its cluster, and `make test-fast` leaves out
exactly the lanes pyproject.toml registers. Reads source only; imports no test module."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.lanes import deselected_whole, module_marks

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"

# Files whose every test belongs to the lane (globs under tests/). Files where only some
# tests do (a SIGKILL test among others) mark those tests themselves.
LANE_FILES = {
    "ray": ["engine/test_ray_engine.py"],
    "neural": ["embed/test_biencoder.py", "embed/test_onnx_encoder.py", "embed/test_retsim.py",
               "index/test_vectors.py"],
    "train": ["train/test_*.py", "cli/test_train_cli.py"],
    "browser": ["report/test_browser.py"],
    "faults": ["cli/test_dedup_faults.py", "index/test_crash.py", "index/test_faults.py",
               "index/test_service_faults.py", "index/test_bulk_resume.py"],
}


def _registered() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return {line.split(":")[0].strip() for line in config["tool"]["pytest"]["ini_options"]["markers"]}


def _test_files() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def test_every_lane_is_registered():
    assert set(LANE_FILES) | {"slow"} == _registered()


def test_every_file_of_a_lane_carries_its_marker():
    missing = []
    for lane, globs in LANE_FILES.items():
        files = sorted({p for g in globs for p in TESTS.glob(g)})
        assert files, f"lane {lane!r}: no file matches {globs}"
        missing += [f"{p.relative_to(ROOT)} lacks pytest.mark.{lane}" for p in files
                    if lane not in module_marks(p)]
    assert not missing, "\n".join(missing)


def test_modules_that_use_ray_are_in_the_ray_lane_and_share_its_cluster():
    """A Ray module takes the session's cluster (tests/conftest.py's ``ray_cluster``, one
    per xdist worker) instead of starting its own: two clusters in one process cannot
    coexist, and one per module would be started again on every worker."""
    uses_ray = re.compile(r"importorskip\(\s*[\"']ray[\"']|^\s*import ray\b", re.M)
    starts_ray = re.compile(r"\bray\.init\(|two_ray_nodes\(|\bCluster\(")
    for path in _test_files():
        source = path.read_text(encoding="utf-8")
        if uses_ray.search(source):
            where = path.relative_to(ROOT)
            assert "ray" in module_marks(path), f"{where} uses Ray: pytestmark needs ray"
            assert not starts_ray.search(source), f"{where}: take the ray_cluster fixture, start no cluster"
            assert "ray_cluster" in source, f"{where}: take the ray_cluster fixture"


def test_make_test_fast_leaves_out_every_lane():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    lanes = re.search(r"^LANES := (.+)$", makefile, re.M)
    assert lanes, "Makefile: no LANES := line"
    assert set(lanes.group(1).split(" or ")) == _registered()
    assert re.search(r"^test-fast:.*\n\t.*-m \"not \(\$\(LANES\)\)\"", makefile, re.M)


@pytest.mark.parametrize(("expression", "marks", "expected"), [
    ("not (slow or ray or neural)", {"neural"}, True),
    ("not (slow or ray or neural)", {"faults"}, False),  # its tests may still be selected
    ("not (slow or ray or neural)", set(), False),
    ("ray", {"neural"}, False),  # a test in it may carry ray itself
    ("ray", set(), False),
    ("not ray and not neural", {"ray", "slow"}, True),
    ("neural and not train", {"train"}, True),
    ("(neural)", {"slow"}, False),
    ("slow or not slow", {"slow"}, False),
])
def test_a_file_is_left_out_only_when_every_test_in_it_would_be_deselected(expression, marks, expected):
    assert deselected_whole(expression, marks) is expected


@pytest.mark.parametrize("expression", ["device(serial='1')", "not ray-x", "not True", "not (ray"])
def test_expressions_it_cannot_read_leave_every_file_collected(expression):
    assert deselected_whole(expression, {"ray"}) is None


def test_files_left_out_are_not_imported_and_the_same_tests_are_selected(tmp_path):
    """A small tree of marked and unmarked files, collected with ``-m 'not (neural or
    train)'`` with tests/lanes.py as a plugin and without it: the same test ids, and the
    file the expression deselects whole is imported only without the plugin."""
    (tmp_path / "test_plain.py").write_text(
        "import pytest\n\ndef test_a():\n    pass\n\n@pytest.mark.neural\ndef test_b():\n    pass\n")
    (tmp_path / "test_neural.py").write_text(
        "import pathlib\nimport pytest\n\npathlib.Path(__file__).with_suffix('.imported').touch()\n"
        "pytestmark = pytest.mark.neural\n\ndef test_c():\n    pass\n")
    (tmp_path / "test_faults.py").write_text(
        "import pytest\n\npytestmark = [pytest.mark.faults]\n\ndef test_d():\n    pass\n\n"
        "@pytest.mark.train\ndef test_e():\n    pass\n")
    imported = tmp_path / "test_neural.imported"
    selected = {}
    for name, plugin in (("with", ["-p", "tests.lanes"]), ("without", [])):
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
             "-c", os.devnull, "--rootdir", str(tmp_path), "-m", "not (neural or train)", *plugin,
             str(tmp_path)],
            capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert run.returncode == 0, run.stdout + run.stderr
        selected[name] = sorted(line.rsplit("/", 1)[-1] for line in run.stdout.splitlines() if "::" in line)
        assert imported.exists() is (name == "without")
    assert selected["with"] == selected["without"] == ["test_faults.py::test_d", "test_plain.py::test_a"]
