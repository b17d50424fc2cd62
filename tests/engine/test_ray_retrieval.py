"""Mutual retrieval (sanderson) on Ray: the local stage's retrieval steps as tasks give the
local engine's clusters, from files and through the CLI, with the inverted index cut into
several ranges and the input into several shards. Two Ray nodes; a few hundred documents."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.data import demo_corpus_path
from neardup.engine.support import placement
from neardup.io import ReaderConfig, read_corpus
from neardup.methods import make_method
from neardup.pipeline import ClusterConfig, run
from tests.engine_contract import canonical

ray = pytest.importorskip("ray", reason="the Ray engine needs pip install 'neardup[ray]'")

from neardup.engine.ray import RayConfig, RayInputs  # noqa: E402

pytestmark = pytest.mark.ray

#: Documents of the demo corpus (noisy near-duplicates, dated).
_DOCS = 1200


@pytest.fixture
def address(ray_cluster):
    """The session's Ray cluster (tests/conftest.py): its address."""
    return ray_cluster["address"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The demo corpus's first documents with their dates, in one Parquet file of four
    row groups (four Ray shards)."""
    with gzip.open(demo_corpus_path(), "rt") as handle:
        records = [json.loads(line) for _, line in zip(range(_DOCS), handle)]
    table = pa.table({"id": [str(r["id"]) for r in records], "text": [r["text"] for r in records],
                      "date": [r.get("date") for r in records]})
    path = tmp_path_factory.mktemp("retrieval") / "corpus.parquet"
    pq.write_table(table, path, row_group_size=_DOCS // 4)
    return path


def test_sanderson_is_placed_on_ray_for_every_clustering():
    # Mutual retrieval writes every mutual pair: the pair graph Leiden and HAC read.
    method = make_method("sanderson")
    for algorithm in ("components", "leiden", "hac"):
        assert placement(method, algorithm, "ray").stage == "keyed"


@pytest.mark.parametrize("window", [None, 24.0], ids=["no-window", "window"])
def test_sanderson_on_ray_gives_the_local_clusters(address, corpus, window):
    dated = window is not None
    reader = ReaderConfig(id_field="id", date_field="date" if dated else None)
    method = make_method("sanderson")
    cluster = ClusterConfig(time_window_hours=window)
    local = run(read_corpus([str(corpus)], reader), method, cluster=cluster)
    # A 1 MiB memory limit cuts the inverted index into several ranges of term hashes.
    distributed = run(RayInputs((str(corpus),), reader), method, engine="ray", cluster=cluster,
                      ray=RayConfig(address=address, shard_rows=_DOCS // 4, memory_limit=1 << 20))
    assert local.params["engine"] == "local" and distributed.params["engine"] == "ray"
    assert distributed.ids.tolist() == local.ids.tolist()
    np.testing.assert_array_equal(distributed.clusters, local.clusters)
    np.testing.assert_array_equal(distributed.representative, local.representative)
    assert local.n_clusters < local.n_docs - 10  # the corpus has duplicates sanderson finds
    # Each edge Ray keeps (a spanning forest) is an accepted in-memory pair with its score.
    memory = run(read_corpus([str(corpus)], reader), method, cluster=cluster, engine="memory")
    scores = dict(zip(zip(memory.pairs.left.tolist(), memory.pairs.right.tolist()), memory.pairs.score.tolist()))
    for pair, score in zip(zip(distributed.pairs.left.tolist(), distributed.pairs.right.tolist()),
                           distributed.pairs.score.tolist()):
        assert scores[pair] == pytest.approx(score, abs=1e-6)
    retrieval = distributed.params["corpus_stage"]["retrieval"]
    assert retrieval["mutual"] > 0 and retrieval["index_ranges"] > 1
    if dated:  # the window keeps some mutual pairs apart, on both engines alike
        assert len(distributed.outside_window) == len(local.outside_window) > 0


def test_sanderson_through_the_ray_cli_writes_the_local_clusters(address, corpus, tmp_path):
    base = ["dedup", str(corpus), "--method", "sanderson", "--id-field", "id", "--quiet"]
    local = CliRunner().invoke(main, [*base, "--clusters-out", str(tmp_path / "local.parquet")])
    assert local.exit_code == 0, local.output
    on_ray = CliRunner().invoke(main, [*base, "--engine", "ray", "--ray-address", address,
                                       "--clusters-out", str(tmp_path / "clusters")])
    assert on_ray.exit_code == 0, on_ray.output
    expected = pq.read_table(tmp_path / "local.parquet")
    written = pq.read_table(tmp_path / "clusters")  # one file per shard, in input order
    assert written.column("id").to_pylist() == expected.column("id").to_pylist()
    labels = canonical(expected.column("cluster").to_numpy())
    np.testing.assert_array_equal(canonical(written.column("cluster").to_numpy()), labels)
    assert len(set(labels.tolist())) < len(labels)  # the corpus has duplicates sanderson finds
