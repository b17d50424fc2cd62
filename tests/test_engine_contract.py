"""The cross-engine contract: every method, with every clustering an executor runs it
with, gives the same clusters in memory, out of core with a small memory limit, and in
the persistent index where the index holds the method (Ray:
tests/test_engine_contract_ray.py).

Cases come from the method registry and :func:`neardup.engine.support.placement`, so a
method or an executor added later is covered without editing this file.
"""

from __future__ import annotations

import numpy as np
import pytest

import neardup
from neardup.profiles import choose_profile, profile_settings
from neardup.engine.support import index_placement, placement
from neardup.index import Index
from neardup.methods import METHODS, NEURAL_METHODS, make_method
from neardup.pipeline import ClusterConfig
from tests.engine_contract import (
    ALGORITHMS,
    BATCH_SIZE,
    canonical,
    cases,
    check_executor,
    corpus_for,
    method_params,
    skip_unavailable,
)


@pytest.fixture(scope="module")
def corpora():
    return {}


@pytest.fixture(scope="module")
def embeddings(tmp_path_factory):
    """The embedding methods' cache (method_params): one directory per test process,
    shared by both contract modules (tests/test_engine_contract*.py) and the Ray workers."""
    return tmp_path_factory.getbasetemp() / "contract-embeddings"


@pytest.fixture(scope="module")
def memory_results(corpora, embeddings):
    """The in-memory result of each (method, clustering), computed once."""
    found = {}

    def get(name, algorithm):
        if (name, algorithm) not in found:
            found[name, algorithm] = neardup.dedup(corpus_for(name, corpora), name, id_field="id",
                                                   engine="memory", cluster=algorithm, pair_types=False,
                                                   batch_size=BATCH_SIZE, **method_params(name, embeddings))
        return found[name, algorithm]
    return get


@pytest.mark.parametrize("name, algorithm", list(cases()))
def test_local_out_of_core_gives_the_in_memory_clusters(corpora, memory_results, embeddings, name, algorithm,
                                                        tmp_path):
    skip_unavailable(name)
    # A small memory limit and many partitions: the out-of-core path, read back in steps.
    check_executor(corpus_for(name, corpora), name, algorithm, "local", memory_results(name, algorithm),
                   method_params(name, embeddings), work_dir=str(tmp_path / "work"), memory_limit="1MB",
                   partitions=16, batch_size=BATCH_SIZE)


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.neural] if n in NEURAL_METHODS else [])
                                  for n in sorted(METHODS)])
def test_the_index_gives_the_in_memory_components(corpora, memory_results, embeddings, name, tmp_path):
    skip_unavailable(name)
    corpus = corpus_for(name, corpora)
    # The index fixes its settings at creation; dedup's default profile="auto" chooses them
    # from the first documents: the index is given the settings dedup chose.
    chosen = choose_profile("auto", name, [r["text"] for r in corpus]).name
    method = make_method(name, **method_params(name, embeddings), **profile_settings(chosen, name))
    if not index_placement(method).supported:
        with pytest.raises(ValueError, match="the index cannot hold method"):
            Index.create(tmp_path / "idx", method)
        return
    memory = memory_results(name, "components")
    with Index.create(tmp_path / "idx", method) as index:
        # In the executors' batches: an embedding method then reads the reference's
        # cached embeddings (method_params) instead of encoding the corpus again.
        for start in range(0, len(corpus), BATCH_SIZE):
            batch = corpus[start:start + BATCH_SIZE]
            index.add([r["text"] for r in batch], ids=[r["id"] for r in batch])
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
    # An HNSW index is searched in memory only: Ray refuses it by the option, and the
    # default index runs.
    assert responsible_parameters(make_method("retsim", index="hnsw"), "components", "ray") == (
        {"index": "hnsw"}, True)
    # Weighted-set verification runs on Ray (its shards ship the weights): nothing to name.
    assert responsible_parameters(make_method("wminhash", verify="exact"), "components", "ray") == ({}, False)


def test_cluster_config_is_resolved_before_placement():
    # "auto" is never placed: the pipeline resolves it to the method's recommendation.
    for name in METHODS:
        resolved = ClusterConfig().resolved(make_method(name))
        assert resolved.algorithm in ("components", "leiden", "louvain", "hac")
