"""Embedding methods in the index (RETSim, shipped model, offline): faiss segments."""

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
from neardup.index._embedded import manifest as listed_segments
from tests.in_process import invoke
from tests.index.corpora import partition_equal

pytest.importorskip("onnxruntime")
pytest.importorskip("faiss")

pytestmark = pytest.mark.neural

ROOT = Path(__file__).resolve().parents[2]
N = 150  # demo documents: enough duplicates to find, each embedded a few times a test


@pytest.fixture(scope="module")
def texts(demo_texts) -> list[str]:
    return demo_texts[:N]


@pytest.fixture(scope="module")
def expected(texts):
    return neardup.dedup(texts, "retsim", pair_types=False).clusters


def _labels(index: Index, n: int) -> np.ndarray:
    table = index.clusters()
    labels = np.full(n, -1, np.int64)
    labels[np.array(table.column("id").to_pylist(), int)] = table.column("cluster").to_numpy()
    return labels


@pytest.mark.parametrize("k", [1, 3])
def test_batches_give_dedup_clusters(tmp_path, texts, expected, k):
    assert len(set(expected.tolist())) < N  # the slice has duplicates to find
    with Index.create(tmp_path / "idx", "retsim") as index:
        bounds = np.linspace(0, N, k + 1).astype(int)
        for a, b in zip(bounds[:-1], bounds[1:]):
            index.add(texts[a:b], ids=[str(i) for i in range(a, b)])
        assert partition_equal(_labels(index, N), expected)
        stats = index.stats(check=True)
        assert stats["vector_segments"] == k and stats["postings"] == 0
        assert len(list((tmp_path / "idx" / "vectors").iterdir())) == k
        # A stored text finds itself first (cosine 1), read only.
        found = index.query([texts[7]]).records()[0]["matches"]
        assert found[0]["id"] == "7" and found[0]["score"] == pytest.approx(1.0)
        assert found[0]["type"] == "exact" and len(index) == N


def test_delete_split_and_compact(tmp_path, texts, expected):
    with Index.create(tmp_path / "idx", "retsim") as index:
        for a in range(0, N, 50):
            index.add(texts[a:a + 50], ids=[str(i) for i in range(a, a + 50)])
        gone = [str(i) for i in range(0, N, 3)]
        index.delete(gone)
        assert not any(m["id"] in gone for r in index.query(texts[:30]).records()
                       for m in r["matches"])
        rest = [i for i in range(N) if str(i) not in set(gone)]
        want = neardup.dedup([texts[i] for i in rest], "retsim", pair_types=False).clusters
        assert partition_equal(index.clusters().column("cluster").to_numpy(), want)
        index.compact()
        assert index.stats()["vector_segments"] == 1
        assert len(list((tmp_path / "idx" / "vectors").iterdir())) == 1
        assert index.query([texts[1]]).records()[0]["matches"][0]["id"] == "1"


def _cli(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen([sys.executable, "-m", "neardup", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.faults
def test_sigkill_during_add_keeps_manifest_and_segments_consistent(tmp_path, texts, expected):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n"
                              for i, t in enumerate(texts)))
    Index.create(tmp_path / "idx", "retsim").close()
    proc = _cli("index", "add", str(tmp_path / "idx"), str(corpus), "--id-field", "id",
                "--batch-size", "20")
    acknowledged, deadline = 0, time.monotonic() + 300
    while acknowledged < 60 and time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        acknowledged += 20 * line.startswith("committed")
    assert acknowledged >= 60, proc.stderr.read()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with Index(tmp_path / "idx") as index:
        stats = index.stats(check=True)
        n = stats["documents"]
        assert acknowledged <= n < N and n % 20 == 0
        # Every manifest segment exists and holds exactly the stored documents.
        manifest = listed_segments(index._store.reader())
        assert len(manifest) == n // 20
        found = index.query(texts[:n]).records()
        assert all(r["matches"] and r["matches"][0]["score"] == pytest.approx(1.0) for r in found)
    again = invoke("index", "add", str(tmp_path / "idx"), str(corpus), "--id-field", "id",
                   "--batch-size", "20", "--skip-existing", "-q")
    assert again.exit_code == 0, again.output  # in this process: tests/in_process.py
    with Index(tmp_path / "idx") as index:
        assert partition_equal(_labels(index, N), expected)
        manifest = listed_segments(index._store.reader())
    # The orphan a killed add may leave was removed by the next add.
    assert sorted(p.name for p in (tmp_path / "idx" / "vectors").iterdir()) == sorted(manifest)
