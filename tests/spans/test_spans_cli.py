"""``neardup spans`` and ``neardup substrings`` on the command line: every record once,
outputs as a set, errors in flags, the same output for the same input."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from neardup.cli import main

FOOTER = "Subscribe to our newsletter for more stories."
TEXTS = [
    f"Wheat rose two cents in Chicago.\n{FOOTER}\nTraders cited the weather.",
    f"Copper fell in London.\n{FOOTER}",
    FOOTER,
    "",
    "A story with no boilerplate at all, and the same words as no other.",
]


def _write(path, texts, ids=True):
    path.write_text("".join(json.dumps({"id": f"doc{i}", "text": t, "n": i} if ids else {"text": t})
                            + "\n" for i, t in enumerate(texts)))
    return path


def _read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_spans_removes_later_copies_and_keeps_every_record(tmp_path):
    source = _write(tmp_path / "in.jsonl", TEXTS)
    out, report, removed = tmp_path / "out.jsonl", tmp_path / "r.json", tmp_path / "rm.parquet"
    result = invoke("spans", source, "--out", out, "--report", report, "--removed-out", removed,
                    "--id-field", "id")
    assert result.exit_code == 0, result.output
    records = _read(out)
    assert [r["id"] for r in records] == [f"doc{i}" for i in range(len(TEXTS))]
    assert [r["n"] for r in records] == list(range(len(TEXTS)))  # other fields kept
    assert [r["text"] for r in records] == [TEXTS[0], "Copper fell in London.\n", "", "", TEXTS[4]]
    table = pq.read_table(removed).to_pydict()
    assert table["id"] == [f"doc{i}" for i in range(len(TEXTS))]
    assert table["bytes_removed"] == [0, len(FOOTER), len(FOOTER), 0, 0]
    summary = json.loads(report.read_text())
    assert summary["summary"]["documents"] == 5 and summary["summary"]["documents_changed"] == 2
    assert summary["top_spans"] == [{"text": FOOTER, "documents": 3, "occurrences": 3}]


def test_same_input_same_output(tmp_path):
    source = _write(tmp_path / "in.jsonl", TEXTS * 3)
    outputs = []
    for name in ("a", "b"):
        out = tmp_path / f"{name}.jsonl"
        assert invoke("spans", source, "--out", out, "--unit", "sentences:1", "-q").exit_code == 0
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]


def test_mark_and_drop_empty(tmp_path):
    source = _write(tmp_path / "in.jsonl", TEXTS)
    out = tmp_path / "out.jsonl"
    assert invoke("spans", source, "--out", out, "--mark").exit_code == 0
    records = _read(out)
    assert [r["text"] for r in records] == TEXTS
    assert records[2]["duplicate_spans"] == [[0, len(FOOTER)]]
    assert records[0]["duplicate_spans"] == []
    assert invoke("spans", source, "--out", out, "--drop-empty").exit_code == 0
    # The emptied copy goes; the document that was empty from the start stays.
    assert [r["text"] for r in _read(out)] == [TEXTS[0], "Copper fell in London.\n", "", TEXTS[4]]


def test_keep_last_and_min_repeats(tmp_path):
    source = _write(tmp_path / "in.jsonl", TEXTS)
    out = tmp_path / "out.jsonl"
    assert invoke("spans", source, "--out", out, "--keep", "last").exit_code == 0
    assert [r["text"] for r in _read(out)][:3] == [
        "Wheat rose two cents in Chicago.\nTraders cited the weather.", "Copper fell in London.\n",
        FOOTER]
    assert invoke("spans", source, "--out", out, "--min-repeats", "4").exit_code == 0
    assert [r["text"] for r in _read(out)] == TEXTS


def test_substrings_and_against(tmp_path):
    shared = "one two three four five six seven eight"
    source = _write(tmp_path / "in.jsonl", [f"alpha {shared} beta", f"gamma {shared}", "delta"])
    out = tmp_path / "out.jsonl"
    result = invoke("substrings", source, "--out", out, "--min-tokens", "5")
    assert result.exit_code == 0, result.output
    assert [r["text"] for r in _read(out)] == [f"alpha {shared} beta", "gamma ", "delta"]
    other = _write(tmp_path / "eval.jsonl", [f"{shared} ten"])
    assert invoke("substrings", source, "--out", out, "--min-tokens", "5",
                  "--against", other).exit_code == 0
    assert [r["text"] for r in _read(out)] == ["alpha beta", "gamma ", "delta"]


def test_substrings_chunked_by_memory_limit_matches_one_chunk(tmp_path):
    # 1MB of memory holds 8,192 tokens a chunk: 40,000 tokens make five chunks.
    words = [f"w{i % 997}" for i in range(4000)]
    texts = [" ".join(words[(i * 37) % 3000:(i * 37) % 3000 + 400]) for i in range(100)]
    source = _write(tmp_path / "in.jsonl", texts, ids=False)
    runs = []
    for limit in ("1MB", "1GB"):
        out, report = tmp_path / f"{limit}.jsonl", tmp_path / f"{limit}.json"
        result = invoke("substrings", source, "--out", out, "--report", report,
                        "--memory-limit", limit, "--min-tokens", "20")
        assert result.exit_code == 0, result.output
        runs.append((out.read_bytes(), json.loads(report.read_text())["summary"]))
    assert runs[0][1]["chunks"] > 1 and runs[1][1]["chunks"] == 1
    assert runs[0][0] == runs[1][0]
    assert runs[0][1]["bytes_removed"] > 0


@pytest.mark.parametrize(("args", "phrases"), [
    ((), ["--out", "--report", "--removed-out"]),
    (("--out", "{tmp}/o.jsonl", "--unit", "word"), ["--unit", "sentences:N"]),
    (("--out", "{tmp}/o.jsonl", "--mark", "--drop-empty"), ["--drop-empty", "--mark"]),
    (("--out", "{tmp}/o.txt"), ["--out", ".jsonl"]),
    (("--out", "{tmp}/in.jsonl"), ["--out", "input"]),
    (("--out", "{tmp}/o.jsonl", "--min-repeats", "1"), ["--min-repeats"]),
    (("--out", "{tmp}/o.jsonl", "--memory-limit", "lots"), ["--memory-limit"]),
    (("--out", "{tmp}/o.jsonl", "--text-field", "body"), ["--text-field", "body"]),
    (("--out", "{tmp}/o.jsonl", "--date-field", "day"), ["--date-field"]),
])
def test_spans_errors_name_flags(tmp_path, args, phrases):
    source = _write(tmp_path / "in.jsonl", TEXTS)
    result = invoke("spans", source, *(a.format(tmp=tmp_path) for a in args))
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    for phrase in phrases:
        assert phrase in result.output, result.output
    assert not (tmp_path / "o.jsonl").exists()


def test_errors_write_nothing(tmp_path):
    source = _write(tmp_path / "in.jsonl", TEXTS)
    out, report = tmp_path / "o.jsonl", tmp_path / "r.json"
    out.write_text("previous\n")
    result = invoke("substrings", source, tmp_path / "missing.jsonl", "--out", out,
                    "--report", report)
    assert result.exit_code != 0 and "missing.jsonl" in result.output
    assert out.read_text() == "previous\n" and not report.exists()
    result = invoke("substrings", source, "--out", out, "--min-tokens", "0")
    assert result.exit_code == 2 and "--min-tokens" in result.output
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "x").write_text("")
    result = invoke("spans", source, "--out", out, "--work-dir", tmp_path / "work")
    assert result.exit_code != 0 and "--work-dir" in result.output


def test_input_rewritten_between_the_passes_is_refused(tmp_path, monkeypatch):
    import neardup.spans

    source = _write(tmp_path / "in.jsonl", TEXTS)
    out = tmp_path / "out.jsonl"
    find = neardup.spans.find_repeated_spans

    def find_then_rewrite(*args, **kwargs):
        decisions = find(*args, **kwargs)
        _write(source, list(reversed(TEXTS)))  # same size, other order
        return decisions

    monkeypatch.setattr(neardup.spans, "find_repeated_spans", find_then_rewrite)
    result = invoke("spans", source, "--out", out)
    assert result.exit_code == 1 and "changed during the run" in result.output, result.output
    assert "Traceback" not in result.output and not out.exists()
