"""``--resume`` for ``neardup spans`` and ``neardup substrings``: a run killed (SIGKILL)
while counting or while rewriting, resumed from its ``--work-dir``, writes the bytes an
uninterrupted run writes; a completed counting pass is not redone."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from neardup.cli import main
from tests.fault_plugin import KILL_ENV, plugin_env
from tests.in_process import invoke

pytestmark = pytest.mark.faults

ROOT = Path(__file__).resolve().parents[2]
BOILERPLATE = [f"Boilerplate line {i}: all rights reserved by the wire service." for i in range(6)]


def _corpus(path: Path, seed: int, docs: int = 40) -> Path:
    rng = random.Random(seed)
    words = "wheat corn copper gold rate bank rose fell said traders market week".split()
    rows = []
    for i in range(docs):
        lines = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(rng.randint(1, 3))]
        lines += rng.sample(BOILERPLATE, rng.randint(0, 3))
        rng.shuffle(lines)
        rows.append({"id": f"d{seed}-{i}", "text": "\n".join(lines)})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


COMMANDS = {
    "spans": lambda d: ["spans", d / "in.jsonl", "--unit", "line", "--min-length", "10"],
    "substrings": lambda d: ["substrings", d / "in.jsonl", "--min-tokens", "5",
                             "--against", d / "eval.jsonl"],
}


def _args(command: str, directory: Path, out: Path, work: Path | None) -> list[str]:
    args = [*COMMANDS[command](directory), "--batch-size", "8", "--out", out / "out.jsonl",
            "--removed-out", out / "removed.parquet", "--report", out / "report.json", "-q"]
    if work is not None:
        args += ["--work-dir", work]
    return [str(a) for a in args]


def _run(args: list[str], kill_at: str | None = None) -> subprocess.CompletedProcess:
    # This checkout first: the plugin imports neardup before the working directory is on
    # the path.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    if kill_at:
        env = plugin_env({**env, KILL_ENV: kill_at})
    return subprocess.run([sys.executable, "-m", "neardup", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def _outputs(out: Path) -> dict[str, object]:
    report = json.loads((out / "report.json").read_text())
    report.pop("timings_seconds")
    return {"out": (out / "out.jsonl").read_bytes(),
            "removed": (out / "removed.parquet").read_bytes(), "report": report}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    directory = tmp_path_factory.mktemp("corpus")
    _corpus(directory / "in.jsonl", 0)
    _corpus(directory / "eval.jsonl", 1, docs=10)
    return directory


@pytest.fixture(scope="module")
def uninterrupted(data, tmp_path_factory):
    found = {}
    for command in COMMANDS:
        out = tmp_path_factory.mktemp(f"plain-{command}")
        result = CliRunner().invoke(main, _args(command, data, out, None))
        assert result.exit_code == 0, result.output
        found[command] = _outputs(out)
        assert found[command]["report"]["summary"]["bytes_removed"] > 0
    return found


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("stage", ["counting", "counted", "rewriting"])
def test_killed_run_resumes_to_the_same_bytes(data, uninterrupted, tmp_path, command, stage):
    out, work = tmp_path / "out", tmp_path / "work"
    out.mkdir()
    args = _args(command, data, out, work)
    killed = _run(args, kill_at=f"{command}-{stage}")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    # No output written (SIGKILL leaves the output set's hidden temporaries, nothing else).
    assert [p.name for p in out.iterdir() if not p.name.startswith(".")] == []
    counted = (work / "count" / "_DONE.json").exists()
    assert counted == (stage != "counting")
    # A second run without --resume refuses the directory rather than overwrite it (a
    # real process once per command, at the last stage; in this process at the others).
    if stage == "rewriting":
        refused = _run(args)
        code, stderr = refused.returncode, refused.stderr
    else:
        refused = invoke(*args)  # tests/in_process.py
        code, stderr = refused.exit_code, refused.stderr
    assert code != 0 and "--resume" in stderr, stderr
    assert "Traceback" not in stderr
    # Resumed: a completed count is not redone (a kill at its checkpoint is not reached:
    # that needs a real process); a run killed while counting resumes in this process.
    if counted:
        resumed = _run([*args, "--resume"], kill_at=f"{command}-counting")
        assert resumed.returncode == 0, resumed.stderr
    else:
        resumed = invoke(*args, "--resume")
        assert resumed.exit_code == 0, resumed.output
    assert _outputs(out) == uninterrupted[command]


def test_resume_needs_a_work_dir(data, tmp_path):
    result = CliRunner().invoke(main, ["spans", str(data / "in.jsonl"), "--out",
                                       str(tmp_path / "o.jsonl"), "--resume"])
    assert result.exit_code == 2 and "give --work-dir" in result.output


def test_resume_with_other_options_recounts(data, tmp_path):
    """Another --min-length is another count: the stage is redone, not reused."""
    out, work = tmp_path / "out", tmp_path / "work"
    out.mkdir()
    args = _args("spans", data, out, work)
    assert _run(args, kill_at="spans-rewriting").returncode == -signal.SIGKILL
    other = [a if a != "10" else "30" for a in args]
    # Its count runs (and is killed at its checkpoint): the saved one was not reused.
    assert _run([*other, "--resume"], kill_at="spans-counting").returncode == -signal.SIGKILL
