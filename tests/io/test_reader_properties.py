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
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from neardup.errors import InputError
from neardup.io import ReaderConfig, iter_records, read_corpus

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
FIELDS = st.sampled_from(["text", "id", "date", "x"])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
    | st.text(max_size=20) | st.sampled_from(["2020-01-01", "1987-02-26T15:01:01Z", "12",
                                              "0001-01-01T00:00:00+01:00", "9" * 25, "-" + "9" * 19]),
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


# --- round trips: what a standard writer writes is read back exactly, or refused ------------
#
# Records are written with the standard library's or pyarrow's writers and read back: the
# reader returns the same count, ids and texts, or raises an InputError naming the file.
# Never fewer or more records in silence.

ROUND_TRIP = settings(max_examples=25, deadline=None,
                      suppress_health_check=[HealthCheck.too_slow,
                                             HealthCheck.function_scoped_fixture])
ANY_TEXT = st.text(max_size=30)  # any Unicode but lone surrogates: NUL, CR, U+2028, quotes...
PLAIN_TEXT = st.text(st.characters(blacklist_characters="\t\r\n", blacklist_categories=("Cs",)),
                     max_size=30)
IDS = st.text(st.characters(whitelist_categories=("Ll", "Lu", "Nd")), min_size=1, max_size=8)


def documents(texts=ANY_TEXT, min_size=0):
    return st.lists(st.tuples(IDS, texts), min_size=min_size, max_size=8,
                    unique_by=lambda doc: doc[0])


def read_back(path: Path, config: ReaderConfig):
    """(ids, texts) read from ``path``, or the InputError's message (which must name it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            batches = list(read_corpus([path], config))
            second = list(iter_records([path], config))
        except InputError as exc:
            assert path.name in str(exc), str(exc)
            return None
    ids = [i for b in batches for i in b.ids]
    texts = [t for b in batches for t in b.texts]
    assert len(second) == len(texts)  # the second pass agrees
    return ids, texts


def assert_round_trip(path: Path, docs, config=ReaderConfig(id_field="id", batch_size=3)):
    got = read_back(path, config)
    assert got is not None, "a valid file was refused"
    assert got == ([d[0] for d in docs], [d[1] for d in docs])


@ROUND_TRIP
@given(docs=documents(), gz=st.booleans(), ascii_only=st.booleans(),
       extra=st.dictionaries(st.sampled_from(["x", "meta"]), JSON_VALUES, max_size=2),
       crlf=st.booleans())
def test_jsonl_round_trip(tmp_path, docs, gz, ascii_only, extra, crlf):
    ending = "\r\n" if crlf else "\n"
    data = "".join(json.dumps({"id": i, "text": t, **extra}, ensure_ascii=ascii_only) + ending
                   for i, t in docs).encode()
    path = tmp_path / ("c.jsonl.gz" if gz else "c.jsonl")
    path.write_bytes(gzip.compress(data) if gz else data)
    assert_round_trip(path, docs)


# Not QUOTE_MINIMAL with "\n" line ends: the csv module then leaves a field holding a bare
# "\r" unquoted, and "0,\r\n" is a record ending in CRLF, whatever its writer meant.
CSV_DIALECTS = st.sampled_from([
    {"lineterminator": "\r\n"}, {"quoting": csv.QUOTE_ALL}, {"quoting": csv.QUOTE_NONNUMERIC},
    {"quoting": csv.QUOTE_ALL, "lineterminator": "\r\n"},
])


@ROUND_TRIP
@given(docs=documents(), dialect=CSV_DIALECTS, bom=st.booleans(), text_first=st.booleans())
def test_csv_round_trip(tmp_path, docs, dialect, bom, text_first):
    """Quotes, commas, tabs and line breaks (LF, CR, CRLF) inside fields, in each quoting."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, **{"lineterminator": "\n", **dialect})
    order = ["text", "id"] if text_first else ["id", "text"]
    writer.writerow(order)
    for doc_id, text in docs:
        writer.writerow([text, doc_id] if text_first else [doc_id, text])
    path = tmp_path / "c.csv"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + buffer.getvalue().encode())
    assert_round_trip(path, docs)


@ROUND_TRIP
@given(docs=documents(PLAIN_TEXT), crlf=st.lists(st.booleans(), min_size=9, max_size=9),
       text_only=st.booleans())
def test_plain_tsv_round_trip(tmp_path, docs, crlf, text_only):
    """Plain TSV (fields joined by tabs, LF or CRLF line by line, quotes as they are)."""
    lines = ["text" if text_only else "id\ttext"]
    lines += [t if text_only else f"{i}\t{t}" for i, t in docs]
    data = "".join(line + ("\r\n" if cr else "\n") for line, cr in zip(lines, crlf))
    path = tmp_path / "c.tsv"
    path.write_bytes(data.encode())
    if text_only:
        got = read_back(path, ReaderConfig())
        assert got is not None and got[1] == [t for _, t in docs]
    else:
        assert_round_trip(path, docs)


@ROUND_TRIP
@given(docs=documents(), quoting=st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]))
@example(docs=[("0", "\n\t")], quoting=csv.QUOTE_MINIMAL)  # found by hypothesis in a full run
def test_quoted_tsv_never_loses_a_row_silently(tmp_path, docs, quoting):
    """TSV written with CSV-style quoting (the csv module's excel-tab dialect). TSV has no
    quoting: a field with a tab or a line break is refused (naming the file and line), and
    otherwise every row is read, with its quotes as text."""
    buffer = io.StringIO()
    # Lines end in "\r\n" so that the writer quotes a bare "\r" (see CSV_DIALECTS).
    writer = csv.writer(buffer, dialect="excel-tab", lineterminator="\r\n", quoting=quoting)
    writer.writerow(["id", "text"])
    writer.writerows(docs)
    path = tmp_path / "c.tsv"
    path.write_bytes(buffer.getvalue().encode())
    got = read_back(path, ReaderConfig())  # ids numbered by position: the count is checked
    if got is None:  # a quoted header names no column "text"; a tab or line break
        assert quoting == csv.QUOTE_ALL or any(ch in t for _, t in docs for ch in "\t\r\n")
        return
    lines = buffer.getvalue().split("\r\n")[1:-1]
    if len(got[1]) != len(docs):
        # A quoted field holding a line break followed by a tab ('"\n\t"') splits into
        # lines that each have the header's field count: valid plain TSV, which is what
        # TSV without quoting says. Then every line is one record, none lost.
        assert any("\n" in t for _, t in docs)
        pieces = [piece for line in lines for piece in line.split("\n")]
        assert got[1] == [piece.split("\t")[1] for piece in pieces]
        return
    for (_, text), read in zip(docs, got[1]):
        quoted = '"' + text.replace('"', '""') + '"'
        assert read in (text, quoted)


@ROUND_TRIP
@given(docs=documents(), row_group=st.integers(1, 4), large=st.booleans(),
       integer_ids=st.booleans(), batch_size=st.integers(1, 4))
def test_parquet_round_trip(tmp_path, docs, row_group, large, integer_ids, batch_size):
    ids = list(range(len(docs))) if integer_ids else [i for i, _ in docs]
    kind = pa.large_string() if large else pa.string()
    table = pa.table({"id": pa.array(ids), "text": pa.array([t for _, t in docs], kind)})
    path = tmp_path / "c.parquet"
    pq.write_table(table, path, row_group_size=row_group)
    expected = [(str(i), t) for i, (_, t) in zip(ids, docs)]
    assert_round_trip(path, expected, ReaderConfig(id_field="id", batch_size=batch_size))


NAME = st.text(st.sampled_from("abcXYZ019 _-é"), min_size=1, max_size=6)


@ROUND_TRIP
@given(files=st.dictionaries(st.tuples(st.sampled_from(["", "sub/", "sub/deeper/"]), NAME),
                             st.text(max_size=30).filter(lambda t: not t.startswith("\ufeff")),
                             max_size=6))
def test_txt_directory_round_trip(tmp_path_factory, files):
    """Any UTF-8 text (a leading U+FEFF would be read as a byte-order mark), ids the
    relative paths in sorted order."""
    root = tmp_path_factory.mktemp("docs")
    for (folder, name), text in files.items():
        path = root / f"{folder}{name}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())
    expected = sorted((f"{folder}{name}.txt", text) for (folder, name), text in files.items())
    assert_round_trip(root, expected, ReaderConfig(batch_size=2))


LATIN1 = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF,
                               blacklist_characters="\x7f", blacklist_categories=("Cc",)),
                 max_size=30)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@ROUND_TRIP
@given(stories=st.lists(st.tuples(st.integers(1, 10**6), LATIN1, LATIN1), max_size=6,
                        unique_by=lambda story: story[0]),
       doctype=st.booleans())
def test_reuters_round_trip(tmp_path, stories, doctype):
    """Titles and bodies with markup characters (escaped as entities) and Latin-1 letters;
    the text is the stripped title and body joined by a newline."""
    parts = ['<!DOCTYPE lewis SYSTEM "lewis.dtd">\n'] if doctype else []
    for newid, title, body in stories:
        parts.append(f'<REUTERS TOPICS="NO" NEWID="{newid}">\n<DATE>26-FEB-1987 15:01:01.79'
                     f"</DATE>\n<TEXT>\n<TITLE>{_escape(title)}</TITLE>\n"
                     f"<BODY>{_escape(body)}</BODY></TEXT>\n</REUTERS>\n")
    path = tmp_path / "reut2-000.sgm"
    path.write_bytes("".join(parts).encode("latin-1"))
    expected = [(str(newid), "\n".join(p for p in (title.strip(), body.strip()) if p))
                for newid, title, body in stories]
    assert_round_trip(path, expected, ReaderConfig(batch_size=2))


@ROUND_TRIP
@given(data=st.binary(max_size=200),
       name=st.sampled_from(["c.jsonl", "c.json.gz", "c.csv", "c.tsv", "c.parquet", "c.sgm"]),
       config=CONFIGS)
def test_random_bytes_fail_naming_the_file(tmp_path, data, name, config):
    """Whatever the bytes, every format: clean documents, or an InputError naming the file."""
    path = tmp_path / name
    path.write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            list(read_corpus([path], config))
            list(iter_records([path], config))
        except InputError as exc:
            assert name in str(exc), str(exc)


@ROUND_TRIP
@given(depth=st.integers(0, 3000), digits=st.integers(1, 6000), gz=st.booleans(),
       field=st.sampled_from(["text", "id", "x"]))
def test_deep_or_huge_json_is_read_or_refused_in_words(tmp_path, depth, digits, gz, field):
    """Nesting and number length, in any field: read, or an InputError naming the file and
    line, never a RecursionError or a message about Python's digit limit."""
    value = "[" * depth + "7" * digits + "]" * depth
    record = {"text": '"t"', "id": '"i"', "x": "0"}
    record[field] = value
    line = "{" + ", ".join(f'"{k}": {v}' for k, v in record.items()) + "}\n"
    path = tmp_path / ("c.jsonl.gz" if gz else "c.jsonl")
    path.write_bytes(gzip.compress(line.encode()) if gz else line.encode())
    try:
        list(read_corpus([path], ReaderConfig(id_field="id")))
    except InputError as exc:
        assert f"{path.name}, line 1:" in str(exc) and "sys." not in str(exc), str(exc)
    else:
        assert depth < 200 and digits <= 4300
        assert field == "x" or (field == "id" and depth == 0)  # an integer id is read
