"""Joining a Ray cluster started elsewhere (``--ray-address``): an address nobody answers
at is refused at once, and a cluster that uses token authentication (what ``ray start``
makes once a token exists) is joined with the token this machine holds. Each run is a
process of its own: a test process may already be connected to the session's cluster."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="the Ray engine needs pip install 'neardup[ray]'")

pytestmark = pytest.mark.ray

WORKTREE = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RAY_AUTH") and k != "RAY_ADDRESS"}
    path = os.pathsep.join(filter(None, [str(WORKTREE), env.get("PYTHONPATH")]))
    return env | {"HOME": str(home), "PYTHONPATH": path, "HF_HUB_OFFLINE": "1"}


def _corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    rows = [{"id": f"d{i}", "text": f"story {i % 7} about grain prices in chicago today"}
            for i in range(40)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _dedup(corpus: Path, address: str, out: Path, env: dict[str, str], timeout: float):
    return subprocess.run(
        [sys.executable, "-m", "neardup", "dedup", str(corpus), "--id-field", "id",
         "--method", "minhash", "--engine", "ray", "--ray-address", address,
         "--clusters-out", str(out), "-q"],
        env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(autouse=True)
def _keeps_the_lane_cluster(ray_cluster):
    """These tests join clusters of their own (in processes of their own); taking the
    session's cluster keeps it up for the Ray modules after them (tests/conftest.py)."""
    return ray_cluster


def test_an_address_nobody_answers_at_is_refused_at_once(tmp_path):
    address = f"127.0.0.1:{_free_port()}"
    start = time.monotonic()
    result = _dedup(_corpus(tmp_path), address, tmp_path / "clusters", _env(tmp_path), 120)
    assert result.returncode == 1, result.stderr
    assert f"Cannot reach a Ray cluster at {address}" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "clusters").exists()
    assert time.monotonic() - start < 60  # Ray alone retries for minutes


def test_a_cluster_with_token_authentication_is_joined_with_the_local_token(tmp_path):
    home = tmp_path / "home"
    (home / ".ray").mkdir(parents=True)
    (home / ".ray" / "auth_token").write_text(secrets.token_hex(32))
    port = _free_port()
    env = _env(home)
    temp = tempfile.mkdtemp(prefix="nd-ray-", dir="/tmp")  # Ray's socket paths are short
    head = subprocess.Popen(
        [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block",
         "--port", str(port), "--node-ip-address", "127.0.0.1", "--num-cpus", "1",
         "--include-dashboard", "false", "--disable-usage-stats",
         "--temp-dir", temp],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert head.poll() is None and time.monotonic() < deadline, head.stdout.read()
                time.sleep(0.5)
        result = _dedup(_corpus(tmp_path), f"127.0.0.1:{port}", tmp_path / "clusters", env, 300)
        assert result.returncode == 0, result.stderr
        assert (tmp_path / "clusters").is_dir()
    finally:
        # The cluster is this test's alone, and `ray start --block` takes over 30 s to end
        # on SIGTERM: its whole process group (the head's daemons too) is killed at once.
        try:
            os.killpg(head.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        head.wait()
        shutil.rmtree(temp, ignore_errors=True)
