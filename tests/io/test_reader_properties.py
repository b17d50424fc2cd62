"""Property tests of the readers: whatever the bytes or the record shapes, a reader yields
clean documents or raises InputError naming the problem; never another exception."""

from __future__ import annotations

import csv
import gzip
import io
import json
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup.errors import InputError
from neardup.io import ReaderConfig, iter_records, read_corpus

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
FIELDS = st.sampled_from(["text", "id", "date", "x"])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
    | st.text(max_size=20) | st.sampled_from(["2020-01-01", "1987-02-26T15:01:01Z", "12"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
CONFIGS = st.builds(
    ReaderConfig,
    text_field=st.just("text"),
    id_field=st.sampled_from([None, "id"]),
    date_field=st.sampled_from([None, "date"]),
    errors=st.sampled_from(["strict", "replace"]),
    batch_size=st.integers(1, 5),
    limit=st.sampled_from([None, 0, 1, 3]),
)


def check_clean_or_input_error(path: Path, config: ReaderConfig) -> None:
    """Read ``path`` fully: clean batches, or an InputError that names the input."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnicodeWarning)  # errors="replace" reports by warning
        try:
            batches = list(read_corpus([path], config))
        except InputError as exc:
            assert str(exc), "an InputError without a message"
            return
        total = 0
        for batch in batches:
            assert all(type(t) is str for t in batch.texts)
            assert all(type(i) is str for i in batch.ids)
            assert len(batch.ids) == len(batch.texts) == batch.rows.shape[0] <= config.batch_size
            if config.date_field is not None:
                assert batch.dates is not None and batch.dates.dtype == np.dtype("datetime64[s]")
            total += len(batch)
        if config.limit is not None:
            assert total <= config.limit
        if config.id_field is not None:
            ids = [i for b in batches for i in b.ids]
            assert len(set(ids)) == len(ids)
        # The second pass (iter_records) agrees in count with the first.
        assert sum(1 for _ in iter_records([path], config)) == total


def _write(directory: Path, name: str, data: bytes) -> Path:
    path = directory / name
    path.write_bytes(data)
    return path


@SETTINGS
@given(data=st.binary(max_size=300),
       name=st.sampled_from(["c.jsonl", "c.jsonl.gz", "c.csv", "c.tsv", "c.parquet"]),
       config=CONFIGS)
def test_random_bytes(data, name, config):
    with tempfile.TemporaryDirectory() as directory:
        check_clean_or_input_error(_write(Path(directory), name, data), config)


@SETTINGS
@given(prefix=st.binary(max_size=40), config=CONFIGS)
def test_random_bytes_after_a_valid_line(prefix, config):
    """Bytes after a good record, plain and gzip-compressed (truncated streams included)."""
    good = json.dumps({"text": "fine", "id": "a", "date": "2020-01-01"}).encode() + b"\n"
    with tempfile.TemporaryDirectory() as directory:
        check_clean_or_input_error(_write(Path(directory), "c.jsonl", good + prefix), config)
        packed = gzip.compress(good + prefix)
        cut = packed[: max(1, len(packed) - len(prefix) % 7)]
        check_clean_or_input_error(_write(Path(directory), "c.jsonl.gz", cut), config)


@SETTINGS
@given(lines=st.lists(JSON_VALUES | st.dictionaries(FIELDS, JSON_VALUES, max_size=4), max_size=6),
       config=CONFIGS)
def test_random_json_shapes(lines, config):
    data = "".join(json.dumps(line, allow_nan=True) + "\n" for line in lines).encode()
    with tempfile.TemporaryDirectory() as directory:
        check_clean_or_input_error(_write(Path(directory), "c.jsonl", data), config)


@SETTINGS
@given(header=st.lists(FIELDS | st.text(max_size=4), max_size=4),
       rows=st.lists(st.lists(st.text(max_size=12), max_size=5), max_size=5),
       delimiter=st.sampled_from([",", "\t"]), config=CONFIGS)
def test_random_csv_shapes(header, rows, delimiter, config):
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    name = "c.csv" if delimiter == "," else "c.tsv"
    with tempfile.TemporaryDirectory() as directory:
        path = _write(Path(directory), name, buffer.getvalue().encode())
        check_clean_or_input_error(path, config)


ARROW_COLUMNS = st.sampled_from([
    pa.array(["a", "b", None]), pa.array([1, 2, 3]), pa.array([b"x", b"\xff", None]),
    pa.array([0, None, 10**9], pa.timestamp("s")), pa.array(["2020-01-01", "bad", None]),
    pa.array([[1], [], None]), pa.array([1.5, float("nan"), None]),
])


@SETTINGS
@given(columns=st.dictionaries(FIELDS, ARROW_COLUMNS, max_size=4), config=CONFIGS)
def test_random_parquet_shapes(columns, config):
    table = pa.table(columns) if columns else pa.table({"other": [1, 2, 3]})
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "c.parquet"
        pq.write_table(table, path)
        check_clean_or_input_error(path, config)
