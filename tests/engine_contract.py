"""The shared corpus and checks of the cross-engine contract tests
(tests/test_engine_contract.py, tests/test_engine_contract_ray.py)."""

from __future__ import annotations

import gzip
import importlib.util
import json

import numpy as np
import pytest

import neardup
from neardup.data import demo_corpus_path
from neardup.engine.support import placement
from neardup.methods import METHODS, NEURAL_METHODS, make_method

#: The clusterings crossed with every method: connected components (a spanning forest
#: out of core), community detection and HAC (every accepted pair).
ALGORITHMS = ("components", "leiden", "hac")
#: Documents in the shared corpus (its duplicates included).
N_DOCS = 300


def cases():
    """Every registered method crossed with every clustering."""
    for name in sorted(METHODS):
        marks = [pytest.mark.neural] if name in NEURAL_METHODS else []
        for algorithm in ALGORITHMS:
            yield pytest.param(name, algorithm, marks=marks, id=f"{name}-{algorithm}")


def skip_unavailable(name: str) -> None:
    """Skip neural methods whose optional dependencies are not installed."""
    if name in NEURAL_METHODS and importlib.util.find_spec("onnxruntime") is None:
        pytest.skip(f"{name} needs pip install 'neardup[neural]'")
    if name == "rerank" and importlib.util.find_spec("rapidfuzz") is None:
        pytest.skip("rerank needs rapidfuzz")


#: Documents for the embedding methods, whose models cost far more per document: the
#: contract is the same at any size.
N_EMBEDDED = 90


def contract_corpus(n_docs: int = N_DOCS) -> list[dict]:
    """The demo corpus's first documents (noisy near-duplicates), and re-sent copies of
    some of them (other spacing), which even exact hashing links, interleaved."""
    with gzip.open(demo_corpus_path(), "rt") as handle:
        records = [json.loads(line) for _, line in zip(range(n_docs - n_docs // 6), handle)]
    docs = [{"id": str(r["id"]), "text": r["text"]} for r in records]
    for i in range(n_docs // 6):
        source = docs[3 * i]
        docs.insert(5 * i + 4, {"id": f"{source['id']}-resent", "text": "  " + source["text"] + "\n"})
    return docs


def corpus_for(name: str, corpora: dict) -> list[dict]:
    """The shared corpus at the size that suits method ``name`` (``corpora``: a cache)."""
    n_docs = N_EMBEDDED if make_method(name).capabilities.vectors is not None else N_DOCS
    if n_docs not in corpora:
        corpora[n_docs] = contract_corpus(n_docs)
    return corpora[n_docs]


#: Documents per batch in every run, the in-memory reference's included: an embedding
#: method's cache (method_params) is keyed by a batch's texts, so every executor then
#: reads the reference's embeddings.
BATCH_SIZE = 64


def method_params(name: str, embeddings) -> dict:
    """Parameters every run of method ``name`` takes in a contract module: an embedding
    method caches its embeddings in the directory ``embeddings`` (its ``cache_dir``, keyed
    by the model and a batch's texts), so the model encodes a batch once per module, not
    once per run. The executors still read, search, link and cluster every time: that is
    what the contract compares. Other methods take none.

    The bi-encoder reads 64 tokens a document, not its trained 256: only the in-memory
    reference runs the model (every executor reads its cached embeddings), and a quarter
    of the tokens is about a quarter of its encoding time; the resent copies still embed
    alike, so there are duplicates to find."""
    if make_method(name).capabilities.vectors is None:
        return {}
    if name == "biencoder":
        return {"cache_dir": str(embeddings), "max_tokens": 64}
    return {"cache_dir": str(embeddings)}


def canonical(clusters: np.ndarray) -> np.ndarray:
    """Each document's cluster named by its first member's position: equal exactly when
    two clusterings are the same partition, whatever their cluster ids."""
    first: dict = {}
    return np.array([first.setdefault(c, i) for i, c in enumerate(np.asarray(clusters).tolist())])


def check_executor(corpus: list[dict], name: str, algorithm: str, executor: str, memory,
                   params: dict | None = None, **options):
    """Run ``name`` (with method ``params``) clustered by ``algorithm`` on ``executor`` and
    hold it to ``memory`` (the in-memory result): the same clusters and representatives,
    every document once, and only in-memory pairs with their scores; or, where the
    executor refuses the method, a refusal before any work that says why."""
    params = params or {}
    placed = placement(make_method(name), algorithm, executor)
    if not placed.supported:
        assert placed.reason and placed.alternatives
        with pytest.raises(ValueError, match=f"engine='{executor}' cannot run method"):
            neardup.dedup(corpus, name, id_field="id", engine=executor, cluster=algorithm,
                          pair_types=False, **params, **options)
        return
    if placed.fallback:
        options = {}  # the in-memory stage takes no out-of-core options
    elif placed.stage == "vector":
        options.pop("partitions", None)  # key partitions: the keyed stage's only
    result = neardup.dedup(corpus, name, id_field="id", engine=executor, cluster=algorithm,
                           pair_types=False, **params, **options)
    assert result.ids.tolist() == [r["id"] for r in corpus]  # every document, once, in order
    np.testing.assert_array_equal(canonical(result.clusters), canonical(memory.clusters))
    np.testing.assert_array_equal(result.representative, memory.representative)
    assert memory.n_clusters < len(corpus)  # the corpus has duplicates each method finds
    # The out-of-core executors keep the accepted edges that joined the clusters (a
    # spanning forest, or every accepted pair for community detection): each is an
    # in-memory pair with its in-memory score.
    scores = dict(zip(zip(memory.pairs.left.tolist(), memory.pairs.right.tolist()),
                      memory.pairs.score.tolist()))
    for pair, score in zip(zip(result.pairs.left.tolist(), result.pairs.right.tolist()),
                           result.pairs.score.tolist()):
        assert pair in scores and scores[pair] == pytest.approx(score, abs=1e-6)
    if algorithm != "components" and placed.stage != "memory":
        assert len(result.pairs) == len(memory.pairs)  # every accepted pair, not a forest
