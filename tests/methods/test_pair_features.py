"""Pair features of the light verifier."""

from __future__ import annotations


def test_number_tokens_pattern_finds_what_the_unanchored_one_found():
    """The anchored pattern (a speed-up) must collect exactly the tokens ``\\S*\\d\\S*`` did."""
    import gzip
    import json
    import re

    from neardup.data import demo_corpus_path
    from neardup.methods.pair_features import _NUMBER_TOKEN
    from neardup.text import NormalizeConfig, normalize_batch

    with gzip.open(demo_corpus_path(), "rt") as handle:
        texts = [json.loads(line)["text"] for line in handle]
    texts = normalize_batch(texts, NormalizeConfig()) + texts[:200] + [
        "a1 b2c  x\u00a0y3 \u2003z4 foo", "\u0661\u0662 abc\u0664 def", "no digits", "9", " 7 ",
        "a\tb1\nc2\u2028d3", "x" * 5000 + " 1"]
    unanchored = re.compile(r"\S*\d\S*")
    assert all(_NUMBER_TOKEN.findall(t) == unanchored.findall(t) for t in texts)
