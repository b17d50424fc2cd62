"""The compiled normalization gives exactly the output of the previous implementation.

``_normalize_reference`` is a frozen copy of ``neardup.text.normalize`` from before the
rewrite (regexes and ``str`` methods over joined texts, a bytes path for ASCII). Every test
here compares the two, on the bundled demo corpus, Reuters-21578 when present, the edge
cases of ``test_normalize.py`` and hypothesis-generated Unicode text under every
combination of steps.
"""

from __future__ import annotations

import gzip
import itertools
import json
from importlib import resources

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import _normalize_reference as reference
from neardup.text import NormalizeConfig, normalize_batch, normalize_text
from neardup.text.hashing import encode_codepoints
from neardup.text.normalize import normalize_codes

_FLAGS = (
    "remove_invisible",
    "nfkc",
    "repair_hyphens",
    "fold_homoglyphs",
    "casefold",
    "strip_punctuation",
    "collapse_whitespace",
)
# Every step on, every step off, and each step alone off.
_CONFIGS = [NormalizeConfig(), NormalizeConfig(**dict.fromkeys(_FLAGS, False))] + [
    NormalizeConfig(**{flag: False}) for flag in _FLAGS
]

_EDGE_CASES = [
    "Тhe  ｆｕｌｌ-width\u200b elec-\ntric FENCE, Co.",
    "elec-\ntric",
    "elec- \n  tric",
    "elec- tric",
    "elec-\r\ntric",
    "elec-\r tric",
    "elec-\t\t\n\t tric",
    "elec-\u200b\ntric",
    "elec\u200b-\n\u200btric",
    "elec-\n\u00adtric",
    "elec- \u200btric",
    "elec-\n-\nit-\nis",
    "a-\n-b",
    "well-known",
    "SIX- MONTH",
    "x- 1",
    "x-\n_y",
    "é-\nb",
    "ﬁ-\nx",
    "a\u200bb\u200dc\u00add\ufeffe\x03f",
    "\u0440\u0430y\u0440\u0430l",
    "A\u200b ｆ-\nB,  c",
    "Hello, World!",
    "",
    "   ",
    "\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u2028\u3000",
    "x\ue000y",
    "\ue000",
    "Ünïcödé  TEXT\n\nnext",
    "Straße ǅ İstanbul ΣΊΣΥΦΟΣ ς ﬀ ŉ",
    "e\u0301\u0301 combining \u200b\u200d\ufeff zero-width",
    "\x01\x02\x1b[31mcontrol\x7f\x85\u2028\u2029",
    "\ud800 lone surrogate \udfff",
    "東京 مرحبا 😀 👩\u200d👩\u200d👧 ①②③ ㎏ ½",
    "under_score __init__ a_b",
    "\x00null\x00 \x00",
    "trailing - \n",
    "-\nleading",
]

# Characters that exercise every step, to mix into generated text.
_ALPHABET = st.sampled_from(
    list("aAzZ09_-  \t\n\r.,;'\"!?()")
    + list("\u200b\u200c\u200d\u2060\ufeff\xad\x03\x7f\x85\x9f\x0b\x1f\x00")
    + list("аеорсхуіѕԁӏһАЕОРСΑΒΕΟΡοιαἀ")
    + list("ｆｕｌｌＡ０ﬁﬀ①½㎏ß\u0301\u0308éÉİıǅΣσςŉ")
    + list("\xa0\u2028\u2029\u3000\u1680\u2000\ue000\ud800")
    + list("東😀—‘’“”…«»")
)
_TEXT = st.one_of(
    st.lists(_ALPHABET, max_size=40).map("".join),
    st.text(max_size=40),
    st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=40),
)


def _demo_texts() -> list[str]:
    path = resources.files("neardup.data") / "demo.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line)["text"] for line in handle]


def _check(texts: list[str], config: NormalizeConfig) -> None:
    expected = reference.normalize_batch(texts, config)
    assert normalize_batch(texts, config) == expected
    cps, offsets = normalize_codes(texts, config)
    want_cps, want_offsets = encode_codepoints(expected)
    np.testing.assert_array_equal(offsets, want_offsets)
    np.testing.assert_array_equal(cps.astype(np.uint32), want_cps)
    assert cps.dtype in (np.uint8, np.uint32)


@pytest.mark.parametrize("config", _CONFIGS, ids=range(len(_CONFIGS)))
@pytest.mark.slow
def test_demo_corpus_matches_reference(config):
    _check(_demo_texts(), config)


def test_demo_corpus_ascii_and_mixed_batches_match_reference():
    texts = _demo_texts()
    ascii_only = [t for t in texts if t.isascii()]
    others = [t for t in texts if not t.isascii()]
    assert ascii_only and others
    for batch in (ascii_only, others, texts[:7], texts[::-1][:500]):
        _check(batch, NormalizeConfig())


def test_reuters_matches_reference():
    from neardup.io import ReaderConfig, read_corpus
    from neardup.io.reuters import find_reuters_dir

    root = find_reuters_dir()
    if root is None:
        pytest.skip("Reuters-21578 not available")
    files = sorted(str(p) for p in root.glob("reut2-*.sgm"))[:3]
    texts = [t for batch in read_corpus(files, ReaderConfig()) for t in batch.texts]
    _check(texts, NormalizeConfig())


@pytest.mark.parametrize("config", _CONFIGS, ids=range(len(_CONFIGS)))
def test_edge_cases_match_reference(config):
    _check(_EDGE_CASES, config)
    for text in _EDGE_CASES:
        assert normalize_text(text, config) == reference.normalize_text(text, config)


def test_every_combination_of_steps_matches_reference():
    for values in itertools.product([False, True], repeat=len(_FLAGS)):
        _check(_EDGE_CASES, NormalizeConfig(**dict(zip(_FLAGS, values))))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(_TEXT, max_size=8), flags=st.tuples(*[st.booleans()] * len(_FLAGS)))
def test_generated_text_matches_reference(texts, flags):
    config = NormalizeConfig(**dict(zip(_FLAGS, flags)))
    _check(texts, config)
    _check(texts, NormalizeConfig())


@settings(max_examples=200, deadline=None)
@given(text=_TEXT)
def test_generated_single_text_matches_reference(text):
    assert normalize_text(text) == reference.normalize_text(text)
