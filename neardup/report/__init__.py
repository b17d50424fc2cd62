"""Inspect a run: a self-contained HTML report, and why two documents are (not) duplicates.

* :func:`load_run` / :func:`outputs_from_result` — a run's clusters, pairs and summary;
* :func:`collect_report` and :func:`write_html` — the report data and its page
  (:func:`write_report` does both);
* :func:`align_words` — word-level alignment (insertions, deletions, substitutions);
* :func:`explain_pair` — every lexical method's verdict on two documents.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from neardup.report.align import align_words, alignment_stats, split_words
from neardup.report.collect import ReportLimits, collect_report
from neardup.report.explain import explain_pair, find_documents
from neardup.report.html import render_html, write_html
from neardup.report.run import RunOutputs, load_run, outputs_from_result

__all__ = [
    "ReportLimits",
    "RunOutputs",
    "align_words",
    "alignment_stats",
    "collect_report",
    "explain_pair",
    "find_documents",
    "load_run",
    "outputs_from_result",
    "render_html",
    "split_words",
    "write_html",
    "write_report",
]


def write_report(
    path: str | os.PathLike,
    outputs: RunOutputs | Any,
    inputs: Sequence[str | os.PathLike],
    reader: Any = None,
    *,
    label_field: str | None = None,
    limits: ReportLimits = ReportLimits(),
) -> int:
    """Write the HTML report of a run; returns the file size in bytes.

    Parameters
    ----------
    path : path
        The ``.html`` file to write (atomically).
    outputs : RunOutputs or Result
        The run, as read by :func:`load_run` or an in-memory
        :class:`~neardup.pipeline.Result`.
    inputs, reader, label_field, limits
        As in :func:`collect_report`.
    """
    if not isinstance(outputs, RunOutputs):
        outputs = outputs_from_result(outputs, [os.fspath(p) for p in inputs])
    data = collect_report(outputs, inputs, reader, label_field=label_field, limits=limits)
    return write_html(path, data)
