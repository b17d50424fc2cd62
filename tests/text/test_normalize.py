import pytest

from neardup.text import NormalizeConfig, normalize_batch, normalize_text


def test_default_steps():
    text = "Тhe  ｆｕｌｌ-width\u200b elec-\ntric FENCE, Co."
    assert normalize_text(text) == "the full width electric fence co"


@pytest.mark.parametrize(
    "text,expected",
    [
        ("elec-\ntric", "electric"),
        ("elec- \n  tric", "electric"),
        ("elec- tric", "electric"),
        ("well-known", "well known"),  # a real hyphen stays a word boundary
        ("SIX- MONTH", "six month"),  # upper-case continuation is not joined
    ],
)
def test_hyphen_repair(text, expected):
    assert normalize_text(text) == expected


def test_invisible_characters_removed():
    assert normalize_text("a\u200bb\u200dc\u00add\ufeffe\x03f") == "abcdef"


def test_homoglyphs_folded_and_switchable():
    spoofed = "\u0440\u0430y\u0440\u0430l"  # Cyrillic р а
    assert normalize_text(spoofed) == "paypal"
    assert normalize_text(spoofed, NormalizeConfig(fold_homoglyphs=False)) != "paypal"


def test_every_step_switchable():
    off = NormalizeConfig(
        remove_invisible=False,
        nfkc=False,
        repair_hyphens=False,
        fold_homoglyphs=False,
        casefold=False,
        strip_punctuation=False,
        collapse_whitespace=False,
    )
    text = "A\u200b ｆ-\nB,  c"
    assert normalize_text(text, off) == text


def test_batch_matches_single():
    texts = ["Hello, World!", "", "   ", "x\ue000y", "Ünïcödé  TEXT\n\nnext", "elec-\ntric"]
    assert normalize_batch(texts) == [normalize_text(t) for t in texts]


def test_empty_batch():
    assert normalize_batch([]) == []


@pytest.mark.slow
def test_spelling_correction_fixes_ocr_words_and_keeps_figures():
    pytest.importorskip("symspellpy")
    config = NormalizeConfig(spell_correct=True)
    assert normalize_text("The rnarket rose 5.5 pct, the govemment said", config) == (
        "the market rose 5 5 pct the government said"
    )
    assert normalize_batch(["rnarket", "l987 figures"], config) == ["market", "l987 figures"]


def test_spelling_edit_distance_validated():
    with pytest.raises(ValueError, match="spell_max_edit_distance"):
        NormalizeConfig(spell_max_edit_distance=9)
