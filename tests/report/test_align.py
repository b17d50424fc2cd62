"""Word-level alignment: the edit script and its invariants."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.report.align import OPS, align_words, alignment_stats, split_words


def test_substitution_insertion_and_deletion_are_told_apart():
    segments = align_words("the cat sat on the mat today", "the dog sat on the mat")
    assert segments == [
        ("equal", "the ", "the "),
        ("replace", "cat ", "dog "),
        ("equal", "sat on the mat ", "sat on the mat"),
        ("delete", "today", ""),
    ]
    assert alignment_stats(segments) == {"equal": 5, "delete": 1, "insert": 0, "replace": 1}


def test_insertion_in_the_middle():
    segments = align_words("profit rose to 12 mln", "net profit rose sharply to 12 mln")
    assert [op for op, _, _ in segments] == ["insert", "equal", "insert", "equal"]
    assert [b for op, _, b in segments if op == "insert"] == ["net ", "sharply "]


def test_words_compare_case_folded_by_default_and_by_key_when_given():
    assert [op for op, _, _ in align_words("Reuters said", "REUTERS said")] == ["equal"]
    exact = align_words("Reuters said", "REUTERS said", key=lambda w: w.strip())
    assert [op for op, _, _ in exact] == ["replace", "equal"]


def test_empty_sides():
    assert align_words("", "") == []
    assert align_words("", "a b") == [("insert", "", "a b")]
    assert align_words("a b", "") == [("delete", "a b", "")]


def test_rejects_non_text():
    with pytest.raises(ValueError, match="parameter 'b' must be a str; got NoneType"):
        align_words("a", None)


words = st.lists(st.sampled_from(["a", "b", "C", "dé", "北京", "x\u200by"]), max_size=12)
spaces = st.sampled_from([" ", "  ", "\n", "\t "])


@settings(max_examples=150, deadline=None)
@given(words, words, spaces, st.booleans())
def test_segments_interleave_both_texts_exactly(wa, wb, sep, lead):
    a = (sep if lead else "") + sep.join(wa)
    b = sep.join(wb) + (sep if lead else "")
    segments = align_words(a, b)
    assert "".join(s[1] for s in segments) == a
    assert "".join(s[2] for s in segments) == b
    assert all(op in OPS for op, _, _ in segments)
    assert "".join(split_words(a)) == a
    if a.casefold().split() == b.casefold().split() and a.strip():
        assert {op for op, _, _ in segments} == {"equal"}
