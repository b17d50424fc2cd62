"""A two-node Ray cluster on this machine for the Ray lane (tests/conftest.py's
``ray_cluster`` starts one per test process: Ray holds one cluster per process)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

#: Object store per node: enough for the tests' shards, small enough for CI.
OBJECT_STORE_BYTES = 200 << 20


@contextmanager
def two_ray_nodes(runtime_env: dict | None = None) -> Iterator[str]:
    """Start two nodes of one CPU each, connect this process to them with
    ``runtime_env`` (default: workers import this checkout), yield the address; shut
    both down after."""
    import ray
    from ray.cluster_utils import Cluster

    from neardup.engine.ray import worker_runtime_env

    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1,
                                                          "object_store_memory": OBJECT_STORE_BYTES})
    nodes.add_node(num_cpus=1, object_store_memory=OBJECT_STORE_BYTES)
    ray.init(address=nodes.address, runtime_env=runtime_env or worker_runtime_env(),
             include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    nodes.wait_for_nodes()
    try:
        yield nodes.address
    finally:
        ray.shutdown()
        nodes.shutdown()
