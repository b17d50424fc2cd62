"""Data shipped inside the package: the demo corpus.

``demo.jsonl.gz`` holds 2,000 Reuters-21578 stories, each reproduced one or more times
with realistic noise (OCR errors, abridgement, missing leads, changed datelines, inserted
local sentences; about one copy in ten with adversarial hash-busting edits). Fields:
``id``, ``text``, ``date``, ``cluster`` (the source story: the ground truth), ``noise``
(the corruptions applied). Rebuild it with ``python scripts/build_demo_corpus.py``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["demo_corpus_path"]


def demo_corpus_path() -> Path:
    """Path of the bundled demo corpus (JSONL, gzip)."""
    return Path(str(resources.files(__name__).joinpath("demo.jsonl.gz")))
