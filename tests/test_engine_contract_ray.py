"""The cross-engine contract on a two-node Ray cluster: every method, with every
clustering, gives the in-memory clusters, or is refused before any work saying why (see
tests/test_engine_contract.py for memory, local and the index)."""

from __future__ import annotations

import pytest

import neardup
from tests.engine_contract import BATCH_SIZE, cases, check_executor, corpus_for, method_params, skip_unavailable

pytestmark = pytest.mark.ray

ray = pytest.importorskip("ray", reason="the Ray executor needs pip install 'neardup[ray]'")


@pytest.fixture
def ray_address(ray_cluster):
    """The session's two Ray nodes (tests/conftest.py), one CPU each."""
    return ray_cluster["address"]


@pytest.fixture(scope="module")
def corpora():
    return {}


@pytest.fixture(scope="module")
def embeddings(tmp_path_factory):
    """The embedding methods' cache (method_params): one directory per test process,
    shared by both contract modules (tests/test_engine_contract*.py) and the Ray workers."""
    return tmp_path_factory.getbasetemp() / "contract-embeddings"


@pytest.fixture(scope="module")
def one_stage_per_mode():
    """The Ray stage run once per method and mode: every clustering but connected
    components reads the same stage output (every accepted pair, ``every_edge``), so its
    cases share one run and differ only in the clustering the driver applies to it (the
    front door, planning and clustering still run for each). Keeps the lane's time."""
    import neardup.engine.ray as ray_engine

    real, runs = ray_engine.run_ray_stage, {}

    def shared(batches, method, **options):
        key = (method.name, repr(method.get_params()), repr(options["config"]),
               options["time_window_hours"], options["every_edge"])
        if key not in runs:
            runs[key] = real(batches, method, **options)
        return runs[key]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ray_engine, "run_ray_stage", shared)
        yield


@pytest.mark.parametrize("name, algorithm", list(cases()))
def test_ray_gives_the_in_memory_clusters(corpora, embeddings, ray_address, one_stage_per_mode, name,
                                          algorithm):
    skip_unavailable(name)
    corpus = corpus_for(name, corpora)
    params = method_params(name, embeddings)
    memory = neardup.dedup(corpus, name, id_field="id", engine="memory", cluster=algorithm,
                           pair_types=False, batch_size=BATCH_SIZE, **params)
    check_executor(corpus, name, algorithm, "ray", memory, params, ray_address=ray_address,
                   batch_size=BATCH_SIZE)


@pytest.mark.parametrize("algorithm", ["leiden", "components"])
def test_ray_screens_as_in_memory(corpora, ray_address, one_stage_per_mode, algorithm):
    # rerank's Screen step with a cap that binds on this corpus (tests/engine/test_screen.py
    # holds it to the uncapped run): the screen tasks' pairs, gathered on the driver,
    # select the in-memory pairs.
    skip_unavailable("rerank")
    corpus = corpus_for("rerank", corpora)
    params = {"low_partners": 1, "low_estimate": 0.95}
    memory = neardup.dedup(corpus, "rerank", id_field="id", engine="memory", cluster=algorithm,
                           pair_types=False, batch_size=BATCH_SIZE, **params)
    check_executor(corpus, "rerank", algorithm, "ray", memory, params, ray_address=ray_address,
                   batch_size=BATCH_SIZE)
