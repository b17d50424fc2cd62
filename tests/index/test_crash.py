"""kill -9 during `neardup index add`: the index stays whole and keeps every reported batch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import neardup
from neardup.index import Index
from tests.in_process import invoke
from tests.index.corpora import partition_equal, synthetic_texts

pytestmark = pytest.mark.faults

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen([sys.executable, "-m", "neardup", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def test_sigkill_during_add_keeps_acknowledged_batches(tmp_path):
    n, batch = 6_000, 500
    texts = synthetic_texts(n, seed=5)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n"
                              for i, t in enumerate(texts)))
    Index.create(tmp_path / "idx", "minhash").close()
    proc = _cli("index", "add", str(tmp_path / "idx"), str(corpus), "--id-field", "id",
                "--batch-size", str(batch))
    acknowledged = 0
    deadline = time.monotonic() + 300
    while acknowledged < 3 * batch and time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        if line.startswith("committed"):
            acknowledged += batch
    assert acknowledged >= 3 * batch, proc.stderr.read()
    proc.send_signal(signal.SIGKILL)  # mid-way through a later batch, most likely
    proc.wait()

    with Index(tmp_path / "idx") as index:
        stats = index.stats(check=True)  # SQLite's integrity check passes
        assert stats["documents"] >= acknowledged
        assert stats["documents"] % batch == 0  # whole batches only
        assert stats["documents"] < n  # it really was killed mid-way
        ids = index.clusters().column("id").to_pylist()
    assert ids == [f"d{i}" for i in range(len(ids))]

    # Resuming with --skip-existing completes the index: the clusters of a one-shot dedup.
    again = invoke("index", "add", str(tmp_path / "idx"), str(corpus), "--id-field", "id",
                   "--batch-size", str(batch), "--skip-existing", "-q")
    assert again.exit_code == 0, again.output  # in this process: tests/in_process.py
    with Index(tmp_path / "idx") as index:
        table = index.clusters()
    assert table.num_rows == n
    labels = np.empty(n, np.int64)
    labels[[int(i[1:]) for i in table.column("id").to_pylist()]] = table.column("cluster").to_numpy()
    expected = neardup.dedup(texts, "minhash", pair_types=False).clusters
    assert partition_equal(labels, expected)
