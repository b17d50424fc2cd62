import json

import pyarrow.parquet as pq
from click.testing import CliRunner

from neardup.cli import main
from neardup.cli.leakage import leakage_command

TRAIN = [
    "Wheat futures fell sharply in Chicago as rain improved the outlook for the winter crop.",
    "The central bank raised its key interest rate by half a point citing stubborn inflation.",
    "Shares of the airline jumped after it reported a surprise profit for the third quarter.",
]
TEST = [
    "WHEAT futures fell sharply in Chicago as rain improved the outlook for the winter crop!",
    "The central bank raised its key interest rate by half a point, citing stubborn inflation, "
    "analysts said.",
    "A brand new story about copper mining in Chile with nothing in common.",
]


def _write(path, texts):
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    return path


def test_leakage_command(tmp_path):
    train = _write(tmp_path / "train.jsonl", TRAIN)
    test = _write(tmp_path / "test.jsonl", TEST)
    result = CliRunner().invoke(
        main,
        ["leakage", "--train", str(train), "--test", str(test), "--threshold", "0.5",
         "--pairs-out", str(tmp_path / "p.parquet"), "--report", str(tmp_path / "r.json")],
    )
    assert result.exit_code == 0, result.output
    pairs = pq.read_table(tmp_path / "p.parquet").to_pylist()
    assert {(p["test_id"], p["train_id"], p["kind"]) for p in pairs} == {("0", "0", "exact"), ("1", "1", "near")}
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["per_file"][0]["leaked"] == 2 and report["summary"]["leaked_fraction"] == 2 / 3
    assert "leaked" in result.output


def test_leakage_needs_both_sides(tmp_path):
    train = _write(tmp_path / "train.jsonl", TRAIN)
    result = CliRunner().invoke(main, ["leakage", "--train", str(train)])
    assert result.exit_code == 2 and "--test" in result.output


def test_every_option_is_documented():
    assert all(p.help for p in leakage_command.params if hasattr(p, "help"))
