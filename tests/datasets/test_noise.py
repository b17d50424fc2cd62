"""Tests for neardup.datasets.noise: each corruption does what its docstring says, is seeded,
and survives hostile input."""

from __future__ import annotations

import re
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.datasets import noise as N
from neardup.datasets.noise import words as noise_words

# An invented wire story in Reuters-21578 layout: dateline, four-space paragraph indents,
# lines wrapped near 65 characters, "U.S.", "Inc.", "mln", decimals.
STORY = """    SPRINGFIELD, Feb 26 - Acme Widget Inc said it agreed to buy
the valve business of Northern Tool Co for 42.5 mln dlrs in
cash, expanding its presence in the U.S. Midwest market.
    The company said the unit had sales of 118 mln dlrs in 1986.
It expects the purchase to add to earnings in the first full
year. Acme said the deal is subject to approval by regulators.
    Northern Tool said it would use the proceeds to cut debt.
Its shares rose 1-1/2 to 23 on the New York Stock Exchange
after the announcement. Analysts said the price was fair.
    Mr. Smith, the chairman of Acme, told reporters the company
is studying other acquisitions in the U.S. and Canada. He
declined to name any targets. The deal is expected to close
by the end of April.
 Reuter
"""
STORY_SENTENCES = [
    "SPRINGFIELD, Feb 26 - Acme Widget Inc said it agreed to buy\nthe valve business of "
    "Northern Tool Co for 42.5 mln dlrs in\ncash, expanding its presence in the U.S. Midwest "
    "market.",
    "The company said the unit had sales of 118 mln dlrs in 1986.",
    "It expects the purchase to add to earnings in the first full\nyear.",
    "Acme said the deal is subject to approval by regulators.",
    "Northern Tool said it would use the proceeds to cut debt.",
    "Its shares rose 1-1/2 to 23 on the New York Stock Exchange\nafter the announcement.",
    "Analysts said the price was fair.",
    "Mr. Smith, the chairman of Acme, told reporters the company\nis studying other "
    "acquisitions in the U.S. and Canada.",
    "He\ndeclined to name any targets.",
    "The deal is expected to close\nby the end of April.",
    "Reuter",
]
LONG = STORY * 6  # ~5,000 characters, for rate measurements
DONORS = ["The city council met on Tuesday.", "Local dealers expect higher prices this spring."]
HOSTILE = [
    "",
    "a",
    " ",
    "\n\n",
    ".",
    "Привет, мир. Как дела? Хорошо.",
    "東京は晴れ。大阪は雨。",
    "مرحبا بالعالم. كيف حالك؟",
    "🙂 🙂🙂. Ok",
    "e\u0301t\u00e9\u200b\u00ad",
    "A.",
    "U.S. Inc. Feb. mln.",
]

# Every public corruption with its extra arguments; each takes (text, rng).
FAMILIES = {
    "ocr_noise": lambda t, r: N.ocr_noise(t, r, severity=0.1),
    "abridge": lambda t, r: N.abridge(t, r),
    "drop_middle_sentences": lambda t, r: N.drop_middle_sentences(t, r, rate=0.5),
    "drop_lead": lambda t, r: N.drop_lead(t, r),
    "change_dateline": lambda t, r: N.change_dateline(t, r),
    "insert_local_sentences": lambda t, r: N.insert_local_sentences(t, r, DONORS, n=2),
    "typos": lambda t, r: N.typos(t, r, rate=0.1),
    "word_edits": lambda t, r: N.word_edits(t, r, rate=0.2),
    "sentence_edits": lambda t, r: N.sentence_edits(t, r, rate=0.5, donor_sentences=DONORS),
    "homoglyphs": lambda t, r: N.homoglyphs(t, r, rate=0.3),
    "invisible_chars": lambda t, r: N.invisible_chars(t, r, rate=0.1),
    "case_changes": lambda t, r: N.case_changes(t, r, rate=0.3),
    "pad": lambda t, r: N.pad(t, r, amount=0.3),
    "replace_sentences": lambda t, r: N.replace_sentences(t, r, DONORS, fraction=0.5),
    "reprint_news": lambda t, r: N.reprint(t, r, "news", DONORS)[0],
    "reprint_adversarial": lambda t, r: N.reprint(t, r, "adversarial", DONORS)[0],
}


STRIP_INVISIBLE = dict.fromkeys(map(ord, N.INVISIBLE_CHARS))


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def levenshtein(a: str, b: str) -> int:
    """Exact edit distance, bit-parallel over Python ints (Myers 1999, Hyyro 2001): a
    column of the DP table is one integer, so 5,000 x 5,000 characters takes ~20 ms."""
    if not a or not b:
        return len(a) + len(b)
    m = len(a)
    full, top = (1 << m) - 1, 1 << (m - 1)
    peq: dict[str, int] = {}
    for i, c in enumerate(a):
        peq[c] = peq.get(c, 0) | (1 << i)
    pv, mv, score = full, 0, m
    for c in b:
        eq = peq.get(c, 0)
        xv = eq | mv
        xh = (((eq & pv) + pv) ^ pv) | eq
        ph = mv | ~(xh | pv)
        mh = pv & xh
        if ph & top:
            score += 1
        elif mh & top:
            score -= 1
        ph = (ph << 1) | 1
        mh <<= 1
        pv = (mh | ~(xv | ph)) & full
        mv = ph & xv & full
    return score


def n_alnum(text: str) -> int:
    return sum(c.isalnum() for c in text)


def is_subsequence(small: list[str], big: list[str]) -> bool:
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


# ----------------------------------------------------------------------------- contract


@pytest.mark.parametrize("name", FAMILIES)
def test_deterministic_given_seed(name):
    f = FAMILIES[name]
    assert f(STORY, rng(7)) == f(STORY, rng(7))
    outputs = {f(STORY, rng(seed)) for seed in range(5)}
    assert len(outputs) > 1, "different seeds should give different copies"


@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_and_tiny_inputs(name, text):
    out = FAMILIES[name](text, rng(1))
    assert isinstance(out, str)


@pytest.mark.parametrize("name", FAMILIES)
def test_input_not_mutated_and_unicode_ok(name):
    text = "Москва, 26 фев - Газпром сообщил о росте добычи. Акции выросли на 3%.\n    Δ ok."
    before = str(text)
    assert isinstance(FAMILIES[name](text, rng(2)), str)
    assert text == before


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=300), seed=st.integers(0, 2**32 - 1))
def test_arbitrary_text_invariants(text, seed):
    for f in FAMILIES.values():
        assert isinstance(f(text, rng(seed)), str)
    assert text.startswith(N.abridge(text, rng(seed)))
    assert text.endswith(N.drop_lead(text, rng(seed)))
    assert text in N.pad(text, rng(seed))
    if not any(c in text for c in N.INVISIBLE_CHARS):
        assert N.invisible_chars(text, rng(seed), 0.3).translate(STRIP_INVISIBLE) == text
    for s, e in N.sentence_spans(text):
        assert text[s:e] == text[s:e].strip() and text[s:e]


def test_invalid_parameters_raise_with_hint():
    with pytest.raises(TypeError, match="default_rng"):
        N.ocr_noise(STORY, 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'text'"):
        N.typos(b"bytes", rng())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ocr_noise: parameter 'severity'"):
        N.ocr_noise(STORY, rng(), severity=-0.1)
    with pytest.raises(ValueError, match="'news', 'adversarial'"):
        N.reprint(STORY, rng(), profile="spam")
    with pytest.raises(ValueError, match="parameter 'ops'"):
        N.typos(STORY, rng(), ops=("swap",))
    with pytest.raises(ValueError, match="parameter 'keep'"):
        N.abridge(STORY, rng(), keep=(0.9, 0.4))
    with pytest.raises(TypeError, match="donor_sentences"):
        N.insert_local_sentences(STORY, rng(), "not a list")
    with pytest.raises(ValueError, match="parameter 'mean'"):
        N.reprint_cluster_sizes(10, rng(), mean=0.5)


# ----------------------------------------------------------------------------- splitting


def test_sentence_splitter_on_wire_story():
    assert N.split_sentences(STORY) == STORY_SENTENCES


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Sales rose 5.93 mln. Profits fell.", ["Sales rose 5.93 mln.", "Profits fell."]),
        ("The U.S. Treasury said so. It did.", ["The U.S. Treasury said so.", "It did."]),
        ("Acme Inc. Chairman John F. Kennedy spoke.",
         ["Acme Inc. Chairman John F. Kennedy spoke."]),
        ("On Feb. 26 it fell. Then it rose!", ["On Feb. 26 it fell.", "Then it rose!"]),
        ('He said "No." She left.', ['He said "No."', "She left."]),
        ("first line\n    second para", ["first line", "second para"]),
        ("wrapped line\ncontinues here.", ["wrapped line\ncontinues here."]),
        ("东京下雨。大阪晴。", ["东京下雨。", "大阪晴。"]),
        ("Это тест. Второе предложение.", ["Это тест.", "Второе предложение."]),
        ("  \n ", []),
    ],
)
def test_sentence_splitter_cases(text, expected):
    assert N.split_sentences(text) == expected


def test_paragraph_splitter():
    paragraphs = N.split_paragraphs(STORY)
    assert len(paragraphs) == 4  # " Reuter" has a one-space indent: not a new paragraph
    assert paragraphs[1].startswith("The company said")
    assert N.split_paragraphs("One.\n\nTwo.\r\n\r\nThree.") == ["One.", "Two.", "Three."]
    for s, e in N.paragraph_spans(STORY):
        assert STORY[s:e] == STORY[s:e].strip()


# ----------------------------------------------------------------------------- OCR


def test_ocr_severity_zero_is_identity():
    assert N.ocr_noise(LONG, rng(), severity=0.0) == LONG


@pytest.mark.parametrize("severity", [0.01, 0.05, 0.15])
def test_ocr_severity_is_fraction_of_characters_changed(severity):
    outs = [N.ocr_noise(LONG, rng(s), severity) for s in range(3)]
    fractions = [levenshtein(LONG, out) / len(LONG) for out in outs]
    # Multi-character confusions ("m" -> "rn") and insertions count a little over one edit.
    assert 0.8 * severity < np.mean(fractions) < 1.4 * severity


def test_ocr_produces_typical_artifacts():
    text = "modern clearly minimum wow illicit BOSS 1980, electric power. " * 40
    outs = [N.ocr_noise(text, rng(s), severity=0.2) for s in range(3)]
    joined = "".join(outs)
    assert "rnodern" in joined or "modem" in joined  # rn <-> m
    assert re.search(r"[a-z]-(\n| )[a-z]", joined)  # end-of-line hyphenation artefact
    assert any(o.count(" ") < text.count(" ") for o in outs)  # merged words
    assert re.search(r"[0O5S8B]", joined.replace("BOSS 1980", ""))  # digit/letter swaps
    assert any(c in joined for c in "`:'")  # stray marks


# ----------------------------------------------------------------------------- editorial


def test_abridge_keeps_a_sentence_prefix():
    sentences = N.split_sentences(STORY)
    for seed in range(20):
        out = N.abridge(STORY, rng(seed))
        assert STORY.startswith(out)
        kept = N.split_sentences(out)
        assert 1 <= len(kept) < len(sentences) and kept == sentences[: len(kept)]
        assert 0.25 < len(out) / len(STORY) < 1.0


def test_abridge_keep_fraction_and_single_sentence():
    assert N.abridge(STORY, rng(), keep=1.0) == STORY.rstrip()
    short = N.abridge(STORY, rng(), keep=0.01)
    assert N.split_sentences(short) == STORY_SENTENCES[:1]
    assert N.abridge("Just one sentence here.", rng()) == "Just one sentence here."


def test_drop_middle_sentences():
    sentences = N.split_sentences(STORY)
    assert N.drop_middle_sentences(STORY, rng(), rate=0.0) == STORY
    only_ends = N.split_sentences(N.drop_middle_sentences(STORY, rng(), rate=1.0))
    assert only_ends == [sentences[0], sentences[-1]]
    for seed in range(10):
        kept = N.split_sentences(N.drop_middle_sentences(STORY, rng(seed), rate=0.4))
        assert kept[0] == sentences[0] and kept[-1] == sentences[-1]
        assert is_subsequence(kept, sentences)
        run = N.drop_middle_sentences(STORY, rng(seed), rate=0.4, contiguous=True)
        dropped = [i for i, s in enumerate(sentences) if s not in N.split_sentences(run)]
        assert dropped == list(range(dropped[0], dropped[0] + len(dropped)) if dropped else [])


def test_drop_middle_keeps_paragraph_breaks():
    text = "A one.\n    B two. B three.\n    C four. C five."
    out = N.drop_middle_sentences(text, rng(), rate=1.0)
    assert out == "A one.\n    C five."


def test_drop_lead_removes_opening_and_keeps_a_suffix():
    sentences = N.split_sentences(STORY)
    for seed in range(20):
        out = N.drop_lead(STORY, rng(seed), paragraph_prob=0.0)
        assert STORY.endswith(out)
        rest = N.split_sentences(out)
        assert 1 <= len(sentences) - len(rest) <= 3
        assert rest == sentences[-len(rest) :]
        assert "SPRINGFIELD" not in out
    by_paragraph = N.drop_lead(STORY, rng(), paragraph_prob=1.0)
    assert by_paragraph == STORY[N.paragraph_spans(STORY)[1][0] :]
    assert N.drop_lead("Only one.", rng()) == "Only one."


def test_change_dateline_restyles_removes_or_adds_byline():
    body = STORY[len("    SPRINGFIELD, Feb 26 - ") :]
    outs = [N.change_dateline(STORY, rng(seed)) for seed in range(60)]
    assert all(o.endswith(body) for o in outs)
    assert any(o == body for o in outs)  # dateline removed
    assert any(o.startswith("By ") for o in outs)  # byline added
    assert any(re.search(r"\((AP|UP|UPI|INS|Reuter|Reuters)\) — ", o) for o in outs)
    assert any(re.match(r"\s*Springfield", o) for o in outs)  # city case changed
    assert len(set(outs)) > 10


@pytest.mark.parametrize(
    "dateline",
    [
        "Greeley, Colo., Jan. 28. — ",
        "WASHINGTON (AP) — ",
        "AMSTERDAM, 2 March - ",
        "NEW YORK, MARCH 2 - ",
        "    CHEVY CHASE, Md., - March 4 - ",
    ],
)
def test_change_dateline_recognises_styles(dateline):
    text = dateline + "Seven persons perished today in a fire."
    outs = [N.change_dateline(text, rng(s), remove_prob=1.0, byline_prob=0.0) for s in range(3)]
    assert outs == ["Seven persons perished today in a fire."] * 3


def test_change_dateline_without_dateline_adds_one():
    text = "No dateline in this story. It goes on."
    for seed in range(10):
        out = N.change_dateline(text, rng(seed))
        assert out != text and out.endswith(text)


def test_insert_local_sentences():
    donors = ["LOCAL ONE said so.", "LOCAL TWO agreed."]
    out = N.insert_local_sentences(STORY, rng(3), donors, n=2)
    sentences = N.split_sentences(out)
    assert sum(s.startswith("LOCAL") for s in sentences) == 2
    assert [s for s in sentences if not s.startswith("LOCAL")] == N.split_sentences(STORY)
    assert sentences[0] == STORY_SENTENCES[0]  # the lead stays first
    assert N.insert_local_sentences(STORY, rng(), donors, n=0) == STORY
    assert N.insert_local_sentences(STORY, rng(), [], n=3) == STORY


@pytest.mark.parametrize("fraction", [0.3, 0.5, 0.7])
def test_replace_sentences_replaces_that_share_in_place(fraction):
    donors = ["NEW ONE happened.", "NEW TWO followed.", "NEW THREE ended it."]
    out = N.replace_sentences(STORY, rng(5), donors, fraction=fraction)
    old, new = N.split_sentences(STORY), N.split_sentences(out)
    assert len(new) == len(old)
    replaced = [i for i, (a, b) in enumerate(zip(old, new)) if a != b]
    assert len(replaced) == round(fraction * len(old))
    assert all(new[i] in donors for i in replaced)
    # Donor sentences arrive in reading order (cyclically), as rewritten paragraphs do.
    start = donors.index(new[replaced[0]])
    assert [new[i] for i in replaced] == [donors[(start + t) % 3] for t in range(len(replaced))]
    # Paragraph layout is kept: the same number of indented paragraph starts.
    assert out.count("\n    ") == STORY.count("\n    ")


def test_replace_sentences_bounds():
    assert N.replace_sentences(STORY, rng(), [], 0.5) == STORY
    assert N.replace_sentences("", rng(), ["X."], 0.5) == ""
    # At least one replaced, at least one kept.
    assert sum(a != b for a, b in zip(N.split_sentences(STORY), N.split_sentences(
        N.replace_sentences(STORY, rng(), ["X y."], 0.0)))) == 1  # fmt: skip
    out = N.split_sentences(N.replace_sentences(STORY, rng(), ["X y."], 1.0))
    assert out.count("X y.") == len(STORY_SENTENCES) - 1
    assert N.replace_sentences("Only one.", rng(), ["X y."], 1.0) == "X y."
    with pytest.raises(ValueError, match="replace_sentences: parameter 'fraction'"):
        N.replace_sentences(STORY, rng(), ["X."], 1.5)


def test_quoted_sentences():
    text = (
        'Acme said profits rose. "We are very pleased with the result," Mr. Smith said.\n'
        "    He added: “Prices will rise again next year.” Shares fell.\n"
        '    The "so-called" plan was dropped.'
    )
    assert N.quoted_sentences(text) == [
        '"We are very pleased with the result," Mr. Smith said.',
        "He added: “Prices will rise again next year.”",
    ]
    assert N.quoted_sentences(STORY) == []
    assert N.quoted_sentences("") == []


# ----------------------------------------------------------------------------- adversarial


def test_typos_substitution_rate_and_qwerty_neighbours():
    rate = 0.1
    out = N.typos(LONG, rng(), rate=rate, ops=("substitute",))
    assert len(out) == len(LONG)
    diffs = [(a, b) for a, b in zip(LONG, out) if a != b]
    assert abs(len(diffs) / n_alnum(LONG) - rate) < 0.03
    neighbours = noise_words._qwerty_neighbours()
    assert all(b.lower() in neighbours[a.lower()] for a, b in diffs)
    assert all(a.isupper() == b.isupper() for a, b in diffs if b.isalpha())  # case kept


def test_typos_each_operation():
    assert N.typos(LONG, rng(), rate=0.0) == LONG
    expected = 0.1 * n_alnum(LONG)
    deleted = len(LONG) - len(N.typos(LONG, rng(), 0.1, ops=("delete",)))
    inserted = len(N.typos(LONG, rng(), 0.1, ops=("insert",))) - len(LONG)
    assert 0.8 * expected < deleted < 1.2 * expected
    assert 0.8 * expected < inserted < 1.2 * expected
    swapped = N.typos(LONG, rng(), 0.1, ops=("transpose",))
    assert swapped != LONG and sorted(swapped) == sorted(LONG)
    # Transpositions that find a neighbour cost 2 edits, those that do not cost 0.
    mixed = levenshtein(LONG, N.typos(LONG, rng(), 0.1))
    assert 0.8 * expected < mixed < 1.3 * expected


def test_typos_off_keyboard_script():
    text = "Газпром сообщил о росте добычи газа в прошлом году."
    out = N.typos(text, rng(), rate=0.5, ops=("substitute",))
    assert len(out) == len(text) and out != text
    assert set(out) <= set(text)  # substitutes drawn from the text's own alphabet


def test_word_edits():
    words = noise_words.WORD_PATTERN.findall(LONG)
    out = N.word_edits(LONG, rng(), rate=0.2, vocabulary=["zzz"], ops=("substitute",))
    subs = len(re.findall(r"\bzzz\b", out, flags=re.I))
    assert abs(subs / len(words) - 0.2) < 0.05
    assert len(noise_words.WORD_PATTERN.findall(N.word_edits(LONG, rng(), 0.2, ops=("delete",)))) < 0.9 * len(words)
    assert len(noise_words.WORD_PATTERN.findall(N.word_edits(LONG, rng(), 0.2, ops=("insert",)))) > 1.1 * len(words)
    swapped = N.word_edits(LONG, rng(), 0.2, ops=("transpose",))
    assert swapped != LONG and sorted(noise_words.WORD_PATTERN.findall(swapped)) == sorted(words)
    assert N.word_edits(LONG, rng(), 0.0) == LONG
    assert "U.S" in noise_words.WORD_PATTERN.findall("the U.S. market")  # initialisms stay one word


def test_sentence_edits():
    sentences = N.split_sentences(STORY)
    deleted = N.split_sentences(N.sentence_edits(STORY, rng(), 0.5, ops=("delete",)))
    assert len(deleted) < len(sentences) and is_subsequence(deleted, sentences)
    swapped = N.split_sentences(N.sentence_edits(STORY, rng(), 0.5, ops=("transpose",)))
    assert swapped != sentences and sorted(swapped) == sorted(sentences)
    inserted = N.sentence_edits(STORY, rng(), 0.5, DONORS, ops=("insert",))
    assert any(d in inserted for d in DONORS)
    recased = N.sentence_edits(STORY, rng(), 0.5, ops=("substitute",))  # no donors: case
    assert recased != STORY and recased.lower() == STORY.lower()
    assert N.sentence_edits(STORY, rng(), 1.0, ops=("delete",)).strip()  # never empty


def test_homoglyph_table_survives_nfkc():
    # The point of homoglyphs: NFKC does NOT fold them, so normalisation alone is no defence.
    for latin, glyphs in N.HOMOGLYPHS.items():
        for g in glyphs:
            assert g != latin and not g.isascii()
            assert unicodedata.normalize("NFKC", g) == g
            assert unicodedata.category(g) == unicodedata.category(latin)


def test_homoglyphs_look_alike_and_invert():
    rate = 0.3
    out = N.homoglyphs(LONG, rng(), rate=rate)
    assert len(out) == len(LONG) and not out.isascii()
    assert unicodedata.normalize("NFKC", out) != LONG
    inverse = {ord(g): latin for latin, glyphs in N.HOMOGLYPHS.items() for g in glyphs}
    assert out.translate(inverse) == LONG
    eligible = sum(c in N.HOMOGLYPHS for c in LONG)
    replaced = sum(a != b for a, b in zip(LONG, out))
    assert abs(replaced / eligible - rate) < 0.03
    assert N.homoglyphs(LONG, rng(), rate=0.0) == LONG


def test_invisible_chars_removable_and_rate():
    rate = 0.05
    out = N.invisible_chars(LONG, rng(), rate=rate)
    assert out.translate(STRIP_INVISIBLE) == LONG
    inserted = len(out) - len(LONG)
    assert abs(inserted / (len(LONG) - 1) - rate) < 0.015
    assert out[0] == LONG[0] and out[-1] == LONG[-1]
    assert N.invisible_chars("ab", rng(), rate=1.0).translate(STRIP_INVISIBLE) == "ab"


def test_case_changes_only_change_case():
    out = N.case_changes(LONG, rng(), rate=0.3)
    assert out != LONG and out.lower() == LONG.lower()
    assert N.case_changes("Straße STRASSE", rng(), rate=1.0).lower().count("straße") == 1


def test_pad_contains_original():
    for where in ("prepend", "append", "both", "random"):
        out = N.pad(STORY, rng(), amount=0.5, where=where)
        assert STORY in out
        assert len(out) >= 1.5 * len(STORY)
    assert N.pad(STORY, rng(), where="prepend").endswith(STORY)
    assert N.pad(STORY, rng(), where="append").startswith(STORY)
    donor_pad = N.pad(STORY, rng(), DONORS, amount=0.1, where="append")
    assert donor_pad[len(STORY) :].strip().split(". ")[0].rstrip(".") in " ".join(DONORS)
    assert N.pad("", rng()).strip()  # at least one sentence even for empty text


# ----------------------------------------------------------------------------- composition


def test_reprint_news_profile():
    counts: dict[str, int] = {}
    for seed in range(200):
        out, applied = N.reprint(STORY, rng(seed), "news", DONORS)
        names = [a.split("(")[0] for a in applied]
        order = [
            "drop_lead", "change_dateline", "abridge", "drop_middle_sentences",
            "insert_local_sentences", "ocr_noise",
        ]  # fmt: skip
        assert names == sorted(names, key=order.index)  # also: only known steps
        assert (out == STORY) == (not applied)
        if "ocr_noise" in names:
            severity = float(re.search(r"severity=([\d.e-]+)", applied[-1]).group(1))
            assert 0.005 <= severity <= 0.08
        for name in names:
            counts[name] = counts.get(name, 0) + 1
    assert 90 < counts["abridge"] < 150  # "often": p = 0.6
    assert 10 < counts["drop_lead"] < 55
    assert 0 < counts["drop_middle_sentences"] < 60
    assert counts["ocr_noise"] > 190  # always applied; only a light scan of a short cut can miss


def test_reprint_adversarial_profile_and_rate():
    seen = set()
    for seed in range(100):
        out, applied = N.reprint(STORY, rng(seed), "adversarial", rate=0.2)
        assert applied and out != STORY
        seen.update(a.split("(")[0] for a in applied)
    assert seen == {
        "sentence_edits", "pad", "word_edits", "case_changes", "typos", "homoglyphs",
        "invisible_chars",
    }  # fmt: skip
    text, applied = N.reprint(STORY, rng(), "news", rate=0.0)
    assert all(not a.startswith("ocr_noise") for a in applied)


def test_reprint_is_deterministic():
    assert N.reprint(STORY, rng(5), "news", DONORS) == N.reprint(STORY, rng(5), "news", DONORS)


# ----------------------------------------------------------------------------- cluster sizes


def test_reprint_cluster_sizes_long_tail():
    sizes = N.reprint_cluster_sizes(20_000, rng())
    assert sizes.shape == (20_000,) and sizes.dtype == np.int64
    assert abs(sizes.mean() - 6.0) < 0.4
    assert sizes.min() == 1 and sizes.max() <= 200
    assert 0.2 < (sizes == 1).mean() < 0.5  # many singletons
    assert np.median(sizes) < sizes.mean()  # right-skewed
    assert (sizes >= 50).sum() > 20  # a real tail


def test_reprint_cluster_sizes_parameters():
    small = N.reprint_cluster_sizes(20_000, rng(1), mean=3.0, max_size=20)
    assert small.max() <= 20 and abs(small.mean() - 3.0) < 0.2
    assert (N.reprint_cluster_sizes(100, rng(), mean=1.0) == 1).all()
    assert N.reprint_cluster_sizes(0, rng()).shape == (0,)
    same = N.reprint_cluster_sizes(50, rng(4)), N.reprint_cluster_sizes(50, rng(4))
    np.testing.assert_array_equal(*same)
