"""End-to-end: the `neardup dedup` command as a user runs it."""

import json

import click
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import neardup.models as neardup_models
from neardup.cli import main
from neardup.cli.dedup import dedup_command

STORIES = [
    "The central bank raised its key interest rate by half a point on Tuesday, citing "
    "stubborn inflation and strong wage growth across the economy.",
    "Wheat futures fell sharply in Chicago as rain improved the outlook for the winter "
    "crop in the southern plains, traders said on Monday.",
    "The company said first quarter profit rose to 12 mln dlrs from eight mln dlrs a year "
    "ago on higher sales of its industrial products.",
]


@pytest.fixture
def corpus(tmp_path):
    rows = []
    for i, story in enumerate(STORIES):
        rows.append({"doc": f"s{i}", "body": story, "source": "wire"})
        rows.append({"doc": f"s{i}-copy", "body": story.upper() + " (AP)", "source": "paper"})
    rows.append({"doc": "lonely", "body": "Nothing else looks like this one at all.", "source": "x"})
    rows.append({"doc": "blank", "body": "   ", "source": "x"})
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, rows


def _run(args):
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    return result


@pytest.mark.parametrize("method", ["exact", "ngram", "minhash", "simhash"])
def test_dedup_writes_all_outputs(tmp_path, corpus, method):
    path, rows = corpus
    threshold = ["--threshold", "8"] if method == "simhash" else []
    if method == "exact":
        threshold = []
    out = tmp_path / "out"
    result = _run(
        ["dedup", str(path), "--method", method, *threshold, "--text-field", "body",
         "--id-field", "doc", "--clusters-out", str(out / "c.parquet"),
         "--pairs-out", str(out / "p.csv"), "--out", str(out / "d.jsonl"),
         "--report", str(out / "r.json"), "--quiet"]
    )
    assert result.exit_code == 0, result.output
    clusters = pq.read_table(out / "c.parquet").to_pylist()
    assert [c["id"] for c in clusters] == [r["doc"] for r in rows]  # one row per doc, in order
    by_id = {c["id"]: c for c in clusters}
    if method != "exact":  # "(AP)" makes copies differ beyond normalization
        for i in range(3):
            assert by_id[f"s{i}"]["cluster"] == by_id[f"s{i}-copy"]["cluster"]
    assert by_id["blank"]["status"] == "empty" and by_id["blank"]["cluster_size"] == 1
    kept = [json.loads(line) for line in (out / "d.jsonl").read_text().splitlines()]
    assert len(kept) == sum(c["representative"] for c in clusters)
    assert all(set(k) == {"doc", "body", "source"} for k in kept)  # input record shape
    pair_rows = (out / "p.csv").read_text().splitlines()
    assert pair_rows[0] == "id_a,id_b,score,method,type,outside_window"
    report = json.loads((out / "r.json").read_text())
    assert report["summary"]["documents"] == len(rows)
    meta = json.loads(pq.read_schema(out / "c.parquet").metadata[b"neardup"])
    assert meta["method"] == method


@pytest.mark.parametrize("ext", ["parquet", "jsonl", "csv"])
def test_outputs_byte_identical_across_runs(tmp_path, corpus, ext):
    path, _ = corpus
    outputs = []
    for run in range(2):
        target = tmp_path / f"run{run}"
        args = ["dedup", str(path), "--text-field", "body", "--seed", "3", "-q",
                "--clusters-out", str(target / f"c.{ext}"), "--pairs-out", str(target / f"p.{ext}"),
                "--out", str(target / f"d.{ext}")]
        assert _run(args).exit_code == 0
        outputs.append([(target / f"{k}.{ext}").read_bytes() for k in "cpd"])
    assert outputs[0] == outputs[1]


def test_failed_run_leaves_no_partial_output(tmp_path, corpus):
    path, rows = corpus
    with path.open("a") as f:
        f.write(json.dumps({"doc": "bad", "text_missing": "x"}) + "\n")
    clusters = tmp_path / "c.parquet"
    existing = tmp_path / "d.jsonl"
    existing.write_text("previous result\n")
    result = CliRunner().invoke(
        main, ["dedup", str(path), "--text-field", "body", "--clusters-out", str(clusters),
               "--out", str(existing)]
    )
    assert result.exit_code != 0
    assert "no text field 'body'" in result.output and "line 9" in result.output
    assert not clusters.exists()
    assert existing.read_text() == "previous result\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".") or "tmp" in p.name] == []


def test_option_that_does_not_apply_is_an_error(corpus):
    path, _ = corpus
    result = CliRunner().invoke(main, ["dedup", str(path), "--method", "simhash", "--bands", "4"])
    assert result.exit_code == 2, result.output
    assert "--bands applies to --method minhash or wminhash only; with --method simhash it " \
           "would be ignored" in result.output


def test_simhash_threshold_must_be_whole_bits(corpus):
    path, _ = corpus
    result = CliRunner().invoke(main, ["dedup", str(path), "--method", "simhash", "--threshold", "0.5"])
    assert result.exit_code == 2 and "Hamming distance" in result.output


def test_every_option_is_documented():
    for param in dedup_command.params:
        if isinstance(param, click.Option):
            assert param.help, f"{param.opts} has no help"


# The default (auto: rerank on the demo's 4,919 documents) takes seconds: the slow lane.
@pytest.mark.parametrize("method", [pytest.param([], marks=pytest.mark.slow, id="default"),
                                    pytest.param(["--method", "minhash"], id="minhash")])
def test_demo_runs_without_input(tmp_path, method):
    result = _run(["dedup", *method, "--clusters-out", str(tmp_path / "c.parquet")])
    assert result.exit_code == 0
    assert "documents" in result.output and "clusters" in result.output
    table = pq.read_table(tmp_path / "c.parquet")
    assert table.num_rows > 1000


def test_summary_printed(corpus):
    path, _ = corpus
    result = _run(["dedup", str(path), "--text-field", "body"])
    assert "duplicates removed" in result.output and "time: sketch" in result.output


@pytest.mark.parametrize("cluster", [["--cluster", "leiden"], ["--cluster", "hac"]])
def test_summary_of_in_memory_fallback(tmp_path, corpus, cluster):
    # Methods the out-of-core stages cannot run fall back to memory (rerank over MinHash
    # candidates verified from shingle sets); the summary says why in a text row (it once
    # failed formatting that row as a number, after writing).
    path, rows = corpus
    out = tmp_path / "c.parquet"
    result = _run(["dedup", str(path), "--text-field", "body", "--method", "rerank", "--param",
                   'candidate_params={"verify": "exact"}', "--clusters-out", str(out), *cluster])
    assert result.exit_code == 0, result.output
    assert "engine fallback" in result.output  # the row (its text wraps in the cell)
    assert pq.read_table(out).num_rows == len(rows)


def test_param_passes_any_method_parameter(tmp_path, corpus):
    path, rows = corpus
    out = tmp_path / "c.jsonl"
    result = _run(["dedup", str(path), "--method", "minhash", "--text-field", "body",
                   "--param", "max_bucket_pairs=7",
                   "--param", "verify=\"exact\"", "--clusters-out", str(out), "--report",
                   str(tmp_path / "r.json"), "-q"])
    assert result.exit_code == 0, result.output
    params = json.loads((tmp_path / "r.json").read_text())["params"]["method"]
    assert params["max_bucket_pairs"] == 7 and params["verify"] == "exact"


@pytest.mark.parametrize(
    "args,message",
    [
        (["--param", "nonsense=1"], "has no such parameter"),
        (["--param", "novalue"], "NAME=VALUE"),
        (["--param", "seed=4"], "repeats an option"),
        (["--param", "threshold=0.3", "--threshold", "0.4"], "repeats an option"),
    ],
)
def test_param_errors(corpus, args, message):
    path, _ = corpus
    result = CliRunner().invoke(main, ["dedup", str(path), "--method", "minhash", "--text-field",
                                       "body", *args])
    assert result.exit_code == 2 and message in result.output


@pytest.mark.slow
def test_spell_correct_flag(tmp_path, corpus):
    pytest.importorskip("symspellpy")
    path, _ = corpus
    result = _run(["dedup", str(path), "--method", "minhash", "--text-field", "body",
                   "--spell-correct", "--report",
                   str(tmp_path / "r.json"), "-q"])
    assert result.exit_code == 0, result.output
    normalize = json.loads((tmp_path / "r.json").read_text())["params"]["method"]["normalize"]
    assert normalize["spell_correct"] is True


def test_time_window_option(tmp_path):
    story = STORIES[0]
    rows = [
        {"doc": "mon", "body": story, "day": "1987-03-11T10:00:00"},
        {"doc": "mon-copy", "body": story.upper(), "day": "1987-03-11T16:00:00"},
        # Friday's story has the same wording with another day in it (identical texts
        # would bypass the window: a re-send is the same story).
        {"doc": "fri", "body": story.replace("Tuesday", "Friday"), "day": "1987-03-15T10:00:00"},
    ]
    path = tmp_path / "dated.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    args = ["dedup", str(path), "--method", "ngram", "--text-field", "body", "--id-field", "doc",
            "--clusters-out", str(out / "c.parquet"), "--pairs-out", str(out / "p.parquet"),
            "--quiet", "--time-window", "48"]
    undated = _run(args)
    assert undated.exit_code == 2, undated.output  # refused before any work
    assert "--time-window applies to documents with dates" in undated.output
    assert "--date-field" in undated.output
    assert not (out / "c.parquet").exists()
    result = _run([*args, "--date-field", "day"])
    assert result.exit_code == 0, result.output
    clusters = {c["id"]: c["cluster"] for c in pq.read_table(out / "c.parquet").to_pylist()}
    assert clusters["mon"] == clusters["mon-copy"] != clusters["fri"]
    pairs = pq.read_table(out / "p.parquet").to_pylist()
    assert sorted((p["id_a"], p["id_b"]) for p in pairs if p["outside_window"]) == [
        ("mon", "fri"), ("mon-copy", "fri")]
    assert _run([*args[:-1], "0"]).exit_code == 2  # hours must be > 0


def test_summary_hints_at_time_window_when_input_has_dates(tmp_path):
    rows = [{"doc": f"d{i}", "body": s, "day": "1987-03-11"} for i, s in enumerate(STORIES)]
    path = tmp_path / "dated.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    base = ["dedup", str(path), "--method", "ngram", "--text-field", "body", "--id-field", "doc"]
    dated = _run([*base, "--date-field", "day", "--report", str(tmp_path / "r.json")])
    assert dated.exit_code == 0, dated.output
    assert "--time-window" in dated.output
    hints = json.loads((tmp_path / "r.json").read_text())["hints"]
    assert len(hints) == 1 and "--time-window" in hints[0]
    windowed = _run([*base, "--date-field", "day", "--time-window", "48"])
    assert "hint:" not in windowed.output
    undated = _run([*base, "--report", str(tmp_path / "u.json")])
    assert "hint:" not in undated.output
    assert json.loads((tmp_path / "u.json").read_text())["hints"] == []


@pytest.mark.skipif(not (neardup_models.MODELS_DIR / "verifier-news" / "model.json").exists(),
                    reason="no shipped verifier")
def test_rerank_defaults_to_the_models_recommended_clustering(tmp_path, corpus):
    # --cluster auto (the default) takes verifier-news's recommended_cluster: Leiden at
    # 0.4, recorded in the report; --cluster components is the user's choice, with a hint.
    path, _ = corpus
    base = ["dedup", str(path), "--text-field", "body", "--method", "rerank"]
    default = _run([*base, "--report", str(tmp_path / "d.json"), "--clusters-out", str(tmp_path / "d.csv")])
    assert default.exit_code == 0, default.output
    report = json.loads((tmp_path / "d.json").read_text())
    assert report["hints"] == []
    assert (report["params"]["cluster"]["algorithm"], report["params"]["cluster"]["resolution"]) == ("leiden", 0.4)
    leiden = _run([*base, "--cluster", "leiden", "--resolution", "0.4", "--clusters-out", str(tmp_path / "l.csv")])
    assert leiden.exit_code == 0, leiden.output
    assert (tmp_path / "d.csv").read_text() == (tmp_path / "l.csv").read_text()
    components = _run([*base, "--cluster", "components", "--report", str(tmp_path / "r.json")])
    assert components.exit_code == 0, components.output
    hints = json.loads((tmp_path / "r.json").read_text())["hints"]
    assert len(hints) == 1 and hints[0].startswith("--cluster leiden --resolution 0.4 ")
    assert "hint: --cluster leiden" in components.output
    # auto chooses the resolution too: a --resolution with it would be ignored.
    ignored = _run([*base, "--resolution", "0.7"])
    assert ignored.exit_code == 2
    assert "--resolution applies to --cluster leiden or --cluster louvain only; with --cluster auto" in ignored.output


@pytest.mark.slow
def test_input_warnings_are_one_line(tmp_path):
    folder = tmp_path / "reuters"
    folder.mkdir()
    (folder / "reut2-000.sgm").write_text("")
    (folder / "README.txt").write_text("about the collection")
    result = CliRunner().invoke(main, ["dedup", str(folder), "--method", "exact"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if ".sgm" in line]
    assert len(lines) == 1 and lines[0].startswith("warning: ") and "UserWarning" not in result.stderr
    quiet = CliRunner().invoke(main, ["dedup", str(folder), "--method", "exact", "--quiet"])
    assert quiet.exit_code == 0 and quiet.stderr == "", quiet.stderr  # -q: no warnings
