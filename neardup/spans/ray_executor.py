"""``find_repeated_spans`` on Ray, from Python: the same steps as tasks.

:func:`neardup.spans.find_repeated_spans` with a :class:`~neardup.spans.executors.RayExecutor`:
one task per batch splits, normalizes and hashes its spans (:func:`span_records`), one
task per partition counts and decides (:func:`decide_partition`); this process numbers
the documents, spills the records and saves the decisions, so the result is the local
one. ``neardup spans --engine ray`` runs the rewrite the same way
(:func:`neardup.spans.remove_spans` with the executor).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from neardup.spans.executors import RayExecutor
from neardup.spans.span_dedup import SpanDecisions, SpanDedupConfig, find_repeated_spans

__all__ = ["find_repeated_spans_ray"]


def find_repeated_spans_ray(batches: Iterable[Sequence[str]], config: SpanDedupConfig, *,
                            work_dir: str | Path, partitions: int = 16,
                            memory_limit: int = 1 << 30) -> SpanDecisions:
    """Pass 1 and the decision of span de-duplication as Ray tasks (Ray must be
    initialized: :func:`neardup.engine.ray.connect`). Same arguments and result
    as :func:`neardup.spans.find_repeated_spans`; ``partitions`` (a power of two) decide
    tasks run."""
    if partitions < 1 or partitions & (partitions - 1):
        raise ValueError(f"partitions must be a power of two; got {partitions}")
    return find_repeated_spans(batches, config, work_dir=work_dir, memory_limit=memory_limit,
                               partitions=partitions, executor=RayExecutor())
