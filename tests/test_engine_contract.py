"""The cross-engine contract: every method, with every clustering an executor runs it
with, gives the same clusters in memory, out of core with a small memory limit, on a
two-node Ray cluster, and in the persistent index where the index holds the method.

Cases come from the method registry and :func:`neardup.engine.support.placement`, so a
method or an executor added later is covered without editing this file.
"""

from __future__ import annotations

import gzip
import importlib.util
import json

import numpy as np
import pytest

import neardup
from neardup.data import demo_corpus_path
from neardup.engine.support import EXECUTORS, index_placement, placement
from neardup.index import Index
from neardup.methods import METHODS, NEURAL_METHODS, make_method
from neardup.pipeline import ClusterConfig

#: The clusterings crossed with every method: connected components, and community
#: detection over every accepted pair (HAC runs in memory only: its own tests).
ALGORITHMS = ("components", "leiden")
#: Documents of the demo corpus in the shared corpus (its duplicates included).
N_DOCS = 300


def _lanes(name: str, executor: str) -> list:
    marks = [pytest.mark.neural] if name in NEURAL_METHODS else []
    if executor == "ray":
        marks += [pytest.mark.ray, pytest.mark.xdist_group("ray")]
    return marks


def _cases():
    for name in sorted(METHODS):
        for algorithm in ALGORITHMS:
            for executor in EXECUTORS:
                if executor == "memory":
                    continue  # the reference every other executor is held to
                yield pytest.param(name, algorithm, executor, marks=_lanes(name, executor),
                                   id=f"{name}-{algorithm}-{executor}")


def _skip_unavailable(name: str) -> None:
    """Skip neural methods whose optional dependencies are not installed."""
    if name in NEURAL_METHODS and importlib.util.find_spec("onnxruntime") is None:
        pytest.skip(f"{name} needs pip install 'neardup[neural]'")
    if name == "rerank" and importlib.util.find_spec("rapidfuzz") is None:
        pytest.skip("rerank needs rapidfuzz")


@pytest.fixture(scope="module")
def corpus():
    """The demo corpus's first documents (noisy near-duplicates), and re-sent copies of
    some of them (other spacing), which even exact hashing links, interleaved."""
    with gzip.open(demo_corpus_path(), "rt") as handle:
        records = [json.loads(line) for _, line in zip(range(N_DOCS - N_DOCS // 6), handle)]
    docs = [{"id": str(r["id"]), "text": r["text"]} for r in records]
    for i in range(N_DOCS // 6):
        source = docs[3 * i]
        docs.insert(5 * i + 4, {"id": f"{source['id']}-resent", "text": "  " + source["text"] + "\n"})
    return docs


def canonical(clusters: np.ndarray) -> np.ndarray:
    """Each document's cluster named by its first member's position: equal exactly when
    two clusterings are the same partition, whatever their cluster ids."""
    clusters = np.asarray(clusters)
    first = {}
    return np.array([first.setdefault(c, i) for i, c in enumerate(clusters.tolist())])


_MEMORY: dict = {}


def _memory(corpus, name: str, algorithm: str):
    """The in-memory result of ``name`` clustered by ``algorithm`` (computed once)."""
    if (name, algorithm) not in _MEMORY:
        _MEMORY[name, algorithm] = neardup.dedup(corpus, name, id_field="id", engine="memory",
                                                 cluster=algorithm, pair_types=False)
    return _MEMORY[name, algorithm]


@pytest.fixture(scope="module")
def ray_address(request):
    """Two Ray nodes on this machine, one CPU each (started only for the Ray cases)."""
    ray = pytest.importorskip("ray", reason="the Ray executor needs pip install 'neardup[ray]'")
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


@pytest.mark.parametrize("name, algorithm, executor", list(_cases()))
def test_every_executor_gives_the_in_memory_clusters(corpus, name, algorithm, executor, request, tmp_path):
    _skip_unavailable(name)
    placed = placement(make_method(name), algorithm, executor)
    if not placed.supported:
        # Refused before any work, saying why: the front doors' rule, checked here too.
        assert placed.reason and placed.alternatives
        with pytest.raises(ValueError, match=f"engine='{executor}' cannot run method"):
            neardup.dedup(corpus, name, id_field="id", engine=executor, cluster=algorithm,
                          pair_types=False, **({"ray_address": "auto"} if executor == "ray" else {}))
        return
    memory = _memory(corpus, name, algorithm)
    options = {}
    if executor == "local" and not placed.fallback:
        # A small memory limit and many partitions: the out-of-core path, read back in steps.
        options = {"work_dir": str(tmp_path / "work"), "memory_limit": "1MB", "partitions": 16,
                   "batch_size": 64}
    elif executor == "ray":
        options = {"ray_address": request.getfixturevalue("ray_address"), "batch_size": 64}
    result = neardup.dedup(corpus, name, id_field="id", engine=executor, cluster=algorithm,
                           pair_types=False, **options)
    assert result.ids.tolist() == [r["id"] for r in corpus]  # every document, once, in order
    np.testing.assert_array_equal(canonical(result.clusters), canonical(memory.clusters))
    np.testing.assert_array_equal(result.representative, memory.representative)
    assert memory.n_clusters < len(corpus)  # the corpus has duplicates each method finds
    # Pairs: the out-of-core executors keep the accepted edges that joined the clusters
    # (a spanning forest, or every accepted pair for community detection); each is an
    # in-memory pair with its in-memory score.
    scores = dict(zip(zip(memory.pairs.left.tolist(), memory.pairs.right.tolist()),
                      memory.pairs.score.tolist()))
    for pair, score in zip(zip(result.pairs.left.tolist(), result.pairs.right.tolist()),
                           result.pairs.score.tolist()):
        assert pair in scores and scores[pair] == pytest.approx(score, abs=1e-6)
    if algorithm != "components" and placed.stage != "memory":
        assert len(result.pairs) == len(memory.pairs)  # every accepted pair, not a forest


@pytest.mark.parametrize("name", [pytest.param(n, marks=_lanes(n, "index")) for n in sorted(METHODS)])
def test_the_index_gives_the_in_memory_components(corpus, name, tmp_path):
    _skip_unavailable(name)
    method = make_method(name)
    if not index_placement(method).supported:
        with pytest.raises(ValueError, match="the index cannot hold method"):
            Index.create(tmp_path / "idx", method)
        return
    memory = _memory(corpus, name, "components")
    with Index.create(tmp_path / "idx", method) as index:
        index.add([r["text"] for r in corpus], ids=[r["id"] for r in corpus])
        table = index.clusters()
    assert table.column("id").to_pylist() == [r["id"] for r in corpus]
    np.testing.assert_array_equal(canonical(table.column("cluster").to_numpy()),
                                  canonical(memory.clusters))


def test_placement_is_derived_for_every_registered_method():
    # No method is missing from the rule, and memory runs everything.
    for name in METHODS:
        method = make_method(name)
        for algorithm in ALGORITHMS:
            assert placement(method, algorithm, "memory").stage == "memory"
            local = placement(method, algorithm, "local")
            assert local.stage in ("keyed", "vector", "memory")
            assert local.fallback == bool(local.reason)


def test_ray_refusals_name_the_parameter_and_the_fix():
    from neardup.engine.support import responsible_parameters

    culprits, fixable = responsible_parameters(make_method("minhash", verify="exact", threshold=0.6),
                                               "components", "index")
    assert culprits == {"verify": "exact"} and fixable
    culprits, fixable = responsible_parameters(make_method("sanderson"), "components", "ray")
    assert culprits == {} and not fixable  # the method itself, not a parameter
    assert responsible_parameters(make_method("minhash"), "components", "ray") == ({}, False)


def test_cluster_config_is_resolved_before_placement():
    # "auto" is never placed: the pipeline resolves it to the method's recommendation.
    for name in METHODS:
        resolved = ClusterConfig().resolved(make_method(name))
        assert resolved.algorithm in ("components", "leiden", "louvain", "hac")
