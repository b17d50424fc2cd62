"""Corpus readers: every format, batching, ids, dates, and each kind of bad input."""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neardup.errors import InputError
from neardup.io import (
    DocumentBatch,
    ReaderConfig,
    detect_format,
    iter_records,
    read_corpus,
    write_table,
)

DOCS = [
    {"id": "a", "text": "The quick brown fox.", "date": "2024-05-01", "lang": "en"},
    {"id": "b", "text": "Zwölf Boxkämpfer jagen Viktor — «ü» 🦊", "date": None, "lang": "de"},
    {"id": "c", "text": "", "date": "2024-05-01T12:30:00Z", "lang": "xx"},
    {"id": "d", "text": "  \n\t ", "date": "2024-05-02T00:00:00+02:00", "lang": "xx"},
    {"id": "e", "text": 'quotes " and, commas\nand lines', "date": "1714564800", "lang": "en"},
]
EXPECTED_DATES = np.array(
    ["2024-05-01T00:00:00", "NaT", "2024-05-01T12:30:00", "2024-05-01T22:00:00",
     "2024-05-01T12:00:00"],
    dtype="datetime64[s]",
)


def write_jsonl(path: Path, records, *, gz: bool = False) -> Path:
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def read_all(paths, config: ReaderConfig = ReaderConfig()) -> list[DocumentBatch]:
    return list(read_corpus(paths, config))


def flat(batches, attribute):
    return [value for batch in batches for value in getattr(batch, attribute)]


# --- formats ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("a.jsonl", "jsonl"), ("a.json", "jsonl"), ("a.JSONL.GZ", "jsonl"), ("a.ndjson", "jsonl"),
        ("a.parquet", "parquet"), ("a.csv", "csv"), ("a.tsv", "tsv"), ("a.sgm", "reuters"),
    ],
)
def test_detect_format_by_extension(tmp_path, name, kind):
    (tmp_path / name).write_bytes(b"")
    assert detect_format(tmp_path / name) == kind


def test_detect_format_directory(tmp_path):
    assert detect_format(tmp_path) == "txtdir"


def test_unknown_extension_lists_supported_formats(tmp_path):
    path = tmp_path / "corpus.xml"
    path.write_text("<docs/>")
    with pytest.raises(InputError, match=r"corpus\.xml: unknown extension '\.xml'.*\.jsonl.*\.parquet.*\.csv.*\.tsv.*\.sgm.*directory"):
        read_corpus([path])


def test_missing_path_fails_before_reading_anything(tmp_path):
    good = write_jsonl(tmp_path / "good.jsonl", DOCS)
    with pytest.raises(InputError, match=r"nope\.jsonl: no such file or directory"):
        read_corpus([good, tmp_path / "nope.jsonl"])  # raised at call time, not on iteration


@pytest.mark.parametrize("extension", ["jsonl", "jsonl.gz", "parquet", "csv", "tsv"])
def test_round_trip_each_format(tmp_path, extension):
    path = tmp_path / f"corpus.{extension}"
    docs = DOCS
    if extension == "tsv":  # plain TSV: no quoting, so no tab, line break or quote to quote
        docs = [*DOCS[:3], {**DOCS[3], "text": "  "}, {**DOCS[4], "text": "commas, and more"}]
    write_table(path, pa.Table.from_pylist(docs))
    config = ReaderConfig(id_field="id", date_field="date")
    batches = read_all([path], config)
    assert len(batches) == 1
    batch = batches[0]
    assert batch.source == str(path)
    assert batch.ids == [d["id"] for d in docs]
    assert batch.texts == [d["text"] for d in docs]  # empty and blank texts kept as-is
    assert batch.rows.dtype == np.int64 and batch.rows.tolist() == [0, 1, 2, 3, 4]
    assert batch.dates.dtype == np.dtype("datetime64[s]")
    np.testing.assert_array_equal(batch.dates, EXPECTED_DATES)
    records = list(iter_records([path], config))
    assert [r["lang"] for r in records] == [d["lang"] for d in DOCS]  # all fields kept
    assert list(records[0]) == ["id", "text", "date", "lang"]


def test_gzip_jsonl_written_by_hand(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl.gz", DOCS, gz=True)
    assert flat(read_all([path]), "texts") == [d["text"] for d in DOCS]


def test_no_dates_unless_requested(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", DOCS)
    assert read_all([path])[0].dates is None


def test_several_inputs_use_global_row_ids_and_never_share_a_batch(tmp_path):
    first = write_jsonl(tmp_path / "1.jsonl", DOCS[:3])
    second = tmp_path / "2.parquet"
    write_table(second, pa.Table.from_pylist(DOCS[3:]))
    third = write_jsonl(tmp_path / "3.jsonl", DOCS[:2])
    batches = read_all([first, second, third], ReaderConfig(batch_size=100))
    assert [b.source for b in batches] == [str(first), str(second), str(third)]
    assert [len(b) for b in batches] == [3, 2, 2]
    assert flat(batches, "ids") == [str(i) for i in range(7)]
    assert [b.rows.tolist() for b in batches] == [[0, 1, 2], [0, 1], [0, 1]]


def test_batch_size_splits_within_a_file(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [{"text": f"doc {i}"} for i in range(25)])
    batches = read_all([path], ReaderConfig(batch_size=10))
    assert [len(b) for b in batches] == [10, 10, 5]
    assert batches[2].rows.tolist() == list(range(20, 25))
    assert batches[2].ids == [str(i) for i in range(20, 25)]


@pytest.mark.parametrize(("limit", "expected"), [(0, 0), (2, 2), (5, 5), (6, 6), (100, 8)])
def test_limit_counts_over_all_inputs(tmp_path, limit, expected):
    first = write_jsonl(tmp_path / "1.jsonl", DOCS)
    second = write_jsonl(tmp_path / "2.jsonl", DOCS[:3])
    config = ReaderConfig(limit=limit, batch_size=2)
    batches = read_all([first, second], config)
    assert sum(len(b) for b in batches) == expected
    assert all(len(b) > 0 for b in batches)
    assert len(list(iter_records([first, second], config))) == expected


def test_iter_records_aligns_with_read_corpus(tmp_path):
    first = write_jsonl(tmp_path / "1.jsonl", [{"k": i, "text": f"t{i}"} for i in range(7)])
    second = tmp_path / "2.csv"
    second.write_text("text,k\nx,1\n\ny,2\n")  # the blank line is not a record
    config = ReaderConfig(batch_size=3)
    texts = flat(read_all([first, second], config), "texts")
    assert [r["text"] for r in iter_records([first, second], config)] == texts


def test_single_path_is_accepted(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", DOCS)
    assert len(flat(read_all(path), "texts")) == len(DOCS)


def test_parquet_reads_only_needed_columns(tmp_path, monkeypatch):
    path = tmp_path / "c.parquet"
    write_table(path, pa.Table.from_pylist(DOCS))
    requested = []
    original = pq.ParquetFile.iter_batches

    def spy(self, *args, **kwargs):
        requested.append(kwargs.get("columns"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", spy)
    read_all([path], ReaderConfig(id_field="id"))
    assert requested == [["text", "id"]]


def test_parquet_timestamp_and_binary_columns(tmp_path):
    path = tmp_path / "c.parquet"
    table = pa.table({
        "text": pa.array([b"caf\xc3\xa9", b"plain"], pa.binary()),
        "when": pa.array([0, None], pa.timestamp("ms")),
    })
    pq.write_table(table, path)
    batch = read_all([path], ReaderConfig(date_field="when"))[0]
    assert batch.texts == ["café", "plain"]
    np.testing.assert_array_equal(batch.dates, np.array(["1970-01-01", "NaT"], "datetime64[s]"))


def test_txt_directory_recursive_sorted_relative_ids(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "z.txt").write_text("zed")
    (tmp_path / "a.txt").write_text("first")
    (tmp_path / "b" / "c.txt").write_bytes(b"\xef\xbb\xbfwith bom")
    (tmp_path / "notes.md").write_text("ignored")
    (tmp_path / "empty.txt").write_text("")
    batches = read_all([tmp_path], ReaderConfig(batch_size=2))
    assert flat(batches, "ids") == ["a.txt", "b/c.txt", "b/z.txt", "empty.txt"]
    assert flat(batches, "texts") == ["first", "with bom", "zed", ""]
    assert all(b.source == str(tmp_path) and b.dates is None for b in batches)
    assert list(iter_records([tmp_path]))[1] == {"id": "b/c.txt", "text": "with bom"}


def test_txt_directory_without_txt_files_is_an_error(tmp_path):
    (tmp_path / "reut2-000.sgm").write_text("")
    with pytest.raises(InputError, match=r"holds none: 1 other file\(s\) \(\.sgm\).*\*\.sgm"):
        read_all([tmp_path])


def test_txt_directory_beside_sgm_files_warns(tmp_path):
    # The Reuters-21578 folder: 22 .sgm files next to README.txt and category lists.
    (tmp_path / "reut2-000.sgm").write_text("")
    (tmp_path / "README.txt").write_text("about the collection")
    with pytest.warns(UserWarning, match=r"reading its 1 \.txt file\(s\) only.*\*\.sgm"):
        assert flat(read_all([tmp_path]), "ids") == ["README.txt"]


def test_two_directories_with_the_same_relative_path(tmp_path):
    for name in ("x", "y"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "doc.txt").write_text(name)
    with pytest.raises(InputError, match=r"y, file 'doc.txt': duplicate id 'doc.txt', first seen in .*x, file 'doc.txt'"):
        read_all([tmp_path / "x", tmp_path / "y"])


def test_empty_inputs(tmp_path):
    empty_jsonl = tmp_path / "e.jsonl"
    empty_jsonl.write_bytes(b"\n \n")
    empty_csv = tmp_path / "e.csv"
    empty_csv.write_text("text,id\n")
    assert read_all([empty_jsonl, empty_csv]) == []
    assert read_all([]) == []


def test_five_megabyte_document(tmp_path):
    big = ("lorem ipsum dolor sit amet " * 200_000)[:5_000_000] + "é"
    jsonl = write_jsonl(tmp_path / "big.jsonl", [{"text": "small"}, {"text": big}])
    csv_path = tmp_path / "big.csv"
    write_table(csv_path, pa.table({"text": ["small", big]}))
    for path in (jsonl, csv_path):
        texts = flat(read_all([path]), "texts")
        assert len(texts) == 2 and texts[1] == big


def test_reading_is_lazy(tmp_path):
    lines = [json.dumps({"text": f"t{i}"}) for i in range(5)] + ["{broken"]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(lines) + "\n")
    stream = read_corpus([path], ReaderConfig(batch_size=5))
    assert next(stream).texts == [f"t{i}" for i in range(5)]  # before the bad line is read
    with pytest.raises(InputError, match="line 6"):
        next(stream)


# --- dates -----------------------------------------------------------------------------


def test_date_forms(tmp_path):
    values = [
        "2024-05-01", "2024-05-01T01:02:03", "2024-05-01 01:02:03.999", "2024-05-01T00:00:00Z",
        "2024-05-01T02:00:00+02:00", 1714521600, 1714521600.9, "1714521600", "26-FEB-1987 15:01:01.79",
        " 3-MAR-1987 09:15:05.40 noise", None, "", "  ",
    ]
    path = write_jsonl(tmp_path / "d.jsonl", [{"text": "x", "when": v} for v in values] + [{"text": "y"}])
    dates = read_all([path], ReaderConfig(date_field="when"))[0].dates
    expected = [
        "2024-05-01T00:00:00", "2024-05-01T01:02:03", "2024-05-01T01:02:03", "2024-05-01T00:00:00",
        "2024-05-01T00:00:00", "2024-05-01T00:00:00", "2024-05-01T00:00:00", "2024-05-01T00:00:00",
        "1987-02-26T15:01:01", "1987-03-03T09:15:05", "NaT", "NaT", "NaT", "NaT",
    ]
    np.testing.assert_array_equal(dates, np.array(expected, dtype="datetime64[s]"))


@pytest.mark.parametrize("value", ["yesterday", "2024-13-01", "31-MAR-1987 605:12:19", True, [2024]])
def test_unparseable_date_names_file_and_line(tmp_path, value):
    path = write_jsonl(tmp_path / "d.jsonl", [{"text": "ok", "when": "2024-01-01"}, {"text": "x", "when": value}])
    with pytest.raises(InputError, match=r"d\.jsonl, line 2: date field 'when' holds .*not a date"):
        read_all([path], ReaderConfig(date_field="when"))


def test_csv_missing_date_column(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("text\nhello\n")
    with pytest.raises(InputError, match=r"c\.csv, line 1: no column 'when' in the header; the columns are 'text'"):
        read_all([path], ReaderConfig(date_field="when"))


# --- bad input -------------------------------------------------------------------------


def test_jsonl_record_without_text_field(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [{"text": "ok"}, {"id": 1, "body": "where is it"}])
    with pytest.raises(InputError, match=r"c\.jsonl, line 2: the record has no text field 'text'; it has 'id', 'body'"):
        read_all([path])


def test_parquet_without_text_column(tmp_path):
    path = tmp_path / "c.parquet"
    pq.write_table(pa.table({"body": ["x"], "id": [1]}), path)
    with pytest.raises(InputError, match=r"c\.parquet: no column 'text'.*columns are 'body', 'id'"):
        read_all([path])


def test_csv_without_text_column(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("body,id\nx,1\n")
    with pytest.raises(InputError, match=r"c\.csv, line 1: no column 'text'.*'body', 'id'"):
        read_all([path])


@pytest.mark.parametrize(("value", "type_name"), [(42, "int"), (["a", "b"], "list"), (None, "null"), (1.5, "float")])
def test_jsonl_non_string_text(tmp_path, value, type_name):
    path = write_jsonl(tmp_path / "c.jsonl", [{"text": "fine"}, {"text": "ok"}, {"text": value}])
    with pytest.raises(InputError, match=rf"c\.jsonl, line 3: text field 'text' must be a string; got {type_name}"):
        read_all([path])


def test_parquet_null_and_numeric_text(tmp_path):
    nulls = tmp_path / "n.parquet"
    pq.write_table(pa.table({"text": ["a", None]}), nulls)
    with pytest.raises(InputError, match=r"n\.parquet, row 1 \(0-based\): text field 'text' must be a string; got null"):
        read_all([nulls])
    numbers = tmp_path / "i.parquet"
    pq.write_table(pa.table({"text": [7]}), numbers)
    with pytest.raises(InputError, match=r"i\.parquet, row 0 \(0-based\): .*got int"):
        read_all([numbers])


def test_malformed_json_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "ok"}\n\n{"text": "unterminated}\n')
    with pytest.raises(InputError, match=r"c\.jsonl, line 3, column \d+: malformed JSON"):
        read_all([path])


def test_json_array_gets_a_hint(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('[{"text": "a"},\n {"text": "b"}]\n')
    with pytest.raises(InputError, match=r"c\.json, line 1.*malformed JSON.*looks like one JSON array"):
        read_all([path])


def test_json_line_that_is_not_an_object(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "ok"}\n"just a string"\n')
    with pytest.raises(InputError, match=r"c\.jsonl, line 2: expected a JSON object.*got a JSON string"):
        read_all([path])


def test_duplicate_ids_within_a_file(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [{"id": "x", "text": "1"}, {"id": "y", "text": "2"}, {"id": "x", "text": "3"}])
    with pytest.raises(InputError, match=r"c\.jsonl, line 3: duplicate id 'x', first seen in .*c\.jsonl, line 1"):
        read_all([path], ReaderConfig(id_field="id"))


def test_duplicate_ids_across_files_and_types(tmp_path):
    first = write_jsonl(tmp_path / "1.jsonl", [{"id": 7, "text": "int id"}])
    second = tmp_path / "2.parquet"
    pq.write_table(pa.table({"id": ["6", "7"], "text": ["a", "b"]}), second)
    with pytest.raises(InputError, match=r"2\.parquet, row 1 \(0-based\): duplicate id '7', first seen in .*1\.jsonl, line 1"):
        read_all([first, second], ReaderConfig(id_field="id"))


def test_missing_or_bad_id(tmp_path):
    missing = write_jsonl(tmp_path / "m.jsonl", [{"id": "a", "text": "x"}, {"text": "y"}])
    with pytest.raises(InputError, match=r"m\.jsonl, line 2: the record has no id field 'id'; it has 'text'"):
        read_all([missing], ReaderConfig(id_field="id"))
    wrong = write_jsonl(tmp_path / "w.jsonl", [{"id": 1.5, "text": "x"}])
    with pytest.raises(InputError, match=r"w\.jsonl, line 1: id field 'id' must be a string or an integer; got float"):
        read_all([wrong], ReaderConfig(id_field="id"))


def test_invalid_utf8_strict_names_byte_offset(tmp_path):
    first = b'{"text": "fine"}\n'
    path = tmp_path / "c.jsonl"
    path.write_bytes(first + b'{"text": "bad \xff byte"}\n')
    offset = len(first) + len(b'{"text": "bad ')
    with pytest.raises(InputError, match=rf"c\.jsonl, line 2: invalid UTF-8 at byte offset {offset} \(bytes ff\)"):
        read_all([path])


def test_invalid_utf8_strict_in_csv_and_txt(tmp_path):
    csv_path = tmp_path / "c.csv"
    csv_path.write_bytes(b"text\nok\nbad\xc3(\n")
    with pytest.raises(InputError, match=r"c\.csv, line 3: invalid UTF-8 at byte offset 11"):
        read_all([csv_path])
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_bytes(b"abc\xe9def")
    with pytest.raises(InputError, match=r"docs, file 'a.txt': invalid UTF-8 at byte offset 3"):
        read_all([folder])


def test_invalid_utf8_replace_warns_with_count(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"text": "a\xff\xfeb"}\n{"text": "ok \xef\xbf\xbd"}\n{"text": "c\x80"}\n')
    with pytest.warns(UnicodeWarning, match=r"c\.jsonl: replaced 3 invalid UTF-8 sequence\(s\) in 2 record\(s\)"):
        texts = flat(read_all([path], ReaderConfig(errors="replace")), "texts")
    assert texts == ["a\ufffd\ufffdb", "ok \ufffd", "c\ufffd"]


def test_lone_surrogate_escape(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "ok"}\n{"text": "half \\ud83d pair \\ud83d\\ude00"}\n')
    with pytest.raises(InputError, match=r"c\.jsonl, line 2: the escape \\ud83d is an unpaired surrogate"):
        read_all([path])
    with pytest.warns(UnicodeWarning, match="replaced 1"):
        texts = flat(read_all([path], ReaderConfig(errors="replace")), "texts")
    assert texts[1] == "half \ufffd pair \U0001f600"


def test_csv_field_count_mismatch(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text('id,text\n1,"multi\nline"\n2,too,many\n')
    with pytest.raises(InputError, match=r"c\.csv, line 4: the record has 3 field\(s\) but the header has 2"):
        read_all([path])


def test_csv_bad_quoting(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text('text\n"closed" then more\n')
    with pytest.raises(InputError, match=r"c\.csv, line 2: malformed CSV"):
        read_all([path])


def test_csv_duplicate_header(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("text,text\na,b\n")
    with pytest.raises(InputError, match=r"names column 'text' twice"):
        read_all([path])


def test_corrupt_gzip(tmp_path):
    path = tmp_path / "c.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"text": "a"}\n' * 1000)[:60])
    with pytest.raises(InputError, match=r"c\.jsonl\.gz.*cannot read the compressed data"):
        read_all([path])


def test_not_parquet(tmp_path):
    path = tmp_path / "c.parquet"
    path.write_text("not parquet")
    with pytest.raises(InputError, match=r"c\.parquet: not a readable Parquet file"):
        read_all([path])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"text_field": ""}, "parameter 'text_field' must be a non-empty string"),
        ({"id_field": 3}, "parameter 'id_field' must be a non-empty string or None"),
        ({"errors": "ignore"}, "parameter 'errors' must be one of 'strict', 'replace'"),
        ({"batch_size": 0}, "parameter 'batch_size' must be an integer >= 1"),
        ({"limit": -1}, "parameter 'limit' must be an integer >= 0"),
    ],
)
def test_config_validation(kwargs, message):
    with pytest.raises(ValueError, match=rf"ReaderConfig: {message}"):
        ReaderConfig(**kwargs)


def test_config_must_be_reader_config(tmp_path):
    with pytest.raises(TypeError, match="parameter 'config' must be a ReaderConfig"):
        read_corpus([tmp_path], {"text_field": "text"})


def test_no_warnings_on_clean_input(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", DOCS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_all([path], ReaderConfig(id_field="id", date_field="date"))


def test_position_ids_clashing_with_native_ids(tmp_path):
    jsonl = write_jsonl(tmp_path / "c.jsonl", [{"text": "id '0'"}, {"text": "id '1'"}])
    sgm = tmp_path / "r.sgm"
    sgm.write_text('<REUTERS NEWID="1">\n<DATE>1-MAR-1987 10:00:00.00</DATE>\n</REUTERS>\n')
    with pytest.raises(InputError, match=r"r\.sgm, line 1: duplicate id '1'.*clash with the native ids"):
        read_all([jsonl, sgm])


def test_parquet_row_range_across_row_groups(tmp_path):
    """Rows start:stop of a file of several row groups (the Ray engine's shards), whatever
    the range's bounds against the groups and the batch size."""
    from neardup.io.readers import read_part

    path = tmp_path / "groups.parquet"
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(23)], "text": [f"text {i}" for i in range(23)]}),
                   path, row_group_size=5)
    for batch_size in (1, 3, 7, 100):
        config = ReaderConfig(id_field="id", batch_size=batch_size)
        for start, stop in ((0, 23), (0, 5), (5, 10), (3, 17), (4, 6), (22, 23), (10, None), (7, 7), (20, 99)):
            got = [(i, t, int(r)) for b in read_part(str(path), "parquet", config, start=start, stop=stop)
                   for i, t, r in zip(b.ids, b.texts, b.rows)]
            end = 23 if stop is None else min(stop, 23)
            assert got == [(f"d{r}", f"text {r}", r) for r in range(start, end)], (batch_size, start, stop)


# --- issue #40: every failure an InputError naming the file ------------------------------


def test_operating_system_errors_become_input_errors(tmp_path, monkeypatch):
    import pathlib

    import neardup.io._formats as formats

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("fine")

    def denied(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(pathlib.Path, "read_bytes", denied)
    with pytest.raises(InputError, match=r"docs, file 'a\.txt': cannot read it \(Permission denied\)"):
        read_all([docs])
    monkeypatch.undo()
    path = write_jsonl(tmp_path / "c.jsonl", DOCS)

    def failing(name, options=None):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(formats, "_open_binary", failing)
    for read in (read_corpus, iter_records):
        with pytest.raises(InputError, match=r"c\.jsonl: cannot read it \(Input/output error\)"):
            list(read([path]))


@pytest.mark.parametrize("depth", [201, 1500, 100_000])
def test_json_nesting_limit(tmp_path, depth):
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "a", "x": ' + "[" * depth + "]" * depth + "}\n")
    with pytest.raises(InputError, match=r"c\.jsonl, line 1: the JSON is nested more than 200"):
        read_all([path])
    with pytest.raises(InputError, match="nested more than 200"):
        list(iter_records([path]))
    path.write_text('{"text": "a", "x": ' + "[" * 199 + "]" * 199 + "}\n")  # 200 with the object
    assert flat(read_all([path]), "texts") == ["a"]


def test_tsv_is_plain(tmp_path):
    """Quotes are text, every line is a record; a header quoted CSV-style gets a hint."""
    path = tmp_path / "c.tsv"
    path.write_bytes(b'id\ttext\na\t"To be\nb\tor not"\nc\t""\n')
    batches = read_all([path], ReaderConfig(id_field="id"))
    assert flat(batches, "ids") == ["a", "b", "c"]
    assert flat(batches, "texts") == ['"To be', 'or not"', '""']
    assert [r["text"] for r in iter_records([path])] == ['"To be', 'or not"', '""']
    path.write_bytes(b'"id"\t"text"\n"a"\t"b"\n')
    with pytest.raises(InputError, match=r"no column 'text'.*names are in quotes"):
        read_all([path])
    path.write_bytes(b"text\nfirst\n\nthird\n")  # one column: a blank line is an empty text
    assert flat(read_all([path]), "texts") == ["first", "", "third"]


def test_duplicate_non_ascii_key_is_found(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"tëxt": "one", "tëxt": "two"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"names the key 'tëxt' twice"):
        read_all([path], ReaderConfig(text_field="tëxt"))


def test_dates_at_the_ends_of_the_calendar(tmp_path):
    """An offset in year 1 or 9999 is no overflow; too many digits is an InputError that
    does not mention Python."""
    path = write_jsonl(tmp_path / "c.jsonl", [
        {"text": "a", "date": "0001-01-01T00:00:00+01:00"},
        {"text": "b", "date": "9999-12-31T23:59:59-01:00"},
    ])
    dates = read_all([path], ReaderConfig(date_field="date"))[0].dates
    np.testing.assert_array_equal(dates.astype(np.int64), [-62135600400, 253402304399])
    path = write_jsonl(tmp_path / "d.jsonl", [{"text": "a", "date": "9" * 5000}])
    with pytest.raises(InputError) as caught:
        read_all([path], ReaderConfig(date_field="date"))
    assert "d.jsonl, line 1: date field 'date'" in str(caught.value)
    assert "sys." not in str(caught.value) and "digits" not in str(caught.value)


def test_broken_link_in_a_txt_directory_is_not_skipped(tmp_path):
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "sub" / "a.txt").write_text("fine")
    (docs / "sub" / "up").symlink_to("..")  # a loop: not followed
    assert flat(read_all([docs]), "ids") == ["sub/a.txt"]
    (docs / "gone.txt").symlink_to(tmp_path / "missing.txt")
    with pytest.raises(InputError, match=r"docs, file 'gone\.txt': a symbolic link to a file that does not exist"):
        read_all([docs])


def test_txt_directory_extension_is_case_insensitive(tmp_path):
    """As detect_format reads extensions: an upper-case .TXT file is not skipped."""
    (tmp_path / "a.txt").write_text("one")
    (tmp_path / "B.TXT").write_text("two")
    (tmp_path / "notes.md").write_text("not a document")
    batches = read_all([tmp_path])
    assert flat(batches, "ids") == ["B.TXT", "a.txt"]
    assert flat(batches, "texts") == ["two", "one"]


def test_streaming_parquet_holds_one_batch_not_the_file(tmp_path):
    """Reading a Parquet file of many row groups keeps Arrow's memory at about a batch:
    the file's bytes read so far are not cached until it is closed (Arrow's pre-buffer
    did that, 0.74 KiB per document of the decontamination benchmark)."""
    from neardup.io import ReaderConfig, read_corpus

    rng = np.random.default_rng(0)
    words = np.array([f"w{i}" for i in range(5000)])
    texts = [" ".join(rng.choice(words, 60)) for _ in range(20_000)]
    path = tmp_path / "many-groups.parquet"
    pq.write_table(pa.table({"id": [str(i) for i in range(len(texts))], "text": texts}), path,
                   row_group_size=1_000, compression="none")
    size = path.stat().st_size  # about 8 MB: each group about 400 KB
    held = []
    for batch in read_corpus([path], ReaderConfig(batch_size=1_000)):
        held.append(pa.total_allocated_bytes())
        del batch
    assert len(held) == 20
    assert max(held[5:]) - min(held[5:]) < size // 4, (size, held)
