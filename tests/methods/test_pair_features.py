"""Pair features of the light verifier."""

from __future__ import annotations

import numpy as np


HOSTILE = [
    "a1 b2c  x\u00a0y3 \u2003z4 foo", "\u0661\u0662 abc\u0664 def", "no digits", "9", " 7 ", "",
    "a\tb1\nc2\u2028d3", "x" * 5000 + " 1", "\ud800 lone 5\udfff surrogates", "\uff11\uff12 full\u3000width",
    "\x1c\x1d\x1e\x1f 4\x85 5\u200b6", "12 34  56 a7 8b", "\U0001d7ce\U0001d7cf math digits",
]


def _corpus_texts():
    import gzip
    import json

    from neardup.data import demo_corpus_path
    from neardup.text import NormalizeConfig, normalize_batch

    with gzip.open(demo_corpus_path(), "rt") as handle:
        texts = [json.loads(line)["text"] for line in handle][:400]
    return normalize_batch(texts, NormalizeConfig()) + texts[:100] + HOSTILE


def test_char_classes_match_re_on_every_text():
    """drop_spaces, mask_digits and digit_tokens give what the re patterns give."""
    import re

    from neardup.text.char_classes import digit_tokens, drop_spaces, mask_digits
    from neardup.text.hashing import encode_codepoints

    texts = _corpus_texts()
    cps, offsets = encode_codepoints(texts)

    def decoded(codes, offs):
        return [codes[a:b].astype(np.uint32).tobytes().decode("utf-32-le", "surrogatepass")
                for a, b in zip(offs[:-1].tolist(), offs[1:].tolist())]

    assert decoded(*drop_spaces(cps, offsets)) == [re.sub(r"\s+", "", t) for t in texts]
    assert decoded(mask_digits(cps), offsets) == [re.sub(r"\d", "0", t) for t in texts]
    number, numeral = re.compile(r"(?<!\S)\S*\d\S*"), re.compile(r"(?<!\S)\d+(?!\S)")
    assert decoded(*digit_tokens(cps, offsets)) == [" ".join(number.findall(t)) for t in texts]
    assert decoded(*digit_tokens(cps, offsets, whole=True)) == [" ".join(numeral.findall(t)) for t in texts]
    # The anchored pattern finds the tokens the plain one does.
    assert all(number.findall(t) == re.findall(r"\S*\d\S*", t) for t in texts)


def test_document_profiles_equal_the_per_text_reference():
    """Profiles built from one encoding equal each set hashed from its own re-made text."""
    import re

    from neardup.methods.pair_features import FEATURES, RETSIM_FEATURES, document_profiles
    from neardup.text import NormalizeConfig, ShingleConfig, hash_shingles, normalize_batch

    texts = _corpus_texts()
    lexical = [f for f in FEATURES if f not in RETSIM_FEATURES]
    got = document_profiles(texts, features=lexical)
    norm = normalize_batch(texts, NormalizeConfig())
    sources = {
        "nospace5": ([re.sub(r"\s+", "", t) for t in norm], ShingleConfig("char", 5)),
        "masked3": ([re.sub(r"\d", "0", t) for t in norm], ShingleConfig("word", 3)),
        "numbers": ([" ".join(re.findall(r"(?<!\S)\S*\d\S*", t)) for t in norm], ShingleConfig("word", 1)),
        "numerals": ([" ".join(re.findall(r"(?<!\S)\d+(?!\S)", t)) for t in norm], ShingleConfig("word", 1)),
    }
    for n in (1, 2, 3, 5):
        sources[f"word{n}"] = (norm, ShingleConfig("word", n))
    for n in (3, 4, 5, 8):
        sources[f"char{n}"] = (norm, ShingleConfig("char", n))
    assert set(got.sets) == set(sources)
    for name, (source, config) in sources.items():
        want = hash_shingles(source, config).unique()
        np.testing.assert_array_equal(got.sets[name].offsets, want.offsets, err_msg=name)
        np.testing.assert_array_equal(got.sets[name].hashes, want.hashes, err_msg=name)
