"""Issue #40: every command besides dedup, index and serve, tried as a hostile new user.

Commands: report, explain, leakage, calibrate, train, augment, eval and tune. For each
case: the exit code (1 for an error, 2 for a usage error), no traceback, a message that
names the flag or the file, and, for every failure, the directory exactly as it was
before (nothing overwritten, no input changed, no output or temporary file left). Runs
through the CLI (click's CliRunner) as a user runs it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from neardup.cli import main

STORY = ("the central bank raised its key interest rate by half a point on tuesday citing "
         "stubborn inflation and strong wage growth across the economy officials said")
OTHER = ("wheat futures fell sharply in chicago as rain improved the outlook for the winter "
         "crop in the southern plains traders said on monday after the weather report")
THIRD = ("shares of the airline jumped after it reported a surprise profit for the third "
         "quarter and raised its forecast for the full year analysts said")


def invoke(*args, stdin: str | None = None):
    return CliRunner().invoke(main, [str(a) for a in args], input=stdin)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (links followed) and its bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def assert_failed(result, code: int, *phrases: str) -> None:
    """Exit ``code``, no traceback, every phrase in the message, no Python terms."""
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        repr(result.exception)
    for phrase in phrases:
        assert phrase in result.output, result.output
    for python in ("ReaderConfig(", "_field=", "parameter '", "select_split", "load_labeled"):
        assert python not in result.output, result.output


@pytest.fixture
def corpus(tmp_path) -> Path:
    rows = [
        {"id": "a", "text": STORY, "label": "bank", "date": "1987-04-01"},
        {"id": "b", "text": STORY + " today", "label": "bank", "date": "1987-04-01"},
        {"id": "c", "text": OTHER, "label": "wheat", "date": "1987-04-02"},
        {"id": "d", "text": OTHER, "label": "wheat", "date": "1987-04-02"},
        {"id": "e", "text": THIRD, "label": "air", "date": "1987-04-03"},
        {"id": "f", "text": "", "label": "none", "date": "1987-04-03"},
        {"id": "g", "text": " !!! ... ", "label": "none2", "date": "1987-04-03"},
    ]
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def run_files(tmp_path, corpus) -> dict[str, Path]:
    """A dedup run over ``corpus``: clusters, pairs and report."""
    files = {"clusters": tmp_path / "clusters.parquet", "pairs": tmp_path / "pairs.parquet",
             "summary": tmp_path / "run.json"}
    result = invoke("dedup", corpus, "--id-field", "id", "--clusters-out", files["clusters"],
                    "--pairs-out", files["pairs"], "--report", files["summary"], "-q")
    assert result.exit_code == 0, result.output
    return files


@pytest.fixture
def labeled(tmp_path) -> Path:
    rows = []
    for split, texts in (("validation", (STORY, OTHER)), ("test", (THIRD, OTHER))):
        for k, text in enumerate(texts):
            for copy in range(2):
                rows.append({"id": f"{split}{k}-{copy}", "text": text + " copy" * copy,
                             "cluster": f"{split}{k}", "split": split})
    path = tmp_path / "labeled.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# ------------------------------------------------------------------------------ report


@pytest.mark.parametrize("link", ["symlink", "hardlink", "run-output"])
@pytest.mark.slow
def test_report_out_on_an_input_is_refused(tmp_path, corpus, run_files, link):
    target = run_files["clusters"] if link == "run-output" else corpus
    out = tmp_path / "page.html"
    if link == "symlink":
        out.symlink_to(target)
    else:
        os.link(target, out)
    before = snapshot(tmp_path)
    result = invoke("report", *run_files.values(), "--id-field", "id", "--out", out)
    assert_failed(result, 1, "--out", "is the input")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("out, phrase", [
    ("page.htm", "must end in one of .html"),
    ("corpus.jsonl/page.html", "is a file, not a directory"),
    ("sub.html", "is a directory"),
])
def test_report_bad_out_is_refused_before_reading(tmp_path, run_files, out, phrase):
    (tmp_path / "sub.html").mkdir()
    before = snapshot(tmp_path)
    result = invoke("report", *run_files.values(), "--id-field", "id", "--out", tmp_path / out)
    assert_failed(result, 1, "--out", phrase)
    assert snapshot(tmp_path) == before


def test_report_misspelt_label_field_is_an_error(tmp_path, run_files):
    before = snapshot(tmp_path)
    result = invoke("report", *run_files.values(), "--id-field", "id", "--label-field", "lable",
                    "--out", tmp_path / "page.html")
    assert_failed(result, 1, "--label-field", "'lable'", "none of the 7 records")
    assert snapshot(tmp_path) == before
    good = invoke("report", *run_files.values(), "--id-field", "id", "--label-field", "label",
                  "--out", tmp_path / "page.html")
    assert good.exit_code == 0, good.output
    assert '"false_merges"' in (tmp_path / "page.html").read_text()


@pytest.mark.parametrize("flag, value", [("--date-field", "dte"), ("--text-field", "body"),
                                         ("--id-field", "ident")])
def test_report_misspelt_reader_field_is_an_error(tmp_path, run_files, flag, value):
    args = ["--id-field", "id"] if flag != "--id-field" else []
    before = snapshot(tmp_path)
    result = invoke("report", *run_files.values(), *args, flag, value,
                    "--out", tmp_path / "page.html")
    assert_failed(result, 1, flag, repr(value))
    assert snapshot(tmp_path) == before


def test_report_of_an_empty_run_is_an_empty_report(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    clusters, summary = tmp_path / "c.parquet", tmp_path / "r.json"
    assert invoke("dedup", empty, "--clusters-out", clusters, "--report", summary,
                  "-q").exit_code == 0
    result = invoke("report", clusters, summary, "--out", tmp_path / "page.html")
    assert result.exit_code == 0, result.output
    assert "0 of 0 clusters shown" in result.output
    assert '"clusters_total":0' in (tmp_path / "page.html").read_text()


def test_dedup_html_of_an_empty_input_is_an_empty_report(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = invoke("dedup", empty, "--html", tmp_path / "page.html", "-q")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert '"clusters_total":0' in (tmp_path / "page.html").read_text()


def test_report_missing_input_and_unreadable_run_file(tmp_path, run_files):
    before = snapshot(tmp_path)
    missing = invoke("report", run_files["clusters"], "--input", tmp_path / "nope.jsonl",
                     "--out", tmp_path / "page.html")
    assert_failed(missing, 1, "nope.jsonl", "no such file", "--input")
    garbage = tmp_path / "garbage.parquet"
    garbage.write_bytes(b"\x00\xffnot parquet at all")
    before = snapshot(tmp_path)
    result = invoke("report", garbage, "--input", tmp_path / "corpus.jsonl",
                    "--out", tmp_path / "page.html")
    assert_failed(result, 2, "garbage.parquet", "is not a clusters table")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("option", ["--max-clusters", "--max-members", "--max-chars"])
def test_report_numeric_options_take_numbers(tmp_path, run_files, option):
    for value in ("abc", "0", "-3"):
        result = invoke("report", *run_files.values(), option, value,
                        "--out", tmp_path / "page.html")
        assert_failed(result, 2, option)
    assert not (tmp_path / "page.html").exists()


# ------------------------------------------------------------------------------ explain


def test_explain_two_empty_documents_says_why_and_scores_nothing(corpus):
    result = invoke("explain", corpus, "f", "g", "--id-field", "id")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "Nothing to compare: both f and g are empty after normalization" in text
    assert "1.000" not in text and "duplicate" not in text.replace("near-duplicate", "")
    assert "Pair type: none (nothing to compare)" in text


def test_explain_one_empty_document_names_it(corpus):
    result = invoke("explain", corpus, "a", "f", "--id-field", "id")
    assert result.exit_code == 0, result.output
    assert "Nothing to compare: f is empty" in " ".join(result.output.split())


def test_explain_json_is_one_object_with_every_row(corpus):
    result = invoke("explain", corpus, "a", "b", "--id-field", "id", "--date-field", "date",
                    "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["ids"] == ["a", "b"] and data["dates"][0].startswith("1987-04-01")
    rows = {row["method"]: row for row in data["scores"]}
    assert {"exact", "ngram", "minhash", "simhash", "rerank"} <= set(rows)
    assert rows["rerank"]["duplicate"] is True and 0.9 <= rows["rerank"]["score"] <= 1.0
    assert data["pair_type"] in ("expanded", "corrected", "near") and "jaccard" in data["features"]


@pytest.mark.parametrize("args, code, phrases", [
    (["--date-field", "dte"], 1, ("--date-field", "'dte'")),
    (["--text-field", "body"], 1, ("--text-field", "'body'")),
    (["--ngram", "abc"], 2, ("--ngram",)),
    (["--time-window", "-1"], 2, ("--time-window",)),
    (["--threshold", "0.5"], 2, ("--threshold", "--method")),
    (["--method", "minhash", "--threshold", "7"], 1, ("--threshold", "7")),
    (["--method", "simhash", "--threshold", "3.5"], 2, ("--threshold", "integer")),
    (["--method", "nomethod"], 2, ("--method",)),
])
def test_explain_bad_options(corpus, args, code, phrases):
    result = invoke("explain", corpus, "a", "b", "--id-field", "id", *args)
    assert_failed(result, code, *phrases)


def test_explain_missing_file_and_id(tmp_path, corpus):
    assert_failed(invoke("explain", tmp_path / "nope.jsonl", "a", "b"), 2, "nope.jsonl")
    assert_failed(invoke("explain", corpus, "a", "zz", "--id-field", "id"), 1, "'zz'")


# ------------------------------------------------------------------------------ leakage


@pytest.fixture
def train_file(tmp_path) -> Path:
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in (STORY, OTHER)))
    return path


@pytest.mark.parametrize("link", ["same", "symlink", "hardlink"])
def test_leakage_output_on_an_input_is_refused(tmp_path, corpus, train_file, link):
    out = train_file
    if link == "symlink":
        out = tmp_path / "pairs.jsonl"
        out.symlink_to(corpus)
    elif link == "hardlink":
        out = tmp_path / "pairs.jsonl"
        os.link(corpus, out)
    before = snapshot(tmp_path)
    result = invoke("leakage", "--train", train_file, "--test", corpus, "--pairs-out", out, "-q")
    assert_failed(result, 1, "--pairs-out", "is the input")
    assert snapshot(tmp_path) == before


def test_leakage_outputs_are_checked_before_reading_and_written_as_a_set(
        tmp_path, corpus, train_file):
    before = snapshot(tmp_path)
    # --report cannot be written: --pairs-out, valid, is not written either.
    result = invoke("leakage", "--train", train_file, "--test", corpus, "--pairs-out",
                    tmp_path / "p.parquet", "--report", tmp_path / "r.txt", "-q")
    assert_failed(result, 1, "--report", "must end in one of .json")
    assert snapshot(tmp_path) == before
    result = invoke("leakage", "--train", train_file, "--test", corpus, "--pairs-out",
                    tmp_path / "corpus.jsonl" / "p.parquet", "--report", tmp_path / "r.json")
    assert_failed(result, 1, "--pairs-out", "not a directory")
    assert snapshot(tmp_path) == before
    result = invoke("leakage", "--train", train_file, "--test", corpus, "--pairs-out",
                    tmp_path / "p.parquet", "--report", tmp_path / "r.json", "-q")
    assert result.exit_code == 0, result.output
    assert pq.read_table(tmp_path / "p.parquet").num_rows >= 1
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["test_documents"] == 7


@pytest.mark.parametrize("args, code, phrases", [
    (["--text-field", "body"], 1, ("--text-field", "'body'")),
    (["--id-field", "ident"], 1, ("--id-field", "'ident'")),
    (["--date-field", "dte"], 1, ("--date-field", "'dte'")),
    (["--threshold", "abc"], 2, ("--threshold",)),
    (["--threshold", "2"], 1, ("--threshold",)),
    (["--examples", "-1"], 2, ("--examples",)),
])
def test_leakage_bad_options(tmp_path, corpus, train_file, args, code, phrases):
    before = snapshot(tmp_path)
    result = invoke("leakage", "--train", train_file, "--test", corpus, *args,
                    "--pairs-out", tmp_path / "p.parquet", "-q")
    assert_failed(result, code, *phrases)
    assert snapshot(tmp_path) == before


def test_leakage_missing_and_empty_inputs(tmp_path, train_file):
    before = snapshot(tmp_path)
    result = invoke("leakage", "--train", train_file, "--test", tmp_path / "nope.jsonl",
                    "--pairs-out", tmp_path / "p.parquet")
    assert_failed(result, 1, "nope.jsonl")
    assert snapshot(tmp_path) == before
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = invoke("leakage", "--train", empty, "--test", empty, "--pairs-out",
                    tmp_path / "p.parquet")
    assert result.exit_code == 0, result.output
    assert "no document" in result.output
    assert pq.read_table(tmp_path / "p.parquet").num_rows == 0


# ---------------------------------------------------------------------------- calibrate


@pytest.fixture
def labels(tmp_path) -> Path:
    path = tmp_path / "labels.csv"
    path.write_text("id_a,id_b,label\na,b,y\nc,d,y\na,c,n\nb,e,n\n")
    return path


@pytest.mark.parametrize("args, phrases", [
    (["--out", "{corpus_link}"], ("--out", "is the input")),
    (["--save-labels", "{labels}"], ("--save-labels", "is the input")),
    (["--out", "cal.txt"], ("--out", "must end in one of .json")),
    (["--save-labels", "labels.txt"], ("--save-labels", "must end in one of")),
    (["--out", "corpus.jsonl/cal.json"], ("--out", "not a directory")),
    (["--fit-verifier", "{corpus}"], ("--fit-verifier", "not an empty folder")),
    (["--fit-verifier", "model", "--out", "model/cal.json"], ("--out", "inside --fit-verifier")),
    (["--id-field", "ident"], ("--id-field", "'ident'")),
    (["--text-field", "body"], ("--text-field", "'body'")),
])
def test_calibrate_refuses_before_any_work(tmp_path, corpus, labels, args, phrases):
    link = tmp_path / "cal.json"
    link.symlink_to(corpus)
    names = {"corpus_link": link, "labels": labels, "corpus": corpus}
    args = [a.format(**names) if "{" in a else a for a in args]
    paths = ("--out", "--save-labels", "--fit-verifier")
    args = [str(tmp_path / a) if k and args[k - 1] in paths and not a.startswith("/") else a
            for k, a in enumerate(args)]
    if "--id-field" not in args:
        args += ["--id-field", "id"]
    before = snapshot(tmp_path)
    result = invoke("calibrate", corpus, "--labels", labels, *args)
    assert_failed(result, 1, *phrases)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("content, phrases", [
    (None, ("--labels", "nope.csv")),
    ("id_a,id_b,label\na,b,maybe\n", ("row 1", "y/n")),
    ("id_a,id_b\na,b\n", ("row 1", "id_a, id_b and label")),
    (b"id_a,id_b,label\na,b,\xff\n", ("--labels", "not UTF-8")),
    ("id_a,id_b,label\na,zz,y\n", ("'zz'", "--id-field")),
])
def test_calibrate_bad_labels_file(tmp_path, corpus, content, phrases):
    path = tmp_path / "nope.csv"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    before = snapshot(tmp_path)
    result = invoke("calibrate", corpus, "--id-field", "id", "--labels", path,
                    "--out", tmp_path / "cal.json")
    assert_failed(result, 1, *phrases)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("option, value", [("--n-pairs", "abc"), ("--n-pairs", "1"),
                                           ("--min-precision", "2"), ("--min-gain", "x"),
                                           ("--seed", "1.5"), ("--seed", "-1")])
def test_calibrate_numeric_options(tmp_path, corpus, option, value):
    result = invoke("calibrate", corpus, option, value, "--out", tmp_path / "cal.json")
    assert_failed(result, 2, option)
    assert not (tmp_path / "cal.json").exists()


@pytest.mark.slow
def test_calibrate_writes_its_outputs_as_a_set(tmp_path, corpus, labels):
    saved = tmp_path / "saved.jsonl"
    result = invoke("calibrate", corpus, "--id-field", "id", "--labels", labels,
                    "--method", "ngram", "--out", tmp_path / "cal.json", "--save-labels", saved)
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "cal.json").read_text())["method"] == "ngram"
    rows = [json.loads(line) for line in saved.read_text().splitlines()]
    assert [r["label"] for r in rows] == ["y", "y", "n", "n"]
    # The saved labels read back as --labels.
    again = invoke("calibrate", corpus, "--id-field", "id", "--labels", saved,
                   "--method", "ngram", "--out", tmp_path / "cal2.json")
    assert again.exit_code == 0, again.output
    assert not [p for p in tmp_path.iterdir() if ".neardup-" in p.name]


# --------------------------------------------------------------------------- eval, tune


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_tune_out_on_the_input_is_refused(tmp_path, labeled, link):
    out = tmp_path / "tuning.json"
    if link == "symlink":
        out.symlink_to(labeled)
    else:
        os.link(labeled, out)
    before = snapshot(tmp_path)
    result = invoke("tune", labeled, "--out", out)
    assert_failed(result, 1, "--out", "is the input")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("out, phrase", [("tuning.txt", "must end in one of .json"),
                                         ("labeled.jsonl/t.json", "not a directory")])
def test_tune_bad_out_is_refused_before_reading(tmp_path, labeled, out, phrase):
    before = snapshot(tmp_path)
    result = invoke("tune", labeled, "--out", tmp_path / out)
    assert_failed(result, 1, "--out", phrase)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("command", ["eval", "tune"])
@pytest.mark.parametrize("args, code, phrases", [
    (["--split-field", "splt"], 1, ("--split-field", "'splt'")),
    (["--date-field", "dte"], 1, ("--date-field", "'dte'")),
    (["--cluster-field", "clu"], 1, ("--cluster-field", "'clu'")),
    (["--text-field", "body"], 1, ("--text-field", "'body'")),
    (["--id-field", "ident"], 1, ("--id-field", "'ident'")),
    (["--threshold", "abc"], 2, ("--threshold",)),
    (["--seed", "x"], 2, ("--seed",)),
    (["--seed", "-1"], 2, ("--seed",)),
    (["--split", "train"], 1, ("--split", "'test', 'validation'")),
])
def test_eval_and_tune_bad_fields_and_options(tmp_path, labeled, command, args, code, phrases):
    if command == "tune" and args[0] == "--split":
        args = ["--split", "training"]
    extra = ["--out", tmp_path / "t.json"] if command == "tune" else []
    before = snapshot(tmp_path)
    result = invoke(command, labeled, *args, *extra)
    assert_failed(result, code, *phrases)
    assert snapshot(tmp_path) == before


def test_eval_cluster_field_with_pairs_and_empty_input(tmp_path, labeled):
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("id_a,id_b\nvalidation0-0,validation0-1\n")
    result = invoke("eval", labeled, "--pairs", pairs, "--cluster-field", "cluster")
    assert_failed(result, 2, "--cluster-field", "--pairs")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    before = snapshot(tmp_path)
    for command in ("eval", "tune"):
        extra = ["--out", tmp_path / "t.json", "--split", "none"] if command == "tune" else []
        assert_failed(invoke(command, empty, *extra), 1, "holds no document")
    assert snapshot(tmp_path) == before


def test_eval_missing_inputs(tmp_path, labeled):
    assert_failed(invoke("eval", tmp_path / "nope.jsonl"), 1, "nope.jsonl")
    assert_failed(invoke("eval", labeled, "--from-tuning", tmp_path / "nope.json"), 1,
                  "nope.json")
    assert_failed(invoke("eval", labeled, "--pairs", tmp_path / "nope.csv"), 1, "nope.csv")


# ------------------------------------------------------------------------------ augment


@pytest.fixture
def stories(tmp_path) -> Path:
    words = (STORY + " " + OTHER + " " + THIRD).split()
    rows = [{"doc": f"s{k}", "body": " ".join(words[k:] + words[:k]),
             "when": f"1987-04-0{1 + k % 4}", "topics": ["grain"]} for k in range(24)]
    path = tmp_path / "validation.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _augment(stories, *args):
    return invoke("augment", stories, "--text-field", "body", "--id-field", "doc",
                  "--date-field", "when", "--splits", "validation=10,test=10", "--no-progress",
                  "-q", *args)


@pytest.mark.parametrize("args, code, phrases", [
    (["--out", "{input}"], 1, ("--out", "is the input")),
    (["--out", "{dir}/{{split}}.jsonl"], 1, ("--out (validation split)", "is the input")),
    (["--out", "{dir}/o.jsonl", "--stats", "{dir}/s.txt"], 1,
     ("--stats", "must end in one of .json")),
    (["--out", "{dir}/o.txt"], 1, ("--out", "must end in one of")),
    (["--out", "{dir}/validation.jsonl/o.jsonl"], 1, ("--out", "not a directory")),
    (["--out", "{dir}/o.jsonl", "--date-field", "dte"], 1, ("--date-field", "'dte'")),
    (["--out", "{dir}/o.jsonl", "--topics-field", "tpc"], 1, ("--topics-field", "'tpc'")),
    (["--out", "{dir}/o.jsonl", "--id-field", "ident"], 1, ("--id-field", "'ident'")),
    (["--out", "{dir}/o.jsonl", "--text-field", "txt"], 1, ("--text-field", "'txt'")),
    (["--out", "{dir}/o.jsonl", "--limit", "-1"], 2, ("--limit",)),
    (["--out", "{dir}/o.jsonl", "--seed", "-1"], 2, ("--seed",)),
    (["--out", "{dir}/o.jsonl", "--mean-cluster-size", "abc"], 2, ("--mean-cluster-size",)),
    (["--out", "{dir}/o.jsonl", "--hard-negative-share", "5"], 1, ("--hard-negative-share",)),
    (["--out", "{dir}/o.jsonl", "--splits", "dev=3"], 1, ("--splits", "'dev'")),
])
def test_augment_refuses_before_any_work(tmp_path, stories, args, code, phrases):
    args = [a.format(input=stories, dir=tmp_path) for a in args]
    before = snapshot(tmp_path)
    result = _augment(stories, *args)
    assert_failed(result, code, *phrases)
    assert snapshot(tmp_path) == before


def test_augment_empty_input_writes_nothing(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    before = snapshot(tmp_path)
    result = invoke("augment", empty, "--out", tmp_path / "o.jsonl", "--stats",
                    tmp_path / "s.json")
    assert_failed(result, 1, "no documents generated")
    assert snapshot(tmp_path) == before


# -------------------------------------------------------------------------------- train


@pytest.mark.parametrize("case", ["out-is-input", "out-holds-input", "out-under-a-file",
                                  "out-is-someone-elses", "missing-train", "empty-train"])
def test_train_refuses_before_any_work(tmp_path, labeled, case):
    pytest.importorskip("sklearn")
    out, train, phrases = tmp_path / "model", labeled, ("--out",)
    if case == "out-is-input":
        out = labeled
        phrases = ("--out", "is a file")
    elif case == "out-holds-input":
        out = tmp_path
        phrases = ("--out", "inside")
    elif case == "out-under-a-file":
        out = labeled / "model"
        phrases = ("--out", "not a directory")
    elif case == "out-is-someone-elses":
        out = tmp_path / "photos"
        out.mkdir()
        (out / "config.json").write_text("mine")
        phrases = ("--out", "not a neardup training run")
    elif case == "missing-train":
        train = tmp_path / "nope.jsonl"
        phrases = ("--train", "nope.jsonl", "no such file")
    else:
        train = tmp_path / "empty.jsonl"
        train.write_text("")
        phrases = ("--train", "no document")
    before = snapshot(tmp_path)
    result = invoke("train", "verifier", "--train", train, "--validation", labeled,
                    "--out", out, "--quiet")
    assert_failed(result, 1, *phrases)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("option, value", [("--epochs", "x"), ("--epochs", "0"),
                                           ("--threads", "0"), ("--seed", "1.5"),
                                           ("--seed", "-1"), ("--lr", "0")])
def test_train_numeric_options(tmp_path, labeled, option, value):
    result = invoke("train", "biencoder", "--train", labeled, "--validation", labeled,
                    "--out", tmp_path / "model", option, value)
    assert_failed(result, 2, option)
    assert not (tmp_path / "model").exists()


# ---------------------------------------------------------------- sets and interrupts


def test_a_failed_write_leaves_every_previous_output(tmp_path, corpus, train_file, monkeypatch):
    """leakage's two outputs: the second fails (disk full), the first is not replaced."""
    import errno

    import neardup.io.outputs as outputs_module

    pairs, report = tmp_path / "p.jsonl", tmp_path / "r.json"
    pairs.write_text("previous pairs\n")
    report.write_text("previous report\n")
    before = snapshot(tmp_path)

    def full(self, name, text):
        raise OSError(errno.ENOSPC, "No space left on device", str(self.temporary(name)))

    monkeypatch.setattr(outputs_module.OutputSet, "write_text", full)
    result = invoke("leakage", "--train", train_file, "--test", corpus, "--pairs-out", pairs,
                    "--report", report, "-q")
    assert_failed(result, 1, f"{report}: No space left on device",
                  "previous files are as they were")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("command", ["leakage", "tune", "report"])
def test_ctrl_c_exits_130_and_leaves_nothing(tmp_path, corpus, train_file, labeled, run_files,
                                             monkeypatch, command):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    if command == "leakage":
        monkeypatch.setattr("neardup.leakage.find_leakage", interrupted)
        args = ["leakage", "--train", train_file, "--test", corpus, "--pairs-out",
                tmp_path / "p.parquet", "--report", tmp_path / "r.json"]
    elif command == "tune":
        monkeypatch.setattr("neardup.eval.tuning.tune", interrupted)
        args = ["tune", labeled, "--out", tmp_path / "t.json"]
    else:
        monkeypatch.setattr("neardup.report.collect_report", interrupted)
        args = ["report", *run_files.values(), "--id-field", "id", "--out", tmp_path / "r.html"]
    before = snapshot(tmp_path)
    result = invoke(*args)
    assert_failed(result, 130, "interrupted")
    assert snapshot(tmp_path) == before


# ------------------------------------------------- options that would be silently ignored


@pytest.mark.parametrize("args, phrase", [
    (["calibrate", "{corpus}", "--labels", "{labels}", "--n-pairs", "10"], "--n-pairs"),
    (["calibrate", "{corpus}", "--labels", "{labels}", "--min-precision", "0.9",
      "--min-gain", "0.2"], "--min-gain"),
    (["train", "verifier", "--train", "{labeled}", "--validation", "{labeled}", "--out",
      "{dir}/m", "--epochs", "3"], "--epochs"),
    (["train", "verifier", "--train", "{labeled}", "--validation", "{labeled}", "--out",
      "{dir}/m", "--patience", "3"], "--patience"),
])
def test_an_option_that_would_be_ignored_is_a_usage_error(tmp_path, corpus, labels, labeled,
                                                          args, phrase):
    names = {"corpus": corpus, "labels": labels, "labeled": labeled, "dir": tmp_path}
    before = snapshot(tmp_path)
    result = invoke(*(a.format(**names) for a in args))
    assert_failed(result, 2, phrase)
    assert snapshot(tmp_path) == before


def test_a_swept_value_is_named_by_its_grid_entry(tmp_path, labeled):
    before = snapshot(tmp_path)
    result = invoke("tune", labeled, "--grid", "threshold=0.5,7", "--out", tmp_path / "t.json")
    assert_failed(result, 1, "--grid threshold", "7")
    assert snapshot(tmp_path) == before


# ------------------------------------------------------------- malformed run and label files


@pytest.mark.parametrize("content, phrase", [
    ('{"summary": [1, 2], "params": "x"}', "'summary' is a list"),
    ('{"summary": {}, "params": [1]}', "'params' is a list"),
    ('{"summary": ' + "[" * 3000 + "]" * 3000 + "}", "nested too deeply"),
    ("[1, 2, 3]", "has no 'summary'"),
    ("{not json", "is not JSON"),
])
def test_report_malformed_summary_json(tmp_path, corpus, run_files, content, phrase):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    before = snapshot(tmp_path)
    result = invoke("report", run_files["clusters"], bad, "--input", corpus, "--id-field", "id",
                    "--out", tmp_path / "page.html")
    assert_failed(result, 1, "bad.json", phrase)
    # Without --input the inputs would come from the JSON: it is read before any work.
    result = invoke("report", run_files["clusters"], bad, "--id-field", "id",
                    "--out", tmp_path / "page.html")
    assert_failed(result, 1)
    assert "bad.json" in result.output or "pass --input" in result.output, result.output
    assert snapshot(tmp_path) == before


def test_calibrate_deeply_nested_labels(tmp_path, corpus):
    deep = tmp_path / "labels.jsonl"
    deep.write_text('{"id_a": ' + "[" * 3000 + "]" * 3000 + "}\n")
    before = snapshot(tmp_path)
    result = invoke("calibrate", corpus, "--id-field", "id", "--labels", deep,
                    "--out", tmp_path / "cal.json")
    assert_failed(result, 1, "--labels", "labels.jsonl", "line 1")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("clusters, pairs, phrase", [
    ("id,cluster\na,x\nb,0\n", None, "column 'cluster' must hold whole numbers"),
    ("id,cluster,representative\na,0,maybe\nb,0,true\n", None,
     "column 'representative' must hold true/false values"),
    ("id,cluster\na,0\nb,99999999999\n", None, "cluster ids go up to 99,999,999,999"),
    ("id,cluster\na,0\nb,0\n", "id_a,id_b,score\na,b,high\n", "column 'score' must hold numbers"),
    ("id,cluster\na,0\nb,-1\n", None, "negative cluster id"),
    ("id,cluster\na,0\nb,0\n", "id_a,id_b,score\na,zz,0.9\n", "names id 'zz'"),
])
def test_report_malformed_run_tables(tmp_path, corpus, clusters, pairs, phrase):
    files = [tmp_path / "clusters.csv"]
    files[0].write_text(clusters)
    if pairs is not None:
        files.append(tmp_path / "pairs.csv")
        files[1].write_text(pairs)
    before = snapshot(tmp_path)
    result = invoke("report", *files, "--input", corpus, "--id-field", "id",
                    "--out", tmp_path / "page.html")
    assert_failed(result, 1, phrase)
    assert snapshot(tmp_path) == before


# ----------------------------------------------------------------------- fuzzing --labels


def test_labels_file_reader_fails_only_with_input_error(tmp_path):
    """Whatever the bytes of a --labels file, read_label_file returns rows or raises
    InputError (printed as one line naming the file), never another exception."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from neardup.cli.calibrate import read_label_file
    from neardup.errors import InputError

    @settings(max_examples=150, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(data=st.one_of(
        st.binary(max_size=200),
        st.lists(st.text(max_size=12), max_size=5).map(lambda rows: "\n".join(
            ["id_a,id_b,label"] + rows).encode("utf-8", "surrogatepass")),
        st.lists(st.dictionaries(st.sampled_from(["id_a", "id_b", "label"]),
                                 st.one_of(st.text(max_size=4), st.integers(), st.none(),
                                           st.booleans()), max_size=3),
                 max_size=4).map(lambda rows: "".join(json.dumps(r) + "\n"
                                                      for r in rows).encode())),
        suffix=st.sampled_from([".csv", ".tsv", ".jsonl"]))
    def check(data, suffix):
        path = tmp_path / f"labels{suffix}"
        path.write_bytes(data)
        try:
            rows = read_label_file(path)
        except InputError as exc:
            assert str(path) in str(exc)
            return
        assert all(isinstance(a, str) and isinstance(b, str) and isinstance(label, bool)
                   for a, b, label in rows)

    check()


# --------------------------------------------------------------------------- read twice


@pytest.fixture
def pipe(tmp_path):
    """A named pipe nothing writes to. A regression that opens it anyway is not left
    waiting forever: after 30 s a thread keeps opening and closing its writing end, so
    each read ends (empty) and the test fails instead of hanging."""
    import threading
    import time

    fifo = tmp_path / "train.jsonl"
    os.mkfifo(fifo)
    done = threading.Event()

    def release():
        if done.wait(30):
            return
        while not done.is_set():
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # no reader right now
                pass
            time.sleep(0.2)

    threading.Thread(target=release, daemon=True).start()
    yield fifo
    done.set()


@pytest.mark.parametrize("command, why", [
    (["spans", "--out"], "neardup spans reads its input twice"),
    (["substrings", "--out"], "neardup substrings reads its input twice"),
    (["decontaminate", "--against", "EVAL", "--out"], "--out reads the training data a second time"),
    # The keep policies that read each record's value do so before the run's own read.
    (["dedup", "--keep", "most-complete", "--clusters-out"], "--keep most-complete reads the input"),
    (["dedup", "--keep-by", "n", "--clusters-out"], "--keep-by reads the input a second time"),
])
def test_named_pipe_that_would_be_read_twice_is_refused(tmp_path, corpus, pipe, command, why):
    args = [str(corpus) if a == "EVAL" else a for a in command]
    result = invoke(args[0], pipe, *args[1:], tmp_path / "out.jsonl", "-q")
    argument = "TRAIN" if args[0] == "decontaminate" else "INPUT"
    assert_failed(result, 2, f"{argument} {pipe} is a named pipe", why, "Save it to a file first")
    assert not (tmp_path / "out.jsonl").exists()


def test_decontaminate_refuses_training_data_rewritten_during_the_run(tmp_path, corpus,
                                                                       monkeypatch):
    # --out and --removed-out take records by position from a second read of the
    # training data: one rewritten meanwhile, even to the same size and time, is refused.
    import neardup.decontaminate

    train = tmp_path / "train.jsonl"
    train.write_text(corpus.read_text())
    stat = os.stat(train)
    real = neardup.decontaminate.find_contamination

    def find_then_rewrite(*args, **kwargs):
        result = real(*args, **kwargs)
        train.write_text(train.read_text().replace("wheat", "maize"))  # the same size
        os.utime(train, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        return result

    monkeypatch.setattr(neardup.decontaminate, "find_contamination", find_then_rewrite)
    before = snapshot(tmp_path)
    result = invoke("decontaminate", train, "--against", corpus, "--id-field", "id",
                    "--out", tmp_path / "clean.jsonl", "--removed-out", tmp_path / "removed.jsonl", "-q")
    assert_failed(result, 1, f"{train}: the input changed during the run",
                  "the texts read a second time differ", "No output was written")
    after = snapshot(tmp_path)
    assert sorted(after) == sorted(before)  # no output, no temporary file
