"""Issue #40, the readers: hostile inputs run through the command line as a user runs them.

Each case checks the exit code, that no traceback is printed, that the message names the
file and the line (or the file name), that the input is unchanged and that the previous
output is left as it was; runs that succeed must give every document exactly once.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from neardup.cli import main

STORY = """<REUTERS TOPICS="NO" LEWISSPLIT="TRAIN" CGISPLIT="TRAINING-SET" OLDID="1" NEWID="{id}">
<DATE>26-FEB-1987 15:01:01.79</DATE>
<TEXT>
<TITLE>Title {id}</TITLE>
<BODY>Body of story {id}.</BODY></TEXT>
</REUTERS>
"""
PREVIOUS = '{"previous": "output"}\n'


def dedup(tmp_path: Path, *args, ok: bool = True) -> tuple[object, Path]:
    """Run ``neardup dedup ARGS --clusters-out clusters.jsonl`` over a previous output (not
    with ``-q``, which silences the warnings some tests read)."""
    clusters = tmp_path / "clusters.jsonl"
    clusters.write_text(PREVIOUS)
    result = CliRunner().invoke(
        main, ["dedup", *map(str, args), "--clusters-out", str(clusters)])
    assert "Traceback" not in result.output, result.output
    if ok:
        assert result.exit_code == 0, result.output
    return result, clusters


def clustered_ids(clusters: Path) -> list[str]:
    return [json.loads(line)["id"] for line in clusters.read_text().splitlines()]


def refused(tmp_path: Path, inputs, *args, phrases=()) -> str:
    """The run fails with exit code 1 and a one-line message holding ``phrases``; the
    inputs and the previous output are untouched."""
    inputs = [inputs] if isinstance(inputs, Path) else list(inputs)
    before = {p: (p.read_bytes() if p.is_file() else None) for p in inputs}
    result, clusters = dedup(tmp_path, *inputs, *args, ok=False)
    assert result.exit_code == 1, result.output
    assert result.output.startswith("Error: "), result.output
    for phrase in phrases:
        assert phrase in result.output, result.output
    for forbidden in ("sys.", "set_int_max_str_digits", "RecursionError", "errors='replace'",
                      "id_field", "ReaderConfig", "UnicodeEncodeError", "codec can't"):
        assert forbidden not in result.output, result.output
    assert clusters.read_text() == PREVIOUS
    assert {p: (p.read_bytes() if p.is_file() else None) for p in inputs} == before
    return result.output


# --- 1. TSV has no quoting -----------------------------------------------------------------


def test_tsv_quote_does_not_swallow_rows(tmp_path):
    """The issue's example: three lines, three documents, quotes kept as text."""
    path = tmp_path / "hamlet.tsv"
    path.write_bytes(b'id\ttext\na\t"To be or not to be\nb\tthat is the question"\n'
                     b"c\tWhether tis nobler\n")
    out = tmp_path / "kept.jsonl"
    result, clusters = dedup(tmp_path, path, "--id-field", "id", "--out", out)
    assert clustered_ids(clusters) == ["a", "b", "c"]
    texts = [json.loads(line)["text"] for line in out.read_text().splitlines()]
    assert texts == ['"To be or not to be', 'that is the question"', "Whether tis nobler"]


def test_tsv_line_with_a_stray_tab_or_quoted_line_break_is_an_error(tmp_path):
    """A field count that differs from the header's is an error naming the line: no row
    is merged into another or dropped."""
    path = tmp_path / "quoted.tsv"
    path.write_bytes(b'id\ttext\na\t"two\nlines"\nb\tfine\n')  # CSV-style quoting in a TSV
    refused(tmp_path, path, "--id-field", "id",
            phrases=("quoted.tsv, line 3: the record has 1 field(s) but the header has 2",
                     "TSV has no quoting"))
    path.write_bytes(b"id\ttext\na\tone\ttab too many\n")
    refused(tmp_path, path, "--id-field", "id", phrases=("quoted.tsv, line 2: the record has 3",))


def test_tsv_crlf_mixed_endings_bom_and_blank_lines(tmp_path):
    path = tmp_path / "mixed.tsv"
    path.write_bytes(b"\xef\xbb\xbfid\ttext\r\na\tfirst\r\nb\tsecond\n\nc\t\r\n")
    _, clusters = dedup(tmp_path, path, "--id-field", "id")
    assert clustered_ids(clusters) == ["a", "b", "c"]


def test_tsv_bare_carriage_return_is_an_error(tmp_path):
    path = tmp_path / "mac.tsv"
    path.write_bytes(b"id\ttext\ra\tfirst\rb\tsecond\r")
    refused(tmp_path, path, "--id-field", "id",
            phrases=("mac.tsv, line 1: a carriage return", "TSV fields cannot hold line breaks"))


def test_csv_quoted_line_break_is_a_field_and_a_swallowing_quote_is_reported(tmp_path):
    """CSV has quoting: a quoted field may span lines. A quote that swallows lines shaped
    like records is warned about, naming the lines; a quote never closed is an error."""
    path = tmp_path / "hamlet.csv"
    path.write_bytes(b'id,text\na,"To be or not to be\nb,that is the question"\nc,Whether\n')
    result, clusters = dedup(tmp_path, path, "--id-field", "id")
    assert clustered_ids(clusters) == ["a", "c"]
    assert "hamlet.csv: 1 record(s) hold line breaks inside quotes" in result.output
    assert "line 3, inside the record that starts at line 2" in result.output
    path.write_bytes(b'id,text\na,"To be or not to be\nb,that is the question\n')
    refused(tmp_path, path, "--id-field", "id",
            phrases=("hamlet.csv, line 3: malformed CSV: the file ends inside a quoted field",))
    path.write_bytes(b'id,text\na,"a paragraph\nand another"\nb,plain\n')  # legitimate
    result, clusters = dedup(tmp_path, path, "--id-field", "id")
    assert clustered_ids(clusters) == ["a", "b"] and "warning" not in result.output


# --- 2. JSON nested 1,500 deep ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["deep.jsonl", "deep.json", "deep.jsonl.gz", "deep.json.gz"])
@pytest.mark.parametrize("field", ["text", "id", "other"])
def test_deeply_nested_json_is_an_input_error(tmp_path, name, field):
    deep = "[" * 1500 + "]" * 1500
    record = {"text": "\"a\"", "id": "\"x\"", "other": "1"}
    record[field] = deep
    line = "{" + ", ".join(f'"{k}": {v}' for k, v in record.items()) + "}\n"
    data = (json.dumps({"text": "first", "id": "w"}) + "\n" + line).encode()
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    refused(tmp_path, path, "--id-field", "id",
            phrases=(f"{name}, line 2: the JSON is nested more than 200 levels deep",))


# --- 3. non-UTF-8 names ------------------------------------------------------------------------


def test_undecodable_file_name_in_a_txt_directory_is_named(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "fine.txt").write_text("a fine document")
    try:
        with open(os.path.join(os.fsencode(corpus), b"caf\xe9.txt"), "wb") as handle:
            handle.write(b"a document with a Latin-1 name")
    except OSError:  # pragma: no cover - a file system that refuses such names
        pytest.skip("the file system refuses non-UTF-8 names")
    message = refused(tmp_path, corpus, phrases=(f"{corpus}: the file name 'caf\\xe9.txt' is "
                                                 "not valid UTF-8",))
    assert "Rename the file" in message


def test_undecodable_input_path_is_named(tmp_path):
    name = os.path.join(os.fsencode(tmp_path), b"caf\xe9.jsonl")
    try:
        with open(name, "wb") as handle:
            handle.write(b'{"text": "a"}\n')
    except OSError:  # pragma: no cover
        pytest.skip("the file system refuses non-UTF-8 names")
    refused(tmp_path, Path(os.fsdecode(name)),
            phrases=(f"{tmp_path}/caf\\xe9.jsonl: the path is not valid UTF-8",))


# --- 4. Reuters duplicate NEWID -------------------------------------------------------------


def test_duplicate_newid_hint_names_both_stories_and_deduplication(tmp_path):
    path = tmp_path / "reut2-000.sgm"
    path.write_text(STORY.format(id=1) + STORY.format(id=2) + STORY.format(id=1))
    message = refused(tmp_path, path, phrases=(
        "reut2-000.sgm, line 13: duplicate NEWID '1', first seen in",
        "reut2-000.sgm, line 1. Two stories in this file carry the same NEWID",
        "deduplicate the input"))
    assert "position" not in message and "--id-field" not in message


def test_same_sgm_file_twice(tmp_path):
    path = tmp_path / "reut2-000.sgm"
    path.write_text(STORY.format(id=1))
    refused(tmp_path, [path, path], phrases=("The same input is given twice: pass it once.",))


# --- 5. other hostile inputs --------------------------------------------------------------------


def test_huge_integers_never_mention_python(tmp_path):
    path = tmp_path / "big.jsonl"
    path.write_text('{"text": "a"}\n{"text": "b", "n": ' + "7" * 5000 + "}\n")
    refused(tmp_path, path, phrases=("big.jsonl, line 2: a number in the record has more than",
                                     "Store such numbers as strings"))
    dated = tmp_path / "dated.csv"
    dated.write_text("text,date\na," + "1" * 5000 + "\n")
    refused(tmp_path, dated, "--date-field", "date",
            phrases=("dated.csv, line 2: date field 'date'", "out of the datetime64[s] range"))


@pytest.mark.parametrize("kind", ["jsonl", "csv", "tsv", "txt"])
@pytest.mark.slow
def test_invalid_utf8_strict_and_replace(tmp_path, kind):
    bad = b"caf\xe9 au lait"
    if kind == "jsonl":
        path = tmp_path / "c.jsonl"
        path.write_bytes(b'{"text": "fine"}\n{"text": "' + bad + b'"}\n')
        where = "c.jsonl, line 2: invalid UTF-8 at byte offset 30"
    elif kind in ("csv", "tsv"):
        path = tmp_path / f"c.{kind}"
        path.write_bytes(b"text\nfine\n" + bad + b"\n")
        where = f"c.{kind}, line 3: invalid UTF-8 at byte offset 13"
    else:
        path = tmp_path / "docs"
        path.mkdir()
        (path / "a.txt").write_bytes(b"fine")
        (path / "b.txt").write_bytes(bad)
        where = "docs, file 'b.txt': invalid UTF-8 at byte offset 3"
    refused(tmp_path, path, phrases=(where, "--errors replace"))
    result, clusters = dedup(tmp_path, path, "--errors", "replace")
    assert len(clustered_ids(clusters)) == 2
    assert "replaced 1 invalid UTF-8 sequence(s) in 1 record(s) with U+FFFD (--errors replace)" \
        in result.output
    assert "UnicodeWarning" not in result.output


def test_utf16_file_gets_a_hint(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_bytes('{"text": "a"}\n'.encode("utf-16"))
    refused(tmp_path, path, phrases=("c.jsonl, line 1: invalid UTF-8", "UTF-16"))


@pytest.mark.parametrize("name", ["c.csv", "c.tsv", "c.parquet"])
def test_duplicate_column_names(tmp_path, name):
    path = tmp_path / name
    if name.endswith("parquet"):
        pq.write_table(pa.table([pa.array(["a"]), pa.array(["b"])], names=["text", "text"]), path)
        phrase = "c.parquet: the file has two columns named 'text'"
    else:
        delimiter = "," if name.endswith("csv") else "\t"
        path.write_text(f"text{delimiter}text\na{delimiter}b\n")
        phrase = f"{name}, line 1: the header names column 'text' twice"
    refused(tmp_path, path, phrases=(phrase,))


def test_duplicate_json_key_for_a_field_is_an_error(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "kept?", "id": "a"}\n{"text": "one", "text": "two", "id": "b"}\n')
    refused(tmp_path, path, "--id-field", "id",
            phrases=("c.jsonl, line 2: the object names the key 'text' twice",))


def test_header_only_and_blank_header(tmp_path):
    for name in ("h.csv", "h.tsv"):
        path = tmp_path / name
        path.write_text("id,text\n" if name.endswith("csv") else "id\ttext\n")
        _, clusters = dedup(tmp_path, path, "--id-field", "id")
        assert clustered_ids(clusters) == []
        path.write_text("\nid,text\na,b\n")
        refused(tmp_path, path, phrases=(f"{name}, line 1: the first line is blank",))


def test_parquet_text_column_of_ints_and_out_of_range_timestamps(tmp_path):
    path = tmp_path / "ints.parquet"
    pq.write_table(pa.table({"text": [1, 2]}), path)
    refused(tmp_path, path, phrases=("ints.parquet, row 0 (0-based): text field 'text' must be "
                                     "a string; got int 1",))
    dated = tmp_path / "dated.parquet"
    pq.write_table(pa.table({"text": ["a", "b"],
                             "date": pa.array([0, 10**12], pa.timestamp("s"))}), dated)
    refused(tmp_path, dated, "--date-field", "date",
            phrases=("dated.parquet, rows 0-1 (0-based): a value cannot be converted",))


@pytest.mark.slow
def test_nul_bytes_are_text_in_csv_tsv_and_an_error_in_raw_json(tmp_path):
    for name in ("n.csv", "n.tsv"):
        path = tmp_path / name
        path.write_bytes(b"text\na\x00b\nc\n")
        _, clusters = dedup(tmp_path, path)
        assert clustered_ids(clusters) == ["0", "1"]
    path = tmp_path / "n.jsonl"
    path.write_bytes(b'{"text": "a\x00b"}\n')
    refused(tmp_path, path, phrases=("n.jsonl, line 1, column",  "malformed JSON"))


def test_index_add_reads_with_the_same_rules(tmp_path):
    """Every command reads through the same readers: `index add` too."""
    index = tmp_path / "index"
    runner = CliRunner()
    created = runner.invoke(main, ["index", "create", str(index), "--method", "minhash"])
    assert created.exit_code == 0, created.output
    deep = tmp_path / "deep.json"
    deep.write_text('{"text": "a", "x": ' + "[" * 1500 + "]" * 1500 + "}\n")
    result = runner.invoke(main, ["index", "add", str(index), str(deep)])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert "deep.json, line 1: the JSON is nested more than 200 levels deep" in result.output
    hamlet = tmp_path / "hamlet.tsv"
    hamlet.write_bytes(b'id\ttext\na\t"To be or not to be\nb\tthat is the question"\n'
                       b"c\tWhether tis nobler\n")
    result = runner.invoke(main, ["index", "add", str(index), str(hamlet), "--id-field", "id"])
    assert result.exit_code == 0, result.output
    assert "committed 3 documents" in result.output


def test_directory_without_txt_files_is_an_error_naming_what_it_holds(tmp_path):
    # A directory of files no reader takes, read as a .txt directory, would yield no
    # document and exit 0: every document lost in silence. It is an error that says so.
    # (A directory of Parquet or JSON Lines shards is read as those shards:
    # tests/io/test_storage.py.)
    shards = tmp_path / "shards"
    shards.mkdir()
    for i in range(2):
        (shards / f"part-{i}.xml").write_text(f"<doc>document {i}</doc>")
    refused(tmp_path, shards, phrases=(str(shards), "holds none", "2 other file(s)",
                                       "Pass the files themselves"))
    # An empty directory has no document to lose: a warning, and an empty run.
    empty = tmp_path / "empty"
    empty.mkdir()
    result, clusters = dedup(tmp_path, empty)
    assert "the directory is empty" in result.output and clustered_ids(clusters) == []
