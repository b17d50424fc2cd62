"""The out-of-core corpus stage keeps each method's quality on the standard benchmark: on
documents of data/reuters-news's validation split, every setting clusters the same out of
core (a 1 MB budget, 64 partitions: everything spills) as in memory, so its ARI against the
labels is the same too. The full splits, rerank and the neural methods are measured by the
suite's ``corpus_stage_agreement`` benchmark (benchmarks/README.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import neardup
from neardup.eval import load_labeled
from neardup.eval.metrics import adjusted_rand_index
from neardup.text import ShingleConfig

pytestmark = pytest.mark.slow

VALIDATION = Path(__file__).resolve().parents[2] / "data" / "reuters-news" / "validation.jsonl.gz"
DOCS = 1200

#: (method, parameters, clustering): each method's default and the settings the docs cite.
SETTINGS = [
    ("exact", {}, "components"),
    ("minhash", {}, "components"),
    ("minhash", {"threshold": 0.3, "verify": "exact"}, "components"),
    ("minhash", {"shingle": ShingleConfig(unit="char", n=10), "threshold": 0.3}, "components"),
    ("minhash", {}, "leiden"),
    ("simhash", {"threshold": 6}, "components"),
    ("ngram", {}, "components"),
    ("spotsigs", {}, "components"),
    ("wminhash", {}, "components"),
    ("wminhash", {"phrase_length": 3, "verify": "exact"}, "components"),
    ("sanderson", {}, "components"),
]


@pytest.fixture(scope="module")
def corpus():
    if not VALIDATION.exists():
        pytest.skip(f"the standard benchmark is not here ({VALIDATION})")
    labeled = load_labeled(str(VALIDATION))
    return list(labeled.texts[:DOCS]), np.asarray(labeled.clusters[:DOCS])


@pytest.mark.parametrize("method, params, cluster", SETTINGS,
                         ids=[f"{m}-{c}-{'-'.join(f'{k}={v}' for k, v in p.items()) or 'default'}"
                              for m, p, c in SETTINGS])
def test_out_of_core_clusters_as_in_memory(corpus, method, params, cluster, tmp_path):
    texts, labels = corpus
    options = {"cluster": cluster, "pair_types": False, **params}
    if cluster == "leiden":
        options["resolution"] = 0.4
    memory = neardup.dedup(texts, method, engine="memory", **options)
    local = neardup.dedup(texts, method, engine="local", work_dir=tmp_path / "work",
                          memory_limit="1MB", partitions=64, batch_size=300, **options)
    assert local.params["engine"] == "local" and "engine_fallback" not in local.summary()
    assert memory.n_clusters < len(texts)  # the setting links something on this slice
    assert adjusted_rand_index(memory.clusters, local.clusters) == 1.0
    assert adjusted_rand_index(labels, local.clusters) == adjusted_rand_index(labels, memory.clusters)
