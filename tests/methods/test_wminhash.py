import math
from collections import Counter

import numpy as np
import pytest

from neardup.methods.base import Sketch
from neardup.methods.minhash import MinHashLSH
from neardup.methods.wminhash import (
    CorpusStatistics,
    WeightedMinHash,
    generalized_jaccard,
    icws_samples,
)
from neardup.text import NormalizeConfig

# --------------------------------------------------------------------------- helpers


def _weighted_pairs(rng, n_pairs, size=120):
    """Pairs of weighted sets spanning weighted Jaccard ~0.1..0.9.

    Each pair shares part of its elements; shared weights are perturbed, so both the
    overlap and the weights drive the similarity. Returns a list of
    (a_elems, a_w, b_elems, b_w, exact).
    """
    out = []
    for overlap in np.linspace(0.2, 1.0, n_pairs):
        shared = int(round(size * overlap))
        pool = rng.choice(2**62, size=2 * size - shared, replace=False).astype(np.uint64)
        a = pool[:size]
        b = np.concatenate([pool[:shared], pool[size:]])
        a_w = rng.lognormal(0.0, 1.0, size)
        b_w = rng.lognormal(0.0, 1.0, size)
        b_w[:shared] = a_w[:shared] * rng.uniform(0.8, 1.0, shared)  # perturbed copies
        out.append((a, a_w, b, b_w, generalized_jaccard(a, a_w, b, b_w)))
    return out


def _samples_of(pairs, num_samples, seed):
    sets = [(e, w) for a, a_w, b, b_w, _ in pairs for e, w in ((a, a_w), (b, b_w))]
    offsets = np.zeros(len(sets) + 1, np.int64)
    np.cumsum([e.size for e, _ in sets], out=offsets[1:])
    hashes = np.concatenate([e for e, _ in sets])
    weights = np.concatenate([w for _, w in sets])
    return icws_samples(hashes, offsets, weights, num_samples=num_samples, seed=seed)


VOCAB = (
    "the of and to in a is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there been one all we their has would when "
    "market prices rose fell bank company said shares profit year oil wheat gold trade "
    "minister government report rate growth export import demand supply week month "
    "analyst dollar yen tonnes output quarter sales loss board deal agreement talks"
).split()


def _story(rng, n_words=80):
    return " ".join(rng.choice(VOCAB, n_words)) + f" story{rng.integers(10**9)}"


def _edit(rng, text, n_edits=1):
    words = text.split()
    for _ in range(n_edits):
        words[rng.integers(len(words))] = "edited"
    return " ".join(words) + " reuters"


def _pair_set(pairs):
    return set(zip(pairs.left.tolist(), pairs.right.tolist()))


# --------------------------------------------------------------------------- ICWS estimator


def test_estimates_unbiased_against_exact_generalized_jaccard():
    rng = np.random.default_rng(0)
    num_samples = 256
    pairs = _weighted_pairs(rng, 60)
    exact = np.array([p[4] for p in pairs])
    assert exact.min() < 0.15 and exact.max() > 0.85  # the range [0.1, 0.9] is covered
    sig = _samples_of(pairs, num_samples, seed=5)
    est = np.mean(sig[0::2] == sig[1::2], axis=1)
    sigma = np.sqrt(exact * (1 - exact) / num_samples)
    z = (est - exact) / sigma
    assert np.all(np.abs(z) < 4.5)
    assert abs(z.mean()) < 0.6  # unbiased: the mean of 60 z-scores has sd ~0.13
    assert 0.5 < z.std() < 1.6  # spread matches the binomial model


def test_agreement_with_datasketch_weighted_minhash():
    datasketch = pytest.importorskip("datasketch")
    rng = np.random.default_rng(1)
    num_samples = 256
    pairs = _weighted_pairs(rng, 40, size=60)
    exact = np.array([p[4] for p in pairs])
    ours = np.mean((s := _samples_of(pairs, num_samples, seed=2))[0::2] == s[1::2], axis=1)

    # datasketch works on dense vectors over one universe.
    universe = np.unique(np.concatenate([np.concatenate([p[0], p[2]]) for p in pairs]))
    gen = datasketch.WeightedMinHashGenerator(universe.size, sample_size=num_samples, seed=3)
    theirs = []
    for a, a_w, b, b_w, _ in pairs:
        va, vb = np.zeros(universe.size), np.zeros(universe.size)
        va[np.searchsorted(universe, a)] = a_w
        vb[np.searchsorted(universe, b)] = b_w
        theirs.append(gen.minhash(va).jaccard(gen.minhash(vb)))
    theirs = np.array(theirs)

    sigma = np.sqrt(exact * (1 - exact) / num_samples)  # ~0.03 at J = 0.5
    # Each estimator is close to the exact value...
    assert np.mean(np.abs(ours - exact)) < 1.5 * np.mean(sigma)
    assert np.mean(np.abs(theirs - exact)) < 1.5 * np.mean(sigma)
    # ...and to the other, within their combined error (independent randomness).
    combined = np.sqrt(2) * sigma
    assert np.mean(np.abs(ours - theirs)) < 1.5 * np.mean(combined)
    assert abs(np.mean(ours - theirs)) < 3 * np.mean(combined) / np.sqrt(len(pairs))
    assert np.corrcoef(ours, theirs)[0, 1] > 0.95


def test_icws_details():
    # Elements of weight 0 are never sampled: these two sets are equal where it counts.
    offsets = np.array([0, 2, 4, 4])
    hashes = np.array([1, 2, 1, 3], np.uint64)
    weights = np.array([1.5, 0.0, 1.5, 0.0])
    s = icws_samples(hashes, offsets, weights, num_samples=32, seed=0)
    assert s.shape == (3, 32) and s.dtype == np.uint64
    assert np.array_equal(s[0], s[1])
    assert np.all(s[2] == np.iinfo(np.uint64).max)  # an empty set
    # Consistent: the same element and weight give the same sample whatever surrounds it.
    again = icws_samples(hashes[:2], offsets[:2], weights[:2], num_samples=32, seed=0)
    assert np.array_equal(again[0], s[0])
    assert not np.array_equal(icws_samples(hashes, offsets, weights, 32, seed=1)[0], s[0])
    # Scaling a set's weights changes its samples (weights matter, not only elements).
    scaled = icws_samples(hashes, offsets, weights * 4.0, num_samples=32, seed=0)
    assert np.mean(scaled[0] == s[0]) < 0.75
    with pytest.raises(ValueError, match="'weights'"):
        icws_samples(hashes, offsets, -weights - 1, num_samples=4)
    with pytest.raises(ValueError, match="'num_samples'"):
        icws_samples(hashes, offsets, weights, num_samples=0)


def test_generalized_jaccard():
    assert generalized_jaccard([1, 2, 3], [1.0, 2.0, 1.0], [1, 2, 4], [1.0, 2.0, 1.0]) == 0.6
    assert generalized_jaccard([1, 2], [2.0, 1.0], [1, 2], [1.0, 1.0]) == 2 / 3
    assert generalized_jaccard(["a"], [1.0], ["b"], [1.0]) == 0.0
    assert generalized_jaccard([], [], [], []) == 0.0
    rng = np.random.default_rng(4)
    for _ in range(20):
        a, b = rng.choice(30, 12, replace=False), rng.choice(30, 15, replace=False)
        wa, wb = rng.random(12), rng.random(15)
        da, db = dict(zip(a.tolist(), wa)), dict(zip(b.tolist(), wb))
        keys = set(da) | set(db)
        num = sum(min(da.get(k, 0), db.get(k, 0)) for k in keys)
        den = sum(max(da.get(k, 0), db.get(k, 0)) for k in keys)
        assert generalized_jaccard(a, wa, b, wb) == pytest.approx(num / den)
        assert generalized_jaccard(b, wb, a, wa) == pytest.approx(num / den)
    with pytest.raises(ValueError, match="one shape"):
        generalized_jaccard([1, 2], [1.0], [1], [1.0])


# --------------------------------------------------------------------------- weightings

CORPUS = [
    "the cat sat on the mat",
    "the cat ran to the door",
    "the dog ran to the door",
    "a dog sat on the mat",
    "the cat sat on the chair",
    "on the mat the dog sat",
]


def _reference_weights(texts, n, weighting, power, divide, rare_fraction):
    """The documented weight formula, in plain Python over token tuples."""
    docs = [t.split() for t in texts]
    phrases = [
        {tuple(w[i : i + n]) for i in range(max(len(w) - n + 1, 1 if w else 0))} for w in docs
    ]
    n_docs = sum(1 for p in phrases if p)
    phrase_df = Counter(p for ps in phrases for p in ps)
    word_df = Counter(v for ps in phrases for v in {p[0] for p in ps})
    cut = math.inf if rare_fraction is None else max(2.0, rare_fraction * n_docs)
    out = {}
    for p, df_p in phrase_df.items():
        m = word_df[p[0]]
        f = {
            "uniform": 1.0,
            "df": m,
            "ln_df": math.log1p(m),
            "df^k": m**power,
            "ln_df^k": math.log1p(m) ** power,
            "idf": math.log1p(n_docs / df_p),
        }[weighting]
        if divide and weighting != "idf":
            f /= df_p
        out[p] = 0.0 if df_p > cut else f
    return out


def _weights_by_phrase(method, texts):
    sketch = method.sketch(texts)
    weights = method.phrase_weights(sketch)
    by_hash = dict(zip(sketch.sets.hashes.tolist(), weights.tolist()))
    return sketch, by_hash


@pytest.mark.parametrize(
    "weighting,power",
    [("uniform", 2), ("df", 2), ("ln_df", 2), ("df^k", 2), ("df^k", 3), ("df^k", 4),
     ("ln_df^k", 2), ("ln_df^k", 3), ("ln_df^k", 10), ("idf", 2)],
)  # fmt: skip
@pytest.mark.parametrize("divide", [False, True])
@pytest.mark.parametrize("rare_fraction", [None, 0.5])
def test_weightings_match_documented_formula(weighting, power, divide, rare_fraction):
    n = 2
    method = WeightedMinHash(
        phrase_length=n, weighting=weighting, power=power,
        divide_by_phrase_df=divide, rare_fraction=rare_fraction,
    )  # fmt: skip
    _, got = _weights_by_phrase(method, CORPUS)
    expected = _reference_weights(CORPUS, n, weighting, power, divide, rare_fraction)
    assert len(got) == len(expected)
    # A one-phrase document hashes to exactly that phrase.
    hashes = method.sketch([" ".join(p) for p in expected]).sets.hashes.tolist()
    for (phrase, weight), h in zip(expected.items(), hashes):
        assert got[h] == pytest.approx(weight, rel=1e-9, abs=1e-12), phrase


def test_weights_by_hand():
    # "on the" is in 4 of 6 documents, "the cat" in 3; "the" begins a phrase in all 6,
    # "cat" in 3, "a" in 1. With rare_fraction 0.5 the cut is df <= 3.
    m = WeightedMinHash(phrase_length=2, weighting="df^k", power=3, divide_by_phrase_df=True)
    sketch, got = _weights_by_phrase(m, CORPUS)
    h = {p: int(m.sketch([p]).sets.hashes[0]) for p in ("the cat", "on the", "a dog", "cat sat")}
    assert got[h["the cat"]] == pytest.approx(6**3 / 3)
    assert got[h["on the"]] == 0.0  # common: df 4 > 0.5 * 6
    assert got[h["a dog"]] == pytest.approx(1**3 / 1)
    assert got[h["cat sat"]] == pytest.approx(3**3 / 2)  # "cat" begins 3, "cat sat" in 2
    stats = m.statistics(sketch)
    assert stats.n_docs == 6 and m.max_rare_df(6) == 3.0
    assert m.max_rare_df(2) == 2.0  # never below 2: one pair cannot reveal a template
    assert WeightedMinHash(rare_fraction=None).max_rare_df(10) == math.inf
    # idf is of the phrase, and is not divided again.
    idf = WeightedMinHash(phrase_length=2, weighting="idf", divide_by_phrase_df=True)
    _, got = _weights_by_phrase(idf, CORPUS)
    assert got[h["the cat"]] == pytest.approx(math.log1p(6 / 3))


# --------------------------------------------------------------------------- find_pairs


def _planted_corpus(seed=0, n_stories=15, n_unrelated=15):
    rng = np.random.default_rng(seed)
    stories = [_story(rng) for _ in range(n_stories)]
    texts = stories + [_edit(rng, s) for s in stories] + [_story(rng) for _ in range(n_unrelated)]
    planted = {(i, i + n_stories) for i in range(n_stories)}
    return texts, planted


@pytest.mark.parametrize("verify", ["estimate", "exact"])
def test_finds_planted_near_duplicates(verify):
    texts, planted = _planted_corpus()
    method = WeightedMinHash(verify=verify)
    pairs = method.find_pairs(method.sketch(texts))
    assert _pair_set(pairs) == planted
    assert np.all(pairs.score >= method.threshold) and pairs.score.dtype == np.float32
    assert np.all(pairs.left < pairs.right)


def test_exact_scores_are_generalized_jaccard_of_weights():
    texts, planted = _planted_corpus(seed=3, n_stories=5, n_unrelated=0)
    method = WeightedMinHash(verify="exact", threshold=0.3, weighting="df^k", phrase_length=4)
    sketch = method.sketch(texts)
    weights = method.phrase_weights(sketch)
    pairs = method.find_pairs(sketch)
    assert _pair_set(pairs) == planted
    o = sketch.sets.offsets
    for i, j, score in zip(pairs.left, pairs.right, pairs.score):
        a, b = sketch.sets.doc(i), sketch.sets.doc(j)
        expected = generalized_jaccard(a, weights[o[i] : o[i + 1]], b, weights[o[j] : o[j + 1]])
        assert score == pytest.approx(expected, rel=1e-6)
    # "none" keeps every band collision: a superset of the verified pairs.
    loose = WeightedMinHash(verify="none", threshold=0.3, weighting="df^k", phrase_length=4)
    assert planted <= _pair_set(loose.find_pairs(sketch))


def test_boilerplate_does_not_create_pairs():
    rng = np.random.default_rng(7)
    boilerplate = (
        "home news sports weather subscribe to our newsletter follow us on social media "
        "copyright all rights reserved terms of use privacy policy contact the newsroom "
        "advertise with us careers site map accessibility statement cookie settings"
    )
    bodies = [" ".join(rng.choice(VOCAB, 10)) + f" id{i}" for i in range(20)]
    texts = [f"{b} {boilerplate}" for b in bodies]
    texts.append(texts[0].replace("cookie settings", "cookie preferences"))  # a near-copy
    texts += [boilerplate, boilerplate]  # pages that are nothing but the template
    n = len(texts)

    plain = MinHashLSH(threshold=0.5)
    assert len(plain.find_pairs(plain.sketch(texts))) > 20  # the template dominates

    unfiltered = WeightedMinHash(threshold=0.5, rare_fraction=None)
    assert len(unfiltered.find_pairs(unfiltered.sketch(texts))) > 20

    method = WeightedMinHash(threshold=0.5, rare_fraction=0.5)
    sketch = method.sketch(texts)
    pairs = method.find_pairs(sketch)
    assert _pair_set(pairs) == {(0, 20)}
    # Template-only pages have phrases (n_features > 0) but nothing of weight: reported,
    # kept in the output, never paired (not even with each other).
    assert np.all(sketch.n_features > 0)
    assert method.unweighted_docs_.tolist() == [n - 2, n - 1]


def test_deterministic_and_batch_invariant():
    texts, _ = _planted_corpus(seed=11)
    a = WeightedMinHash(seed=3)
    b = WeightedMinHash(seed=3)
    whole = a.sketch(texts)
    batched = Sketch.concat([b.sketch(texts[:7]), b.sketch(texts[7:30]), b.sketch(texts[30:])])
    pa, pb = a.find_pairs(whole), b.find_pairs(batched)
    assert np.array_equal(pa.left, pb.left) and np.array_equal(pa.right, pb.right)
    assert np.array_equal(pa.score, pb.score)
    assert np.array_equal(a.samples(whole), b.samples(batched))
    assert np.array_equal(a.samples(whole), WeightedMinHash(seed=3).samples(whole))
    assert not np.array_equal(a.samples(whole), WeightedMinHash(seed=4).samples(whole))


def test_empty_and_degenerate_documents():
    method = WeightedMinHash(threshold=0.3)
    texts = ["", "", "   ", "!!! ...", "\u200b", "word", "word", "two words", "two words"]
    sketch = method.sketch(texts)
    assert sketch.n_features.tolist() == [0, 0, 0, 0, 0, 1, 1, 1, 1]
    got = _pair_set(method.find_pairs(sketch))
    assert got == {(5, 6), (7, 8)}  # short documents still match; empties never do
    assert len(method.find_pairs(method.sketch([]))) == 0
    assert len(method.find_pairs(method.sketch(["x"]))) == 0
    assert len(method.find_pairs(method.sketch(["", ""]))) == 0


def test_fit_then_find_uses_fitted_statistics():
    template = "please read our terms of service and privacy policy before you comment below"
    target = [f"first article about the wheat harvest {template}", f"second note on oil {template}"]
    # On its own, a two-document corpus cannot tell that the template is common.
    method = WeightedMinHash(threshold=0.3, phrase_length=3)
    assert len(method.find_pairs(method.sketch(target))) == 1
    reference = [f"reference page {i} about topic {i} {template}" for i in range(30)]
    fitted = WeightedMinHash(threshold=0.3, phrase_length=3).fit(reference)
    assert fitted.n_docs_ == 30
    assert fitted.word_hashes_.shape == fitted.word_df_.shape
    assert fitted.phrase_hashes_.shape == fitted.phrase_df_.shape
    assert np.all(np.diff(fitted.phrase_hashes_.astype(np.float64)) >= 0)
    assert fitted.phrase_df_.max() == 30
    sketch = fitted.sketch(target)
    stats = fitted.statistics(sketch)
    assert isinstance(stats, CorpusStatistics) and stats.n_docs == 30
    assert len(fitted.find_pairs(sketch)) == 0
    weights = fitted.phrase_weights(sketch)
    template_phrases = set(fitted.sketch([template]).sets.hashes.tolist())
    is_template = np.isin(sketch.sets.hashes, list(template_phrases))
    assert np.all(weights[is_template] == 0.0)
    # Phrases the reference never saw keep df 0 (rare); their words' df comes from it.
    assert np.all(weights[~is_template & (weights > 0)] > 0)
    # The same sketch without fitting uses its own statistics.
    assert len(method.find_pairs(sketch)) == 1


def test_explicit_bands_and_validation():
    m = WeightedMinHash(num_samples=30, bands=15, rows=2)
    assert m.banding == (15, 2)
    assert WeightedMinHash(threshold=0.9).banding[1] > WeightedMinHash(threshold=0.3).banding[1]
    with pytest.raises(ValueError, match="num_samples"):
        WeightedMinHash(num_samples=10, bands=15, rows=2)
    with pytest.raises(ValueError, match="together"):
        WeightedMinHash(bands=4)


@pytest.mark.parametrize(
    "name,value",
    [
        ("threshold", 1.5),
        ("threshold", float("nan")),
        ("num_samples", 0),
        ("num_samples", 2.5),
        ("weighting", "tfidf"),
        ("power", 0),
        ("divide_by_phrase_df", "yes"),
        ("rare_fraction", 0.0),
        ("rare_fraction", 1.5),
        ("phrase_length", 0),
        ("verify", "signature"),
        ("normalize", {"casefold": True}),
        ("seed", -1),
        ("max_bucket_pairs", 0),
        ("bands", 0),
    ],
)
def test_invalid_parameters_raise(name, value):
    kwargs = {name: value}
    if name == "bands":
        kwargs["rows"] = 2
    with pytest.raises(ValueError, match=f"WeightedMinHash: parameter '{name}'"):
        WeightedMinHash(**kwargs)


def test_get_params():
    m = WeightedMinHash(
        threshold=0.3, weighting="df^k", power=4, rare_fraction=None,
        normalize=NormalizeConfig(casefold=False),
    )  # fmt: skip
    params = m.get_params()
    assert list(params) == [
        "threshold", "num_samples", "bands", "rows", "weighting", "power",
        "divide_by_phrase_df", "rare_fraction", "phrase_length", "verify", "normalize",
        "seed", "max_bucket_pairs",
    ]  # fmt: skip
    assert params["weighting"] == "df^k" and params["power"] == 4
    assert params["rare_fraction"] is None and params["normalize"]["casefold"] is False
    assert WeightedMinHash.name == "wminhash"
    assert repr(m).startswith("WeightedMinHash(threshold=0.3")
    # No work in __init__: nothing learned until fit.
    assert not hasattr(WeightedMinHash(), "n_docs_")
