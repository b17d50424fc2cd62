"""``find_repeated_spans`` on Ray: the same pure steps as tasks.

One task per batch splits, normalizes and hashes its spans (:func:`span_records`) and
returns them already split into hash partitions (one object per partition, so a
partition's task fetches only its own records); one task per partition counts and
decides (:func:`decide_partition`). The driver saves the decisions as the local run does
(:func:`collect_decisions`), so :func:`remove_spans` and everything after it are shared,
and the result is the local one, partition count aside.

Not yet here: the rewrite pass runs in the driver, Ray's object store holds the span
records (no spill of our own), and the ``neardup spans`` command does not offer it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from neardup.spans.span_dedup import (
    SpanDecisions,
    SpanDedupConfig,
    collect_decisions,
    decide_partition,
    span_records,
)
from neardup.spans.spill import split_partitions

__all__ = ["find_repeated_spans_ray"]


def _records_task(texts, first_doc, config, partitions):
    blocks = split_partitions(span_records(texts, first_doc, config), partitions)
    return tuple(blocks) if partitions > 1 else blocks[0]


def _decide_task(config, *blocks):
    import numpy as np

    return decide_partition(np.concatenate(blocks), config)


def find_repeated_spans_ray(batches: Iterable[Sequence[str]], config: SpanDedupConfig, *,
                            work_dir: str | Path, partitions: int = 16) -> SpanDecisions:
    """Pass 1 and the decision of span de-duplication as Ray tasks (Ray must be
    initialized: ``ray.init(...)``). Same arguments and result as
    :func:`neardup.spans.find_repeated_spans`; ``partitions`` (a power of two) decide
    tasks run."""
    import ray

    if partitions < 1 or partitions & (partitions - 1):
        raise ValueError(f"partitions must be a power of two; got {partitions}")
    records = ray.remote(num_returns=partitions)(_records_task)
    decide = ray.remote(_decide_task)
    per_batch, documents = [], 0
    for texts in batches:
        refs = records.remote(list(texts), documents, config, partitions)
        per_batch.append(refs if partitions > 1 else [refs])
        documents += len(texts)
    decided_refs = [decide.remote(config, *(refs[p] for refs in per_batch))
                    for p in range(partitions)] if per_batch else []
    decided = ray.get(decided_refs) if decided_refs else []
    spans = sum(d.seen for d in decided)
    return collect_decisions(decided, work_dir, config, documents=documents, spans=spans)
