"""`neardup index export DIR --clusters-out F`: every stored document once, with its
current cluster, so a merge made by a later add shows (an earlier add's --clusters-out
goes stale)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
from click.testing import CliRunner

from neardup.cli import main
from neardup.index import Index
from tests.cli.test_index_cli import _jsonl

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
         "november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee "
         "zulu amber birch cedar dune ember fjord grove heath inlet jungle knoll lagoon "
         "marsh nectar orchard prairie quarry ridge savanna tundra upland valley willow").split()


def test_export_reflects_a_merge_made_by_a_later_add(tmp_path):
    runner = CliRunner()
    idx = str(tmp_path / "idx")
    assert runner.invoke(main, ["index", "create", idx, "--method", "minhash", "--threshold",
                                "0.5"]).exit_code == 0
    left, right, bridge = " ".join(WORDS[:30]), " ".join(WORDS[15:45]), " ".join(WORDS[6:39])
    first = _jsonl(tmp_path / "first.jsonl", [{"id": "left", "text": left}, {"id": "right", "text": right},
                                              {"id": "alone", "text": "nothing like the others at all"}])
    stale = tmp_path / "first-clusters.parquet"
    assert runner.invoke(main, ["index", "add", idx, str(first), "--id-field", "id", "--quiet",
                                "--clusters-out", str(stale)]).exit_code == 0
    before = tmp_path / "before.parquet"
    r = runner.invoke(main, ["index", "export", idx, "--clusters-out", str(before)])
    assert r.exit_code == 0, r.output
    assert "exported 3 documents in 3 clusters" in r.output
    exported = {row["id"]: row["cluster"] for row in pq.read_table(before).to_pylist()}
    assert len(set(exported.values())) == 3

    second = _jsonl(tmp_path / "second.jsonl", [{"id": "bridge", "text": bridge}])
    assert runner.invoke(main, ["index", "add", idx, str(second), "--id-field", "id", "--quiet"]).exit_code == 0
    after = tmp_path / "after.jsonl"
    assert runner.invoke(main, ["index", "export", idx, "--clusters-out", str(after), "-q"]).exit_code == 0
    rows = [json.loads(line) for line in after.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["left", "right", "alone", "bridge"]  # each once, in order
    cluster = {r["id"]: r["cluster"] for r in rows}
    assert cluster["left"] == cluster["right"] == cluster["bridge"] != cluster["alone"]
    assert {r["id"]: r["cluster_size"] for r in rows} == {"left": 3, "right": 3, "bridge": 3, "alone": 1}
    # The earlier add's output still names two clusters: the export is the current truth.
    old = {row["id"]: row["cluster"] for row in pq.read_table(stale).to_pylist()}
    assert old["left"] != old["right"]
    # The Python view agrees.
    assert Index(idx).clusters().to_pylist() == [{"id": r["id"], "cluster": r["cluster"]} for r in rows]


def test_export_errors_name_the_flag_and_leave_nothing(tmp_path):
    runner = CliRunner()
    idx = str(tmp_path / "idx")
    assert runner.invoke(main, ["index", "create", idx, "--method", "minhash"]).exit_code == 0
    r = runner.invoke(main, ["index", "export", idx, "--clusters-out", str(tmp_path / "c.xlsx")])
    assert r.exit_code == 1 and "--clusters-out" in r.output and "Traceback" not in r.output
    r = runner.invoke(main, ["index", "export", idx, "--clusters-out", str(tmp_path / "idx" / "index.sqlite")])
    assert r.exit_code == 1 and "--clusters-out" in r.output
    r = runner.invoke(main, ["index", "export", str(tmp_path / "nope"), "--clusters-out", str(tmp_path / "c.csv")])
    assert r.exit_code == 1 and "Traceback" not in r.output and not (tmp_path / "c.csv").exists()
    r = runner.invoke(main, ["index", "export", idx])
    assert r.exit_code == 2 and "--clusters-out" in r.output
    empty = tmp_path / "empty.parquet"
    assert runner.invoke(main, ["index", "export", idx, "--clusters-out", str(empty)]).exit_code == 0
    assert pq.read_table(empty).num_rows == 0
