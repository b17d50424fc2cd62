"""`neardup dedup --out X.parquet` on Parquet inputs: the kept rows go from the inputs' Arrow
batches to Parquet, keeping every column's type (an input rewritten during the run:
tests/cli/test_dedup_hostile.py)."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.io import ReaderConfig, iter_record_batches, iter_records, parquet_inputs_schema

STORY = "the central bank raised its key interest rate by half a point on tuesday"


def typed_table(n: int, tag: str = "", first: int = 0) -> pa.Table:
    """``n`` rows whose columns have types a trip through Python objects would change:
    32-bit integers, a zoned millisecond timestamp, a dictionary, a list of 16-bit
    integers, a decimal."""
    start = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
    rows = range(first, first + n)
    return pa.table({
        "id": [f"d{i}" for i in rows],
        "text": [STORY + tag if i % 2 else f"story {i} about wheat{tag}" for i in rows],
        "n": pa.array(list(rows), pa.int32()),
        "when": pa.array([start + dt.timedelta(hours=i) for i in rows], pa.timestamp("ms", tz="UTC")),
        "source": pa.array(["wire" if i % 3 else "paper" for i in rows]).dictionary_encode(),
        "tags": pa.array([[i, i + 1] for i in rows], pa.list_(pa.int16())),
        "price": pa.array([Decimal(f"{i}.25") for i in rows], pa.decimal128(9, 2)),
    })


def write(path: Path, table: pa.Table, **options) -> Path:
    pq.write_table(table, path, **options)
    return path


def invoke(*args):
    return CliRunner().invoke(main, ["dedup", *map(str, args)])


def test_parquet_out_keeps_every_column_type_and_exactly_the_kept_rows(tmp_path):
    first = write(tmp_path / "a.parquet", typed_table(9), row_group_size=4)
    second = write(tmp_path / "b.parquet", typed_table(7, tag=" b", first=9))
    result = invoke(first, second, "--id-field", "id", "--method", "minhash", "--batch-size", "3",
                    "--out", tmp_path / "out.parquet", "--clusters-out", tmp_path / "c.parquet", "-q")
    assert result.exit_code == 0, result.output
    written = pq.read_table(tmp_path / "out.parquet")
    assert written.schema.equals(typed_table(1).schema)  # the same types, none widened or decoded
    keep = pq.read_table(tmp_path / "c.parquet").column("representative").to_pylist()
    inputs = pa.concat_tables([pq.read_table(first), pq.read_table(second)])
    assert 0 < written.num_rows < inputs.num_rows  # the corpus has copies to remove
    assert written.equals(inputs.filter(pa.array(keep)))


def test_inputs_of_other_schemas_take_the_record_path(tmp_path):
    first = write(tmp_path / "a.parquet", typed_table(6))
    second = write(tmp_path / "b.parquet", typed_table(6, tag=" b", first=6).drop_columns(["tags"]))
    assert parquet_inputs_schema([first, second]) is None
    result = invoke(first, second, "--id-field", "id", "--method", "minhash",
                    "--out", tmp_path / "out.parquet", "--clusters-out", tmp_path / "c.parquet", "-q")
    assert result.exit_code == 0, result.output
    keep = pq.read_table(tmp_path / "c.parquet").column("representative").to_pylist()
    records = list(iter_records([first, second]))
    expected = [r["id"] for r, kept in zip(records, keep) if kept]
    assert pq.read_table(tmp_path / "out.parquet").column("id").to_pylist() == expected


def test_limit_and_annotate(tmp_path):
    corpus = write(tmp_path / "a.parquet", typed_table(12), row_group_size=5)
    limited = invoke(corpus, "--id-field", "id", "--method", "minhash", "--limit", "7",
                     "--out", tmp_path / "limited.parquet", "-q")
    assert limited.exit_code == 0, limited.output
    ids = pq.read_table(tmp_path / "limited.parquet").column("id").to_pylist()
    assert set(ids) <= {f"d{i}" for i in range(7)} and "d0" in ids
    # --annotate writes every record with its cluster columns (the record path).
    annotated = invoke(corpus, "--id-field", "id", "--method", "minhash", "--annotate",
                       "--out", tmp_path / "annotated.parquet", "-q")
    assert annotated.exit_code == 0, annotated.output
    table = pq.read_table(tmp_path / "annotated.parquet")
    assert table.column("id").to_pylist() == [f"d{i}" for i in range(12)]
    assert table.column_names[-4:] == ["cluster", "cluster_size", "is_representative", "duplicate_of"]
    assert table.column("is_representative").to_pylist().count(False) > 0


def test_record_batches_hold_the_records_in_order(tmp_path):
    first = write(tmp_path / "a.parquet", typed_table(5), row_group_size=2)
    second = write(tmp_path / "b.parquet", typed_table(4, first=5))
    config = ReaderConfig(batch_size=3, limit=8)
    batches = list(iter_record_batches([first, second], config))
    assert [os.path.basename(source) for source, _ in batches].count("b.parquet") >= 1
    rows = [row for _, batch in batches for row in batch.to_pylist()]
    assert rows == list(iter_records([first, second], config))
    assert len(rows) == 8
    with pytest.raises(ValueError, match="not Parquet"):
        list(iter_record_batches([write_jsonl(tmp_path / "c.jsonl")]))


def write_jsonl(path: Path) -> Path:
    path.write_text('{"id": "x", "text": "y"}\n')
    return path
