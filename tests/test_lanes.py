"""The test lanes stay whole: every file of a lane carries its marker, every test module
that uses Ray is in the ray lane and shares its cluster, and `make test-fast` leaves out
exactly the lanes pyproject.toml registers. Reads source only; imports no test module."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

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


def _module_marks(path: Path) -> set[str]:
    """Marker names in the module-level ``pytestmark`` (``pytest.mark.NAME`` or
    ``pytest.mark.NAME(...)``, alone or in a list)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in node.targets):
            for sub in ast.walk(node.value):
                if (isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Attribute)
                        and sub.value.attr == "mark"):
                    names.add(sub.attr)
    return names


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
                    if lane not in _module_marks(p)]
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
            assert "ray" in _module_marks(path), f"{where} uses Ray: pytestmark needs ray"
            assert not starts_ray.search(source), f"{where}: take the ray_cluster fixture, start no cluster"
            assert "ray_cluster" in source, f"{where}: take the ray_cluster fixture"


def test_make_test_fast_leaves_out_every_lane():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    lanes = re.search(r"^LANES := (.+)$", makefile, re.M)
    assert lanes, "Makefile: no LANES := line"
    assert set(lanes.group(1).split(" or ")) == _registered()
    assert re.search(r"^test-fast:.*\n\t.*-m \"not \(\$\(LANES\)\)\"", makefile, re.M)
