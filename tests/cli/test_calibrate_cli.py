"""`neardup calibrate`: labels from the terminal or a file, a tuning file eval can use."""

import json

import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.eval.calibrate import boundary_sample, fit_threshold, score_to_threshold
from neardup.eval.tuning import load_tuning
from neardup.graph import Pairs

import numpy as np

BASE = [
    "The central bank raised its key interest rate by half a point on Tuesday citing "
    "stubborn inflation and strong wage growth across the economy, officials said.",
    "Wheat futures fell sharply in Chicago as rain improved the outlook for the winter "
    "crop in the southern plains, traders said on Monday after the weather report.",
    "The company said first quarter profit rose to twelve mln dlrs from eight mln dlrs a "
    "year ago on higher sales of its industrial products and lower costs.",
]


def _variants(text: str) -> list[str]:
    words = text.split()
    return [
        text,
        " ".join(words[:-3]),                      # cut at the bottom
        " ".join(words[:5] + ["new"] + words[6:]),  # one word changed
        " ".join(words[: len(words) // 2] + ["other", "words", "entirely", "here", "now",
                                              "and", "then", "more", "filler", "text"]),
    ]


@pytest.fixture
def corpus(tmp_path):
    rows = []
    for s, story in enumerate(BASE):
        for v, text in enumerate(_variants(story)):
            rows.append({"id": f"s{s}v{v}", "text": text, "cluster": f"s{s}" if v < 3 else f"s{s}x"})
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, rows


def test_prompt_labels_fit_and_tuning_file_works_with_eval(corpus, tmp_path):
    path, rows = corpus
    out, saved = tmp_path / "cal.json", tmp_path / "labels.csv"
    # Answer by score: the runner feeds the same answers whichever pairs are shown, so
    # alternate y and n (with one skip) to get both classes.
    answers = "y\nn\ns\n" + "y\nn\n" * 20
    result = CliRunner().invoke(main, ["calibrate", str(path), "--method", "ngram", "--n-pairs", "8",
                                       "--out", str(out), "--save-labels", str(saved)],
                                input=answers, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "Duplicates? (y/n/s/q)" in result.output
    assert "pair 1/" in result.output and "score" in result.output
    assert "threshold" in result.output and "precision" in result.output
    tuning = load_tuning(out)
    assert tuning.method == "ngram" and 0 < tuning.params["threshold"] <= 1
    lines = saved.read_text().splitlines()
    assert lines[0] == "id_a,id_b,label" and len(lines) >= 3
    evaluated = CliRunner().invoke(main, ["eval", str(path), "--from-tuning", str(out), "--json"],
                                   catch_exceptions=False)
    assert evaluated.exit_code == 0, evaluated.output
    assert json.loads(evaluated.output)["params"]["threshold"] == tuning.params["threshold"]


@pytest.mark.slow
def test_quit_early_and_labels_file(corpus, tmp_path):
    path, rows = corpus
    labels = tmp_path / "labels.csv"
    labels.write_text("id_a,id_b,label\ns0v0,s0v1,y\ns0v0,s0v2,y\ns0v0,s0v3,n\ns1v0,s1v3,n\n"
                      "s1v0,s1v1,yes\ns2v0,s1v0,0\n")
    out = tmp_path / "cal.json"
    result = CliRunner().invoke(main, ["calibrate", str(path), "--method", "minhash",
                                       "--labels", str(labels), "--out", str(out), "--id-field", "id"])
    assert result.exit_code == 0, result.output
    assert "from 6 labels (3 duplicates)" in result.output
    assert "precision 1.000" in result.output
    # A label file naming ids that are not in INPUT, or with one class only, is refused.
    labels.write_text("id_a,id_b,label\ns0v0,nope,y\n")
    bad = CliRunner().invoke(main, ["calibrate", str(path), "--labels", str(labels), "--id-field", "id"])
    assert bad.exit_code != 0 and "not in INPUT" in bad.output
    labels.write_text("id_a,id_b,label\ns0v0,s0v1,y\n")
    one = CliRunner().invoke(main, ["calibrate", str(path), "--labels", str(labels), "--id-field", "id"])
    assert one.exit_code != 0 and "both duplicates and non-duplicates" in one.output
    quit_now = CliRunner().invoke(main, ["calibrate", str(path), "--method", "ngram"], input="q\n")
    assert quit_now.exit_code != 0 and "no pairs labelled" in quit_now.output


def test_fit_threshold_and_boundary_sample():
    fit = fit_threshold([0.9, 0.8, 0.6, 0.4, 0.3], [True, True, True, False, False])
    assert 0.4 < fit.score <= 0.6 and fit.precision == fit.recall == 1.0
    strict = fit_threshold([0.9, 0.7, 0.6, 0.5], [True, False, True, True], min_precision=1.0)
    assert strict.score > 0.7 and strict.precision == 1.0
    pairs = Pairs(np.arange(100), np.arange(100) + 100, np.linspace(0, 1, 100).astype(np.float32))
    picks = boundary_sample(pairs, 10, low=0.2, seed=1)
    assert len(picks) == 10 and (pairs.score[picks] >= 0.2).all()
    assert np.all(np.diff(pairs.score[picks]) > 0)  # one per rank stratum, in score order
    assert score_to_threshold("simhash", 1 - 3 / 64) == 3
    with pytest.raises(ValueError, match="both duplicates"):
        fit_threshold([0.5], [True])


def test_fit_keeps_the_default_unless_clearly_beaten():
    scores = [0.95, 0.9, 0.85, 0.6, 0.55, 0.3]
    labels = [True, True, True, True, False, False]
    best = fit_threshold(scores, labels, min_gain=0.0)
    assert 0.55 < best.score <= 0.6 and best.f1 == 1.0 and not best.kept_default
    # At the default 0.8 the labels give F1 6/7: a gain of 0.14 beats 0.1, not 0.2.
    assert not fit_threshold(scores, labels, default=0.8, min_gain=0.1).kept_default
    kept = fit_threshold(scores, labels, default=0.8, min_gain=0.2)
    assert kept.kept_default and kept.score == 0.8 and kept.recall == 0.75
    # A precision target is the user's explicit request: the default is not kept.
    assert not fit_threshold(scores, labels, default=0.8, min_gain=0.5,
                             min_precision=1.0).kept_default


def test_cli_min_gain_default_matches_the_library():
    from neardup.cli.calibrate import _MIN_GAIN
    from neardup.eval.calibrate import MIN_GAIN

    assert _MIN_GAIN == MIN_GAIN


def _rerank_labels(tmp_path):
    labels = tmp_path / "labels.csv"
    labels.write_text("id_a,id_b,label\ns0v0,s0v1,y\ns0v0,s0v2,y\ns1v0,s1v1,y\ns2v0,s2v2,y\n"
                      "s0v0,s0v3,n\ns1v0,s1v3,n\ns2v0,s2v3,n\ns2v0,s1v0,n\n")
    return labels


@pytest.mark.slow
def test_fit_verifier_writes_a_corrected_verifier_dedup_uses(corpus, tmp_path):
    path, rows = corpus
    labels, model, out = _rerank_labels(tmp_path), tmp_path / "mine", tmp_path / "cal.json"
    result = CliRunner().invoke(main, ["calibrate", str(path), "--method", "rerank",
                                       "--id-field", "id", "--labels", str(labels),
                                       "--fit-verifier", str(model), "--out", str(out),
                                       "--min-gain", "0"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "out of fold" in result.output and f"--model {model}" in result.output
    meta = json.loads((model / "model.json").read_text())
    assert meta["kind"] == "verifier" and meta["corrected_to_labels"]["labels"] == 8
    tuning = load_tuning(out)
    assert tuning.params["model"] == str(model)
    assert meta["threshold"] == tuning.params["threshold"]
    clusters = tmp_path / "clusters.jsonl"
    dedup = CliRunner().invoke(main, ["dedup", str(path), "--method", "rerank", "--model",
                                      str(model), "--id-field", "id", "--clusters-out",
                                      str(clusters)], catch_exceptions=False)
    assert dedup.exit_code == 0, dedup.output
    assert sorted(json.loads(line)["id"] for line in clusters.read_text().splitlines()) == \
        sorted(r["id"] for r in rows)


def test_fit_verifier_refuses_before_any_work_and_leaves_nothing_half_written(corpus, tmp_path):
    path, _ = corpus
    labels = _rerank_labels(tmp_path)
    args = ["calibrate", str(path), "--id-field", "id", "--labels", str(labels)]
    wrong = CliRunner().invoke(main, [*args, "--method", "minhash", "--fit-verifier",
                                      str(tmp_path / "m")])
    assert wrong.exit_code != 0 and "--method rerank" in wrong.output
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    busy = CliRunner().invoke(main, [*args, "--method", "rerank", "--fit-verifier", str(taken)])
    assert busy.exit_code != 0 and "not an empty folder" in busy.output
    assert [p.name for p in taken.iterdir()] == ["keep.txt"]
    # The tuning file cannot be written (a folder is in the way): no model folder either.
    blocked = tmp_path / "blocked.json"
    blocked.mkdir()
    model = tmp_path / "mine"
    failed = CliRunner().invoke(main, [*args, "--method", "rerank", "--fit-verifier", str(model),
                                       "--out", str(blocked)])
    assert failed.exit_code != 0
    assert not model.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["corpus.jsonl", "labels.csv", "taken", "blocked.json"])
