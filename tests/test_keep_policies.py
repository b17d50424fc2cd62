"""Keep policies and --annotate end to end: each policy keeps its documented record on the
memory and local engines, through Python and the command line (Ray: tests/engine/
test_ray_engine.py), and --annotate writes every record once, marked as the clusters say."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import neardup
from neardup.errors import ParameterError
from neardup.cli import main

BASE = ("the central bank raised its key interest rate by half a point on tuesday citing "
        "persistent inflation in services and a tight labour market across the region")


def _corpus() -> list[dict]:
    """Two clusters of copies (differing in length, date, score and filled fields), and
    two unrelated singletons. Expected survivors are listed in EXPECTED."""
    other = BASE.replace("central bank", "finance ministry").replace("interest rate", "tax on fuel")
    other = other.replace("inflation", "deficits").replace("labour market", "budget")
    rows = [
        {"id": "a0", "text": BASE, "date": "2020-03-02", "score": 1, "tag": ""},
        {"id": "b0", "text": other + " officials said", "date": "2021-01-01", "score": 9, "tag": "x"},
        {"id": "a1", "text": BASE + " officials said on wednesday", "date": None, "score": 5, "tag": ""},
        {"id": "s0", "text": "completely unrelated words about gardening tomatoes and soil", "date": None,
         "score": None, "tag": ""},
        {"id": "a2", "text": BASE + " officials said", "date": "2020-03-01", "score": 5, "tag": "kept"},
        {"id": "b1", "text": other, "date": "2021-01-05", "score": 2, "tag": "y"},
        {"id": "a3", "text": BASE + ".", "date": "2020-03-09", "score": None, "tag": ""},
        {"id": "s1", "text": "a short poem on winter rivers and the quiet of snow over hills", "date": None,
         "score": 3, "tag": ""},
    ]
    return rows


EXPECTED = {
    "first": {"a0", "b0"}, "last": {"a3", "b1"}, "longest": {"a1", "b0"},
    "earliest": {"a2", "b0"}, "latest": {"a3", "b1"}, "most-complete": {"a2", "b0"},
    "by-score": {"a1", "b0"},  # a1 and a2 both score 5: a1 comes first
}


def _kept(result) -> set[str]:
    duplicates = {result.ids[i] for i in result.representatives if result.cluster_size[i] > 1}
    return duplicates


@pytest.fixture(scope="module")
def corpus():
    rows = _corpus()
    result = neardup.dedup(rows, method="minhash", id_field="id", threshold=0.5, engine="memory")
    groups = {frozenset(result.ids[result.clusters == c]) for c in set(result.clusters.tolist())}
    assert frozenset({"a0", "a1", "a2", "a3"}) in groups and frozenset({"b0", "b1"}) in groups
    return rows


@pytest.mark.parametrize("engine", ["memory", "local"])
@pytest.mark.parametrize("policy", sorted(EXPECTED))
def test_each_policy_keeps_the_documented_record(corpus, engine, policy):
    keep = {"keep_by": "score"} if policy == "by-score" else {"keep": policy}
    result = neardup.dedup(corpus, method="minhash", id_field="id", date_field="date", threshold=0.5,
                           engine=engine, **keep)
    assert _kept(result) == EXPECTED[policy]
    table = pa.Table.from_pylist(corpus)  # tables read their values column by column
    again = neardup.dedup(table, method="minhash", id_field="id", date_field="date", threshold=0.5,
                          engine=engine, **keep)
    assert _kept(again) == EXPECTED[policy]


def test_python_errors_name_the_parameter(corpus):
    with pytest.raises(ParameterError, match="'keep'.*date_field"):
        neardup.dedup(corpus, keep="earliest")
    with pytest.raises(ParameterError, match="unset when keep_by"):
        neardup.dedup(corpus, keep="first", keep_by="score")


def _write(tmp_path, rows):
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("engine", ["memory", "local"])
def test_cli_keep_by_and_annotate(corpus, tmp_path, engine):
    source = _write(tmp_path, corpus)
    clusters, out = tmp_path / "clusters.parquet", tmp_path / "annotated.jsonl"
    args = ["dedup", str(source), "--method", "minhash", "--threshold", "0.5", "--id-field", "id",
            "--date-field", "date", "--engine", engine, "--quiet"]
    result = CliRunner().invoke(main, [*args, "--keep", "latest", "--annotate", "--out", str(out),
                                       "--clusters-out", str(clusters)])
    assert result.exit_code == 0, result.output
    marked = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in marked] == [r["id"] for r in corpus]  # every record, once, in order
    assert all({k: r[k] for k in r if k in corpus[0]} == c for r, c in zip(marked, corpus))
    table = pq.read_table(clusters).to_pylist()
    for row, rec in zip(table, marked):
        assert rec["cluster"] == row["cluster"] and rec["cluster_size"] == row["cluster_size"]
        assert rec["is_representative"] == row["representative"]
    kept = {r["cluster"]: r["id"] for r in marked if r["is_representative"]}
    assert {kept[r["cluster"]] for r in marked if r["cluster_size"] > 1} == EXPECTED["latest"]
    for r in marked:
        assert r["duplicate_of"] == (None if r["is_representative"] else kept[r["cluster"]])
    kept_out = tmp_path / "kept.jsonl"
    assert CliRunner().invoke(main, [*args, "--keep-by", "score", "--out", str(kept_out)]).exit_code == 0
    ids = {json.loads(line)["id"] for line in kept_out.read_text().splitlines()}
    assert ids == EXPECTED["by-score"] | {"s0", "s1"}


def test_annotations_table_is_what_annotate_writes(corpus, tmp_path):
    """``Result.annotations_table()`` (docs/policies.md): the id and the four columns
    ``--annotate`` adds, one row per input document in input order."""
    result = neardup.dedup(corpus, method="minhash", id_field="id", threshold=0.5, engine="memory",
                           date_field="date", keep="latest")
    table = result.annotations_table()
    assert table.column_names == ["id", "cluster", "cluster_size", "is_representative", "duplicate_of"]
    source, out = _write(tmp_path, corpus), tmp_path / "annotated.jsonl"
    run = CliRunner().invoke(main, ["dedup", str(source), "--method", "minhash", "--threshold", "0.5",
                                    "--id-field", "id", "--date-field", "date", "--engine", "memory",
                                    "--keep", "latest", "--annotate", "--out", str(out), "--quiet"])
    assert run.exit_code == 0, run.output
    marked = [json.loads(line) for line in out.read_text().splitlines()]
    assert table.to_pylist() == [{k: r[k] for k in table.column_names} for r in marked]


@pytest.mark.parametrize("extra, message", [
    (["--keep", "first", "--keep-by", "score"], "give one of them"),
    (["--keep", "earliest"], "--keep earliest chooses by date: give --date-field"),
    (["--annotate"], "--annotate marks the records it writes to --out"),
    (["--keep-by", "text"], "field 'text' (--keep-by) must hold a number"),
])
def test_cli_errors_name_the_flags(corpus, tmp_path, extra, message):
    source = _write(tmp_path, corpus)
    result = CliRunner().invoke(main, ["dedup", str(source), "--quiet", *extra])
    assert result.exit_code != 0
    assert message in result.output and "Traceback" not in result.output


def test_annotate_refuses_a_field_it_would_overwrite(tmp_path):
    source = _write(tmp_path, [{"text": BASE, "cluster": 4}])
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(main, ["dedup", str(source), "--annotate", "--out", str(out), "--quiet"])
    assert result.exit_code != 0 and "already has the field 'cluster'" in result.output
    assert not out.exists()
