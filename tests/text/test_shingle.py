import numpy as np
import pytest

from neardup.text import ShingleConfig, ShingleSets, hash_shingles


def _sets(texts, **cfg):
    s = hash_shingles(texts, ShingleConfig(**cfg))
    return [set(s.doc(i).tolist()) for i in range(len(texts))]


def test_word_ngrams_overlap_like_python_sets():
    a, b = "the cat sat on the mat today", "the cat sat on the mat yesterday"
    sa, sb = _sets([a, b], unit="word", n=3)

    def grams(t):
        w = t.split()
        return {tuple(w[i : i + 3]) for i in range(len(w) - 2)}

    ga, gb = grams(a), grams(b)
    assert len(sa & sb) / len(sa | sb) == pytest.approx(len(ga & gb) / len(ga | gb))


def test_short_and_empty_documents():
    s = hash_shingles(["a b", "", "a b c d"], ShingleConfig(n=3))
    assert s.counts().tolist() == [1, 0, 2]


def test_char_ngrams():
    s = hash_shingles(["abcd", "bcde"], ShingleConfig(unit="char", n=3))
    assert s.counts().tolist() == [2, 2]
    assert s.doc(0)[1] == s.doc(1)[0]  # "bcd"


def test_seed_changes_hashes_deterministically():
    t = ["some words here and there"]
    a = hash_shingles(t, seed=1).hashes
    assert np.array_equal(a, hash_shingles(t, seed=1).hashes)
    assert not np.array_equal(a, hash_shingles(t, seed=2).hashes)


def test_unique_and_concat():
    s = hash_shingles(["a b a b a b", "x y z"], ShingleConfig(n=2)).unique()
    assert s.counts().tolist() == [2, 2]
    both = ShingleSets.concat([s, s])
    assert len(both) == 4 and both.counts().tolist() == [2, 2, 2, 2]


def test_non_latin_and_surrogates():
    s = hash_shingles(["日本語 テキスト です", "\ud800 lone", "😀 😀 😀"], ShingleConfig(n=2))
    assert s.counts().tolist() == [2, 1, 2]


@pytest.mark.parametrize("bad", [dict(unit="byte"), dict(n=0)])
def test_invalid_config(bad):
    with pytest.raises(ValueError, match="ShingleConfig"):
        ShingleConfig(**bad)


def test_is_sets_checks_each_document():
    ok = ShingleSets(np.array([1, 5, 2, 3], np.uint64), np.array([0, 2, 4]))
    assert ok.is_sets()  # 5 > 2 across documents is fine
    bad = ShingleSets(np.array([1, 1, 2], np.uint64), np.array([0, 2, 3]))
    assert not bad.is_sets()
    with pytest.raises(ValueError, match="caller: parameter 'sets' must hold sorted"):
        bad.require_sets("caller")
    assert hash_shingles(["b a c a"], ShingleConfig(n=1)).unique().is_sets()


def _unique_by_numpy(sets):
    return [np.unique(sets.doc(i)) for i in range(len(sets))]


@pytest.mark.parametrize("kind", ["uniform", "one_top_bucket", "repeats", "sizes"])
def test_unique_equals_numpy_for_any_hashes(kind):
    """The bucket sort is exact for uniform shingle hashes and for a caller's own hashes
    that crowd one bucket (those take the comparison sort: never quadratic)."""
    rng = np.random.default_rng(7)
    sizes = {"sizes": [0, 1, 2, 3, 16, 17, 33, 1000, 4097]}.get(kind, [500, 300, 64])
    parts = []
    for size in sizes:
        h = rng.integers(0, 2**64, size, dtype=np.uint64)
        if kind == "one_top_bucket":
            h >>= np.uint64(20)  # every hash's top 20 bits zero
        elif kind == "repeats":
            h = h[rng.integers(0, max(size // 10, 1), size)]
        parts.append(h)
    offsets = np.concatenate(([0], np.cumsum([p.size for p in parts]))).astype(np.int64)
    sets = ShingleSets(np.concatenate(parts).astype(np.uint64), offsets)
    got = sets.unique()
    assert got.is_sets()
    expected = _unique_by_numpy(sets)
    assert [got.doc(i).tolist() for i in range(len(sets))] == [e.tolist() for e in expected]


_MASK = (1 << 64) - 1


def _mix64(x: int) -> int:
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def _reference_shingles(text: str, config: ShingleConfig, seed: int) -> list[int]:
    """The documented hash in plain Python: FNV-1a per word, mix64, rolling n-grams."""
    from neardup.text.hashing import seed_words

    key_unit, key_shingle = (int(k) for k in seed_words(seed, 2, salt=0x5EED))
    if config.unit == "word":
        units = []
        for word in "".join(" " if ord(c) <= 32 else c for c in text).split(" "):
            if word:
                h = 0xCBF29CE484222325
                for c in word:
                    h = ((h ^ ord(c)) * 0x100000001B3) & _MASK
                units.append(_mix64(h ^ key_unit))
    else:
        units = [ord(c) for c in text]
    n = config.n if len(units) >= config.n else len(units)
    out = []
    for i in range(len(units) - n + 1 if units else 0):
        h = 0
        for u in units[i : i + n]:
            h = (h * 0x100000001B3 + u + 1) & _MASK
        out.append(_mix64(h ^ key_shingle))
    return out


@pytest.mark.parametrize("config", [ShingleConfig(), ShingleConfig("word", 1), ShingleConfig("char", 5)])
def test_hashes_match_the_plain_python_definition(config):
    texts = ["the cat sat on the mat", "", "a", "x\ty\nz  w", "日本語 テキスト", "\x7f\x80 \xff ÿ"]
    sets = hash_shingles(texts, config, seed=3)
    for i, text in enumerate(texts):
        assert sets.doc(i).tolist() == _reference_shingles(text, config, 3)


def test_shingle_codes_accepts_bytes_and_code_points():
    from neardup.text.hashing import encode_codepoints
    from neardup.text.shingle import shingle_codes

    texts = ["the cat sat", "", "ab cd ef gh", "\xe9t\xe9 \xff"]
    cps, offsets = encode_codepoints(texts)
    wide = shingle_codes(cps, offsets)
    narrow = shingle_codes(cps.astype(np.uint8), offsets)
    assert np.array_equal(wide.hashes, narrow.hashes)
    assert np.array_equal(wide.offsets, narrow.offsets)


def test_many_one_character_documents():
    # Regression: the token buffer was sized for half the characters, and every one of
    # these documents is a token.
    s = hash_shingles(["a"] * 100_001 + ["b c"], ShingleConfig("word", 1))
    assert s.counts().tolist() == [1] * 100_001 + [2]
    assert len(set(s.hashes[:-2].tolist())) == 1
