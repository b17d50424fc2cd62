"""Decontamination finds planted evaluation items (exact, paraphrased, OCR-noised, inside
longer documents), flags nothing in clean data, and its n-gram rule is the documented one."""

from __future__ import annotations

import numpy as np
import pytest

from neardup.decontaminate import DecontaminationConfig, EvalSets, find_contamination
from neardup.decontaminate.ngrams import EvalNgrams
from neardup.errors import ParameterError
from neardup.io.batch import DocumentBatch


def _batches(texts, source, prefix, size=64):
    for start in range(0, len(texts), size):
        chunk = texts[start:start + size]
        yield DocumentBatch([f"{prefix}{start + i}" for i in range(len(chunk))], chunk, None, source,
                            np.arange(start, start + len(chunk)))


def _evals(items):
    return EvalSets.from_batches([("eval.jsonl", _batches(items, "eval.jsonl", "e"))])


def _train(planted):
    texts, truth = list(planted["clean"]), {}
    for kind, docs in planted["planted"].items():
        for text, item in docs:
            truth[len(texts)] = (kind, item)
            texts.append(text)
    return texts, truth


def test_planted_items_are_found_and_nothing_else(planted):
    texts, truth = _train(planted)
    result = find_contamination(_batches(texts, "train.jsonl", "t"), _evals(planted["items"]))
    flagged = set(np.flatnonzero(result.contaminated).tolist())
    assert flagged == set(truth)  # every planted copy, and not one clean document
    leaks = result.leaks.to_pylist()
    for row, (kind, item) in truth.items():
        found = {(r["eval_id"], r["kind"]) for r in leaks if r["train_row"] == row}
        assert any(eval_id == f"e{item}" for eval_id, _ in found), (kind, found)
        if kind == "exact_inside":
            assert (f"e{item}", "ngram") in found
    (per_set,) = result.per_set
    assert per_set["items"] == 60 and per_set["items_leaked"] == 35
    assert result.summary() == {"train_documents": len(texts), "train_contaminated": 35,
                                "eval_items": 60, "eval_items_leaked": 35}
    report = result.report()
    leaked = {entry["eval_id"] for entry in report["eval_sets"][0]["leaked_items"]}
    assert leaked == {f"e{k}" for k in range(35)}


def test_clean_training_data_flags_nothing(planted):
    result = find_contamination(_batches(planted["clean"], "train.jsonl", "t"), _evals(planted["items"]))
    assert not result.contaminated.any() and result.leaks.num_rows == 0
    assert result.per_set[0]["items_leaked"] == 0


def test_ngram_rule_without_near():
    items = ["one two three four five six seven eight nine ten eleven twelve thirteen fourteen",
             "alpha beta gamma delta epsilon zeta eta theta",  # 8 words: matched whole
             "too short to match"]
    train = ["intro text ONE two, three four five six seven eight nine ten eleven twelve thirteen end",
             "one two three four five six seven eight nine ten eleven twelve",  # only 12 in a row
             "so alpha beta gamma delta epsilon zeta eta theta so",
             "alpha beta gamma delta epsilon zeta eta",
             "it is too short to match here"]
    config = DecontaminationConfig(near=False)
    result = find_contamination(_batches(train, "t", "t"), _evals(items), config)
    assert result.contaminated.tolist() == [True, False, True, False, False]
    assert result.per_set[0]["items_too_short_for_ngrams"] == 1
    grams = EvalNgrams(items, n=13, min_words=8)
    hits = grams.match(train)
    assert list(zip(hits.train.tolist(), hits.item.tolist(), hits.shared.tolist())) == [(0, 0, 1), (2, 1, 1)]


def test_several_sets_are_reported_apart(planted):
    items = planted["items"]
    evals = EvalSets.from_batches([("a.jsonl", _batches(items[:30], "a.jsonl", "a")),
                                   ("b.jsonl", _batches(items[30:], "b.jsonl", "b"))])
    texts, _ = _train(planted)
    result = find_contamination(_batches(texts, "train.jsonl", "t"), evals)
    assert [(s["eval_set"], s["items"], s["items_leaked"]) for s in result.per_set] == [
        ("a.jsonl", 30, 30), ("b.jsonl", 30, 5)]


def test_config_checks():
    with pytest.raises(ParameterError, match="ngram"):
        DecontaminationConfig(ngram=0, near=False)
    with pytest.raises(ParameterError, match="ngram"):
        DecontaminationConfig(ngram=300)


def test_memory_engine_matches_the_index_on_whole_copies(planted):
    """The in-memory matcher (any method; leakage's way) with the index's default method
    flags the same whole-document copies; copies inside long documents need the n-gram
    rule or the index's windows."""
    texts, truth = _train(planted)
    config = DecontaminationConfig(ngram=0, near_engine="memory")
    result = find_contamination(_batches(texts, "train.jsonl", "t"), _evals(planted["items"]), config)
    flagged = set(np.flatnonzero(result.contaminated).tolist())
    whole = {row for row, (kind, _) in truth.items() if kind in ("paraphrased", "ocr")}
    assert whole <= flagged <= set(truth)
    with pytest.raises(ParameterError, match="near_engine='memory'"):
        DecontaminationConfig(near_method="ngram")


def test_any_method_the_index_holds_is_a_near_method(planted):
    """The near methods of near_engine='index' are the index's own (derived from what each
    method declares): an embedding method matches whole copies through it too."""
    from neardup.decontaminate.run import index_methods
    from neardup.index import supported_methods

    assert index_methods() == supported_methods() and "static" in index_methods()
    texts, truth = _train(planted)
    config = DecontaminationConfig(ngram=0, near_method="static", near_window=0)
    result = find_contamination(_batches(texts, "train.jsonl", "t"), _evals(planted["items"]), config)
    flagged = set(np.flatnonzero(result.contaminated).tolist())
    whole = {row for row, (kind, _) in truth.items() if kind in ("paraphrased", "ocr")}
    # Nothing clean flagged; at its default cosine the static model finds 13 of the 20
    # paraphrased and OCR'd whole copies here (char-5 MinHash, the default, finds all).
    assert flagged <= set(truth) and len(flagged & whole) >= len(whole) // 2
