"""End-to-end: `neardup report`, `neardup dedup --html` and `neardup explain`."""

import json
import re
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from neardup.cli import main

STORY = ("The central bank raised its key interest rate by half a point on Tuesday, citing "
         "stubborn inflation and strong wage growth across the economy, officials said.")


@pytest.fixture
def corpus(tmp_path):
    rows = [
        {"doc": "a", "body": STORY, "when": "1987-03-01T10:00:00", "label": "x"},
        {"doc": "b", "body": STORY.replace("officials", "aides"), "when": "1987-03-05T10:00:00",
         "label": "x"},
        {"doc": "c", "body": STORY.upper(), "when": "1987-03-01T12:00:00", "label": "x"},
        {"doc": "d", "body": "Wheat futures fell in Chicago as rain improved the crop outlook.",
         "when": None, "label": "y"},
    ]
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _data(page: str) -> dict:
    block = re.search(r'<script id="neardup-data" type="application/json">(.*?)</script>',
                      page, re.S)
    return json.loads(block.group(1))


def _invoke(args):
    return CliRunner().invoke(main, args, catch_exceptions=False)


READ = ["--text-field", "body", "--id-field", "doc", "--date-field", "when"]


def test_report_from_run_outputs_in_any_order(corpus, tmp_path):
    out = tmp_path / "out"
    run = _invoke(["dedup", str(corpus), "--method", "minhash", *READ,
                   "--clusters-out", str(out / "c.parquet"),
                   "--pairs-out", str(out / "p.jsonl"), "--report", str(out / "r.json"),
                   "--html", str(out / "direct.html"), "--quiet"])
    assert run.exit_code == 0, run.output
    # Inputs come from the --report JSON; the files may be given in any order.
    result = _invoke(["report", str(out / "r.json"), str(out / "p.jsonl"), str(out / "c.parquet"),
                      *READ, "--label-field", "label", "--out", str(out / "report.html")])
    assert result.exit_code == 0, result.output
    assert "wrote" in result.output and "2 of 2 clusters shown" in result.output
    data = _data((out / "report.html").read_text())
    direct = _data((out / "direct.html").read_text())
    assert [c["size"] for c in data["clusters"]] == [3, 1]
    for key in ("sweep", "histogram", "pair_types"):
        assert data[key] == direct[key], key
    for cluster in data["clusters"]:  # the same page, plus the labels asked for
        for member in cluster["members"]:
            assert member.pop("label") in ("x", "y")
    assert data["clusters"] == direct["clusters"]
    assert data["labels"]["false_merges"] == 0 and data["labels"]["misses"] == 0
    assert data["meta"]["method"] == "minhash"


def test_report_needs_the_clusters_table_and_an_input(corpus, tmp_path):
    out = tmp_path / "out"
    _invoke(["dedup", str(corpus), *READ, "--clusters-out", str(out / "c.csv"),
             "--pairs-out", str(out / "p.parquet"), "--quiet"])
    no_clusters = _invoke(["report", str(out / "p.parquet"), "--out", str(tmp_path / "r.html")])
    assert no_clusters.exit_code == 2
    assert "must include the clusters table" in no_clusters.output
    no_input = _invoke(["report", str(out / "c.csv"), "--out", str(tmp_path / "r.html")])
    assert no_input.exit_code == 1 and "no input corpus: pass --input" in no_input.output
    ok = _invoke(["report", str(out / "c.csv"), str(out / "p.parquet"), "--input", str(corpus),
                  *READ, "--max-clusters", "1", "--out", str(tmp_path / "r.html")])
    assert ok.exit_code == 0, ok.output
    assert len(_data((tmp_path / "r.html").read_text())["clusters"]) == 1
    wrong_ids = _invoke(["report", str(out / "c.csv"), "--input", str(corpus),
                         "--text-field", "body", "--out", str(tmp_path / "r2.html")])
    assert wrong_ids.exit_code == 1 and "Pass the input the run read" in wrong_ids.output


def test_report_refuses_a_corpus_other_than_the_one_the_run_read(corpus, tmp_path):
    """The ids alone cannot tell: the rewrite keeps every id and changes one text."""
    import os
    import shutil

    out = tmp_path / "out"
    run = _invoke(["dedup", str(corpus), "--method", "minhash", *READ, "--quiet",
                   "--clusters-out", str(out / "c.parquet"), "--report", str(out / "r.json")])
    assert run.exit_code == 0, run.output
    recorded = json.loads((out / "r.json").read_text())["input_texts"]
    assert [t["documents"] for t in recorded] == [4]

    def report(*extra):
        page = tmp_path / f"page{len(list(tmp_path.glob('page*')))}.html"
        return _invoke(["report", str(out / "c.parquet"), str(out / "r.json"), *READ, *extra,
                        "--out", str(page)]), page

    assert report()[0].exit_code == 0
    os.utime(corpus, ns=(1, 1))  # touched: the texts decide, and they are the same
    assert report()[0].exit_code == 0
    copy = tmp_path / "copy.jsonl"
    shutil.copy(corpus, copy)
    assert report("--input", str(copy))[0].exit_code == 0
    rows = [json.loads(line) for line in corpus.read_text().splitlines()]
    rows[3]["body"] = rows[3]["body"].replace("Wheat", "Corn")
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    changed, page = report()
    assert changed.exit_code == 1 and not page.exists()
    assert "corpus.jsonl: this is not the corpus the run read (its texts differ" in changed.output
    shorter, _ = report("--input", str(copy), "--limit", "3")
    assert shorter.exit_code == 1
    assert "holds 3 documents where the run read 4" in shorter.output


def test_report_of_a_resumed_run_checks_ids_only(tmp_path):
    """A resumed run reads only the first documents again (--profile auto's sample): it
    records no digest, rather than a digest of part of its input."""
    rows = [{"doc": f"d{i}", "body": f"story {i % 700} about grain prices in chicago"}
            for i in range(2100)]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    args = ["dedup", str(corpus), "--method", "minhash", "--text-field", "body", "--id-field",
            "doc", "--batch-size", "500", "--work-dir", str(tmp_path / "work"), "--quiet",
            "--clusters-out", str(out / "c.parquet"), "--report", str(out / "r.json")]
    assert _invoke(args).exit_code == 0
    assert [t["documents"] for t in json.loads((out / "r.json").read_text())["input_texts"]] \
        == [2100]
    resumed = _invoke([*args, "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert json.loads((out / "r.json").read_text())["input_texts"] == []
    page = _invoke(["report", str(out / "c.parquet"), str(out / "r.json"), "--text-field",
                    "body", "--id-field", "doc", "--out", str(tmp_path / "r.html")])
    assert page.exit_code == 0, page.output


def test_report_reads_a_directory_of_parquet_parts_as_one_table(corpus, tmp_path):
    """--engine ray writes its tables as directories of parts, numbered by shard."""
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    run = _invoke(["dedup", str(corpus), "--method", "minhash", *READ, "--quiet",
                   "--clusters-out", str(out / "c.parquet"), "--report", str(out / "r.json")])
    assert run.exit_code == 0, run.output
    table = pq.read_table(out / "c.parquet")
    parts = tmp_path / "clusters"
    parts.mkdir()
    for number, rows in ((10, slice(2, None)), (2, slice(0, 2))):  # part-00010 after 00002
        pq.write_table(table[rows], parts / f"part-{number:05d}.parquet")
    whole = _invoke(["report", str(out / "c.parquet"), str(out / "r.json"), *READ,
                     "--out", str(tmp_path / "whole.html")])
    split = _invoke(["report", str(parts), str(out / "r.json"), *READ,
                     "--out", str(tmp_path / "split.html")])
    assert whole.exit_code == 0 and split.exit_code == 0, split.output
    assert _data((tmp_path / "split.html").read_text())["clusters"] == \
        _data((tmp_path / "whole.html").read_text())["clusters"]
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = _invoke(["report", str(empty), "--input", str(corpus), "--out",
                       str(tmp_path / "e.html")])
    assert refused.exit_code == 2 and "is not a clusters table" in refused.output


def test_help_documents_every_option():
    from neardup.cli.explain import explain_command
    from neardup.cli.report import report_command

    for command in (report_command, explain_command):
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help and len(param.help) > 10, (command.name, param.name)
    report_help = _invoke(["report", "--help"]).output
    for flag in ("--input", "--out", "--label-field", "--max-clusters", "--max-members",
                 "--max-chars", "--text-field", "--id-field", "--limit"):
        assert flag in report_help
    explain_help = _invoke(["explain", "--help"]).output
    for flag in ("--method", "--threshold", "--time-window", "--ngram", "--text-field",
                 "--id-field", "--date-field"):
        assert flag in explain_help
    assert "--html" in _invoke(["dedup", "--help"]).output


@pytest.mark.slow
def test_explain_prints_every_methods_verdict(corpus):
    result = subprocess.run(
        [sys.executable, "-m", "neardup", "explain", str(corpus), "a", "b", *READ,
         "--time-window", "48"],
        capture_output=True, text=True, env={"COLUMNS": "160", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for text in ("neardup explain a vs b", "Shared word 3-grams", "exact", "ngram", "minhash",
                 "simhash", "spotsigs", "Pair type:", "96.0 hours apart",
                 "outside 48 h", "officials", "aides"):
        assert text in out, text
    assert re.search(r"minhash\s+│ estimated Jaccard.*│\s+duplicate", out)
    assert re.search(r"exact\s+│ normalized texts identical.*│ not linked", out)


def test_explain_names_the_missing_id(corpus):
    result = _invoke(["explain", str(corpus), "a", "zzz", *READ])
    assert result.exit_code == 1
    assert "no document with id 'zzz'" in result.output
    usage = _invoke(["explain", str(corpus), "a", "b", *READ, "--threshold", "0.3"])
    assert usage.exit_code == 2 and "--threshold applies to --method" in usage.output
