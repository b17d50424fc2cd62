"""SpotSigs: signature extraction by hand, agreement with brute force, length pruning,
documents without signatures, determinism, parameters."""

from __future__ import annotations

import doctest
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup.methods.spotsigs as spotsigs_module
import neardup.methods.overlap_kernels as overlap_kernels
from neardup.graph.edges import Pairs
from neardup.methods.base import Sketch
from neardup.methods.spotsigs import ANTECEDENT_PRESETS, ENGLISH_STOPWORDS, SpotSigs
from neardup.text.normalize import NormalizeConfig
from neardup.text.shingle import ShingleSets

THRESHOLDS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)

# --------------------------------------------------------------------------- helpers


def planted_corpus(seed: int = 0, n_base: int = 150) -> list[str]:
    """News-like random docs (antecedents, stopwords, a small content vocabulary) plus
    edited copies: many partial overlaps, a wide spread of lengths, and pairs near every
    threshold. Some docs have no antecedent at all."""
    rng = np.random.default_rng(seed)
    content = [f"w{k}" for k in range(4)]
    function = ["the", "is", "said", "was", "there", "of", "and", "a", "to", "in"]
    docs = []
    for _ in range(n_base):
        size = int(rng.integers(1, 80))
        p_function = rng.choice([0.0, 0.3, 0.4, 0.5])
        pick = [function if rng.random() < p_function else content for _ in range(size)]
        docs.append([str(rng.choice(words)) for words in pick])
    for base in list(docs[:100]):
        for _ in range(int(rng.integers(1, 4))):
            copy = list(base)
            for _ in range(int(rng.integers(0, 5))):
                pos = int(rng.integers(0, len(copy) + 1))
                word = str(rng.choice(content + function))
                edit = rng.integers(0, 3)
                if edit == 0 and copy:
                    copy[min(pos, len(copy) - 1)] = word
                elif edit == 1 and len(copy) > 1:
                    del copy[min(pos, len(copy) - 1)]
                else:
                    copy.insert(pos, word)
            docs.append(copy)
    texts = [" ".join(d) for d in docs]
    texts += ["", " ;; ", texts[0].upper() + "!", texts[1], "Home | Sports | Contact us"] * 2
    order = rng.permutation(len(texts))
    return [texts[k] for k in order]


def brute_force(docs: list[set], threshold: float, max_df: int) -> dict[tuple[int, int], float]:
    """Every pair sharing a signature with df <= max_df whose Jaccard is >= threshold."""
    df: dict = {}
    for d in docs:
        for h in d:
            df[h] = df.get(h, 0) + 1
    out = {}
    for i, j in itertools.combinations(range(len(docs)), 2):
        inter = docs[i] & docs[j]
        if not any(df[h] <= max_df for h in inter):
            continue
        sim = len(inter) / len(docs[i] | docs[j])
        if sim >= threshold:
            out[(i, j)] = sim
    return out


def as_dict(pairs: Pairs) -> dict[tuple[int, int], float]:
    return {(int(i), int(j)): float(s) for i, j, s in zip(pairs.left, pairs.right, pairs.score)}


def assert_matches(pairs: Pairs, expected: dict[tuple[int, int], float]) -> None:
    got = as_dict(pairs)
    assert set(got) == set(expected)
    for key, sim in expected.items():
        assert got[key] == float(np.float32(sim)), key
    assert np.all(pairs.left < pairs.right)


def sets_sketch(docs: list[set[int]]) -> Sketch:
    hashes = np.array([h for d in docs for h in sorted(d)], dtype=np.uint64)
    offsets = np.zeros(len(docs) + 1, np.int64)
    np.cumsum([len(d) for d in docs], out=offsets[1:])
    sets = ShingleSets(hashes, offsets)
    return Sketch(sets.counts(), sets=sets)


@pytest.fixture(scope="module")
def corpus():
    """Texts, their sketch, and the ground truth: signature sets as word tuples."""
    texts = planted_corpus()
    method = SpotSigs()
    sketch = method.sketch(texts)
    word_sets = [set(sigs) for sigs in method.spot_signatures(texts)]
    return texts, sketch, word_sets


@pytest.fixture(params=["dense", "sort"])
def reduction(request, monkeypatch):
    """Run a test with each candidate reduction: dense counters, or segment sorts."""
    if request.param == "sort":
        monkeypatch.setattr(overlap_kernels, "DENSE_BYTES", 0)
    return request.param


# --------------------------------------------------------------------------- signatures


def test_chains_by_hand():
    text = "The quick brown fox said that the market was up"
    # Skipped: stopwords "that", and the antecedents themselves. Kept words, in order:
    # quick brown fox market up. Chains of 2 adjacent kept words after each antecedent;
    # "was" is followed by one kept word only, so it yields no complete chain.
    method = SpotSigs(antecedents=("the", "said", "was"), chain_length=2, distance=1)
    assert method.spot_signatures([text]) == [
        [("the", "quick", "brown"), ("said", "market", "up"), ("the", "market", "up")]
    ]


def test_chains_with_distance_two():
    text = "The quick brown fox jumps over the lazy dog and said the market was up sharply today"
    # Kept words (the, over, and, said, was skipped), numbered from 0:
    # quick0 brown1 fox2 jumps3 lazy4 dog5 market6 up7 sharply8 today9.
    # the@0: words 1, 3, 5; the@6 (4 kept words before it): words 5, 7, 9; said, the@11
    # and was have too few kept words after them for a chain of 3 at distance 2.
    method = SpotSigs()  # alonso5, chain_length 3, distance 2
    assert method.spot_signatures([text]) == [
        [("the", "brown", "jumps", "dog"), ("the", "dog", "up", "today")]
    ]


def test_stopwords_are_skipped_not_counted():
    text = "the end of a long day"
    with_stop = SpotSigs(antecedents=("the",), stopwords=("of", "a"), chain_length=2, distance=1)
    without = SpotSigs(antecedents=("the",), stopwords=(), chain_length=2, distance=1)
    assert with_stop.spot_signatures([text]) == [[("the", "end", "long")]]
    assert without.spot_signatures([text]) == [[("the", "end", "of")]]
    # The default list skips them as well.
    assert SpotSigs(antecedents=("the",), chain_length=2, distance=1).spot_signatures(
        [text]
    ) == [[("the", "end", "long")]]
    assert {"of", "a", "the", "that"} <= set(ENGLISH_STOPWORDS)


def test_antecedents_never_inside_chains():
    method = SpotSigs(antecedents=("the",), stopwords=(), chain_length=2, distance=1)
    assert method.spot_signatures(["the cat the dog the bird"]) == [
        [("the", "cat", "dog"), ("the", "dog", "bird")]
    ]


def test_normalization_applies_to_texts_and_word_lists():
    method = SpotSigs(antecedents=("The",), stopwords=("OF",), chain_length=2, distance=1)
    assert method.spot_signatures(["THE End, of the ROAD!"]) == method.spot_signatures(
        ["the end of the road"]
    )
    assert method.spot_signatures(["the end of the road"]) == [[("the", "end", "road")]]


def test_short_documents_fall_back_to_cut_chains():
    """A document with no complete chain keeps the chains cut short by its end (at least
    one word); a document with a complete chain drops its cut ones."""
    method = SpotSigs()
    assert method.spot_signatures(["The quick brown fox said that the market was up"]) == [
        [("the", "brown", "market"), ("said", "up"), ("the", "up")]
    ]
    long = "the a1 a2 a3 a4 a5 a6 and the b1 b2"
    assert method.spot_signatures([long]) == [[("the", "a2", "a4", "a6")]]
    assert method.spot_signatures(["markets rallied the", "the x"]) == [[], []]


def test_sketch_holds_the_distinct_signatures(corpus):
    texts, sketch, word_sets = corpus
    assert sketch.n_features.tolist() == [len(s) for s in word_sets]
    assert sketch.n_features.dtype == np.int64
    for i in range(len(texts)):
        doc = sketch.sets.doc(i)
        assert np.all(np.diff(doc) > 0)  # sorted, unique
    # One hash per distinct word tuple over the whole corpus.
    assert len(np.unique(sketch.sets.hashes)) == len(set().union(*word_sets))


def test_boilerplate_without_antecedents_has_no_signatures():
    boilerplate = [
        "Home | News | Sports | Weather | Contact us | Privacy policy",
        "Copyright 2024 Example Media Group. All rights reserved.",
        "Share on Facebook Share on Twitter Email Print",
    ]
    method = SpotSigs(threshold=0.0)
    sketch = method.sketch(boilerplate * 3)
    assert sketch.n_features.tolist() == [0] * 9
    assert len(method.find_pairs(sketch)) == 0


def test_empty_and_antecedent_free_docs_never_paired():
    texts = ["", "   ", "\u200b", "alpha beta gamma", "alpha beta gamma", "the"] * 3
    texts += ["Officials said the storm was the worst on record in the city"] * 2
    method = SpotSigs(threshold=0.0, max_df=100)
    sketch = method.sketch(texts)
    assert sketch.n_features[:-2].tolist() == [0] * 18
    pairs = method.find_pairs(sketch)
    assert as_dict(pairs) == {(18, 19): 1.0}


# --------------------------------------------------------------------------- pairs


@pytest.mark.parametrize("max_df", [10**6, 6, 2])
def test_agrees_with_brute_force_on_signature_sets(corpus, max_df, reduction):
    texts, sketch, word_sets = corpus
    assert len(texts) > 300
    for threshold in THRESHOLDS:
        method = SpotSigs(threshold=threshold, max_df=max_df)
        assert_matches(method.find_pairs(sketch), brute_force(word_sets, threshold, max_df))


def test_length_pruning_and_bound_are_exercised(corpus):
    _, sketch, _ = corpus
    strict, loose = SpotSigs(threshold=0.6, max_df=10**6), SpotSigs(threshold=0.0, max_df=10**6)
    strict.find_pairs(sketch)
    loose.find_pairs(sketch)
    assert loose.stats_["length_pruned"] == 0  # threshold 0: no length can be ruled out
    assert strict.stats_["length_pruned"] > 1000
    assert strict.stats_["candidates"] + strict.stats_["length_pruned"] > loose.stats_["candidates"]
    # With a small max_df, frequent signatures make the count bound and merges work.
    bounded = SpotSigs(threshold=0.6, max_df=4)
    bounded.find_pairs(sketch)
    stats = bounded.stats_
    assert stats["frequent_signatures"] > 50
    assert stats["pruned"] > 0 and stats["merged"] > 0
    assert stats["candidates"] >= stats["pruned"] + stats["pairs"] > 50


def test_planted_copies_are_found():
    rng = np.random.default_rng(3)
    words = [f"w{k}" for k in range(500)]
    base = []
    for _ in range(40):
        doc = []
        for _ in range(60):
            doc += [str(rng.choice(["the", "is", "said", "was"])), *rng.choice(words, 5)]
        base.append(doc)
    texts = [" ".join(d) for d in base]
    for doc in base:  # a copy with a changed headline and a dropped tail
        texts.append("BREAKING NEWS " + " ".join(doc[:-10]))
    pairs = SpotSigs().find_pairs(SpotSigs().sketch(texts))
    assert sorted(zip(pairs.left.tolist(), pairs.right.tolist())) == [
        (k, k + 40) for k in range(40)
    ]
    assert pairs.score.min() > 0.9


def test_blocks_and_reductions_agree(corpus, monkeypatch):
    _, sketch, _ = corpus
    method = SpotSigs(threshold=0.2, max_df=5)
    whole = method.find_pairs(sketch)
    stats = dict(method.stats_)
    assert len(whole) > 100
    for block, dense in ((7, overlap_kernels.DENSE_BYTES), (10**9, 0), (7, 0)):
        monkeypatch.setattr(overlap_kernels, "BLOCK_PAIRS", block)
        monkeypatch.setattr(overlap_kernels, "DENSE_BYTES", dense)
        other = method.find_pairs(sketch)
        np.testing.assert_array_equal(whole.left, other.left)
        np.testing.assert_array_equal(whole.right, other.right)
        np.testing.assert_array_equal(whole.score, other.score)
        assert method.stats_ == stats


@settings(max_examples=150, deadline=None)
@given(
    docs=st.lists(
        st.one_of(
            st.sets(st.integers(0, 12), max_size=4),  # short docs ...
            st.sets(st.integers(0, 30), min_size=5, max_size=25),  # ... and long ones
        ),
        max_size=16,
    ),
    threshold=st.sampled_from(THRESHOLDS + (0.25, 1 / 3, 0.5, 2 / 3, 0.75)),
    max_df=st.integers(2, 18),
)
def test_length_pruning_never_drops_a_true_pair(docs, threshold, max_df):
    sketch = sets_sketch(docs)
    expected = brute_force(docs, threshold, max_df)
    dense_bytes = overlap_kernels.DENSE_BYTES
    try:  # both reductions (hypothesis forbids function-scoped fixtures here)
        for dense in (dense_bytes, 0):
            overlap_kernels.DENSE_BYTES = dense
            method = SpotSigs(threshold=threshold, max_df=max_df)
            assert_matches(method.find_pairs(sketch), expected)
    finally:
        overlap_kernels.DENSE_BYTES = dense_bytes


def test_find_pairs_edge_cases():
    method = SpotSigs()
    assert len(method.find_pairs(method.sketch([]))) == 0
    assert len(method.find_pairs(method.sketch(["the quick brown fox is here"]))) == 0
    assert method.stats_["docs"] == 1
    with pytest.raises(ValueError, match="parameter 'sketch'.*without sets"):
        method.find_pairs(Sketch(np.zeros(2, np.int64)))
    unsorted = ShingleSets(np.array([5, 1, 1, 5], np.uint64), np.array([0, 2, 4]))
    with pytest.raises(ValueError, match="parameter 'sketch'.*sorted"):
        method.find_pairs(Sketch(unsorted.counts(), sets=unsorted))


# --------------------------------------------------------------------------- determinism


def test_deterministic_and_batch_independent(corpus):
    texts, sketch, _ = corpus
    again = SpotSigs().sketch(texts)
    np.testing.assert_array_equal(sketch.sets.hashes, again.sets.hashes)
    np.testing.assert_array_equal(sketch.sets.offsets, again.sets.offsets)
    halves = Sketch.concat([SpotSigs().sketch(texts[:100]), SpotSigs().sketch(texts[100:])])
    np.testing.assert_array_equal(sketch.sets.hashes, halves.sets.hashes)
    np.testing.assert_array_equal(sketch.n_features, halves.n_features)
    a, b = SpotSigs().find_pairs(sketch), SpotSigs().find_pairs(halves)
    np.testing.assert_array_equal(a.left, b.left)
    np.testing.assert_array_equal(a.score, b.score)
    other = SpotSigs(seed=1).sketch(texts)
    np.testing.assert_array_equal(sketch.n_features, other.n_features)
    assert not np.array_equal(np.sort(sketch.sets.hashes), np.sort(other.sets.hashes))


def test_presets_and_explicit_words_agree(corpus):
    texts, sketch, _ = corpus
    preset = SpotSigs(antecedents="alonso5").sketch(texts)
    np.testing.assert_array_equal(preset.sets.hashes, sketch.sets.hashes)
    articles = SpotSigs(antecedents="articles")
    # Kept: apple0 day1 keeps2 doctor3 away4 ("from", "us" are stopwords). No complete
    # chain of 3 at distance 2, so the cut ones are kept.
    assert articles.spot_signatures(["an apple a day keeps the doctor away from us"]) == [
        [("an", "day", "doctor"), ("a", "keeps", "away"), ("the", "away")]
    ]
    assert ANTECEDENT_PRESETS["alonso4"] == ("is", "the", "said", "was")


# --------------------------------------------------------------------------- parameters


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"threshold": 1.5}, "parameter 'threshold'"),
        ({"threshold": float("nan")}, "parameter 'threshold'"),
        ({"threshold": "0.4"}, "parameter 'threshold'"),
        ({"antecedents": "smart"}, "parameter 'antecedents' must be one of 'alonso4'"),
        ({"antecedents": "the"}, "parameter 'antecedents'.*as a tuple"),
        ({"antecedents": ()}, "parameter 'antecedents' must hold at least one word"),
        ({"antecedents": ("the", "don't")}, "parameter 'antecedents'.*\"don't\""),
        ({"antecedents": ("two words",)}, "parameter 'antecedents'"),
        ({"antecedents": ("",)}, "parameter 'antecedents'"),
        ({"antecedents": ("the", 3)}, "parameter 'antecedents'"),
        ({"stopwords": "the"}, "parameter 'stopwords' must be a tuple of words"),
        ({"stopwords": ("of", "!!")}, "parameter 'stopwords'"),
        ({"chain_length": 0}, "parameter 'chain_length'"),
        ({"chain_length": 65}, "parameter 'chain_length'"),
        ({"chain_length": 2.0}, "parameter 'chain_length'"),
        ({"distance": 0}, "parameter 'distance'"),
        ({"distance": True}, "parameter 'distance'"),
        ({"max_df": 1}, "parameter 'max_df'"),
        ({"seed": -1}, "parameter 'seed'"),
        ({"normalize": {"casefold": True}}, "parameter 'normalize'"),
    ],
)
def test_invalid_parameters_raise(params, match):
    with pytest.raises(ValueError, match=match):
        SpotSigs(**params)


def test_get_params_and_sketch_key():
    method = SpotSigs(threshold=0.5, antecedents=["the", "said"], stopwords=["of"], seed=3)
    params = method.get_params()
    assert params == {
        "threshold": 0.5,
        "antecedents": ("the", "said"),
        "stopwords": ("of",),
        "chain_length": 3,
        "distance": 2,
        "normalize": NormalizeConfig().get_params(),
        "seed": 3,
        "max_df": 1000,
    }
    assert SpotSigs(antecedents="articles").get_params()["antecedents"] == "articles"
    assert SpotSigs().get_params()["stopwords"] is None
    # threshold and max_df only affect find_pairs: one sketch serves a sweep.
    assert SpotSigs(threshold=0.1, max_df=5).sketch_key() == SpotSigs().sketch_key()
    assert SpotSigs(distance=1).sketch_key() != SpotSigs().sketch_key()
    assert "SpotSigs(threshold=0.5" in repr(method)


def test_docstring_examples():
    result = doctest.testmod(spotsigs_module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
