"""Span de-duplication against a brute-force reference: every repeated span of at least
--min-length is found, nothing shorter or rarer, whatever the batches and partitions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup.errors import ParameterError
from neardup.spans import (
    SpanDedupConfig,
    SpanUnit,
    find_repeated_spans,
    merge_ranges,
    normalize_span,
    remove_spans,
    split_spans,
    split_units,
)

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])

POOL = ["Subscribe to our newsletter", "Home", "All rights reserved.", "Click here to read more",
        "A short one", "Wheat rose two cents on the day", "Call us now", "Yes. No! Maybe?",
        "Mr. Smith went. Home."]


@st.composite
def corpora(draw):
    docs = draw(st.lists(st.lists(st.tuples(st.sampled_from(POOL), st.booleans(),
                                            st.sampled_from(["\n", "\n\n", "  \n "])),
                                  max_size=6), max_size=8))
    texts = []
    for pieces in docs:
        parts = []
        for line, upper, sep in pieces:
            parts.append((line.upper() if upper else line) + sep)
        texts.append("".join(parts))
    return texts


def reference(texts, config):
    """Removed (doc, start, stop) ranges, computed the obvious way."""
    occurrences = []  # (form, doc, start, stop) in input order
    n = config.unit.sentences if config.unit.kind == "sentences" else 1
    for d, text in enumerate(texts):
        starts, ends = split_units(text, config.unit.kind)
        for i in range(len(starts) - n + 1):
            form = tuple(normalize_span(text[s:e]) for s, e in zip(starts[i:i + n], ends[i:i + n]))
            stop = starts[i + n] if i + n < len(starts) else len(text)
            if len(" ".join(form)) >= config.min_length:
                occurrences.append((form, d, starts[i], stop))
    docs: dict[str, set] = {}
    for form, d, _, _ in occurrences:
        docs.setdefault(form, set()).add(d)
    repeated = {f for f, ds in docs.items() if len(ds) >= config.min_repeats}
    ranges = []
    for form in repeated:
        mine = [o for o in occurrences if o[0] == form]
        kept = {"first": mine[0], "last": mine[-1], "none": None}[config.keep]
        ranges += [(d, s, e) for f, d, s, e in mine if (f, d, s, e) != kept]
    if not ranges:
        return set()
    d, s, e = merge_ranges(*map(np.array, zip(*ranges)))
    return set(zip(d.tolist(), s.tolist(), e.tolist()))


def run(texts, config, tmp_path, *, batch=3, memory_limit=1 << 20, expected_bytes=None):
    batches = [texts[i:i + batch] for i in range(0, len(texts), batch)]
    decisions = find_repeated_spans(batches, config, work_dir=tmp_path, memory_limit=memory_limit,
                                    expected_bytes=expected_bytes)
    found, new_texts, lo = set(), [], 0
    for removal in remove_spans(batches, decisions):
        for i, ranges in enumerate(removal.ranges):
            found |= {(lo + i, s, e) for s, e in ranges}
        new_texts += removal.texts
        lo += len(removal.texts)
    return found, new_texts, decisions


@SETTINGS
@given(texts=corpora(), unit=st.sampled_from(["line", "paragraph", "sentences:1", "sentences:2"]),
       min_length=st.integers(1, 30), min_repeats=st.integers(2, 4),
       keep=st.sampled_from(["first", "last", "none"]), batch=st.integers(1, 4),
       spill=st.booleans())
def test_matches_brute_force(tmp_path_factory, texts, unit, min_length, min_repeats, keep, batch,
                             spill):
    config = SpanDedupConfig(unit=unit, min_length=min_length, min_repeats=min_repeats, keep=keep)
    # spill: a budget of one byte writes every batch out, over 16 partitions.
    found, new_texts, decisions = run(
        texts, config, tmp_path_factory.mktemp("w"), batch=batch,
        memory_limit=1 if spill else 1 << 20, expected_bytes=16 if spill else None)
    assert found == reference(texts, config)
    assert len(new_texts) == len(texts)
    for d, text in enumerate(texts):
        cut = sorted((s, e) for dd, s, e in found if dd == d)
        expected, position = "", 0
        for s, e in cut:
            expected += text[position:s]
            position = e
        assert new_texts[d] == expected + text[position:]


def test_short_and_rare_spans_stay(tmp_path):
    texts = ["Home\nSubscribe to our newsletter\nunique line number one",
             "Home\nSubscribe to our newsletter\nunique line number two",
             "Home\nnothing else here at all"]
    config = SpanDedupConfig(unit="line", min_length=10)
    found, new_texts, decisions = run(texts, config, tmp_path)
    assert new_texts == ["Home\nSubscribe to our newsletter\nunique line number one",
                         "Home\nunique line number two", "Home\nnothing else here at all"]
    assert decisions.repeated == 1 and decisions.top[0]["docs"] == 2
    assert decisions.top[0]["text"] == "Subscribe to our newsletter"


def test_repeats_within_one_document_count_once(tmp_path):
    texts = ["All rights reserved here.\nAll rights reserved here.", "something else entirely"]
    found, new_texts, _ = run(texts, SpanDedupConfig(min_length=5), tmp_path)
    assert found == set() and new_texts == texts
    found, new_texts, _ = run(texts + ["all rights  RESERVED here."],
                              SpanDedupConfig(min_length=5), tmp_path / "b")
    # Second document's copy is removed along with the within-document repeat.
    assert new_texts == ["All rights reserved here.\n", "something else entirely", ""]


def test_sentence_windows():
    text = "One is here. Two is there!  Three? \n\nFour"
    unit = SpanUnit.parse("sentences:2")
    assert [text[s:e] for s, e, _ in split_spans(text, unit)] == [
        "One is here. Two is there!", "Two is there!  Three?", "Three? \n\nFour"]
    assert split_spans("Only one.", unit) == []


@pytest.mark.parametrize("value", ["word", "sentences:0", "sentences:x", "line:2", ""])
def test_bad_unit(value):
    with pytest.raises(ParameterError, match="unit"):
        SpanUnit.parse(value)


def test_bad_parameters():
    with pytest.raises(ParameterError, match="min_repeats"):
        SpanDedupConfig(min_repeats=1)
    with pytest.raises(ParameterError, match="keep"):
        SpanDedupConfig(keep="longest")


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(st.text(alphabet=st.sampled_from(
    list("ab .!?\"')]\n\r\t\u3000") + ["\u00df", "\u0130", "\U0001f600", "\u3002", "\u201d", "A"]),
    max_size=30), max_size=5),
       kind=st.sampled_from(["line", "paragraph", "sentences"]))
def test_vectorized_pieces_match_the_readable_definition(texts, kind):
    from neardup.spans.pieces import piece_table
    from neardup.spans.units import SPAN_HASH_KEY

    table = piece_table(texts, kind, SPAN_HASH_KEY)
    expected_pieces, forms = [], []
    for d, text in enumerate(texts):
        starts, ends = split_units(text, kind)
        expected_pieces += [(d, s, e) for s, e in zip(starts, ends)]
        forms += [normalize_span(text[s:e]) for s, e in zip(starts, ends)]
    doc = np.repeat(np.arange(len(texts)), np.diff(table.bounds))
    assert list(zip(doc.tolist(), table.start.tolist(), table.end.tolist())) == expected_pieces
    assert table.length.tolist() == [len(f) for f in forms]
    # Equal forms hash alike, different forms apart.
    by_form = {}
    for form, h in zip(forms, table.hash.tolist()):
        assert by_form.setdefault(form, h) == h
    assert len(set(by_form.values())) == len(by_form)
