"""Index.bulk_add (neardup index add --bulk): same clusters and store as adds, all or nothing."""

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
from neardup.index import DuplicateIdError, Index, IndexBusyError
from tests.in_process import invoke
from tests.index.corpora import partition_equal, synthetic_texts

ROOT = Path(__file__).resolve().parents[2]


def _labels(index: Index, n: int) -> np.ndarray:
    table = index.clusters()
    labels = np.full(n, -1, np.int64)
    labels[np.array(table.column("id").to_pylist(), int)] = table.column("cluster").to_numpy()
    return labels


def _batches(texts, size, start=0):
    for a in range(0, len(texts), size):
        yield texts[a:a + size], [str(start + i) for i in range(a, min(a + size, len(texts)))]


def _store(index: Index):
    con = index._store.reader()
    return (con.execute("SELECT key, payload, doc FROM postings ORDER BY 1, 2, 3").fetchall(),
            con.execute("SELECT key, first, last, count FROM big ORDER BY 1").fetchall(),
            con.execute("SELECT doc, id, cluster, n_features, digest, arrays FROM docs "
                        "ORDER BY doc").fetchall())


@pytest.mark.parametrize("method, params", [
    ("exact", {}),
    pytest.param("minhash", {}, marks=pytest.mark.slow),
    pytest.param("simhash", {}, marks=pytest.mark.slow),
    pytest.param("minhash", {"max_bucket_pairs": 2}, marks=pytest.mark.slow),
])
def test_bulk_gives_dedup_clusters_and_the_store_of_an_add(demo_texts, tmp_path, method, params):
    texts = demo_texts
    expected = neardup.dedup(texts, method, pair_types=False, profile="clean", **params).clusters
    with Index.create(tmp_path / "bulk", method, **params) as index:
        result = index.bulk_add(_batches(texts, 700), partitions=8, table=True)
        assert result.documents == len(texts) == len(index)
        assert partition_equal(_labels(index, len(texts)), expected)
        bulk_store = _store(index)
        index.stats(check=True)
    with Index.create(tmp_path / "add", method, **params) as index:
        index.add(texts, ids=[str(i) for i in range(len(texts))])
        # One add of everything and one bulk add store the same rows (big groups too).
        assert _store(index) == bulk_store
    table = result.table
    assert table.column("id").to_pylist() == [str(i) for i in range(len(texts))]
    status = table.column("status").to_pylist()
    assert status.count("joined") == result.joined == len(texts) - result.clusters
    dup = table.column("duplicate_of").to_pylist()
    assert all(d is None or int(d) < i for i, d in enumerate(dup))
    assert all(s == "joined" for s, d in zip(status, dup) if d is not None)


@pytest.mark.slow
@pytest.mark.parametrize("link_rows", [None, 2000])
def test_default_partitions_link_in_runs_and_store_what_one_at_a_time_stores(
        tmp_path, monkeypatch, link_rows):
    """The default bulk add links consecutive key partitions together (all at once for
    a small corpus; ``link_rows`` forces several runs) and stores exactly what linking
    its 256 partitions one by one stores."""
    import neardup.index._bulk as bulk

    if link_rows is not None:
        monkeypatch.setattr(bulk, "LINK_ROWS", link_rows)
    texts = synthetic_texts(800, seed=5)
    stores, steps = [], []
    real_steps = bulk.BulkBuilder._link_steps

    def spy(self, done, width):
        steps.append(real_steps(self, done, width))
        return steps[-1]

    monkeypatch.setattr(bulk.BulkBuilder, "_link_steps", spy)
    for name, partitions in [("runs", None), ("each", 256)]:
        with Index.create(tmp_path / name, "minhash") as index:
            index.bulk_add(_batches(texts, 500), partitions=partitions)
            stores.append(_store(index))
            index.stats(check=True)
    runs, each = steps
    assert [p for step in runs for p in step] == list(range(256))
    assert each == [[p] for p in range(256)]
    assert len(runs) == 1 if link_rows is None else 1 < len(runs) < 256
    assert stores[0] == stores[1]


@pytest.mark.slow
def test_adds_after_a_bulk_add_give_dedup_clusters(demo_texts, tmp_path):
    texts = demo_texts
    expected = neardup.dedup(texts, "minhash", pair_types=False, profile="clean").clusters
    half = len(texts) // 2
    with Index.create(tmp_path / "idx", "minhash", store_text=True) as index:
        index.bulk_add(_batches(texts[:half], 1000))
        bounds = [half, half + (len(texts) - half) // 2, len(texts)]
        for a, b in zip(bounds[:-1], bounds[1:]):
            index.add(texts[a:b], ids=[str(i) for i in range(a, b)])
        assert partition_equal(_labels(index, len(texts)), expected)
        record = index.query([texts[5]]).records()[0]
        assert record["matches"][0]["id"] == "5" and record["matches"][0]["type"] == "exact"


def test_bulk_needs_an_empty_index_used_by_nobody_else(tmp_path):
    texts = synthetic_texts(300, seed=3)
    with Index.create(tmp_path / "idx", "minhash") as index:
        with Index(tmp_path / "idx") as other:
            other.stats()  # holds the file open
            with pytest.raises(IndexBusyError, match="open in another process"):
                index.bulk_add(_batches(texts, 100))
        assert len(index) == 0 and not list((tmp_path / "idx").glob(".bulk-*"))
        index.bulk_add(_batches(texts, 100))
        assert len(index) == 300
        with pytest.raises(IndexBusyError, match="already holds documents"):
            index.bulk_add(_batches(texts, 100))


def test_bulk_with_repeated_ids_adds_nothing(tmp_path):
    with Index.create(tmp_path / "idx", "exact") as index:
        with pytest.raises(DuplicateIdError, match="repeated"):
            index.bulk_add([(["a text", "b text"], ["x", "y"]), (["c text"], ["x"])])
        assert len(index) == 0
        index.add(["a text"], ids=["x"])
        assert len(index) == 1


def _cli(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen([sys.executable, "-m", "neardup", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.faults
def test_sigkill_during_bulk_add_leaves_the_index_empty(tmp_path):
    n = 8_000
    texts = synthetic_texts(n, seed=7)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n"
                              for i, t in enumerate(texts)))
    Index.create(tmp_path / "idx", "minhash").close()
    proc = _cli("index", "add", str(tmp_path / "idx"), str(corpus), "--id-field", "id",
                "--batch-size", "500", "--bulk")
    deadline = time.monotonic() + 300
    seen = False
    while time.monotonic() < deadline and not seen:
        line = proc.stderr.readline()
        if not line:
            break
        seen = line.startswith("bulk: sketched")  # the sketch stage is done: link next
    assert seen, proc.stderr.read()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert list((tmp_path / "idx").glob(".bulk-*"))  # killed mid-way: scratch left
    with Index(tmp_path / "idx") as index:
        assert index.stats(check=True)["documents"] == 0

    out = tmp_path / "clusters.csv"
    again = invoke("index", "add", str(tmp_path / "idx"), str(corpus), "--id-field", "id",
                   "--bulk", "--clusters-out", str(out), "-q")
    assert again.exit_code == 0, again.output  # in this process: tests/in_process.py
    assert not list((tmp_path / "idx").glob(".bulk-*"))  # the stale scratch was removed
    with Index(tmp_path / "idx") as index:
        labels = _labels(index, n)
    assert partition_equal(labels, neardup.dedup(texts, "minhash", pair_types=False, profile="clean").clusters)
    assert len(out.read_text().splitlines()) == n + 1


def test_cli_bulk_add_says_its_stages_not_each_batch(tmp_path):
    """A bulk add's messages are a few stage lines whatever the corpus size (its progress
    is a bar, drawn only on a terminal); -q leaves nothing."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"text": t}) + "\n"
                              for t in synthetic_texts(1200, seed=3)))
    Index.create(tmp_path / "idx", "minhash").close()
    result = invoke("index", "add", tmp_path / "idx", corpus, "--batch-size", "100", "--bulk")
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines[:4] == ["bulk: sketched 1200 documents", "bulk: linking key partitions",
                         "bulk: documents table", "bulk: building the id and cluster indexes"]
    assert len(lines) == 5 and lines[4].startswith("committed 1200 documents")

    Index.create(tmp_path / "quiet", "minhash").close()
    quiet = invoke("index", "add", tmp_path / "quiet", corpus, "--bulk", "-q")
    assert quiet.exit_code == 0 and quiet.stderr == ""
