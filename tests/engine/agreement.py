"""Checks shared by the engine tests: the out-of-core stage against the in-memory engine."""

from __future__ import annotations

import numpy as np

import neardup


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
