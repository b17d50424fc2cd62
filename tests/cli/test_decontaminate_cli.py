"""`neardup decontaminate` as a user runs it: every training record in exactly one of
--out and --removed-out (or once in --out, marked), the report per evaluation set, the
index of the items reused, and errors worded with flags."""

from __future__ import annotations

import json

import click
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.cli.decontaminate import decontaminate_command
from tests.decontaminate.planted import make_planted


@pytest.fixture(scope="module")
def planted():
    return make_planted()


def _jsonl(path, texts, prefix):
    path.write_text("".join(json.dumps({"id": f"{prefix}{i}", "text": t, "n": i}) + "\n"
                            for i, t in enumerate(texts)))
    return path


@pytest.fixture()
def files(planted, tmp_path):
    texts = list(planted["clean"][:120])
    planted_rows = set()
    for docs in planted["planted"].values():
        for text, _ in docs:
            planted_rows.add(len(texts))
            texts.append(text)
    half = len(texts) // 2
    train = [_jsonl(tmp_path / "train-a.jsonl", texts[:half], "a"),
             _jsonl(tmp_path / "train-b.jsonl", texts[half:], "b")]
    ids = [f"a{i}" for i in range(half)] + [f"b{i}" for i in range(len(texts) - half)]
    evals = [_jsonl(tmp_path / "set1.jsonl", planted["items"][:30], "q"),
             _jsonl(tmp_path / "set2.jsonl", planted["items"][30:], "r")]
    return {"train": train, "evals": evals, "dirty": {ids[r] for r in planted_rows}, "ids": ids}


def _run(files, *extra):
    args = ["decontaminate", *map(str, files["train"])]
    for path in files["evals"]:
        args += ["--against", str(path)]
    return CliRunner().invoke(main, [*args, "--id-field", "id", *map(str, extra)])


def test_split_is_exact_and_report_says_where(files, tmp_path):
    out, removed, report = tmp_path / "clean.jsonl", tmp_path / "removed.parquet", tmp_path / "r.json"
    leaks = tmp_path / "leaks.csv"
    result = _run(files, "--out", out, "--removed-out", removed, "--report", report, "--leaks-out", leaks)
    assert result.exit_code == 0, result.output
    kept = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    gone = pq.read_table(removed).column("id").to_pylist()
    assert sorted(kept + gone) == sorted(files["ids"])  # each record exactly once
    assert set(gone) == files["dirty"]
    data = json.loads(report.read_text())
    sets = {s["eval_set"]: s for s in data["eval_sets"]}
    assert [sets[str(p)]["items_leaked"] for p in files["evals"]] == [30, 5]
    leaked = sets[str(files["evals"][0])]["leaked_items"]
    assert all(entry["matches"] for entry in leaked)
    assert {t for e in leaked for m in e["matches"].values() for t in m["train_ids"]} <= files["dirty"]
    assert data["summary"]["train_contaminated"] == len(files["dirty"])
    assert f"contaminated: {len(files['dirty'])}" in result.output


def test_mark_writes_every_record_once(files, tmp_path):
    out = tmp_path / "marked.parquet"
    result = _run(files, "--out", out, "--mark", "--quiet")
    assert result.exit_code == 0, result.output
    rows = pq.read_table(out).to_pylist()
    assert [r["id"] for r in rows] == files["ids"]
    assert {r["id"] for r in rows if r["contaminated"]} == files["dirty"]
    assert all((r["contaminated_by"] is not None) == r["contaminated"] for r in rows)
    assert all(r["contaminated_by"].split(":")[0].endswith(".jsonl") for r in rows if r["contaminated"])


def test_eval_index_is_built_then_reused(files, tmp_path):
    index = tmp_path / "eval-index"
    first, second = tmp_path / "r1.json", tmp_path / "r2.json"
    assert _run(files, "--report", first, "--eval-index", index, "-q").exit_code == 0
    assert _run(files, "--report", second, "--eval-index", index, "-q").exit_code == 0
    one, two = json.loads(first.read_text()), json.loads(second.read_text())
    assert not one["params"]["eval_index_reused"] and two["params"]["eval_index_reused"]
    assert one["eval_sets"] == two["eval_sets"]
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "x", "text": "another item entirely"}) + "\n")
    result = CliRunner().invoke(main, ["decontaminate", str(files["train"][0]), "--against", str(other),
                                       "--id-field", "id", "--report", str(tmp_path / "r3.json"),
                                       "--eval-index", str(index)])
    assert result.exit_code == 1 and "--eval-index" in result.output and "other" in result.output
    assert not (tmp_path / "r3.json").exists()


@pytest.mark.parametrize("extra, message", [
    ([], "nothing to write"),
    (["--mark", "--report", "r.json"], "--mark marks the records it writes to --out"),
    (["--mark", "--out", "o.jsonl", "--removed-out", "x.jsonl"], "--removed-out would stay empty"),
    (["--no-near", "--near-threshold", "0.4", "--report", "r.json"], "--near-threshold applies"),
    (["--no-near", "--ngram", "0", "--report", "r.json"], "--ngram 0 with --no-near"),
    (["--near-shingle", "chars:5", "--report", "r.json"], "--near-shingle"),
    (["--near-threshold", "1.5", "--report", "r.json"], "--near-threshold"),
    (["--out", "clean.xlsx"], "--out"),
    (["--near-method", "ngram", "--report", "r.json"], "needs --near-engine memory"),
    (["--near-engine", "memory", "--eval-index", "ix", "--report", "r.json"], "--eval-index applies to --near-engine index"),
])
def test_errors_name_the_flags(files, tmp_path, monkeypatch, extra, message):
    monkeypatch.chdir(tmp_path)
    result = _run(files, *extra)
    assert result.exit_code != 0, result.output
    assert message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "o.jsonl").exists()


def test_output_on_an_input_is_refused(files):
    result = _run(files, "--out", files["train"][0])
    assert result.exit_code != 0 and "--out" in result.output
    assert files["train"][0].read_text()


def test_every_option_is_documented():
    assert all(p.help for p in decontaminate_command.params if isinstance(p, click.Option))


def test_memory_engine_with_any_method(files, tmp_path):
    out, removed = tmp_path / "clean.jsonl", tmp_path / "removed.jsonl"
    result = _run(files, "--out", out, "--removed-out", removed, "--near-engine", "memory",
                  "--near-method", "ngram", "--near-threshold", "0.3", "-q")
    assert result.exit_code == 0, result.output
    gone = {json.loads(line)["id"] for line in removed.read_text().splitlines()}
    kept = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert sorted(kept + list(gone)) == sorted(files["ids"])
    # The 13-gram rule alone finds the exact copies; ngram (word 3-grams) adds noisy ones.
    assert len(gone & files["dirty"]) >= 25 and not gone - files["dirty"]


def test_parquet_training_data_into_parquet_keeps_its_column_types(files, tmp_path):
    # Parquet in, Parquet out: the kept and the removed rows are copied as Arrow batches,
    # so a 32-bit integer column stays one (a trip through Python values widens it).
    import pyarrow as pa

    train = []
    for path in files["train"]:
        table = pa.Table.from_pylist([json.loads(line) for line in path.read_text().splitlines()])
        table = table.set_column(2, "n", table.column("n").cast(pa.int32()))
        train.append(tmp_path / path.name.replace(".jsonl", ".parquet"))
        pq.write_table(table, train[-1], row_group_size=25)
    out, removed = tmp_path / "clean.parquet", tmp_path / "removed.parquet"
    result = _run({**files, "train": train}, "--out", out, "--removed-out", removed, "--quiet")
    assert result.exit_code == 0, result.output
    schema = pq.read_schema(train[0]).remove_metadata()
    kept, gone = pq.read_table(out), pq.read_table(removed)
    assert kept.schema.equals(schema) and gone.schema.equals(schema)
    assert set(gone.column("id").to_pylist()) == files["dirty"]
    everything = pa.concat_tables([pq.read_table(p) for p in train])
    dirty = pa.array([i in files["dirty"] for i in everything.column("id").to_pylist()])
    assert kept.equals(everything.filter(pa.compute.invert(dirty)).replace_schema_metadata(None))
