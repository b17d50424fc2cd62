"""Fixtures shared by the engine tests."""

from __future__ import annotations

import gzip
import json

import pytest

from neardup.data import demo_corpus_path


@pytest.fixture(scope="module")
def demo():
    """The bundled demo corpus's first 2,500 records (dicts with id, text, label...)."""
    with gzip.open(demo_corpus_path(), "rt") as handle:
        records = [json.loads(line) for line in handle]
    return records[:2500]
