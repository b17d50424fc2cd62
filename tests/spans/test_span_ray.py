"""Span de-duplication's steps as Ray tasks give the local run's result."""

from __future__ import annotations

import random

import pytest

ray = pytest.importorskip("ray")

from neardup.spans import SpanDedupConfig, find_repeated_spans, remove_spans  # noqa: E402
from neardup.spans.ray_executor import find_repeated_spans_ray  # noqa: E402

pytestmark = pytest.mark.ray


@pytest.fixture
def local_ray(ray_cluster):
    """The session's Ray cluster (tests/conftest.py), which the tasks run on."""
    return ray_cluster


def _corpus(seed=0, docs=60):
    rng = random.Random(seed)
    lines = [f"Line number {i} of the shared boilerplate." for i in range(12)]
    return [["\n".join(rng.choice(lines) for _ in range(rng.randint(0, 6)))
             for _ in range(docs // 3)] for _ in range(3)]


@pytest.mark.parametrize("partitions", [1, 4])
@pytest.mark.parametrize("keep", ["first", "last"])
def test_ray_matches_local(tmp_path, local_ray, partitions, keep):
    batches = _corpus()
    config = SpanDedupConfig(unit="line", min_length=10, keep=keep, top=5)
    local = find_repeated_spans(batches, config, work_dir=tmp_path / "local", memory_limit=1 << 20)
    remote = find_repeated_spans_ray(batches, config, work_dir=tmp_path / "ray",
                                     partitions=partitions)
    assert (remote.documents, remote.spans, remote.distinct, remote.repeated, remote.removed) == (
        local.documents, local.spans, local.distinct, local.repeated, local.removed)
    assert [t["hash"] for t in remote.top] == [t["hash"] for t in local.top]
    assert local.removed > 0
    texts_local = [r.texts for r in remove_spans(batches, local)]
    texts_remote = [r.texts for r in remove_spans(batches, remote)]
    assert texts_remote == texts_local
