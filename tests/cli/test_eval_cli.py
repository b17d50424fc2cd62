"""End-to-end: `neardup eval` and `neardup tune` as a user runs them."""

from __future__ import annotations

import csv
import json

import click
import numpy as np
import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.cli.evaluate import eval_command, tune_command

WORDS = ("wire story bank rate wheat corn oil price market senate house vote storm fire "
         "river bridge mayor city council school board police court judge jury").split()


def labeled_rows(seed=0, per_split=6):
    """Planted noisy duplicates: clusters of 1-3 copies of a 40-word story per split."""
    rng = np.random.default_rng(seed)
    rows = []
    for split in ("validation", "test"):
        for c in range(per_split):
            base = rng.choice(WORDS, 40).tolist()
            for copy in range(int(rng.integers(1, 4))):
                words = list(base)
                for _ in range(2 * copy):
                    words[int(rng.integers(len(words)))] = str(rng.choice(WORDS))
                rows.append({"id": f"{split[0]}{c}-{copy}", "text": " ".join(words),
                             "cluster": f"{split[0]}{c}", "split": split})
    return rows


@pytest.fixture
def labeled(tmp_path):
    path = tmp_path / "labeled.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in labeled_rows()))
    return path


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_eval_prints_a_table(labeled):
    result = run("eval", labeled, "--method", "minhash", "--threshold", "0.5")
    assert result.exit_code == 0, result.output
    for label in ("ARI", "pairwise precision", "pairwise recall", "pairwise F1", "MCC",
                  "homogeneity", "completeness", "V-measure", "true clusters",
                  "predicted clusters", "time: total"):
        assert label in result.output


def test_eval_json_on_one_split(labeled):
    result = run("eval", labeled, "--method", "ngram", "--threshold", "0.3", "--split", "test",
                 "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    n_test = sum(r["split"] == "test" for r in labeled_rows())
    assert report["n_docs"] == n_test and report["split"] == "test"
    assert report["method"] == "ngram" and report["params"]["threshold"] == 0.3
    for key in ("ari", "precision", "recall", "f1", "mcc", "homogeneity", "completeness",
                "v_measure", "n_true_clusters", "n_pred_clusters", "seconds"):
        assert key in report
    assert 0.0 < report["ari"] <= 1.0


def test_eval_recall_at_k(labeled):
    result = run("eval", labeled, "--method", "minhash", "--threshold", "0.2", "--k", "1,5",
                 "--json")
    retrieval = json.loads(result.stdout)["retrieval"]
    assert set(retrieval) >= {"recall@1", "recall@5", "mrr", "n_queries"}
    assert retrieval["recall@1"] <= retrieval["recall@5"]
    table = run("eval", labeled, "--method", "exact", "--k", "1")
    assert "Recall@1" in table.output and "MRR" in table.output
    bad = run("eval", labeled, "--k", "0")
    assert bad.exit_code == 2 and "every k must be >= 1" in bad.output


def test_eval_with_pairs_file(tmp_path):
    rows = labeled_rows()
    corpus = tmp_path / "articles.jsonl"
    corpus.write_text("".join(json.dumps({"id": r["id"], "text": r["text"]}) + "\n"
                              for r in rows))
    pairs = tmp_path / "gt_edges.csv"
    with open(pairs, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id_a", "id_b"])
        for a in rows:
            for b in rows:
                if a["id"] < b["id"] and a["cluster"] == b["cluster"]:
                    writer.writerow([a["id"], b["id"]])
    with_pairs = json.loads(run("eval", corpus, "--pairs", pairs, "--method", "exact",
                                "--json").stdout)
    assert with_pairs["pairs_file"] == str(pairs)
    labeled = tmp_path / "labeled.jsonl"
    labeled.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with_labels = json.loads(run("eval", labeled, "--method", "exact", "--json").stdout)
    assert with_pairs["ari"] == with_labels["ari"]
    assert with_pairs["n_true_clusters"] == with_labels["n_true_clusters"]


def test_tune_then_eval_on_test(labeled, tmp_path):
    out = tmp_path / "tuning.json"
    tuned = run("tune", labeled, "--method", "minhash", "--grid", "threshold=0.9,0.5,0.3",
                "--out", out)
    assert tuned.exit_code == 0, tuned.output
    assert "threshold" in tuned.output and "ARI" in tuned.output
    saved = json.loads(out.read_text())
    assert saved["split"] == "validation" and len(saved["points"]) == 3
    chosen = saved["params"]["threshold"]
    report = run("eval", labeled, "--split", "test", "--from-tuning", out, "--json")
    assert report.exit_code == 0, report.output
    data = json.loads(report.stdout)
    assert data["method"] == "minhash" and data["params"]["threshold"] == chosen
    assert data["from_tuning"] == str(out) and data["split"] == "test"


def test_tune_suggests_the_test_file_next_to_a_validation_file(tmp_path, monkeypatch):
    # rich wraps at 80 columns, inside the path when tmp_path is long (an xdist worker's is).
    monkeypatch.setenv("COLUMNS", "400")
    rows = labeled_rows()
    for split in ("validation", "test"):
        (tmp_path / f"{split}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows if r["split"] == split))
    result = run("tune", tmp_path / "validation.jsonl", "--method", "exact",
                 "--out", tmp_path / "t.json")
    assert result.exit_code == 0, result.output
    hint = " ".join(result.output.split())  # rich may wrap the line
    assert f"neardup eval {tmp_path / 'test.jsonl'} --split test" in hint
    report = run("eval", tmp_path / "test.jsonl", "--split", "test",
                 "--from-tuning", tmp_path / "t.json")
    assert report.exit_code == 0, report.output


def test_tune_json_and_default_grid(labeled, tmp_path):
    out = tmp_path / "t.json"
    result = run("tune", labeled, "--method", "simhash", "--grid", "threshold=1,4",
                 "--grid", "ngram=2,3", "--out", out, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [p["values"] for p in data["points"]] == [
        {"threshold": 1, "shingle.n": 2}, {"threshold": 1, "shingle.n": 3},
        {"threshold": 4, "shingle.n": 2}, {"threshold": 4, "shingle.n": 3},
    ]
    assert json.loads(out.read_text()) == data
    exact = run("tune", labeled, "--method", "exact", "--out", tmp_path / "e.json", "--json")
    assert len(json.loads(exact.stdout)["points"]) == 1


def test_tune_refuses_the_test_split(labeled, tmp_path):
    out = tmp_path / "tuning.json"
    result = run("tune", labeled, "--split", "test", "--out", out)
    assert result.exit_code == 2
    assert "--split test is refused" in result.output
    assert not out.exists()


def test_tune_option_conflicts(labeled, tmp_path):
    fixed = run("tune", labeled, "--method", "minhash", "--threshold", "0.4", "--out",
                tmp_path / "x.json")
    assert fixed.exit_code == 2 and "--grid threshold=" in fixed.output
    bad = run("tune", labeled, "--grid", "threshold", "--out", tmp_path / "x.json")
    assert bad.exit_code == 2 and "NAME=V1,V2" in bad.output
    unknown = run("tune", labeled, "--grid", "bogus=1", "--out", tmp_path / "x.json")
    assert unknown.exit_code == 1 and "not a parameter of method" in unknown.output


def test_from_tuning_refuses_another_method_and_overrides(labeled, tmp_path):
    out = tmp_path / "tuning.json"
    assert run("tune", labeled, "--method", "minhash", "--grid", "threshold=0.5", "--out",
               out).exit_code == 0
    other = run("eval", labeled, "--split", "test", "--from-tuning", out, "--method", "ngram")
    assert other.exit_code == 2 and "differs from the tuned method 'minhash'" in other.output
    same = run("eval", labeled, "--split", "test", "--from-tuning", out, "--method", "minhash",
               "--json")
    assert same.exit_code == 0
    override = run("eval", labeled, "--split", "test", "--from-tuning", out, "--threshold",
                   "0.2")
    assert override.exit_code == 2 and "--threshold cannot be combined" in override.output


def test_eval_warns_when_scoring_the_tuning_split(labeled, tmp_path):
    out = tmp_path / "tuning.json"
    run("tune", labeled, "--grid", "threshold=0.5", "--out", out)
    result = run("eval", labeled, "--split", "validation", "--from-tuning", out, "--json")
    assert result.exit_code == 0
    assert "optimistic" in result.stderr
    assert json.loads(result.stdout)["split"] == "validation"  # the warning stays off stdout


def test_quiet_leaves_stderr_empty_and_the_results_on_stdout(labeled, tmp_path):
    out = tmp_path / "tuning.json"
    loud = run("tune", labeled, "--grid", "threshold=0.5", "--out", out)
    assert loud.exit_code == 0 and "chosen:" in loud.stderr
    tuned = run("tune", labeled, "--grid", "threshold=0.5", "--out", out, "-q")
    assert tuned.exit_code == 0 and tuned.stderr == "" and "ARI" in tuned.stdout
    noted = run("eval", labeled, "--split", "validation", "--from-tuning", out)
    assert "optimistic" in noted.stderr
    quiet = run("eval", labeled, "--split", "validation", "--from-tuning", out, "--quiet")
    assert quiet.exit_code == 0 and quiet.stderr == "" and "ARI" in quiet.stdout
    both = run("eval", labeled, "--split", "validation", "-q", "--progress")
    assert both.exit_code == 2 and "Drop --progress" in both.output
    broken = tmp_path / "broken.jsonl"  # one text with a byte that is not UTF-8
    broken.write_bytes(labeled.read_bytes().replace(b"wire", b"wi\xffre", 1))
    warned = run("eval", broken, "--split", "validation", "--errors", "replace")
    assert warned.exit_code == 0 and "warning:" in warned.stderr
    silent = run("eval", broken, "--split", "validation", "--errors", "replace", "-q")
    assert silent.exit_code == 0 and silent.stderr == ""


def test_input_errors_are_reported_cleanly(labeled, tmp_path):
    missing = run("eval", tmp_path / "nope.jsonl")
    assert missing.exit_code == 1 and "no such file" in missing.output
    split = run("eval", labeled, "--split", "train")
    assert split.exit_code == 1 and "'test', 'validation'" in split.output
    no_labels = tmp_path / "plain.jsonl"
    no_labels.write_text('{"id": "a", "text": "x"}\n')
    result = run("eval", no_labels)
    assert result.exit_code == 1 and "--pairs" in result.output
    not_tuning = run("eval", labeled, "--from-tuning", labeled)
    assert not_tuning.exit_code == 1 and "not a readable JSON" in not_tuning.output


@pytest.mark.parametrize("command", [eval_command, tune_command])
def test_every_option_is_documented(command):
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.help, f"{param.opts[0]} has no help text"
    result = CliRunner().invoke(main, [command.name, "--help"])
    assert result.exit_code == 0
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.opts[0] in result.output


def test_time_window_in_eval_and_tune(tmp_path):
    # Each story's copies share a day; every story is also re-sent a week later as a new
    # cluster (a template: same words, another event).
    rows = []
    for split in ("validation", "test"):
        for r in labeled_rows(per_split=4):
            if r["split"] != split:
                continue
            rows.append({**r, "date": "1987-03-02T09:00:00"})
            # Not identical (identical texts would bypass the window: a re-send).
            rows.append({**r, "id": r["id"] + "-week", "cluster": r["cluster"] + "-week",
                         "text": r["text"] + " Figures for the week.",
                         "date": "1987-03-09T09:00:00"})
    path = tmp_path / "dated.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def ari(*extra):
        result = run("eval", path, "--split", "test", "--method", "ngram", "--threshold", "0.3",
                     "--json", *extra)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)["ari"]

    assert ari("--time-window", "48") == 1.0 > ari()  # dates come from "date" unasked
    out = tmp_path / "tuning.json"
    tuned = run("tune", path, "--method", "ngram", "--grid", "threshold=0.3",
                "--grid", "cluster.time_window_hours=none,48", "--out", out)
    assert tuned.exit_code == 0, tuned.output
    saved = json.loads(out.read_text())
    assert saved["cluster"]["time_window_hours"] == 48
    again = run("eval", path, "--split", "test", "--from-tuning", out, "--json")
    assert json.loads(again.stdout)["ari"] == 1.0


def test_eval_scores_each_group(tmp_path):
    rows = labeled_rows()
    for k, row in enumerate(rows):
        row["lang"] = ("de", "fr")[int(row["cluster"][1:]) % 2]
    path = tmp_path / "grouped.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = run("eval", path, "--method", "ngram", "--threshold", "0.3", "--split", "test",
                 "--group-field", "lang", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    test_rows = [r for r in rows if r["split"] == "test"]
    assert {g: m["n_docs"] for g, m in report["groups"].items()} == {
        g: sum(r["lang"] == g for r in test_rows) for g in ("de", "fr")}
    table = run("eval", path, "--method", "ngram", "--group-field", "lang")
    assert table.exit_code == 0 and "ARI: de (" in table.output


def test_eval_group_field_missing_is_a_clear_error(labeled):
    result = CliRunner().invoke(main, ["eval", str(labeled), "--method", "ngram",
                                       "--group-field", "lang"])
    assert result.exit_code != 0
    assert "--group-field 'lang'" in result.output and "Traceback" not in result.output
