"""``method="auto"``, the default (neardup.method_choice, decision 0053): rerank on an input
within the limits, minhash above them, chosen from the run's own read; recorded, said in
the summary, the same in Python, on the command line, in ``eval`` and ``tune``; a method
option with ``auto`` is an error. The limits are lowered here so that a few documents
cross them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import neardup
from neardup import method_choice
from neardup.cli import main
from neardup.errors import ParameterError
from neardup.io.batch import DocumentBatch
from neardup.method_choice import AUTO, choose_from_batches, choose_method

STORY = ("Crude oil prices rose sharply on Monday after the producers agreed to cut output "
         "by two percent, traders said, and the rally spread to heating oil and gasoline.")
TEXTS = [STORY, STORY.replace("two percent", "2 pct"), "The home team won the match three to one.",
         "The home team won the match three to one!", "Shares of the bank fell after its loss."]


@pytest.fixture
def limit(monkeypatch):
    """Lower the document limit to 3 (the character limit to 10,000)."""
    monkeypatch.setattr(method_choice, "RERANK_MAX_DOCS", 3)
    monkeypatch.setattr(method_choice, "RERANK_MAX_CHARS", 10_000)


def _batches(texts, size):
    return (DocumentBatch([str(i) for i in range(s, min(s + size, len(texts)))],
                          list(texts[s:s + size]), None, "test",
                          np.arange(s, min(s + size, len(texts)), dtype=np.int64))
            for s in range(0, len(texts), size))


def test_a_named_method_reads_nothing():
    def never():
        raise AssertionError("read")
        yield  # pragma: no cover

    choice, batches = choose_from_batches("ngram", never())
    assert choice.name == "ngram" and not choice.chosen and choice.run_params() == {}
    assert choose_method("exact", never()).name == "exact"


@pytest.mark.parametrize(("n_docs", "expected"), [(0, "rerank"), (3, "rerank"), (4, "minhash")])
def test_the_document_limit(limit, n_docs, expected):
    texts = [f"text {i}" for i in range(n_docs)]
    assert choose_method(AUTO, texts).name == expected
    choice, batches = choose_from_batches(AUTO, _batches(texts, 2))
    assert choice.name == expected and choice.small == (expected == "rerank")
    # Every batch comes back once, in order, after the look-ahead: a stream is read once.
    assert [t for b in batches for t in b.texts] == texts


def test_the_character_limit(limit):
    assert choose_method(AUTO, ["x" * 10_000]).name == "rerank"
    assert choose_method(AUTO, ["x" * 10_000, "y"]).name == "minhash"
    choice, _ = choose_from_batches(AUTO, _batches(["x" * 6_000, "y" * 6_000], 1))
    assert (choice.name, choice.docs, choice.chars) == ("minhash", 2, 12_000)


def test_a_memory_limit_bounds_the_look_ahead():
    texts = ["x" * 100_000] * 3  # 300,000 characters
    assert choose_method(AUTO, texts).name == "rerank"
    choice = choose_method(AUTO, texts, memory_limit=1 << 20)  # a quarter: 262,144
    assert (choice.name, choice.max_chars) == ("minhash", 262_144)
    assert choice.record()["rerank_max_chars"] == 262_144
    result = neardup.dedup(texts, memory_limit="1MB")
    assert result.method == "minhash" and result.params["method_auto"]["docs_read"] == 3


def test_the_look_ahead_stops_past_the_limit(limit):
    read = []

    def stream():
        for i in range(100):
            read.append(i)
            yield from _batches([f"doc {i}"], 1)

    choice, batches = choose_from_batches(AUTO, stream())
    assert choice.name == "minhash" and len(read) == 4  # one past the limit, no more
    assert len(list(batches)) == 100


def test_python_runs_and_records_the_chosen_method(limit):
    small = neardup.dedup(TEXTS[:3])
    assert small.method == "rerank" and small.params["method_auto"]["within_limits"]
    named = neardup.dedup(TEXTS[:3], "rerank")
    np.testing.assert_array_equal(small.clusters, named.clusters)
    assert "method_auto" not in named.params
    large = neardup.dedup(TEXTS, seed=3)
    # The look-ahead reads whole batches: here the one batch of all five documents.
    assert large.method == "minhash" and large.params["method_auto"]["docs_read"] == 5
    np.testing.assert_array_equal(large.clusters, neardup.dedup(TEXTS, "minhash", seed=3).clusters)
    assert large.clusters[2] == large.clusters[3]  # a copy found by the chosen method


@pytest.mark.parametrize("params", [{"threshold": 0.3}, {"shingle": None}, {"profile": "noisy"},
                                    {"candidate_params": {"threshold": 0.2}}])
def test_python_refuses_a_method_parameter_without_the_method(params):
    with pytest.raises(ParameterError, match="method="):
        neardup.dedup(TEXTS, **params)


def _report(tmp_path, *args):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n"
                              for i, t in enumerate(TEXTS)))
    report = tmp_path / "r.json"
    result = CliRunner().invoke(main, ["dedup", str(corpus), "--id-field", "id", "--report",
                                       str(report), *args], terminal_width=400)
    assert result.exit_code == 0, result.output
    return json.loads(report.read_text()), " ".join(result.output.split())


def test_the_command_line_says_and_records_which_method_ran(tmp_path, limit, monkeypatch):
    record, output = _report(tmp_path)
    assert record["method"] == "minhash" and record["params"]["method_auto"]["docs_read"] == 5
    assert "method auto chose minhash" in output and "--method rerank" in output
    assert "neardup dedup --method minhash" in output
    monkeypatch.setattr(method_choice, "RERANK_MAX_DOCS", 5)
    record, output = _report(tmp_path)
    assert record["method"] == "rerank" and record["params"]["method_auto"]["within_limits"]
    assert "method auto chose rerank" in output and "neardup dedup --method rerank" in output
    record, output = _report(tmp_path, "--method", "minhash")
    assert "method_auto" not in record["params"] and "method auto" not in output


@pytest.mark.parametrize("args", [["--threshold", "0.3"], ["--param", "max_df=3"],
                                  ["--shingle", "char"], ["--profile", "noisy"], ["--no-casefold"]])
def test_a_method_option_needs_the_method_named(tmp_path, args):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"text": "x"}) + "\n")
    for command in (["dedup", str(corpus)], ["eval", str(corpus)], ["tune", str(corpus)]):
        result = CliRunner().invoke(main, [*command, *args])
        assert result.exit_code == 2, result.output
        assert f"{args[0]} applies to a named method only" in result.output
        assert "--method auto" in result.output and "--method NAME" in result.output


def test_commands_that_cannot_choose_keep_minhash(tmp_path):
    index = tmp_path / "idx"
    result = CliRunner().invoke(main, ["index", "create", str(index)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["method"] == "minhash"
    refused = CliRunner().invoke(main, ["index", "create", str(tmp_path / "i2"), "--method", "auto"])
    assert refused.exit_code == 2 and "auto" in refused.output


def test_eval_and_tune_choose_from_the_evaluated_documents(tmp_path, limit):
    labeled = tmp_path / "l.jsonl"
    labeled.write_text("".join(json.dumps({"id": f"d{i}", "text": t, "cluster": c}) + "\n"
                               for i, (t, c) in enumerate(zip(TEXTS, [0, 0, 1, 1, 2]))))
    report = CliRunner().invoke(main, ["eval", str(labeled), "--json"])
    assert report.exit_code == 0, report.output
    data = json.loads(report.output)
    assert data["method"] == "minhash" and data["method_auto"]["docs_read"] == 4  # text by text
    out = tmp_path / "t.json"
    tuned = CliRunner().invoke(main, ["tune", str(labeled), "--split", "none", "--out", str(out),
                                      "--json"])
    assert tuned.exit_code == 0, tuned.output
    assert json.loads(out.read_text())["method"] == "minhash"
