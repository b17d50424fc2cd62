"""explain_pair and find_documents: one pair, every method's verdict."""

import json

import numpy as np
import pytest

from neardup.errors import InputError
from neardup.io import ReaderConfig
from neardup.report import explain_pair, find_documents

STORY = ("The central bank raised its key interest rate by half a point on Tuesday, citing "
         "stubborn inflation and strong wage growth across the economy, officials said.")


def _scores(result):
    return {(r["method"], r["measure"].split(" (")[0]): r for r in result["scores"]}


def test_identical_texts_are_duplicates_by_every_lexical_method():
    result = explain_pair(STORY, STORY.upper() + "  ")
    scores = _scores(result)
    assert result["normalized"][0] == result["normalized"][1]
    assert {op for op, _, _ in result["alignment"]} == {"equal"}
    assert result["pair_type"] == "exact"
    for key in [("exact", "normalized texts identical"), ("ngram", "shingle Jaccard"),
                ("minhash", "estimated Jaccard"), ("simhash", "Hamming distance")]:
        assert scores[key]["duplicate"] is True, key
    assert scores[("simhash", "Hamming distance")]["score"] == 0
    assert scores[("sanderson", "not scored on two documents")]["duplicate"] is None
    sh = result["shingles"]
    assert sh["shared"] == sh["a"] == sh["b"] == sh["union"] > 0


def test_a_correction_is_aligned_and_scored_against_each_threshold():
    copy = STORY.replace("half a point", "a quarter point").replace("officials", "aides")
    result = explain_pair(STORY, copy)
    ops = [op for op, _, _ in result["alignment"]]
    assert "replace" in ops
    replaced = [(a.strip(), b.strip()) for op, a, b in result["alignment"] if op == "replace"]
    assert ("officials", "aides") in replaced
    scores = _scores(result)
    jaccard = scores[("ngram", "shingle Jaccard")]
    assert 0 < jaccard["score"] < 1 and jaccard["threshold"] == 0.5
    assert jaccard["duplicate"] == (jaccard["score"] >= 0.5)
    assert result["features"]["jaccard"] == pytest.approx(jaccard["score"], abs=1e-3)
    assert scores[("exact", "normalized texts identical")]["duplicate"] is False
    assert result["pair_type"] in ("corrected", "near")
    assert result["shingles"]["examples"][0] == "the central bank"


def test_unrelated_texts_are_not_linked():
    result = explain_pair(STORY, "Wheat futures fell sharply in Chicago on Monday as rain fell.")
    linked = [r for r in result["scores"] if r["duplicate"]]
    assert linked == []
    assert result["shingles"]["shared"] == 0


def test_rerank_the_default_on_small_inputs_is_always_scored():
    copy = STORY.replace("half a point", "a quarter point")
    rows = [r for r in explain_pair(STORY, copy)["scores"] if r["method"] == "rerank"]
    assert len(rows) == 1 and rows[0]["duplicate"] is True and not rows[0]["selected"]
    assert rows[0]["threshold"] == pytest.approx(0.9)
    named = [r for r in explain_pair(STORY, copy, method="rerank")["scores"]
             if r["method"] == "rerank"]
    assert len(named) == 1 and named[0]["selected"]
    unrelated = explain_pair(STORY, "Wheat futures fell sharply in Chicago on Monday.")
    assert [r["duplicate"] for r in unrelated["scores"] if r["method"] == "rerank"] == [False]


def test_rerank_says_which_step_keeps_a_pair_apart():
    """The scorer's probability is shown for every pair, and the note names the step: not
    a candidate (a run never scores it), the template guard, or the probability."""
    copy = STORY.replace("half a point", "a quarter point")
    (linked,) = [r for r in explain_pair(STORY, copy)["scores"] if r["method"] == "rerank"]
    assert linked["measure"] == "duplicate probability (verifier)"
    assert linked["score"] >= 0.9 and linked["note"].startswith("a candidate (minhash estimate")

    other = explain_pair(STORY, "Wheat futures fell sharply in Chicago on Monday.")
    (apart,) = [r for r in other["scores"] if r["method"] == "rerank"]
    assert 0.0 <= apart["score"] < 0.9 and apart["duplicate"] is False
    assert apart["note"].startswith("not a candidate (minhash estimate under 0.1)")

    notice = "Qtly div {} cts vs {} cts prior Pay {} Record {} Reuter"
    a, b = notice.format(25, 25, "July 10", "June 12"), notice.format(96, 96, "August 1", "July 3")
    (template,) = [r for r in explain_pair(a, b)["scores"] if r["method"] == "rerank"]
    assert template["duplicate"] is False
    assert template["note"] == "kept apart by the template guard (figures or names differ)"


def test_method_parameters_change_its_verdict():
    copy = STORY.replace("half a point", "a quarter point")
    loose = _scores(explain_pair(STORY, copy, method="ngram", method_params={"threshold": 0.1}))
    strict = _scores(explain_pair(STORY, copy, method="ngram", method_params={"threshold": 0.99}))
    assert loose[("ngram", "shingle Jaccard")]["duplicate"] is True
    assert strict[("ngram", "shingle Jaccard")]["duplicate"] is False
    assert loose[("ngram", "shingle Jaccard")]["selected"] is True
    with pytest.raises(ValueError, match="parameter 'method' must be one of"):
        explain_pair(STORY, STORY, method="nope")


def test_dates_and_time_window():
    a, b = np.datetime64("1987-03-01T10:00"), np.datetime64("1987-03-04T10:00")
    result = explain_pair(STORY, STORY, date_a=a, date_b=b, time_window_hours=48)
    assert result["gap_hours"] == 72.0
    assert result["window"] == {"hours": 48, "outside": True}
    assert result["pair_type"] == "exact"  # identical text is exact whatever the dates
    inside = explain_pair(STORY, STORY, date_a=a, date_b=b, time_window_hours=100)
    assert inside["window"]["outside"] is False
    undated = explain_pair(STORY, STORY, date_a=a)
    assert undated["gap_hours"] is None and undated["dates"][1] is None


def test_find_documents_stops_reading_once_both_are_found(tmp_path):
    path = tmp_path / "c.jsonl"
    lines = [json.dumps({"id": f"d{i}", "text": f"text {i}"}) for i in range(5)]
    path.write_text("\n".join(lines) + "\n{this line is not json\n")
    config = ReaderConfig(id_field="id", batch_size=2)
    found = find_documents([path], config, ["d3", "d0"])
    assert found["d0"]["text"] == "text 0" and found["d3"]["row"] == 3
    with pytest.raises(InputError, match="no document with id 'missing'"):
        find_documents([tmp_path / "c.jsonl"], ReaderConfig(id_field="id", limit=5),
                       ["d1", "missing"])
