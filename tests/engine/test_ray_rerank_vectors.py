"""Rerank over vector candidates (RETSim, bi-encoder) on Ray: the search tasks' candidate
pairs verified by the keyed stage's gather and link tasks give the local engine's clusters
(neardup/engine/ray_engine.py, RayRun._verify_candidates)."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neardup.data import demo_corpus_path
from neardup.engine.support import placement
from neardup.io import ReaderConfig, read_corpus
from neardup.methods.rerank import RerankMethod
from neardup.pipeline import ClusterConfig, run

ray = pytest.importorskip("ray", reason="the Ray engine needs pip install 'neardup[ray]'")

from neardup.engine.ray_engine import RayConfig, RayInputs, worker_runtime_env  # noqa: E402
from tests.engine.fakes import FakeBiEncoder, FakeRETSim, FakeRETSimPartial  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.xdist_group("ray")]

#: Documents of the demo corpus used (noisy near-duplicates, dated).
N_DOCS = 400


@pytest.fixture(scope="module")
def cluster():
    """Two Ray nodes on this machine, one CPU each."""
    from ray.cluster_utils import Cluster

    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": 200 << 20})
    nodes.add_node(num_cpus=1, object_store_memory=200 << 20)
    ray.init(address=nodes.address, runtime_env=worker_runtime_env(), include_dashboard=False,
             logging_level="WARNING", log_to_driver=False)
    nodes.wait_for_nodes()
    try:
        yield nodes.address
    finally:
        ray.shutdown()
        nodes.shutdown()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The demo corpus's first documents in one Parquet file of four row groups (four
    Ray shards)."""
    with gzip.open(demo_corpus_path(), "rt") as handle:
        records = [json.loads(line) for _, line in zip(range(N_DOCS), handle)]
    table = pa.table({"id": [str(r["id"]) for r in records], "text": [r["text"] for r in records],
                      "date": [r["date"] for r in records]})
    path = tmp_path_factory.mktemp("rerank") / "corpus.parquet"
    pq.write_table(table, path, row_group_size=N_DOCS // 4)
    return str(path)


def _rerank(verifier, candidate) -> RerankMethod:
    """The tiny verifier over a stand-in embedding method's candidates (no model)."""
    method = RerankMethod(scorer="verifier", model=str(verifier), threshold=0.5, candidates="retsim",
                          candidate_params={"threshold": 0.7, "k": 10})
    method._candidate = candidate  # the stand-in, as rerank builds its candidate method
    return method


@pytest.mark.parametrize("candidate, window", [
    (FakeRETSim(threshold=0.7, k=10, threads=1), None),
    (FakeRETSim(threshold=0.7, k=10, threads=1), 24),
    (FakeRETSimPartial(threshold=0.7, k=10, threads=1), None),  # several rows a document
    (FakeBiEncoder(threshold=0.7, threads=1), None),  # range search (no k)
], ids=["retsim", "retsim-window", "retsim-partial", "biencoder"])
def test_same_clusters_as_local_engine(cluster, corpus, tiny_verifier, candidate, window):
    method = _rerank(tiny_verifier, candidate)
    assert placement(method, "components", "ray").stage == "vector"
    reader = ReaderConfig(id_field="id", date_field="date")
    config = ClusterConfig(time_window_hours=window)
    local = run(read_corpus([corpus], reader), method, cluster=config)
    memory = run(read_corpus([corpus], reader), method, cluster=config, engine="memory")
    # The smallest memory limit: the candidate pairs verified in several partitions.
    distributed = run(RayInputs((corpus,), reader), method, cluster=config, engine="ray",
                      ray=RayConfig(shard_rows=N_DOCS // 4, memory_limit=1 << 20))
    assert local.params["engine"] == "local" and distributed.params["engine"] == "ray"
    assert distributed.ids.tolist() == local.ids.tolist()
    np.testing.assert_array_equal(distributed.clusters, local.clusters)
    np.testing.assert_array_equal(distributed.representative, local.representative)
    np.testing.assert_array_equal(distributed.clusters, memory.clusters)
    assert local.n_clusters < local.n_docs - 10  # the corpus has duplicates to find
    # The scorer decided: candidates alone join more.
    assert run(read_corpus([corpus], reader), candidate, cluster=config, engine="memory").n_clusters \
        < local.n_clusters
    # A spanning forest of accepted pairs, each with the scorer's in-memory score.
    assert len(distributed.pairs) == local.n_docs - local.n_clusters
    scores = dict(zip(zip(memory.pairs.left.tolist(), memory.pairs.right.tolist()), memory.pairs.score))
    for left, right, score in zip(distributed.pairs.left.tolist(), distributed.pairs.right.tolist(),
                                  distributed.pairs.score):
        assert scores[(left, right)] == pytest.approx(score, abs=1e-5)
    stats = distributed.params["corpus_stage"]
    assert stats["shards"] == 4 and stats["verify_partitions"] > 1
    assert 0 < stats["verified_pairs"] <= stats["scored_pairs"]
    if window:
        assert len(distributed.outside_window) > 0


def test_no_candidate_pairs(cluster, tiny_verifier):
    # Nothing above the vector threshold: no verify partition, every document alone.
    from neardup.io.batch import DocumentBatch

    texts = ["The harbour closed early today.", "Wheat prices rose in Chicago.", "A new mayor was chosen."]
    batches = [DocumentBatch(ids=[str(i)], texts=[t], dates=None, source="mem", rows=np.array([i]))
               for i, t in enumerate(texts)]
    result = run(iter(batches), _rerank(tiny_verifier, FakeRETSim(threshold=0.99, threads=1)), engine="ray")
    assert result.clusters.tolist() == [0, 1, 2]
    assert result.params["corpus_stage"]["verify_partitions"] == 0
