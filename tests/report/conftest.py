"""Fixtures for the report tests: a small labelled news corpus and one run over it."""

from __future__ import annotations

import json

import pytest
from report_fixtures import labelled_rows


@pytest.fixture
def labelled_corpus(tmp_path):
    path = tmp_path / "news.jsonl"
    rows = labelled_rows()
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path, rows


@pytest.fixture
def run_files(tmp_path, labelled_corpus):
    """Run `neardup dedup` on the corpus; returns (corpus path, rows, output paths)."""
    from click.testing import CliRunner

    from neardup.cli import main

    path, rows = labelled_corpus
    out = {"clusters": tmp_path / "c.parquet", "pairs": tmp_path / "p.parquet",
           "summary": tmp_path / "run.json"}
    result = CliRunner().invoke(main, [
        "dedup", str(path), "--method", "minhash", "--id-field", "id", "--date-field", "date",
        "--clusters-out", str(out["clusters"]), "--pairs-out", str(out["pairs"]),
        "--report", str(out["summary"]), "--quiet"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return path, rows, out
