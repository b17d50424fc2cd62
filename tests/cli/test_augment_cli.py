"""End-to-end: the `neardup augment` command as a user runs it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import click
import numpy as np
import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.cli.augment import augment_command
from neardup.io import find_reuters_dir

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "io"
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A JSONL corpus of 80 dated synthetic stories over 4 days, plus a 3-story template."""
    rng = np.random.default_rng(0)
    rows = []
    for d in range(4):
        for k in range(20):
            vocab = ["".join(rng.choice(SYLLABLES, size=3)) for _ in range(50)]
            sentences = [" ".join(rng.choice(vocab, size=10)).capitalize() + "." for _ in range(7)]
            topic = "grain" if k % 2 else "trade"
            rows.append({"doc": f"d{d}k{k}", "body": " ".join(sentences),
                         "when": f"1987-04-0{d + 1}", "topics": [topic]})  # fmt: skip
    for d, x in enumerate(["1.5", "2.25", "3.0"]):
        body = (
            f"The Federal Reserve entered the government securities market to arrange {x} "
            "billion dlrs of customer repurchase agreements, a Fed spokesman said. Dealers said "
            f"Federal funds were trading at 6-{d}/16 pct when the Fed began its temporary "
            "supply of reserves."
        )
        rows.append({"doc": f"fed{d}", "when": f"1987-04-0{d + 1}", "topics": ["money-fx"],
                     "body": body})  # fmt: skip
    path = tmp_path_factory.mktemp("augment") / "stories.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _run(args):
    return CliRunner().invoke(main, args, catch_exceptions=False)


def _base(corpus, out, *extra, seed="7", splits="validation=120,test=120"):
    return ["augment", str(corpus), "--text-field", "body", "--id-field", "doc",
            "--date-field", "when", "--seed", seed, "--mean-cluster-size", "3",
            "--max-cluster-size", "20", "--splits", splits, "--no-progress",
            "--out", str(out), *extra]  # fmt: skip


def _read(path: Path) -> list[dict]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def test_augment_is_byte_identical_across_runs_and_prints_stats(tmp_path, corpus):
    first = _run(_base(corpus, tmp_path / "a.jsonl.gz", "--stats", str(tmp_path / "s.json")))
    assert first.exit_code == 0, first.output
    second = _run(_base(corpus, tmp_path / "b.jsonl.gz"))
    assert second.exit_code == 0, second.output
    assert (tmp_path / "a.jsonl.gz").read_bytes() == (tmp_path / "b.jsonl.gz").read_bytes()
    other = _run(_base(corpus, tmp_path / "c.jsonl.gz", seed="8"))
    assert other.exit_code == 0, other.output
    assert (tmp_path / "c.jsonl.gz").read_bytes() != (tmp_path / "a.jsonl.gz").read_bytes()

    records = _read(tmp_path / "a.jsonl.gz")
    assert {r["split"] for r in records} == {"validation", "test"}
    for r in records:
        assert {"id", "text", "cluster", "split", "date", "kind", "noise", "source"} <= set(r)
    fed = {r["cluster"] for r in records if r["source"].startswith("fed")}
    assert len(fed) == len({r["source"] for r in records if r["source"].startswith("fed")})
    assert {r["kind"] for r in records if r["source"].startswith("fed")} <= {"template"}

    report = json.loads((tmp_path / "s.json").read_text())
    assert set(report) == {"stats", "info", "params", "inputs"}
    assert report["stats"]["all"]["docs"] == len(records)
    assert report["info"]["calibration"]["target"] == 0.3
    assert report["params"]["seed"] == 7
    for label in ("positive pairs", "negative pairs", "Jaccard: positive", "cluster size: mean"):
        assert label in first.output


def test_augment_writes_one_file_per_split(tmp_path, corpus):
    result = _run(_base(corpus, tmp_path / "bench" / "{split}.jsonl"))
    assert result.exit_code == 0, result.output
    files = sorted(p.name for p in (tmp_path / "bench").iterdir())
    assert files == ["test.jsonl", "validation.jsonl"]
    for name in ("test", "validation"):
        assert {r["split"] for r in _read(tmp_path / "bench" / f"{name}.jsonl")} == {name}


def test_augment_adversarial_profile(tmp_path, corpus):
    result = _run(
        _base(corpus, tmp_path / "adv.jsonl", "--profile", "adversarial", "--rate", "0.1")
    )
    assert result.exit_code == 0, result.output
    records = _read(tmp_path / "adv.jsonl")
    kinds = {r["kind"] for r in records}
    assert {"source", "adversarial"} <= kinds
    assert all("rate=" in " ".join(r["noise"]) for r in records if r["kind"] == "adversarial")


def test_augment_reads_reuters_sgml(tmp_path):
    out = tmp_path / "r.jsonl"
    result = _run(["augment", str(FIXTURES / "reuters_small.sgm"), "--min-words", "5",
                   "--splits", "test=20", "--no-progress", "--out", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    records = _read(out)
    assert records and {r["source"] for r in records} <= {"101", "102", "103", "105"}
    assert all(r["date"].startswith("1987-") for r in records)


def test_augment_errors_are_clear(tmp_path, corpus, monkeypatch):
    monkeypatch.setenv("NEARDUP_REUTERS_DIR", str(tmp_path))  # no reut2-*.sgm there
    result = CliRunner().invoke(main, ["augment", "--out", str(tmp_path / "x.jsonl")])
    assert result.exit_code != 0
    assert "Reuters-21578 collection was not found" in result.output
    assert "NEARDUP_REUTERS_DIR" in result.output
    assert not (tmp_path / "x.jsonl").exists()

    bad = CliRunner().invoke(main, _base(corpus, tmp_path / "y.jsonl", splits="dev=10"))
    assert bad.exit_code != 0 and "'train', 'validation', 'test'" in bad.output
    short = CliRunner().invoke(main, _base(corpus, tmp_path / "z.jsonl", "--min-words", "500"))
    assert short.exit_code != 0 and "shorter than --min-words" in short.output
    missing = CliRunner().invoke(main, ["augment", str(corpus), "--out", str(tmp_path / "w.jsonl")])
    assert missing.exit_code != 0 and "'text'" in missing.output
    assert not any(tmp_path.glob("*.jsonl"))


def test_every_option_is_documented():
    for param in augment_command.params:
        if isinstance(param, click.Option):
            assert param.help and len(param.help) > 10, param.name
    result = _run(["augment", "--help"])
    assert result.exit_code == 0
    for flag in ("--profile", "--seed", "--out", "--splits", "--mean-cluster-size",
                 "--max-cluster-size", "--stats", "{split}"):  # fmt: skip
        assert flag in result.output


@pytest.mark.slow
@pytest.mark.skipif(find_reuters_dir() is None, reason="Reuters-21578 not available")
def test_augment_on_full_reuters_without_input(tmp_path):
    out = tmp_path / "reuters.jsonl.gz"
    result = _run(["augment", "--splits", "test=300", "--seed", "5", "--no-progress",
                   "--out", str(out), "--stats", str(tmp_path / "stats.json")])  # fmt: skip
    # Its speed is a benchmark's business (docs/benchmarks.md), not a timed test's.
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "stats.json").read_text())
    info = report["info"]
    assert info["stories_in"] == 21578 and info["real_pairs"]["identical"] > 100
    assert info["real_pairs"]["template"] > 500
    test = report["stats"]["test"]
    assert test["docs"] > 0 and test["positive_pairs"] > 0
    assert 0.15 <= test["jaccard_positive_mean"] <= 0.45
    days = info["splits"]["test"]["days"]
    assert days and all(len(d) == 10 for d in days)
