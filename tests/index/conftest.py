"""Corpora shared by the index tests."""

from __future__ import annotations

import gzip
import json

import pytest

from neardup.data import demo_corpus_path


@pytest.fixture(scope="session")
def demo_texts() -> list[str]:
    with gzip.open(demo_corpus_path(), "rt") as handle:
        return [json.loads(line)["text"] for line in handle]
