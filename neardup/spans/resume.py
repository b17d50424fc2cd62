"""What pass 1 of ``neardup spans`` or ``neardup substrings`` decided, as the facts of a
work directory's stage marker (:class:`neardup.engine.workdir.WorkDir`), and back.

A resumed run that finds the counting stage complete rebuilds its
:class:`~neardup.spans.SpanDecisions` or :class:`~neardup.spans.SubstringDecisions`
from these facts and the stage's files, and goes straight to the rewrite.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np

from neardup.spans.span_dedup import SpanDecisions
from neardup.spans.substring_dedup import SubstringDecisions

__all__ = ["decisions_facts", "decisions_from_facts"]

_KINDS = {"spans": SpanDecisions, "substrings": SubstringDecisions}


def decisions_facts(decisions: SpanDecisions | SubstringDecisions, stage: Path) -> dict[str, Any]:
    """``decisions`` as JSON-ready facts; its directory relative to ``stage`` (so a work
    directory that was moved still resumes)."""
    kind = "spans" if isinstance(decisions, SpanDecisions) else "substrings"
    facts: dict[str, Any] = {"kind": kind}
    for spec in dataclasses.fields(decisions):
        if not spec.init:
            continue
        value = getattr(decisions, spec.name)
        if isinstance(value, Path):
            value = os.path.relpath(value, stage)
        elif isinstance(value, np.ndarray):
            value = value.tolist()
        facts[spec.name] = value
    return facts


def decisions_from_facts(facts: dict[str, Any], stage: Path) -> SpanDecisions | SubstringDecisions:
    """The decisions :func:`decisions_facts` saved, their files under ``stage``."""
    values = {k: v for k, v in facts.items() if k != "kind"}
    values["directory"] = Path(stage) / values["directory"]
    if "chunk_starts" in values:
        values["chunk_starts"] = np.asarray(values["chunk_starts"], np.int64)
    return _KINDS[facts["kind"]](**values)
