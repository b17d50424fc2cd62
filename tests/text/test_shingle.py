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
