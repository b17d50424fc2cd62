"""Issue #40: `neardup dedup` run as a hostile user would, through the command line.

For each case: the exit status, no traceback, a message naming the flag, file or line,
previous outputs untouched, inputs unchanged, and every document exactly once in every
clustering output that is written.
"""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import neardup.cli.dedup as dedup_module
from neardup.cli import main
from neardup.io import iter_records

STORY = "the central bank raised its key interest rate by half a point on tuesday"
PREVIOUS = b"previous output\n"


def write_corpus(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def rows(n: int = 8, tag: str = "") -> list[dict]:
    return [{"id": f"d{i}", "text": STORY + tag if i % 2 else f"story {i} about wheat {tag}"}
            for i in range(n)]


def invoke(*args) -> object:
    return CliRunner().invoke(main, ["dedup", *map(str, args)])


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.rglob("*") if ".neardup-" in p.name)


def assert_clean(result, *phrases, code) -> None:
    output = result.output
    assert result.exit_code == code, output
    assert "Traceback" not in output, output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception)
    for phrase in phrases:
        assert phrase in output, f"{phrase!r} not in: {output}"


def assert_once(clusters: Path, ids: list[str]) -> None:
    """Every document exactly once in a clustering output."""
    found = [r["id"] for r in iter_records([clusters])]
    assert sorted(found) == sorted(ids), found


def previous_outputs(tmp_path: Path, *names: str) -> dict[Path, bytes]:
    paths = {}
    for name in names:
        path = tmp_path / name
        path.write_bytes(PREVIOUS)
        paths[path] = PREVIOUS
    return paths


def unchanged(files: dict[Path, bytes]) -> bool:
    return all(path.read_bytes() == data for path, data in files.items())


# --------------------------------------------------------------------------- 1. rewritten input


def _rewrite_after_clustering(monkeypatch, action):
    real = dedup_module.run

    def run_then_rewrite(*args, **kwargs):
        result = real(*args, **kwargs)
        action()
        return result

    monkeypatch.setattr(dedup_module, "run", run_then_rewrite)


def _rewrite_before_second_read(monkeypatch, action):
    import neardup.io

    real = neardup.io.read_corpus
    calls = []

    def read_corpus(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            action()
        return real(*args, **kwargs)

    monkeypatch.setattr(neardup.io, "read_corpus", read_corpus)


@pytest.mark.parametrize("change", ["shorter", "longer", "same-size", "mtime-restored",
                                    "replaced-by-rename"])
@pytest.mark.parametrize("reader", ["--out", "--pairs-out", "--html"])
def test_input_rewritten_during_the_run_is_refused(tmp_path, monkeypatch, change, reader):
    corpus = write_corpus(tmp_path / "corpus.jsonl", rows(10))
    stat = os.stat(corpus)

    def rewrite():
        if change == "shorter":
            write_corpus(corpus, rows(6))
        elif change == "longer":
            write_corpus(corpus, rows(14))
        elif change in ("same-size", "mtime-restored"):
            corpus.write_text(corpus.read_text().replace("wheat", "maize"))
            if change == "mtime-restored":
                os.utime(corpus, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        else:
            other = write_corpus(tmp_path / "other.jsonl", rows(10, tag=" again"))
            os.replace(other, corpus)

    if reader == "--pairs-out":
        _rewrite_before_second_read(monkeypatch, rewrite)  # the pair types read in the run
    else:
        _rewrite_after_clustering(monkeypatch, rewrite)
    suffix = {"--out": "jsonl", "--pairs-out": "parquet", "--html": "html"}[reader]
    previous = previous_outputs(tmp_path, "clusters.parquet", f"target.{suffix}")
    result = invoke(corpus, "--id-field", "id", "--clusters-out", tmp_path / "clusters.parquet",
                    reader, tmp_path / f"target.{suffix}", "-q")
    if change == "mtime-restored" and reader == "--html":
        # Documented limit: same size and modification time, and the report reads the
        # input itself, so only the identity of the file is checked; the report is
        # written from the texts it reads.
        assert_clean(result, code=0)
        assert (tmp_path / "target.html").read_bytes() != PREVIOUS
        return
    assert_clean(result, f"{corpus}: the input changed during the run", reader,
                 "No output was written", code=1)
    assert unchanged(previous) and leftovers(tmp_path) == []


def _write_parquet(path: Path, n: int, edit=lambda text: text) -> Path:
    table = pa.Table.from_pylist([dict(r, text=edit(r["text"])) for r in rows(n)])
    pq.write_table(table, path, compression="none")
    return path


@pytest.mark.parametrize("change", ["shorter", "same-size-mtime-restored"])
def test_parquet_input_rewritten_before_a_parquet_out_is_refused(tmp_path, monkeypatch, change):
    # --out from Parquet to Parquet reads the kept rows as Arrow batches
    # (tests/cli/test_dedup_parquet_out.py), held to the first read as records are. The
    # file is uncompressed so that a same-length edit keeps its size; with its time
    # restored too, only the texts' digest can tell.
    corpus = _write_parquet(tmp_path / "a.parquet", 10)
    stat = os.stat(corpus)

    def rewrite():
        if change == "shorter":
            _write_parquet(corpus, 6)
            return
        _write_parquet(corpus, 10, edit=lambda text: text.replace("wheat", "maize"))
        assert os.stat(corpus).st_size == stat.st_size
        os.utime(corpus, ns=(stat.st_atime_ns, stat.st_mtime_ns))

    _rewrite_after_clustering(monkeypatch, rewrite)
    target = tmp_path / "out.parquet"
    target.write_bytes(b"previous output\n")
    result = invoke(corpus, "--id-field", "id", "--method", "minhash", "--out", target, "-q")
    assert_clean(result, f"{corpus}: the input changed during the run", "No output was written",
                 *(["the texts read a second time differ"] if change != "shorter" else []), code=1)
    assert target.read_bytes() == b"previous output\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.parquet", "out.parquet"]


def test_rewritten_directory_input_is_refused(tmp_path, monkeypatch):
    folder = tmp_path / "texts"
    folder.mkdir()
    for i in range(6):
        (folder / f"{i}.txt").write_text(STORY if i % 2 else f"story {i} about wheat")
    _rewrite_after_clustering(monkeypatch, lambda: (folder / "9.txt").write_text("new"))
    previous = previous_outputs(tmp_path, "out.jsonl")
    result = invoke(folder, "--out", tmp_path / "out.jsonl", "-q")
    assert_clean(result, f"{folder}: the input changed", "added, removed or modified", code=1)
    assert unchanged(previous)


def test_second_of_two_inputs_rewritten_is_named(tmp_path, monkeypatch):
    first = write_corpus(tmp_path / "a.jsonl", rows(4))
    second = write_corpus(tmp_path / "b.jsonl", rows(4, tag=" b"))
    _rewrite_after_clustering(monkeypatch, lambda: write_corpus(second, rows(2)))
    result = invoke(first, second, "--out", tmp_path / "out.jsonl", "-q")
    assert_clean(result, f"{second}: the input changed", code=1)
    assert not (tmp_path / "out.jsonl").exists()


def test_unchanged_input_with_limit_and_every_reread_succeeds(tmp_path):
    corpus = write_corpus(tmp_path / "corpus.jsonl", rows(10))
    before = corpus.read_bytes()
    result = invoke(corpus, "--id-field", "id", "--limit", "7", "--out", tmp_path / "o.jsonl",
                    "--pairs-out", tmp_path / "p.parquet", "--html", tmp_path / "r.html",
                    "--clusters-out", tmp_path / "c.csv", "-q")
    assert_clean(result, code=0)
    assert_once(tmp_path / "c.csv", [f"d{i}" for i in range(7)])
    assert corpus.read_bytes() == before


# --------------------------------------------------------------------------- 2. single-read input


@pytest.mark.parametrize("reader", ["--out", "--pairs-out", "--html"])
def test_named_pipe_with_an_output_that_reads_again_is_refused_before_reading(tmp_path, reader):
    fifo = tmp_path / "corpus.jsonl"
    os.mkfifo(fifo)
    suffix = {"--out": "jsonl", "--pairs-out": "parquet", "--html": "html"}[reader]
    # A subprocess, so that a regression (a second read waiting forever) fails the test
    # at the timeout instead of hanging the suite; nothing ever writes to the pipe.
    result = subprocess.run(
        [sys.executable, "-m", "neardup", "dedup", str(fifo), reader,
         str(tmp_path / f"target.{suffix}"), "-q"],
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"INPUT {fifo} is a named pipe" in result.stderr and reader in result.stderr
    assert not (tmp_path / f"target.{suffix}").exists() and leftovers(tmp_path) == []


def test_named_pipe_read_once_is_fine(tmp_path):
    fifo = tmp_path / "corpus.jsonl"
    os.mkfifo(fifo)
    data = "".join(json.dumps(r) + "\n" for r in rows(6))

    def feed():
        with open(fifo, "w") as handle:
            handle.write(data)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    result = invoke(fifo, "--id-field", "id", "--clusters-out", tmp_path / "c.parquet",
                    "--report", tmp_path / "r.json", "-q")
    writer.join(timeout=60)
    assert_clean(result, code=0)
    assert_once(tmp_path / "c.parquet", [f"d{i}" for i in range(6)])


# --------------------------------------------------------------------------- 3-5. values


MIXED = [{"id": i if i % 2 else f"s{i}", "text": f"entirely different document number {i} " * 3,
          "score": [1.5, float("nan"), float("inf"), float("-inf"), 2.0, 3.0][i],
          "meta": {"k": i} if i % 3 == 0 else None}
         for i in range(6)]


@pytest.mark.parametrize("suffix", ["csv", "tsv", "parquet", "jsonl"])
def test_mixed_type_field_is_written_not_refused_after_the_run(tmp_path, suffix):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in MIXED))
    before = corpus.read_bytes()
    out = tmp_path / f"out.{suffix}"
    result = invoke(corpus, "--id-field", "id", "--out", out, "--clusters-out",
                    tmp_path / "c.parquet")
    assert_clean(result, code=0)
    assert_once(tmp_path / "c.parquet", ["s0", "1", "s2", "3", "s4", "5"])
    back = list(iter_records([out]))
    if suffix == "jsonl":
        assert [r["id"] for r in back] == [r["id"] for r in MIXED]  # types kept
    else:
        assert [str(r["id"]) for r in back] == ["s0", "1", "s2", "3", "s4", "5"]
    if suffix == "parquet":
        assert pq.read_table(out).schema.field("id").type == "string"
        assert "warning: --out: field(s) 'id' (integer, string)" in result.stderr
        assert "written as strings" in result.stderr
    assert corpus.read_bytes() == before


@pytest.mark.parametrize("suffix", ["jsonl", "csv"])
def test_nan_and_infinity_are_kept_in_out(tmp_path, suffix):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in MIXED))  # NaN/Infinity tokens
    out = tmp_path / f"out.{suffix}"
    result = invoke(corpus, "--id-field", "id", "--out", out, "-q")
    assert_clean(result, code=0)
    if suffix == "jsonl":
        text = out.read_text()
        assert '"score":NaN' in text and '"score":Infinity' in text and '"score":-Infinity' in text
        scores = [r["score"] for r in iter_records([out])]
        assert math.isnan(scores[1]) and scores[2:4] == [math.inf, -math.inf]
    else:
        assert [r["score"] for r in iter_records([out])] == [
            "1.5", "NaN", "Infinity", "-Infinity", "2.0", "3.0"]


HOSTILE_IDS = ["a\rb", "c\nd", "e\r\nf", 'g"h', "i,j", '"', " k ", "l\tm", "=1+1"]


def _hostile_corpus(tmp_path: Path) -> Path:
    data = [{"id": doc_id, "text": STORY if k % 2 else f"story {k} about wheat"}
            for k, doc_id in enumerate(HOSTILE_IDS)]
    return write_corpus(tmp_path / "corpus.jsonl", data)


def test_csv_outputs_quote_every_hostile_id(tmp_path):
    corpus = _hostile_corpus(tmp_path)
    result = invoke(corpus, "--id-field", "id", "--clusters-out", tmp_path / "c.csv",
                    "--pairs-out", tmp_path / "p.csv", "--out", tmp_path / "o.csv", "-q")
    assert_clean(result, code=0)
    assert_once(tmp_path / "c.csv", HOSTILE_IDS)
    # Python's csv module (another reader) agrees, row for row.
    with open(tmp_path / "c.csv", newline="", encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    assert sorted(r["id"] for r in table) == sorted(HOSTILE_IDS)
    pairs = list(iter_records([tmp_path / "p.csv"]))
    assert pairs and all(p["id_a"] in HOSTILE_IDS and p["id_b"] in HOSTILE_IDS for p in pairs)
    kept = [r["id"] for r in iter_records([tmp_path / "o.csv"])]
    assert set(kept) <= set(HOSTILE_IDS) and len(kept) == len(set(kept))


@pytest.mark.parametrize("flag", ["--clusters-out", "--pairs-out", "--out"])
def test_tsv_refuses_ids_it_cannot_hold_and_keeps_previous_outputs(tmp_path, flag):
    corpus = _hostile_corpus(tmp_path)
    before = corpus.read_bytes()
    previous = previous_outputs(tmp_path, "target.tsv", "other.parquet")
    other = "--report" if flag != "--clusters-out" else "--pairs-out"
    other_path = tmp_path / ("other.json" if other == "--report" else "other.parquet")
    result = invoke(corpus, "--id-field", "id", flag, tmp_path / "target.tsv", other,
                    other_path, "-q")
    assert_clean(result, f"{flag}: row ", "which a TSV file cannot hold", ".csv", code=1)
    assert unchanged(previous) and corpus.read_bytes() == before
    assert leftovers(tmp_path) == []


def test_tsv_with_plain_values_round_trips(tmp_path):
    corpus = write_corpus(tmp_path / "corpus.jsonl", [{"id": f'"q{i}', "text": t["text"]}
                                                     for i, t in enumerate(rows(6))])
    result = invoke(corpus, "--id-field", "id", "--clusters-out", tmp_path / "c.tsv", "-q")
    assert_clean(result, code=0)
    lines = (tmp_path / "c.tsv").read_text().splitlines()
    assert len(lines) == 7 and lines[1].startswith('"q0\t')  # no quoting in TSV


# --------------------------------------------------------------------------- 6. ignored options


@pytest.mark.parametrize(("args", "flags"), [
    (["--engine", "memory", "--work-dir", "{tmp}/w"], ["--work-dir", "--engine memory"]),
    (["--engine", "memory", "--resume"], ["--resume", "--engine memory"]),
    (["--engine", "memory", "--memory-limit", "1GB"], ["--memory-limit", "--engine memory"]),
    (["--engine", "memory", "--partitions", "8"], ["--partitions", "--engine memory"]),
    (["--spell-max-edit-distance", "1"], ["--spell-max-edit-distance", "--spell-correct"]),
    (["--ray-shard-rows", "10"], ["--ray-shard-rows", "--engine ray"]),
    (["--method", "retsim", "--param", 'index="hnsw"', "--work-dir", "{tmp}/w"],
     ["--work-dir", "--method retsim"]),
])
def test_option_that_would_be_ignored_is_a_usage_error(tmp_path, args, flags):
    corpus = write_corpus(tmp_path / "corpus.jsonl", rows(4))
    result = invoke(corpus, *(a.format(tmp=tmp_path) for a in args), "-q")
    assert_clean(result, *flags, "would be ignored", code=2)
    assert not (tmp_path / "w").exists()


# --------------------------------------------------------------------------- 7. work directory


def test_outputs_inside_a_new_work_dir_are_allowed_and_resume_works(tmp_path):
    corpus = write_corpus(tmp_path / "corpus.jsonl", rows(8))
    work = tmp_path / "work"
    args = [corpus, "--id-field", "id", "--work-dir", work, "--clusters-out",
            work / "clusters.parquet", "--report", work / "report.json", "--out",
            work / "kept.jsonl", "-q"]
    first = invoke(*args)
    assert_clean(first, code=0)
    assert_once(work / "clusters.parquet", [f"d{i}" for i in range(8)])
    assert json.loads((work / "manifest.json").read_text())["version"]
    again = invoke(*args, "--resume")
    assert_clean(again, code=0)
    assert_once(work / "clusters.parquet", [f"d{i}" for i in range(8)])


@pytest.mark.parametrize(("flag", "name", "phrase"), [
    ("--report", "manifest.json", "is the manifest (manifest.json) of --work-dir"),
    ("--clusters-out", "sketch/docs.parquet", "inside sketch/"),
    ("--out", "components/x.jsonl", "inside components/"),
])
def test_output_on_a_file_the_work_dir_owns_is_refused_before_work(tmp_path, flag, name, phrase):
    corpus = write_corpus(tmp_path / "corpus.jsonl", rows(8))
    work = tmp_path / "work"
    assert_clean(invoke(corpus, "--work-dir", work, "-q"), code=0)
    owned = {p: p.read_bytes() for p in work.rglob("*") if p.is_file()}
    result = invoke(corpus, "--work-dir", work, "--resume", flag, work / name, "-q")
    assert_clean(result, f"{flag}:", phrase, code=1)
    assert unchanged(owned) and leftovers(tmp_path) == []
    # The work directory still resumes (the manifest was not overwritten).
    assert_clean(invoke(corpus, "--work-dir", work, "--resume", "-q"), code=0)


def test_manifest_output_in_a_new_work_dir_is_refused(tmp_path):
    corpus = write_corpus(tmp_path / "corpus.jsonl", rows(4))
    work = tmp_path / "new-work"
    result = invoke(corpus, "--work-dir", work, "--report", work / "manifest.json", "-q")
    assert_clean(result, "--report:", "manifest.json", code=1)
    assert not work.exists()


# --------------------------------------------------------------------------- 8. warnings


def _invalid_utf8_corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b'{"id": "a", "text": "caf\xe9 au lait and more words"}\n'
                     b'{"id": "b", "text": "caf\xe9 au lait and more words"}\n')
    return path


def test_quiet_prints_no_warning(tmp_path):
    corpus = _invalid_utf8_corpus(tmp_path)
    result = invoke(corpus, "--errors", "replace", "--out", tmp_path / "o.jsonl", "--pairs-out",
                    tmp_path / "p.parquet", "--html", tmp_path / "r.html", "-q")
    assert_clean(result, code=0)
    assert result.stderr == "" and result.stdout == ""


def test_warnings_are_one_clean_line_each_printed_once(tmp_path):
    corpus = _invalid_utf8_corpus(tmp_path)
    result = invoke(corpus, "--errors", "replace", "--out", tmp_path / "o.jsonl", "--pairs-out",
                    tmp_path / "p.parquet", "--html", tmp_path / "r.html")
    assert_clean(result, code=0)
    warnings = [line for line in result.stderr.splitlines() if "U+FFFD" in line]
    assert len(warnings) == 1, result.stderr  # the input is read up to four times
    assert warnings[0].startswith(f"warning: {corpus}: replaced 2 invalid UTF-8")
    assert "--errors replace" in warnings[0] and "errors='replace'" not in warnings[0]
    for python in ("UnicodeWarning", "readers.py", "for row, line", "Traceback"):
        assert python not in result.stderr


# --------------------------------------------------------------------------- own cases


def test_csv_input_with_crlf_bom_and_quotes_round_trips_through_csv_out(tmp_path):
    corpus = tmp_path / "corpus.csv"
    corpus.write_bytes(b'\xef\xbb\xbfid,text\r\n"a,1","say ""hi""\r\nthere"\r\nb2,plain text\r\n')
    before = corpus.read_bytes()
    result = invoke(corpus, "--id-field", "id", "--out", tmp_path / "o.csv", "--clusters-out",
                    tmp_path / "c.csv", "-q")
    assert_clean(result, code=0)
    assert_once(tmp_path / "c.csv", ["a,1", "b2"])
    kept = list(iter_records([tmp_path / "o.csv"]))
    assert {r["id"]: r["text"] for r in kept} == {"a,1": 'say "hi"\r\nthere', "b2": "plain text"}
    assert corpus.read_bytes() == before


def test_empty_input_writes_empty_outputs(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(b"")
    result = invoke(corpus, "--clusters-out", tmp_path / "c.csv", "--out", tmp_path / "o.jsonl",
                    "--pairs-out", tmp_path / "p.parquet", "-q")
    assert_clean(result, code=0)
    assert (tmp_path / "c.csv").read_text() == "id,cluster,cluster_size,representative,status,template\n"
    assert (tmp_path / "o.jsonl").read_bytes() == b""


def test_deeply_nested_field_is_a_clean_error(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"text": "a", "n": ' + "[" * 1500 + "]" * 1500 + "}\n")
    previous = previous_outputs(tmp_path, "o.jsonl")
    result = invoke(corpus, "--out", tmp_path / "o.jsonl", "-q")
    assert_clean(result, str(corpus), code=1)
    assert unchanged(previous) and leftovers(tmp_path) == []


def test_huge_integer_is_named_without_python_advice(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"text": "a", "n": ' + "7" * 5000 + "}\n")
    result = invoke(corpus, "--out", tmp_path / "o.jsonl", "-q")
    assert_clean(result, str(corpus), "line 1", "more than 4,300 digits", code=1)
    assert "sys." not in result.output


def test_id_with_lone_surrogate_escape_is_named_or_replaced(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "x\\ud800", "text": "a b c d"}\n{"id": "y", "text": "a b c d"}\n')
    strict = invoke(corpus, "--id-field", "id", "--clusters-out", tmp_path / "c.csv", "-q")
    assert_clean(strict, f"{corpus}, line 1", "--errors replace", code=1)
    assert not (tmp_path / "c.csv").exists()
    replaced = invoke(corpus, "--id-field", "id", "--errors", "replace", "--clusters-out",
                      tmp_path / "c.csv", "--out", tmp_path / "o.jsonl", "-q")
    assert_clean(replaced, code=0)
    assert_once(tmp_path / "c.csv", ["x\ufffd", "y"])
    assert [r["id"] for r in iter_records([tmp_path / "o.jsonl"])] == ["x\ufffd"]


def test_outputs_inside_the_input_directory_are_not_read_and_not_mistaken_for_changes(tmp_path):
    folder = tmp_path / "texts"
    folder.mkdir()
    for i in range(6):
        (folder / f"{i}.txt").write_text(STORY if i % 2 else f"story {i} about wheat")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    result = invoke(folder, "--out", folder / "kept.jsonl", "--clusters-out",
                    folder / "clusters.csv", "--pairs-out", folder / "pairs.parquet", "-q")
    assert_clean(result, code=0)
    assert_once(folder / "clusters.csv", [f"{i}.txt" for i in range(6)])
    assert len(list(iter_records([folder / "kept.jsonl"]))) == 4  # 3 stories + 1 copy kept
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.suffix == ".txt"} == before
