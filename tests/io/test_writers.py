"""Writers: atomic replacement, byte-identical repeats, every output format."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup.io import ReaderConfig, atomic_path, iter_records, read_corpus, write_records, write_table
from neardup.io import writers

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "io"
FORMATS = ["parquet", "jsonl", "jsonl.gz", "csv", "tsv"]


def sample_table() -> pa.Table:
    return pa.table({
        "id": ["a", "b", "c"],
        "text": ["plain", 'tab\there, "quotes", comma', "line\nbreak é 🦊"],
        "score": [0.5, float("nan"), None],
        "n": pa.array([1, None, 3], pa.int64()),
        "flag": [True, False, None],
        "tags": [["x", "y"], [], None],
        "when": pa.array([dt.datetime(2024, 5, 1, 12), None, dt.datetime(1987, 2, 26)], pa.timestamp("s")),
    })


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


# --- atomic_path -----------------------------------------------------------------------


def test_atomic_path_moves_into_place(tmp_path):
    target = tmp_path / "sub" / "out.txt"
    with atomic_path(target) as temporary:
        assert temporary.parent == target.parent and not temporary.exists()
        temporary.write_text("done")
        assert not target.exists()  # nothing visible until the block succeeds
    assert target.read_text() == "done"
    assert leftovers(target.parent) == []


def test_atomic_path_failure_leaves_nothing(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_path(target) as temporary:
            temporary.write_text("partial")
            raise RuntimeError("boom")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_atomic_path_failure_keeps_existing_file(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with atomic_path(target) as temporary:
            temporary.write_text("new but unfinished")
            raise KeyboardInterrupt
    assert target.read_text() == "old"
    assert leftovers(tmp_path) == []


def test_atomic_path_block_must_create_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="did not create"):
        with atomic_path(tmp_path / "out.txt"):
            pass
    assert list(tmp_path.iterdir()) == []


# --- write_table -----------------------------------------------------------------------


@pytest.mark.parametrize("extension", FORMATS)
def test_write_table_repeated_writes_are_byte_identical(tmp_path, monkeypatch, extension):
    first, second = tmp_path / f"1.{extension}", tmp_path / f"2.{extension}"
    table = sample_table()
    if extension == "tsv":  # TSV cannot hold the tab and line break of the sample texts
        table = table.drop_columns(["text"])
    write_table(first, table)
    later = time.time() + 86_400  # a different clock must not change the bytes (gzip mtime)
    monkeypatch.setattr(time, "time", lambda: later)
    write_table(second, table)
    assert first.read_bytes() == second.read_bytes()


def test_write_table_parquet_round_trip(tmp_path):
    path = tmp_path / "t.parquet"
    write_table(path, sample_table())
    back = pq.read_table(path)
    assert back.column_names == sample_table().column_names
    for name in ("id", "text", "n", "flag", "tags", "when"):  # Parquet stores seconds as ms
        assert back.column(name).to_pylist() == sample_table().column(name).to_pylist()
    score = back.column("score").to_pylist()
    assert score[0] == 0.5 and score[1] != score[1] and score[2] is None  # NaN and null kept apart


def test_write_table_jsonl_content(tmp_path):
    path = tmp_path / "t.jsonl.gz"
    write_table(path, sample_table())
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    assert len(lines) == 3
    first = json.loads(lines[0])
    assert list(first) == sample_table().column_names  # stable key order: column order
    assert first == {"id": "a", "text": "plain", "score": 0.5, "n": 1, "flag": True,
                     "tags": ["x", "y"], "when": "2024-05-01T12:00:00"}
    assert json.loads(lines[1])["score"] is None  # NaN is not JSON
    assert "🦊" in lines[2]  # UTF-8, not \u escapes


@pytest.mark.parametrize("extension", ["csv", "tsv"])
def test_write_table_delimited_reads_back(tmp_path, extension):
    path = tmp_path / f"t.{extension}"
    table = sample_table()
    if extension == "tsv":  # TSV has no quoting: no tab or line break in a value
        table = table.set_column(1, "text", pa.array(["plain", 'no tab, "quotes", comma',
                                                      "one line é 🦊"]))
    write_table(path, table)
    records = list(iter_records([path]))
    assert [r["text"] for r in records] == table.column("text").to_pylist()
    assert records[0] == {"id": "a", "text": "plain", "score": "0.5", "n": "1", "flag": "true",
                          "tags": '["x","y"]', "when": "2024-05-01T12:00:00"}
    assert records[1]["score"] == "" and records[2]["n"] == "3"


def test_write_table_failure_keeps_existing_file(tmp_path, monkeypatch):
    path = tmp_path / "t.jsonl"
    path.write_text("previous\n")
    calls = []
    original = writers._json_line

    def failing(record):
        calls.append(record)
        if len(calls) == 2:
            raise OSError("disk full")
        return original(record)

    monkeypatch.setattr(writers, "_json_line", failing)
    with pytest.raises(OSError, match="disk full"):
        write_table(path, sample_table())
    assert path.read_text() == "previous\n"
    assert leftovers(tmp_path) == []


def test_write_table_rejects_unknown_extension_and_non_tables(tmp_path):
    with pytest.raises(ValueError, match=r"write_table: parameter 'path' must be a path ending in .*'\.parquet'.*; got '.*t\.xlsx'"):
        write_table(tmp_path / "t.xlsx", sample_table())
    with pytest.raises(TypeError, match="must be a pyarrow.Table"):
        write_table(tmp_path / "t.parquet", {"a": [1]})
    assert list(tmp_path.iterdir()) == []


def test_write_table_empty(tmp_path):
    table = pa.table({"id": pa.array([], pa.string()), "text": pa.array([], pa.string())})
    for extension in FORMATS:
        write_table(tmp_path / f"e.{extension}", table)
    assert (tmp_path / "e.jsonl").read_bytes() == b""
    assert (tmp_path / "e.csv").read_text() == "id,text\n"
    assert pq.read_table(tmp_path / "e.parquet").num_rows == 0


# --- write_records ---------------------------------------------------------------------

RECORDS = [
    {"id": "1", "text": "first", "meta": {"lang": "en"}},
    {"text": "second", "id": "2", "extra": 5},
    {"id": "3", "text": "third", "extra": 2.5},
]


def test_write_records_jsonl_streams_records_as_given(tmp_path):
    path = tmp_path / "r.jsonl"

    def generate():
        yield from RECORDS

    assert write_records(path, generate()) == 3
    lines = path.read_text().splitlines()
    assert [json.loads(line) for line in lines] == RECORDS
    assert lines[1] == '{"text":"second","id":"2","extra":5}'  # key order kept


def test_write_records_gz_round_trip(tmp_path):
    path = tmp_path / "r.jsonl.gz"
    assert write_records(path, RECORDS) == 3
    assert list(iter_records([path])) == RECORDS


def test_write_records_parquet_unions_columns(tmp_path):
    path = tmp_path / "r.parquet"
    assert write_records(path, RECORDS) == 3
    table = pq.read_table(path)
    assert table.column_names == ["id", "text", "meta", "extra"]
    assert table.column("extra").to_pylist() == [None, 5.0, 2.5]  # int widened to float
    assert table.column("meta").to_pylist() == [{"lang": "en"}, None, None]


def test_write_records_spills_in_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(writers, "_CHUNK_ROWS", 4)
    records = [{"id": str(i), "text": f"t{i}"} for i in range(10)]
    records[9]["late"] = "only in the last chunk"
    for extension in ("parquet", "csv"):
        path = tmp_path / f"r.{extension}"
        assert write_records(path, iter(records)) == 10
        read_back = list(iter_records([path]))
        assert [r["id"] for r in read_back] == [str(i) for i in range(10)]
        assert read_back[9]["late"] == "only in the last chunk"
        assert read_back[0]["late"] in (None, "")
    assert leftovers(tmp_path) == []  # spill directory removed


def test_write_records_is_deterministic(tmp_path):
    for extension in FORMATS:
        write_records(tmp_path / f"1.{extension}", RECORDS)
        write_records(tmp_path / f"2.{extension}", RECORDS)
        assert (tmp_path / f"1.{extension}").read_bytes() == (tmp_path / f"2.{extension}").read_bytes()


def test_write_records_mixed_types_become_strings_in_parquet(tmp_path, monkeypatch):
    """Issue #40: a field holding integers and strings is written (not refused after the
    run): as strings in Parquet, with a warning naming it; as its text in CSV/TSV."""
    monkeypatch.setattr(writers, "_CHUNK_ROWS", 2)  # in one chunk and across chunks
    records = [{"x": 1}, {"x": "one"}, {"x": 2}, {"x": 3}, {"x": {"a": 1}}]
    with pytest.warns(UserWarning, match=r"'x' \(.*integer.*string.*\).*written as strings"):
        write_records(tmp_path / "r.parquet", records)
    assert pq.read_table(tmp_path / "r.parquet").column("x").to_pylist() == [
        "1", "one", "2", "3", '{"a":1}']
    for extension in ("csv", "tsv"):
        write_records(tmp_path / f"r.{extension}", records)
        assert [r["x"] for r in iter_records([tmp_path / f"r.{extension}"])] == [
            "1", "one", "2", "3", '{"a":1}']
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("value", ["a\rb", "a\nb", "a\r\nb", 'a"b', "a,b", '"', "a\tb", " a "])
def test_csv_quotes_every_value_that_needs_it(tmp_path, value):
    """Issue #40: a bare carriage return was written unquoted and broke the row."""
    path = tmp_path / "r.csv"
    write_records(path, [{"id": value, "text": "x"}, {"id": "next", "text": "y"}])
    assert [(r["id"], r["text"]) for r in iter_records([path])] == [(value, "x"), ("next", "y")]
    write_table(path, pa.table({"id": [value, "next"]}))
    assert [r["id"] for r in iter_records([path])] == [value, "next"]


@pytest.mark.parametrize("value", ["a\rb", "a\nb", "a\tb"])
def test_tsv_refuses_tabs_and_line_breaks(tmp_path, value):
    path = tmp_path / "r.tsv"
    path.write_bytes(b"previous")
    with pytest.raises(ValueError, match=r"row 2, column 'id'.*TSV file cannot hold.*\.csv"):
        write_records(path, [{"id": "a", "text": "x"}, {"id": value, "text": "y"}])
    with pytest.raises(ValueError, match=r"row 1, column 'id'.*TSV file cannot hold"):
        write_table(path, pa.table({"id": [value]}))
    assert path.read_bytes() == b"previous"
    assert leftovers(tmp_path) == []


def test_records_keep_nan_and_infinity(tmp_path):
    """Issue #40: NaN/Infinity read from JSON Lines became null in --out."""
    records = [{"x": float("nan"), "y": float("inf"), "z": [float("-inf")]}]
    write_records(tmp_path / "r.jsonl", records)
    assert (tmp_path / "r.jsonl").read_text() == '{"x":NaN,"y":Infinity,"z":[-Infinity]}\n'
    back = list(iter_records([tmp_path / "r.jsonl"]))[0]
    assert back["x"] != back["x"] and back["y"] == float("inf") and back["z"] == [float("-inf")]
    write_records(tmp_path / "r.csv", records)
    assert (tmp_path / "r.csv").read_text() == 'x,y,z\nNaN,Infinity,[-Infinity]\n'


def test_write_records_rejects_non_dicts(tmp_path):
    with pytest.raises(TypeError, match="record 1 is a list"):
        write_records(tmp_path / "r.jsonl", [{"a": 1}, ["not", "a", "dict"]])
    assert list(tmp_path.iterdir()) == []


def test_write_records_empty(tmp_path):
    for extension in FORMATS:
        assert write_records(tmp_path / f"e.{extension}", []) == 0
    assert (tmp_path / "e.jsonl").read_bytes() == b""
    assert (tmp_path / "e.csv").read_bytes() == b""
    assert pq.read_table(tmp_path / "e.parquet").num_rows == 0


def test_reuters_records_to_parquet_and_back(tmp_path):
    source = FIXTURES / "reuters_small.sgm"
    path = tmp_path / "kept.parquet"
    assert write_records(path, iter_records([source])) == 5
    table = pq.read_table(path)
    assert table.column("id").to_pylist() == ["101", "102", "103", "104", "105"]
    assert table.column("topics").to_pylist()[0] == ["cocoa", "grain"]
    batch = next(read_corpus([path], ReaderConfig(id_field="id", date_field="date")))
    original = next(read_corpus([source]))
    assert batch.texts == original.texts
    assert (batch.dates == original.dates).all()


def test_a_single_empty_value_is_not_an_empty_line(tmp_path):
    records = [{"text": ""}, {"text": "x"}, {"text": ""}]
    write_records(tmp_path / "r.csv", records)
    assert [r["text"] for r in iter_records([tmp_path / "r.csv"])] == ["", "x", ""]
    with pytest.raises(ValueError, match="row 1 has one column, empty"):
        write_records(tmp_path / "r.tsv", records)
    assert not (tmp_path / "r.tsv").exists()


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
                         min_size=1, max_size=3), min_size=1, max_size=4))
def test_csv_round_trips_any_text(tmp_path_factory, rows):
    """Issue #40: every value, whatever characters it holds, reads back as written."""
    path = tmp_path_factory.mktemp("csv") / "r.csv"
    width = max(len(r) for r in rows)
    records = [{f"c{k}": (row[k] if k < len(row) else "") for k in range(width)} for row in rows]
    write_records(path, records)
    assert list(iter_records([path])) == records
