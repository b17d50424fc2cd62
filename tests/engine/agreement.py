"""Checks shared by the engine tests: the out-of-core stage against the in-memory engine."""

from __future__ import annotations

import numpy as np

import neardup
from neardup.text import ShingleConfig

#: ngram with character 5-grams and a max_df that a few hundred demo documents exceed in
#: thousands of key groups, linked by chains alone (issue 36), with containment 0.8 (where
#: the chain rule mattered: a text of a few characters is inside many others) and Jaccard.
CHAINED_NGRAM_PARAMS = [
    {"similarity": "containment", "threshold": 0.8, "shingle": ShingleConfig(unit="char", n=5),
     "max_df": 10},
    {"threshold": 0.3, "shingle": ShingleConfig(unit="char", n=5), "max_df": 10},
]


def contained_behind_capped_keys() -> tuple[list[str], dict]:
    """Texts and ngram params where A (5 words, next to last) lies wholly inside B (last),
    but 4 of A's words are in more than ``max_df`` documents, so the pair-count exchange
    counts only the fifth: scored from that count (1/5) the pair would be dropped, and
    only a reduce that knows both sides hold capped keys verifies and joins it. (Seed 1:
    A and B are neither neighbours in a chain nor matched early, so the pair reaches the
    reduce.)"""
    rng = np.random.default_rng(1)
    words = [f"w{i}" for i in range(400)]
    common = "alpha beta gamma delta"
    texts = [f"{common} {' '.join(rng.choice(words, 12, replace=False))}" for _ in range(30)]
    texts += [f"{common} rare", f"{common} rare {' '.join(rng.choice(words, 15, replace=False))}"]
    return texts, {"similarity": "containment", "threshold": 0.9, "max_df": 5,
                   "shingle": ShingleConfig(unit="word", n=1)}


def assert_exact_verification_matches_memory(method: str, texts: list[str], params: dict,
                                             work_dir):
    """Run ``method`` in memory, out of core with a tiny budget (1 MB, 64 partitions, in
    ``work_dir``) and out of core with the defaults; assert identical clusters and
    representatives, no fallback, and that every forest pair carries its in-memory score.
    Returns the tiny-budget result."""
    memory = neardup.dedup(texts, method, engine="memory", pair_types=False, **params)
    # Tiny budget and many partitions: the stored sets are read back a step at a time.
    spilled = neardup.dedup(texts, method, engine="local", pair_types=False,
                            work_dir=work_dir, memory_limit="1MB", partitions=64,
                            batch_size=300, **params)
    roomy = neardup.dedup(texts, method, engine="local", pair_types=False, **params)
    for local in (spilled, roomy):
        assert local.params["engine"] == "local" and "engine_fallback" not in local.summary()
        np.testing.assert_array_equal(local.clusters, memory.clusters)
        np.testing.assert_array_equal(local.representative, memory.representative)
    assert spilled.clusters.size == len(texts) == len(set(spilled.ids.tolist()))
    assert memory.n_clusters < len(texts)  # something was matched
    # Every forest pair is an in-memory pair with its exact in-memory score.
    assert len(spilled.pairs) == len(texts) - spilled.n_clusters
    assert spilled.pairs.score.dtype == memory.pairs.score.dtype
    found = dict(zip(zip(memory.pairs.left.tolist(), memory.pairs.right.tolist()),
                     memory.pairs.score.tolist()))
    for pair, score in zip(zip(spilled.pairs.left.tolist(), spilled.pairs.right.tolist()),
                           spilled.pairs.score.tolist()):
        assert found[pair] == score
    return spilled
