"""End-to-end: `neardup index ...` as a user runs it."""

from __future__ import annotations

import json

import pyarrow.csv as pacsv
from click.testing import CliRunner

from neardup.cli import main
from tests.in_process import invoke

STORIES = [
    "The central bank raised its key interest rate by half a point on Tuesday, citing "
    "stubborn inflation and strong wage growth across the economy.",
    "Wheat futures fell sharply in Chicago as rain improved the outlook for the winter "
    "crop in the southern plains, traders said on Monday.",
]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_create_add_query_delete_compact_stats(tmp_path):
    runner = CliRunner()
    idx = str(tmp_path / "idx")
    r = runner.invoke(main, ["index", "create", idx, "--method", "minhash", "--threshold", "0.5",
                             "--store-text"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["method"] == "minhash"
    day1 = _jsonl(tmp_path / "day1.jsonl", [{"id": f"s{i}", "text": t} for i, t in enumerate(STORIES)])
    day2 = _jsonl(tmp_path / "day2.jsonl", [
        {"id": "copy", "text": STORIES[0].upper() + " (AP)"},
        {"id": "fresh", "text": "A completely different story about football results."},
    ])
    assert runner.invoke(main, ["index", "add", idx, str(day1), "--id-field", "id"]).exit_code == 0
    r = runner.invoke(main, ["index", "add", idx, str(day2), "--id-field", "id",
                             "--clusters-out", str(tmp_path / "c.csv")])
    assert r.exit_code == 0, r.output
    assert "committed 2 documents" in r.output
    rows = pacsv.read_csv(tmp_path / "c.csv").to_pylist()
    assert [(x["id"], x["status"], x["duplicate_of"]) for x in rows] == [
        ("copy", "joined", "s0"), ("fresh", "new", "")]  # CSV: empty = null

    r = runner.invoke(main, ["index", "query", idx, str(day2), "--id-field", "id",
                             "--pairs-out", str(tmp_path / "p.csv")])
    assert r.exit_code == 0, r.output
    pairs = pacsv.read_csv(tmp_path / "p.csv").to_pylist()
    assert {(p["query_id"], p["match_id"]) for p in pairs} >= {("copy", "s0"), ("copy", "copy")}
    r = runner.invoke(main, ["index", "query", idx, str(day1)])  # JSON lines on stdout
    assert [json.loads(line)["match_id"] for line in r.output.splitlines()][:1] == ["s0"]
    shown = invoke("index", "query", idx, day1, "--progress")  # a bar on stderr only
    assert shown.exit_code == 0 and shown.stdout == r.output, shown.stderr

    (tmp_path / "ids.txt").write_text("copy\nmissing\n")
    r = runner.invoke(main, ["index", "delete", idx, "--ids", str(tmp_path / "ids.txt")])
    assert r.exit_code == 0 and json.loads(r.output.splitlines()[0]) == {"deleted": 1, "missing": 1,
                                                                 "split_clusters": 1,
                                                                 "new_clusters": 0}
    assert runner.invoke(main, ["index", "compact", idx]).exit_code == 0
    r = runner.invoke(main, ["index", "stats", idx, "--check"])
    assert r.exit_code == 0 and json.loads(r.output)["documents"] == 3


def test_clear_errors(tmp_path):
    runner = CliRunner()
    (tmp_path / "x").mkdir()
    r = runner.invoke(main, ["index", "stats", str(tmp_path / "x")])
    assert r.exit_code == 1 and "not a neardup index" in r.output
    r = runner.invoke(main, ["index", "create", str(tmp_path / "e"), "--method", "retsim-partial"])
    assert r.exit_code == 1 and "several vectors per document" in r.output
    idx = str(tmp_path / "idx")
    runner.invoke(main, ["index", "create", idx, "--method", "exact"])
    data = _jsonl(tmp_path / "d.jsonl", [{"id": "a", "text": "x"}])
    runner.invoke(main, ["index", "add", idx, str(data), "--id-field", "id"])
    r = runner.invoke(main, ["index", "add", idx, str(data), "--id-field", "id"])
    assert r.exit_code == 1 and "already in the index" in r.output
    r = runner.invoke(main, ["index", "add", idx, str(data), "--id-field", "id", "--skip-existing"])
    assert r.exit_code == 0
