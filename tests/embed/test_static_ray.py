"""``--method static`` on the Ray engine: the shared vector stage, no method-specific code."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

import neardup
from neardup.data import demo_corpus_path

ray = pytest.importorskip("ray", reason="the Ray engine needs pip install 'neardup[ray]'")
pytest.importorskip("tokenizers")

pytestmark = [pytest.mark.neural, pytest.mark.ray]


def test_ray_engine_gives_the_memory_clusters(ray_cluster):
    with gzip.open(demo_corpus_path(), "rt") as handle:
        texts = [json.loads(line)["text"] for line in handle][:300]
    memory = neardup.dedup(texts, "static", engine="memory", pair_types=False).clusters
    on_ray = neardup.dedup(texts, "static", engine="ray", pair_types=False).clusters
    assert len(set(memory.tolist())) < len(texts)
    np.testing.assert_array_equal(on_ray, memory)
