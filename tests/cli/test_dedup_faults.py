"""Fault injection: `neardup dedup` killed (SIGKILL) at each stage, interrupted (SIGINT)
or terminated (SIGTERM), as separate processes.

SIGKILL cannot be caught, so a killed run may leave hidden temporary files
(``.NAME.neardup-PID-XXXX.tmp``) but never a half-written output set: before the commit
every target keeps its previous content, after it every target is new and complete. The
next run removes the leftovers and succeeds. The kills use the fault-injection plugin
(``NEARDUP_TEST_KILL_AT=<stage>``, ``tests/fault_plugin``), which kills the run at that
:func:`neardup.faults.checkpoint`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.fault_plugin import KILL_ENV, PAUSE_ENV, with_plugin
from tests.in_process import invoke

pytestmark = pytest.mark.faults

WORKTREE = Path(__file__).resolve().parents[2]
STAGES_BEFORE_COMMIT = ("checked", "read", "clustered", "written")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != KILL_ENV}
    env["PYTHONPATH"] = with_plugin(os.pathsep.join(filter(None, [str(WORKTREE), env.get("PYTHONPATH")])))
    env["HF_HUB_OFFLINE"] = "1"
    return env | extra


def _corpus(path: Path, n: int) -> Path:
    lines = []
    for i in range(n):
        base = f"story {i % (n // 3 + 1)} about grain prices in chicago and kansas city today"
        lines.append(json.dumps({"id": f"doc{i}", "text": base + (" (AP)" if i % 3 else "")}))
    path.write_text("\n".join(lines) + "\n")
    return path


def _outputs(directory: Path) -> dict[str, Path]:
    return {
        "--clusters-out": directory / "clusters.parquet",
        "--pairs-out": directory / "pairs.jsonl",
        "--out": directory / "deduped.jsonl.gz",
        "--report": directory / "report.json",
    }


def _command(corpus: Path, outputs: dict[str, Path], *extra: str) -> list[str]:
    # The stages a kill interrupts are every method's: MinHash (the default before
    # --method auto) unless a test names another, so each drill stays as cheap as it was.
    method = [] if "--method" in extra else ["--method", "minhash"]
    args = [sys.executable, "-m", "neardup", "dedup", str(corpus), "--id-field", "id",
            "--batch-size", "100", "-q", *method, *extra]
    for flag, path in outputs.items():
        args += [flag, str(path)]
    return args


def _complete(outputs: dict[str, Path], n_docs: int) -> bool:
    """Every output is there and readable in full, and they agree with each other."""
    import gzip

    clusters = pq.read_table(outputs["--clusters-out"])
    report = json.loads(outputs["--report"].read_text())
    kept = gzip.decompress(outputs["--out"].read_bytes()).decode().splitlines()
    pairs = outputs["--pairs-out"].read_text().splitlines()
    return (
        clusters.num_rows == n_docs
        and report["summary"]["documents"] == n_docs
        and len(kept) == report["summary"]["clusters"] == sum(clusters["representative"].to_pylist())
        and len(pairs) == report["summary"]["pairs"]
        and all(json.loads(line) for line in kept + pairs)
    )


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return _corpus(tmp_path_factory.mktemp("faults") / "corpus.jsonl", 600)


def _contents(outputs: dict[str, Path]) -> dict[str, object]:
    """Each output's bytes; the report without its timings, which vary between runs."""
    out: dict[str, object] = {flag: path.read_bytes() for flag, path in outputs.items()}
    report = json.loads(out["--report"])
    report.pop("timings_seconds")
    out["--report"] = report
    return out


def _run(corpus: Path, outputs: dict[str, Path], **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(_command(corpus, outputs), env=_env(**env), capture_output=True,
                          text=True, timeout=300)


def _rerun(corpus: Path, outputs: dict[str, Path], stage: str) -> tuple[int, str]:
    """The run after a kill, unkilled: a real process after the kill at "written" (the one
    that leaves the most temporaries), in this process (CliRunner) after the others, which
    saves a process's start-up (seconds) and removes the same leftovers."""
    if stage == "written":
        done = _run(corpus, outputs)
        return done.returncode, done.stderr
    result = invoke(*_command(corpus, outputs)[3:])  # without python -m neardup
    return result.exit_code, result.output


@pytest.mark.parametrize("stage", [*STAGES_BEFORE_COMMIT, "committed"])
def test_sigkill_at_each_stage_leaves_no_half_written_set(tmp_path, corpus, stage):
    outputs = _outputs(tmp_path / "out")
    # 1. No previous outputs: killed before the commit, none exists; after it, all do.
    killed = _run(corpus, outputs, NEARDUP_TEST_KILL_AT=stage)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    if stage == "committed":
        assert _complete(outputs, 600)
    else:
        assert not any(p.exists() for p in outputs.values())
    # 2. The rerun succeeds, writes every output and removes what the killed run left.
    code, said = _rerun(corpus, outputs, stage)
    assert code == 0, said
    assert _complete(outputs, 600)
    assert [p.name for p in (tmp_path / "out").iterdir() if ".neardup-" in p.name] == []
    # 3. Killed again over those outputs: all of them stay as they were, or all are new.
    before = _contents(outputs)
    for path in outputs.values():  # a changed mtime would tell a rewrite from the original
        os.utime(path, (0, 0))
    killed = _run(corpus, outputs, NEARDUP_TEST_KILL_AT=stage)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert _contents(outputs) == before  # same input and seed: same outputs either way
    rewritten = [path.stat().st_mtime != 0 for path in outputs.values()]
    assert rewritten == [stage == "committed"] * len(outputs)


@pytest.mark.parametrize(("signum", "code", "word"), [
    (signal.SIGINT, 130, "interrupted"),
    (signal.SIGTERM, 143, "terminated"),
])
def test_signal_cleans_up_and_exits_without_traceback(tmp_path, signum, code, word):
    big = _corpus(tmp_path / "big.jsonl", 60_000)
    outputs = _outputs(tmp_path / "out")
    (tmp_path / "out").mkdir()
    for path in outputs.values():
        path.write_bytes(b"previous run")
    # A test run started in the background by a non-interactive shell ignores SIGINT, and
    # children inherit that (Python then installs no KeyboardInterrupt handler): give the
    # run the default disposition, as a terminal would.
    # The run pauses once its outputs are checked and their temporary files exist (the
    # "checked" checkpoint): a run this small could otherwise finish between the test
    # seeing those files and its signal, and exit 0.
    paused = tmp_path / "paused"
    process = subprocess.Popen(_command(big, outputs, "--method", "ngram"),
                               env=_env(**{PAUSE_ENV: f"checked:{paused}"}),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        while not paused.exists():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert any(".neardup-" in p.name for p in (tmp_path / "out").iterdir())
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr and word in stderr
    assert all(p.read_bytes() == b"previous run" for p in outputs.values())
    assert [p.name for p in (tmp_path / "out").iterdir() if ".neardup-" in p.name] == []
