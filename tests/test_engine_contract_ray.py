"""The cross-engine contract on a two-node Ray cluster: every method, with every
clustering, gives the in-memory clusters, or is refused before any work saying why (see
tests/test_engine_contract.py for memory, local and the index)."""

from __future__ import annotations

import pytest

import neardup
from tests.engine_contract import cases, check_executor, corpus_for, skip_unavailable

pytestmark = [pytest.mark.ray, pytest.mark.xdist_group("ray")]

ray = pytest.importorskip("ray", reason="the Ray executor needs pip install 'neardup[ray]'")


@pytest.fixture(scope="module")
def ray_address():
    """Two Ray nodes on this machine, one CPU each."""
    from ray.cluster_utils import Cluster

    from neardup.engine.ray_engine import worker_runtime_env

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
def corpora():
    return {}


@pytest.mark.parametrize("name, algorithm", list(cases()))
def test_ray_gives_the_in_memory_clusters(corpora, ray_address, name, algorithm):
    skip_unavailable(name)
    corpus = corpus_for(name, corpora)
    memory = neardup.dedup(corpus, name, id_field="id", engine="memory", cluster=algorithm,
                           pair_types=False)
    check_executor(corpus, name, algorithm, "ray", memory, ray_address=ray_address, batch_size=64)
