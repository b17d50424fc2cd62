"""Issue #18: nothing lost, nothing overwritten, every failure before the work and in the
user's words. In-process (CliRunner) tests; the subprocess ones (signals, SIGKILL at each
stage) are in test_dedup_faults.py."""

from __future__ import annotations

import errno
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import neardup
import neardup.io.outputs as outputs_module
from neardup.cli import main
from neardup.methods.lsh import optimal_bands

STORY = "the central bank raised its key interest rate by half a point on tuesday"


@pytest.fixture
def corpus(tmp_path):
    rows = [{"doc": f"d{i}", "body": STORY if i % 2 else f"story number {i} about wheat"}
            for i in range(6)]
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def bad_corpus(tmp_path):
    """Fails on its second line: an error about it means the input was read."""
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"body": STORY}) + "\n{not json\n")
    return path


def invoke(*args):
    return CliRunner().invoke(main, ["dedup", *map(str, args), "-q"])


def leftovers(directory):
    return sorted(p.name for p in directory.rglob("*") if ".neardup-" in p.name)


def assert_clean_error(result, *phrases, code=1):
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    for phrase in phrases:
        assert phrase in result.output, result.output


# --------------------------------------------------------------------------- 2. same paths


def test_two_outputs_on_one_path_refused_before_reading(tmp_path, bad_corpus):
    same = tmp_path / "same.parquet"
    result = invoke(bad_corpus, "--text-field", "body", "--clusters-out", same, "--pairs-out", same)
    assert_clean_error(result, "--clusters-out and --pairs-out name the same file")
    assert not same.exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize("link", ["symlink", "hardlink", "dotdot"])
def test_outputs_on_one_file_through_links_refused(tmp_path, corpus, link):
    first = tmp_path / "first.jsonl"
    first.write_text("previous\n")
    second = tmp_path / "second.jsonl"
    if link == "symlink":
        second.symlink_to(first)
    elif link == "hardlink":
        os.link(first, second)
    else:
        (tmp_path / "sub").mkdir()
        second = tmp_path / "sub" / ".." / "first.jsonl"
    result = invoke(corpus, "--text-field", "body", "--clusters-out", first, "--out", second)
    assert_clean_error(result, "--clusters-out and --out name the same file")
    assert first.read_text() == "previous\n"


@pytest.mark.parametrize("link", [None, "symlink", "hardlink"])
def test_out_on_the_input_refused(tmp_path, corpus, link):
    before = corpus.read_bytes()
    target = corpus
    if link == "symlink":
        target = tmp_path / "alias.jsonl"
        target.symlink_to(corpus)
    elif link == "hardlink":
        target = tmp_path / "alias.jsonl"
        os.link(corpus, target)
    result = invoke(corpus, "--text-field", "body", "--out", target)
    assert_clean_error(result, "--out:", "is the input", "would replace the input")
    assert corpus.read_bytes() == before


# --------------------------------------------------------------------------- 3. unwritable


@pytest.mark.parametrize(
    ("flag", "name", "phrase"),
    [
        ("--out", "/proc/neardup-test.jsonl", "--out: cannot write in '/proc'"),
        ("--clusters-out", "{tmp}/clusters.txt", "--clusters-out: cannot tell which format"),
        ("--report", "{tmp}/report.parquet", "--report: cannot tell which format"),
        ("--pairs-out", "{tmp}/adir.parquet", "--pairs-out: '{tmp}/adir.parquet' is a directory"),
        ("--out", "{tmp}/afile/out.jsonl", "is a file, not a directory"),
    ],
)
def test_unwritable_output_refused_before_reading(tmp_path, bad_corpus, flag, name, phrase):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir.parquet").mkdir()
    previous = tmp_path / "clusters.parquet"
    previous.write_bytes(b"old")
    result = invoke(bad_corpus, "--text-field", "body", "--clusters-out", previous,
                    flag, name.format(tmp=tmp_path))
    assert_clean_error(result, phrase.format(tmp=tmp_path))
    assert "line 2" not in result.output  # refused before the input was read
    assert previous.read_bytes() == b"old" and leftovers(tmp_path) == []


def test_read_only_file_system_refused_before_reading(tmp_path, bad_corpus, monkeypatch):
    real_open = os.open

    def read_only(path, flags, *args):
        if ".neardup-" in os.fspath(path):
            raise OSError(errno.EROFS, "Read-only file system", os.fspath(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(outputs_module.os, "open", read_only)
    result = invoke(bad_corpus, "--text-field", "body", "--out", tmp_path / "new" / "d.jsonl")
    assert_clean_error(result, "--out: cannot write in", "Read-only file system",
                       "choose a writable directory")
    assert not (tmp_path / "new").exists()  # the directory it created is removed again


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_directory_refused(tmp_path, bad_corpus):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    result = invoke(bad_corpus, "--text-field", "body", "--out", locked / "d.jsonl")
    assert_clean_error(result, "--out: cannot write in", "Permission denied")


def test_not_enough_free_space_refused_before_reading(tmp_path, bad_corpus, monkeypatch):
    usage = outputs_module.shutil.disk_usage(tmp_path)
    monkeypatch.setattr(outputs_module.shutil, "disk_usage",
                        lambda path: usage._replace(free=10))
    result = invoke(bad_corpus, "--text-field", "body", "--out", tmp_path / "d.jsonl")
    assert_clean_error(result, "--out: not enough free space", "10 bytes free")
    assert leftovers(tmp_path) == []


def _previous_outputs(tmp_path):
    paths = {
        "--clusters-out": tmp_path / "c.parquet",
        "--pairs-out": tmp_path / "p.csv",
        "--out": tmp_path / "d.jsonl",
        "--report": tmp_path / "r.json",
    }
    for path in paths.values():
        path.write_bytes(b"previous " + path.name.encode())
    return paths


def _snapshot(paths):
    return {flag: path.read_bytes() for flag, path in paths.items()}


def test_write_failure_leaves_every_previous_output(tmp_path, corpus, monkeypatch):
    paths = _previous_outputs(tmp_path)
    before = _snapshot(paths)

    def disk_full(temporary, kind, records, **_):
        next(iter(records))
        raise OSError(errno.ENOSPC, "No space left on device", os.fspath(temporary))

    monkeypatch.setattr(outputs_module, "records_to_file", disk_full)
    args = [x for flag, path in paths.items() for x in (flag, path)]
    result = invoke(corpus, "--text-field", "body", *args)
    assert_clean_error(result, "No space left on device", "no output was written")
    assert _snapshot(paths) == before  # clusters and pairs were written, but not committed
    assert leftovers(tmp_path) == []


def test_failed_rename_rolls_the_set_back(tmp_path, corpus, monkeypatch):
    paths = _previous_outputs(tmp_path)
    before = _snapshot(paths)
    real_replace = os.replace
    calls = []

    def third_rename_fails(src, dst):
        if ".neardup-" in os.fspath(src) and os.fspath(src).endswith(".tmp"):
            calls.append(dst)
            if len(calls) == 3:
                raise OSError(errno.EIO, "Input/output error", os.fspath(dst))
        return real_replace(src, dst)

    monkeypatch.setattr(outputs_module.os, "replace", third_rename_fails)
    args = [x for flag, path in paths.items() for x in (flag, path)]
    result = invoke(corpus, "--text-field", "body", *args)
    assert_clean_error(result, "Input/output error")
    assert len(calls) == 3
    assert _snapshot(paths) == before  # the two outputs already renamed were restored
    assert leftovers(tmp_path) == []


def test_successful_run_replaces_every_output(tmp_path, corpus):
    paths = _previous_outputs(tmp_path)
    args = [x for flag, path in paths.items() for x in (flag, path)]
    result = invoke(corpus, "--text-field", "body", *args)
    assert result.exit_code == 0, result.output
    assert pq.read_table(paths["--clusters-out"]).num_rows == 6
    assert json.loads(paths["--report"].read_text())["summary"]["documents"] == 6
    assert leftovers(tmp_path) == []


def test_leftovers_of_killed_runs_are_removed(tmp_path, corpus):
    dead = 2**22 + 12345  # above the default pid_max: no such process
    stale = [tmp_path / f".d.jsonl.neardup-{dead}-0badf00d.tmp",
             tmp_path / f".d.jsonl.neardup-{dead}-0badf00d.bak"]
    for path in stale:
        path.write_text("half")
    alive = tmp_path / f".d.jsonl.neardup-{os.getppid()}-0000beef.tmp"  # a live process
    alive.write_text("in use")
    result = invoke(corpus, "--text-field", "body", "--out", tmp_path / "d.jsonl")
    assert result.exit_code == 0, result.output
    assert not any(p.exists() for p in stale) and alive.exists()


# --------------------------------------------------------------------------- 4. date field


def test_misspelt_date_field_is_an_error(tmp_path):
    path = tmp_path / "dated.jsonl"
    path.write_text("".join(json.dumps({"text": STORY, "date": f"2020-01-0{i + 1}"}) + "\n"
                            for i in range(3)))
    result = invoke(path, "--date-field", "dat", "--time-window", "48")
    assert_clean_error(result, "date field 'dat'", "none of the 3 records", "--date-field")
    assert "ReaderConfig" not in result.output


def test_date_missing_in_some_records_is_counted(tmp_path):
    path = tmp_path / "dated.jsonl"
    rows = [{"text": STORY, "date": "2020-01-01"}, {"text": STORY}, {"text": STORY, "date": None}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = tmp_path / "r.json"
    result = invoke(path, "--date-field", "date", "--time-window", "48", "--report", report)
    assert result.exit_code == 0, result.output
    assert json.loads(report.read_text())["summary"]["documents_without_date"] == 2


# --------------------------------------------------------------------------- 6. flags


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--text-field", "bodyy"], "--text-field"),
        (["--text-field", "body", "--id-field", "nope"], "--id-field"),
        (["--text-field", "body", "--method", "ngram", "--max-df", "1"], "--max-df"),
        (["--text-field", "body", "--method", "minhash", "--num-perm", "0"], "--num-perm"),
        (["--text-field", "body", "--method", "minhash", "--threshold", "2"], "--threshold"),
        (["--text-field", "body", "--max-cluster-size", "1"], "--max-cluster-size"),
        (["--text-field", "body", "--method", "ngram", "--param", "max_df=1.5"], "--max-df"),
        (["--text-field", "body", "--out", "x.txt"], "--out"),
        (["--text-field", "body", "--method", "exact", "--time-window", "5"], "--date-field"),
    ],
)
def test_cli_errors_name_flags_not_python(tmp_path, corpus, args, flag):
    result = invoke(corpus, *args)
    assert result.exit_code in (1, 2), result.output
    assert flag in result.output, result.output
    for python in ("parameter '", "ReaderConfig", "Config(", "=None", "write_table",
                   "text_field", "id_field", "Traceback"):
        assert python not in result.output, result.output


def test_duplicate_ids_error_names_flags(tmp_path):
    path = tmp_path / "dup.jsonl"
    path.write_text('{"text": "a", "id": 1}\n{"text": "b", "id": 1}\n')
    result = invoke(path, "--id-field", "id")
    assert_clean_error(result, "duplicate id '1'", "choose another --id-field",
                       "leave out --id-field")


def test_ngram_zero_is_an_error(corpus):
    result = invoke(corpus, "--text-field", "body", "--method", "ngram", "--ngram", "0")
    assert_clean_error(result, "'--ngram'", "0 is not in the range", code=2)


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (["--linkage", "single"], "--linkage applies to --cluster hac only"),
        (["--hac-distance", "0.3"], "--hac-distance applies to --cluster hac only"),
        (["--cluster", "hac", "--resolution", "2"], "--resolution applies to --cluster leiden"),
        (["--oversized", "split"], "--oversized applies to clusters larger than"),
        (["--ray-address", "auto"], "--ray-address applies to --engine ray only"),
        (["--engine", "memory", "--ray-shard-rows", "1000"], "--ray-shard-rows applies to --engine ray only"),
    ],
)
def test_option_the_algorithm_ignores_is_an_error(corpus, args, phrase):
    result = invoke(corpus, "--text-field", "body", *args)
    assert_clean_error(result, phrase, code=2)


def test_linkage_with_hac_is_accepted(corpus):
    result = invoke(corpus, "--text-field", "body", "--cluster", "hac", "--linkage", "single")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("suffix", ["jsonl", "csv", "parquet"])
def test_binary_text_column_keeps_its_shape(tmp_path, suffix):
    texts = [STORY, STORY + " again", "café au lait"]
    source = tmp_path / "bin.parquet"
    pq.write_table(pa.table({"text": pa.array([t.encode() for t in texts], pa.binary()),
                             "n": [1, 2, 3]}), source)
    out = tmp_path / f"kept.{suffix}"
    result = CliRunner().invoke(main, ["dedup", str(source), "--method", "exact", "--out", str(out)])
    assert result.exit_code == 0, result.output
    if suffix == "parquet":
        table = pq.read_table(out)
        assert table.schema.field("text").type == pa.binary()
        assert table.column("text").to_pylist() == [t.encode() for t in texts]
        return
    assert "the text field 'text' holds bytes" in result.output
    if suffix == "jsonl":
        kept = [json.loads(line)["text"] for line in out.read_text().splitlines()]
    else:
        kept = [line.split(",")[0].strip('"') for line in out.read_text().splitlines()[1:]]
    assert kept == texts  # text, not base64


@pytest.mark.parametrize(("given", "expected"), [([], None), (["--bands", "4", "--rows", "8"], (4, 8))])
def test_report_and_metadata_record_version_and_banding(tmp_path, corpus, given, expected):
    report, clusters = tmp_path / "r.json", tmp_path / "c.parquet"
    result = invoke(corpus, "--text-field", "body", "--method", "minhash", "--threshold", "0.6",
                    *given, "--report", report, "--clusters-out", clusters)
    assert result.exit_code == 0, result.output
    expected = expected or optimal_bands(0.6, 128)
    for record in (json.loads(report.read_text()),
                   json.loads(pq.read_schema(clusters).metadata[b"neardup"])):
        assert record["neardup_version"] == neardup.__version__
        method = record["params"]["method"]
        assert (method["bands"], method["rows"]) == tuple(expected)


@pytest.mark.parametrize("engine", ["local", "memory"])
def test_ngram_copies_above_max_df_found_and_reported(tmp_path, engine):
    path = tmp_path / "copies.jsonl"
    other = "A different story about grain shipments from the port, with its own words."
    path.write_text((json.dumps({"text": STORY}) + "\n") * 21 + json.dumps({"text": other}) + "\n")
    report = tmp_path / "r.json"
    result = invoke(path, "--method", "ngram", "--max-df", "5", "--engine", engine, "--report", report)
    assert result.exit_code == 0, result.output
    summary = json.loads(report.read_text())["summary"]
    assert summary["clusters"] == 2 and summary["documents"] == 22
    assert summary["max_df_only_documents"] == 21 and summary["max_df_documents"] == 21
    assert summary["max_df_shingles"] > 0


def test_summary_table_shows_pruning(tmp_path):
    path = tmp_path / "copies.jsonl"
    path.write_text((json.dumps({"text": STORY}) + "\n") * 4)
    result = CliRunner().invoke(main, ["dedup", str(path), "--method", "ngram", "--max-df", "2"])
    assert result.exit_code == 0, result.output
    assert "max df only documents" in result.output


def test_help_documents_outputs_and_exit_codes():
    result = CliRunner().invoke(main, ["dedup", "--help"])
    text = " ".join(result.output.split())
    assert "renamed into place together" in text and "130 after Ctrl-C" in text
    assert np.all([opt in text for opt in ("--clusters-out", "--pairs-out", "--out", "--report")])
