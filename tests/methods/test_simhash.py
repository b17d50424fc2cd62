import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from neardup.graph.edges import Pairs
from neardup.methods.base import Sketch
from neardup.methods.simhash import SimHash, _popcount_kernel, hamming_distance
from neardup.text import NormalizeConfig, ShingleConfig, ShingleSets

VOCAB = np.array([f"w{i}" for i in range(5000)])


def _words(rng, n):
    return list(VOCAB[rng.integers(0, VOCAB.size, n)])


def _edit(rng, words, k):
    """``words`` with ``k`` distinct positions replaced by random words."""
    out = list(words)
    for p in rng.choice(len(out), size=k, replace=False):
        out[p] = VOCAB[rng.integers(VOCAB.size)]
    return out


def _fingerprints(texts, **params):
    return SimHash(**params).sketch(texts).arrays["fingerprint"]


def _edit_distances(rng, n_pairs, n_words, k):
    bases = [_words(rng, n_words) for _ in range(n_pairs)]
    texts = [t for b in bases for t in (" ".join(b), " ".join(_edit(rng, b, k)))]
    fp = _fingerprints(texts)
    return hamming_distance(fp[0::2], fp[1::2])


def _sketch_of(fps, n_features=None):
    fps = np.asarray(fps, dtype=np.uint64)
    if n_features is None:
        n_features = np.ones(fps.size, np.int64)
    return Sketch(np.asarray(n_features, np.int64), {"fingerprint": fps})


def _as_set(pairs):
    return set(zip(pairs.left.tolist(), pairs.right.tolist()))


def _expected_pairs(fps, threshold):
    """Brute force over all pairs, in the documented output form: copies of a fingerprint
    link to its first document, and distinct fingerprints within ``threshold`` link their
    first documents."""
    fps = [int(f) for f in fps]
    first = {}
    pairs = {}
    for i, f in enumerate(fps):
        if f in first:
            pairs[(first[f], i)] = 1.0
        else:
            first[f] = i
    for (fa, i), (fb, j) in itertools.combinations(first.items(), 2):
        d = (fa ^ fb).bit_count()
        if d <= threshold:
            pairs[(min(i, j), max(i, j))] = 1.0 - d / 64
    return pairs


def _planted(rng, n_base, n_copies, max_flips):
    """Random fingerprints plus copies with 0..max_flips random bits flipped."""
    base = rng.integers(0, 2**64, n_base, dtype=np.uint64, endpoint=False)
    out = [base]
    for _ in range(n_copies):
        src = base[rng.integers(0, n_base, n_base // 2)]
        flips = np.zeros(src.size, np.uint64)
        for i, k in enumerate(rng.integers(0, max_flips + 1, src.size)):
            for bit in rng.choice(64, size=k, replace=False):
                flips[i] |= np.uint64(1) << np.uint64(bit)
        out.append(src ^ flips)
    fps = np.concatenate(out)
    return fps[rng.permutation(fps.size)]


# --- Hamming behaviour of fingerprints -------------------------------------------------


def test_identical_texts_have_distance_zero():
    rng = np.random.default_rng(1)
    text = " ".join(_words(rng, 200))
    fp = _fingerprints([text, text, text.upper() + "  !"])  # normalization removes the rest
    assert hamming_distance(fp[0], fp[1]) == 0
    assert hamming_distance(fp[0], fp[2]) == 0


def test_small_edit_gives_small_distance():
    rng = np.random.default_rng(2)
    d = _edit_distances(rng, n_pairs=60, n_words=300, k=1)
    assert d.mean() < 6  # about 3 bits for one word in 300 (3 of ~300 shingles change)
    assert np.median(d) <= 4


def test_unrelated_texts_differ_in_about_half_the_bits():
    rng = np.random.default_rng(3)
    fp = _fingerprints([" ".join(_words(rng, 150)) for _ in range(400)])
    d = hamming_distance(fp[0::2], fp[1::2])
    assert abs(d.mean() - 32) < 4
    assert d.min() > 10


def test_distance_grows_with_number_of_edits():
    rng = np.random.default_rng(4)
    means = [_edit_distances(rng, 40, 300, k).mean() for k in (1, 5, 20, 80)]
    assert all(a < b for a, b in zip(means, means[1:])), means


def test_weighting_tf_counts_occurrences_binary_counts_distinct():
    h1, h2 = np.uint64(0xF0F0_1234_5678_9ABC), np.uint64(0x0FF0_FEDC_BA98_7654)
    sets = ShingleSets(
        np.array([h1, h1, h1, h2, h1], np.uint64), np.array([0, 4, 5], np.int64)
    )
    fp_tf, votes_tf = SimHash(weighting="tf").fingerprints_from_sets(sets)
    fp_bin, votes_bin = SimHash(weighting="binary").fingerprints_from_sets(sets)
    assert fp_tf[0] == h1  # three votes for h1's bits against one for h2's
    assert fp_bin[0] == h1 & h2  # one vote each: ties clear the bit, agreement sets it
    assert fp_tf[1] == fp_bin[1] == h1  # a lone shingle is its own fingerprint
    assert votes_tf.tolist() == [4, 1] and votes_bin.tolist() == [2, 1]


def test_sketch_contract_and_batch_independence():
    rng = np.random.default_rng(5)
    texts = [" ".join(_words(rng, int(n))) for n in rng.integers(0, 60, 30)] + ["", "  ,. "]
    method = SimHash()
    whole = method.sketch(texts)
    assert len(whole) == len(texts)
    assert whole.n_features.dtype == np.int64
    assert whole.arrays["fingerprint"].dtype == np.uint64
    assert whole.arrays["fingerprint"].shape == (len(texts),)
    assert whole.n_features[-2:].tolist() == [0, 0]
    parts = Sketch.concat([method.sketch(texts[:7]), method.sketch(texts[7:])])
    np.testing.assert_array_equal(parts.arrays["fingerprint"], whole.arrays["fingerprint"])
    np.testing.assert_array_equal(parts.n_features, whole.n_features)
    assert len(method.sketch([])) == 0
    assert len(method.find_pairs(method.sketch([]))) == 0
    assert len(method.find_pairs(method.sketch(["one document only"]))) == 0


def test_seed_changes_fingerprints():
    text = "the quick brown fox jumps over the lazy dog again and again"
    assert _fingerprints([text], seed=0)[0] != _fingerprints([text], seed=1)[0]


# --- Blocking -------------------------------------------------------------------------


@pytest.mark.parametrize("threshold", [0, 1, 3, 6, 12])
def test_blocking_matches_brute_force(threshold):
    rng = np.random.default_rng(10 + threshold)
    fps = _planted(rng, n_base=150, n_copies=2, max_flips=threshold + 2)
    pairs = SimHash(threshold=threshold).find_pairs(_sketch_of(fps))
    expected = _expected_pairs(fps, threshold)
    assert _as_set(pairs) == set(expected)
    np.testing.assert_allclose(
        pairs.score, [expected[p] for p in zip(pairs.left.tolist(), pairs.right.tolist())]
    )
    assert pairs.score.dtype == np.float32 and np.all(pairs.left < pairs.right)


@st.composite
def _fingerprint_sets(draw):
    n_base = draw(st.integers(1, 40))
    base = draw(st.lists(st.integers(0, 2**64 - 1), min_size=n_base, max_size=n_base))
    fps = list(base)
    for _ in range(draw(st.integers(0, 60))):
        f = base[draw(st.integers(0, n_base - 1))]
        for bit in draw(st.lists(st.integers(0, 63), max_size=8)):
            f ^= 1 << bit
        fps.append(f)
    return draw(st.permutations(fps))


@settings(max_examples=60, deadline=None)
@given(fps=_fingerprint_sets(), threshold=st.integers(0, 8))
def test_blocking_matches_brute_force_property(fps, threshold):
    pairs = SimHash(threshold=threshold).find_pairs(_sketch_of(fps))
    assert _as_set(pairs) == set(_expected_pairs(fps, threshold))


def test_connected_components_match_all_pairs_graph():
    rng = np.random.default_rng(20)
    fps = _planted(rng, n_base=100, n_copies=3, max_flips=4)
    fps[:50] = fps[0]  # a large group of exact copies
    pairs = SimHash(threshold=3).find_pairs(_sketch_of(fps))
    i, j = np.triu_indices(fps.size, k=1)
    close = hamming_distance(fps[i], fps[j]) <= 3
    n = fps.size

    def labels(left, right):
        graph = coo_matrix((np.ones(left.size), (left, right)), shape=(n, n))
        return connected_components(graph, directed=False)[1]

    got, want = labels(pairs.left, pairs.right), labels(i[close], j[close])
    # Same partition: labels correspond one-to-one.
    assert len(set(zip(got.tolist(), want.tolist()))) == len(set(got.tolist()))
    assert len(set(got.tolist())) == len(set(want.tolist()))


def test_oversized_runs_are_windowed_subset_of_brute_force():
    rng = np.random.default_rng(30)
    # 400 distinct fingerprints sharing their low 32 bits: with threshold 1 (two 32-bit
    # blocks) they form one 400-member run in the first block.
    high = rng.integers(0, 2**32, 400, dtype=np.uint64) << np.uint64(32)
    fps = np.unique(high | np.uint64(0xDEADBEEF))
    fps = fps[rng.permutation(fps.size)]
    # Planted neighbours: one bit flipped in the high half, so they share only that run.
    fps = np.concatenate([fps, fps[:100] ^ (np.uint64(1) << np.uint64(40))])
    expected = set(_expected_pairs(fps, 1))

    full = SimHash(threshold=1, max_block_size=10_000)
    assert _as_set(full.find_pairs(_sketch_of(fps))) == expected
    assert full.oversized_docs_.size == 0

    windowed = SimHash(threshold=1, max_block_size=8)
    got = _as_set(windowed.find_pairs(_sketch_of(fps)))
    assert got <= expected
    # Neighbours adjacent in fingerprint order are still found (most of them).
    assert len(got) >= 0.5 * len(expected)
    assert windowed.oversized_docs_.size > 0


def test_empty_documents_are_never_paired():
    method = SimHash(threshold=3)
    sketch = method.sketch(["", "", "...", "real words here", "real words here"])
    assert sketch.n_features[:3].tolist() == [0, 0, 0]
    assert _as_set(method.find_pairs(sketch)) == {(3, 4)}
    # An empty document's fingerprint (0) equals a real fingerprint 0: still not paired.
    fps = np.zeros(4, np.uint64)
    assert len(method.find_pairs(_sketch_of(fps, n_features=[0, 5, 0, 0]))) == 0


def test_thousand_identical_documents_give_linear_pairs():
    rng = np.random.default_rng(40)
    text = " ".join(_words(rng, 100))
    others = [" ".join(_words(rng, 100)) for _ in range(20)]
    texts = [text] * 1000 + others
    pairs = SimHash().find_pairs(SimHash().sketch(texts))
    assert len(pairs) == 999  # a star, not 1000 * 999 / 2 = 499,500 pairs
    assert set(pairs.left.tolist()) == {0}
    assert np.all(pairs.score == 1.0)


def test_template_run_is_bounded_by_max_block_size():
    # 3,000 distinct fingerprints that differ only in their lowest 20 bits: with threshold
    # 3 (16-bit blocks) the top two blocks put all of them in one run. The window bounds
    # that run's comparisons at 3,000 * 50 instead of 3,000 * 2,999 / 2.
    rng = np.random.default_rng(41)
    low = rng.choice(2**20, size=3000, replace=False).astype(np.uint64)
    fps = np.uint64(0x0123_4567_89A0_0000) | low
    i, j = np.triu_indices(fps.size, k=1)
    close = hamming_distance(fps[i], fps[j]) <= 3
    expected = set(zip(i[close].tolist(), j[close].tolist()))

    full = SimHash(threshold=3, max_block_size=5000)
    assert _as_set(full.find_pairs(_sketch_of(fps))) == expected
    windowed = SimHash(threshold=3, max_block_size=50)
    got = _as_set(windowed.find_pairs(_sketch_of(fps)))
    assert got <= expected
    assert windowed.oversized_docs_.tolist() == list(range(3000))


def test_find_pairs_is_deterministic():
    rng = np.random.default_rng(50)
    fps = _planted(rng, n_base=300, n_copies=2, max_flips=4)
    a = SimHash(threshold=3).find_pairs(_sketch_of(fps))
    b = SimHash(threshold=3).find_pairs(_sketch_of(fps.copy()))
    for x, y in ((a.left, b.left), (a.right, b.right), (a.score, b.score)):
        np.testing.assert_array_equal(x, y)
    texts = [" ".join(_words(rng, 50)) for _ in range(10)]
    np.testing.assert_array_equal(_fingerprints(texts), _fingerprints(texts))


# --- hamming_distance -----------------------------------------------------------------


def test_hamming_distance_values_dtypes_and_fallback_kernel():
    rng = np.random.default_rng(60)
    a = rng.integers(0, 2**64, 500, dtype=np.uint64, endpoint=False)
    b = rng.integers(0, 2**64, 500, dtype=np.uint64, endpoint=False)
    want = [(int(x) ^ int(y)).bit_count() for x, y in zip(a, b)]
    got = hamming_distance(a, b)
    assert got.dtype == np.int64 and got.tolist() == want
    assert hamming_distance(a.view(np.int64), b.view(np.int64)).tolist() == want
    assert hamming_distance(a[:, None], a[None, :3]).shape == (500, 3)
    out = np.empty(500, np.int64)
    _popcount_kernel(a ^ b, out)  # the numpy < 2 path
    assert out.tolist() == want
    with pytest.raises(ValueError, match="parameter 'a'"):
        hamming_distance(np.array([0.5]), b[:1])


# --- Parameters -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"threshold": -1}, "threshold"),
        ({"threshold": 32}, "threshold"),
        ({"threshold": 2.0}, "threshold"),
        ({"threshold": True}, "threshold"),
        ({"weighting": "tfidf"}, "weighting"),
        ({"seed": -3}, "seed"),
        ({"max_block_size": 0}, "max_block_size"),
        ({"normalize": {"casefold": True}}, "normalize"),
        ({"shingle": "word"}, "shingle"),
    ],
)
def test_invalid_parameters_raise(kwargs, name):
    with pytest.raises(ValueError, match=f"SimHash: parameter '{name}'"):
        SimHash(**kwargs)


def test_constructor_is_keyword_only():
    with pytest.raises(TypeError):
        SimHash(3)


def test_get_params_round_trip():
    method = SimHash(
        threshold=5,
        normalize=NormalizeConfig(fold_homoglyphs=False),
        shingle=ShingleConfig(unit="char", n=5),
        weighting="binary",
        seed=7,
        max_block_size=100,
    )
    params = method.get_params()
    assert params == {
        "threshold": 5,
        "normalize": NormalizeConfig(fold_homoglyphs=False).get_params(),
        "shingle": {"unit": "char", "n": 5},
        "weighting": "binary",
        "seed": 7,
        "max_block_size": 100,
    }
    rebuilt = SimHash(
        **{
            **params,
            "normalize": NormalizeConfig(**params["normalize"]),
            "shingle": ShingleConfig(**params["shingle"]),
        }
    )
    assert rebuilt.get_params() == params
    assert repr(rebuilt) == repr(method)
    assert SimHash.name == "simhash"
    assert SimHash().get_params()["shingle"] == {"unit": "word", "n": 3}


def test_pairs_type_and_foreign_sketch():
    pairs = SimHash().find_pairs(_sketch_of([1, 1]))
    assert isinstance(pairs, Pairs) and _as_set(pairs) == {(0, 1)}
    foreign = Sketch(np.ones(2, np.int64), {"signature": np.zeros((2, 4), np.uint64)})
    with pytest.raises(ValueError, match="parameter 'sketch'"):
        SimHash().find_pairs(foreign)
