import numpy as np
import pytest

from neardup.methods.lsh import band_keys, bucket_pairs, collision_probability, optimal_bands
from neardup.methods.minhash import MinHash, MinHashLSH, jaccard_from_signatures
from neardup.text import ShingleConfig, ShingleSets


def _pair_sets(rng, jaccard, size=300):
    """Two hash sets of equal size with the given exact Jaccard (up to rounding)."""
    shared = int(round(2 * size * jaccard / (1 + jaccard)))
    pool = rng.choice(2**62, size=2 * size - shared, replace=False).astype(np.uint64)
    a = pool[:size]
    b = np.concatenate([pool[:shared], pool[size:]])
    exact = shared / (2 * size - shared)
    return a, b, exact


def _signatures_for(pairs, mh):
    hashes = [h for a, b, _ in pairs for h in (a, b)]
    offsets = np.zeros(len(hashes) + 1, np.int64)
    np.cumsum([h.size for h in hashes], out=offsets[1:])
    return mh.signatures_from_sets(ShingleSets(np.concatenate(hashes), offsets))


def test_jaccard_estimates_within_expected_error():
    rng = np.random.default_rng(0)
    num_perm = 256
    mh = MinHash(num_perm=num_perm, seed=3)
    pairs = [_pair_sets(rng, j) for j in np.linspace(0.05, 0.95, 60)]
    sig = _signatures_for(pairs, mh)
    est = jaccard_from_signatures(sig, np.arange(0, 120, 2), np.arange(1, 120, 2))
    exact = np.array([p[2] for p in pairs])
    sigma = np.sqrt(exact * (1 - exact) / num_perm)
    z = (est - exact) / sigma
    assert np.all(np.abs(z) < 4.5)
    assert abs(z.mean()) < 0.6  # unbiased: mean of 60 z-scores has sd ~0.13
    assert 0.5 < z.std() < 1.6  # the estimator's spread matches the binomial model


def test_jaccard_from_texts_and_helper():
    mh = MinHash(num_perm=128)
    sig = mh.signatures(["the cat sat on the mat today", "the cat sat on the mat yesterday", ""])
    assert sig.shape == (3, 128) and sig.dtype == np.uint32
    assert abs(mh.jaccard(sig[0], sig[1]) - 4 / 6) < 0.15
    assert np.all(sig[2] == np.iinfo(np.uint32).max)
    with pytest.raises(ValueError, match="one shape"):
        mh.jaccard(sig[0], sig[1][:5])


@pytest.mark.parametrize("s", [0.2, 0.4, 0.6, 0.8])
def test_lsh_collision_probability_matches_s_curve(s):
    rng = np.random.default_rng(int(s * 100))
    bands, rows = 16, 4
    mh = MinHash(num_perm=bands * rows, seed=11)
    pairs = [_pair_sets(rng, s, size=150) for _ in range(400)]
    sig = _signatures_for(pairs, mh)
    keys = band_keys(sig, bands, rows)
    collide = np.any(keys[:, 0::2] == keys[:, 1::2], axis=0)
    exact = np.mean([p[2] for p in pairs])
    expected = float(collision_probability(exact, bands, rows))
    assert abs(collide.mean() - expected) < 0.075


def test_optimal_bands():
    for t in (0.3, 0.5, 0.8):
        b, r = optimal_bands(t, 128)
        assert b * r <= 128
    assert optimal_bands(0.9, 128)[1] > optimal_bands(0.3, 128)[1]  # stricter -> longer bands


def test_bucket_pairs_small_and_oversized():
    keys = np.array([1, 2, 1, 3, 1, 2, 7, 7, 7, 7, 7], np.uint64)
    left, right, oversized = bucket_pairs(keys, np.arange(11), max_bucket_pairs=3)
    got = {tuple(sorted(p)) for p in zip(left.tolist(), right.tolist())}
    assert {(0, 2), (0, 4), (2, 4), (1, 5)} <= got
    assert sorted(oversized.tolist()) == [6, 7, 8, 9, 10]
    assert len(got) == 4 + 4  # the 5-member bucket is chained: 4 links, not 10 pairs


def test_lsh_finds_planted_duplicates():
    base = [
        f"story {i} about the {w} market where prices of {w} rose sharply on strong demand "
        f"from buyers in region {i % 7} said traders on day {i}"
        for i, w in enumerate(["wheat", "corn", "oil", "gold", "tin", "zinc", "rice", "sugar"])
    ]
    texts = base + [t.replace("sharply", "sharp1y") + " end" for t in base]
    method = MinHashLSH(threshold=0.5, num_perm=128)
    pairs = method.find_pairs(method.sketch(texts))
    got = set(zip(pairs.left.tolist(), pairs.right.tolist()))
    assert got == {(i, i + 8) for i in range(8)}
    assert np.all(pairs.score >= 0.5)


def test_explicit_bands_and_validation():
    m = MinHashLSH(num_perm=30, bands=15, rows=2)
    assert m.banding == (15, 2)
    with pytest.raises(ValueError, match="num_perm"):
        MinHashLSH(num_perm=10, bands=15, rows=2)
    with pytest.raises(ValueError, match="together"):
        MinHashLSH(bands=4)
    with pytest.raises(ValueError, match="'threshold'"):
        MinHashLSH(threshold=1.5)
    with pytest.raises(ValueError, match="'verify'"):
        MinHashLSH(verify="maybe")


def test_get_params_round_trip():
    m = MinHashLSH(threshold=0.7, shingle=ShingleConfig(unit="char", n=5))
    params = m.get_params()
    assert params["threshold"] == 0.7 and params["shingle"] == {"unit": "char", "n": 5}


def test_perm64_32_bit_signatures_are_the_top_halves_of_64_bit_ones():
    texts = ["the cat sat on the mat today", "a b", "", "x " * 500, "one two three four five"]
    wide = MinHash(num_perm=64, seed=5, hash_bits=64).signatures(texts)
    narrow = MinHash(num_perm=64, seed=5, hash_bits=32, signature_scheme="perm64").signatures(texts)
    assert wide.dtype == np.uint64 and narrow.dtype == np.uint32
    assert np.array_equal(narrow, (wide >> np.uint64(32)).astype(np.uint32))
    assert np.all(wide[2] == np.iinfo(np.uint64).max)


def _ragged_hashes(seed):
    rng = np.random.default_rng(seed)
    counts = [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33]
    hashes = rng.integers(0, 2**64, size=sum(counts), dtype=np.uint64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return hashes, offsets


def test_signature_kernel_matches_a_plain_numpy_minimum():
    hashes, offsets = _ragged_hashes(3)
    mh = MinHash(num_perm=37, seed=2, hash_bits=64)
    sig = mh.signatures_from_sets(ShingleSets(hashes, offsets))
    with np.errstate(over="ignore"):
        for d, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
            v = mh._a[None, :] * hashes[a:b, None] + mh._b[None, :]
            v ^= v >> np.uint64(29)
            want = v.min(axis=0) if b > a else np.full(37, np.iinfo(np.uint64).max, np.uint64)
            assert np.array_equal(sig[d], want)


def test_perm32_kernel_matches_a_plain_numpy_minimum():
    hashes, offsets = _ragged_hashes(4)
    mh = MinHash(num_perm=37, seed=2)  # 32-bit values: "perm32" by default
    assert mh.signature_scheme == "perm32" and mh._a.dtype == np.uint32
    sig = mh.signatures_from_sets(ShingleSets(hashes, offsets))
    folded = ((hashes ^ (hashes >> np.uint64(32))) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    with np.errstate(over="ignore"):
        for d, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
            v = mh._a[None, :] * folded[a:b, None] + mh._b[None, :]  # uint32: modulo 2**32
            want = v.min(axis=0) if b > a else np.full(37, np.iinfo(np.uint32).max, np.uint32)
            assert np.array_equal(sig[d], want)


@pytest.mark.parametrize("scheme", ["perm32", "perm64"])
@pytest.mark.slow
def test_estimates_unbiased_with_binomial_spread_across_seeds(scheme):
    """Each signature scheme over many permutation seeds: for pairs with known Jaccard, the
    estimates' mean is the exact Jaccard and their variance is the binomial one of
    independent permutations (correlated permutations would inflate it)."""
    rng = np.random.default_rng(7)
    num_perm, seeds = 64, 150
    for jaccard, size in [(0.2, 200), (0.5, 20), (0.8, 200)]:
        pairs = [_pair_sets(rng, jaccard, size=size) for _ in range(40)]
        exact = np.array([p[2] for p in pairs])
        errors = []
        for seed in range(seeds):
            mh = MinHash(num_perm=num_perm, seed=seed, signature_scheme=scheme)
            sig = _signatures_for(pairs, mh)
            errors.append(jaccard_from_signatures(sig, np.arange(0, 80, 2), np.arange(1, 80, 2)) - exact)
        errors = np.concatenate(errors)  # 6,000 estimates
        var = exact.mean() * (1 - exact.mean()) / num_perm
        assert abs(errors.mean()) < 4 * np.sqrt(var / errors.size)
        assert 0.9 < errors.var() / var < 1.1  # sd of the ratio ~0.02


def test_signature_schemes_are_recorded_and_validated():
    assert MinHash().get_params()["signature_scheme"] == "perm32"
    assert MinHash(hash_bits=64).get_params()["signature_scheme"] == "perm64"
    assert MinHashLSH().get_params()["signature_scheme"] == "perm32"
    assert MinHashLSH(signature_scheme="perm64").get_params()["signature_scheme"] == "perm64"
    texts = ["the cat sat on the mat today", "the cat sat on a mat today"]
    assert not np.array_equal(MinHash().signatures(texts),
                              MinHash(signature_scheme="perm64").signatures(texts))
    with pytest.raises(ValueError, match="signature_scheme"):
        MinHash(signature_scheme="perm16")
    with pytest.raises(ValueError, match="hash_bits=32"):
        MinHashLSH(hash_bits=64, signature_scheme="perm32")


def test_hash_bits_validated():
    with pytest.raises(ValueError, match="hash_bits"):
        MinHash(hash_bits=16)
    with pytest.raises(ValueError, match="hash_bits"):
        MinHashLSH(hash_bits=48)


@pytest.mark.parametrize("shingle", [ShingleConfig("word", 1), ShingleConfig("word", 3), ShingleConfig("char", 4)])
@pytest.mark.parametrize("hash_bits, scheme", [(32, "perm32"), (32, "perm64"), (64, "perm64")])
def test_one_pass_signatures_equal_the_staged_ones(shingle, hash_bits, scheme):
    texts = ["", "a", "the cat sat", "Ünïcödé  TEXT\n\nnext one", "x " * 301, "elec-\ntric fence co"]
    texts = texts * 3 + ["word%d" % i for i in range(150)]  # several blocks of documents
    mh = MinHash(num_perm=70, shingle=shingle, seed=4, hash_bits=hash_bits, signature_scheme=scheme)
    sig, counts = mh.signatures_and_counts(texts)
    sets = mh.shingle_sets(texts)
    assert np.array_equal(sig, mh.signatures_from_sets(sets))
    assert np.array_equal(counts, sets.counts())
    assert np.array_equal(sig, mh.signatures(texts))


def test_sketch_identity_hashed_in_the_shingling_pass_is_bit_identical():
    """MinHash hashes the text identity inside its compiled shingling pass; it must equal
    :func:`text_identity` bit for bit: ASCII, wide code points, symbols-only, blank and
    empty texts, in one batch and in an all-ASCII batch, with both permutation schemes."""
    from neardup.methods.minhash import MinHashLSH
    from neardup.text.identity import NO_IDENTITY, text_identity

    mixed = ["Oil rose 2 pct in London.", "oil ROSE 2 pct   in london!", "Ölpreis stieg um 2 %",
             "石油价格上涨", "😀😀 🎉", "", "   \u200b ", "\u2003", "a", "x" * 9 + "é",
             "Snow in the Alps " * 50, "12345678", "1234567", "Ωmega 𝔘nicode"]
    ascii_only = ["Oil rose 2 pct in London.", "plain text " * 30, "", "!!", "a b c"]
    for texts in (mixed, ascii_only):
        expected = text_identity(texts)
        for scheme in ("perm32", "perm64"):
            got = MinHashLSH(signature_scheme=scheme).sketch(texts).identity
            assert got.dtype == np.uint64
            np.testing.assert_array_equal(got, expected)
    ident = MinHashLSH().sketch(mixed).identity
    assert ident[0] == ident[1] and ident[0] != ident[2]  # normalized alike, or not
    assert ident[5] == NO_IDENTITY and ident[6] == NO_IDENTITY and ident[4] != NO_IDENTITY


def test_text_identity_digests_unchanged_by_the_fused_pass():
    """The digests the shared kernel gives are those recorded before it was shared with
    MinHash's pass (commit da29ed7): identities written to work directories and indexes
    stay comparable."""
    from neardup.methods.minhash import MinHashLSH
    from neardup.text.identity import text_identity

    texts = ["Oil rose 2 pct in London.", "Ölpreis stieg um 2 %", "石油价格上涨", "😀😀 🎉", "",
             "x" * 9 + "é", "12345678"]
    recorded = [13108082814635298800, 17922104809414915498, 12139380380369835362,
                13642218290033464179, 0, 8066596288623823934, 2712440950522905771]
    assert text_identity(texts).tolist() == recorded
    assert MinHashLSH().sketch(texts).identity.tolist() == recorded
    assert text_identity(texts, seed=7).tolist()[:2] == [13150604507679311473, 9631443453314900]


@pytest.mark.parametrize("verify", ["signature", "none"])
@pytest.mark.parametrize("hash_bits", [32, 64])
def test_score_candidate_rows_reads_signatures_in_place_as_score_candidates(verify, hash_bits):
    """The corpus stage's check (signatures indexed in place) gives score_candidates'
    scores bit for bit, and the same acceptance."""
    from neardup.methods.base import CandidateRows

    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(40)]
    texts = [" ".join(rng.choice(words, 30)) for _ in range(25)]
    method = MinHashLSH(threshold=0.3, verify=verify, hash_bits=hash_bits)
    signature = method.sketch(texts).arrays["signature"]
    left = rng.integers(0, 25, 300)
    right = rng.integers(0, 25, 300)
    rows = CandidateRows(np.arange(25), {"signature": signature})
    score, accept = method.score_candidate_rows(rows, left, right)
    want_score, want_accept = method.score_candidates({"signature": signature[left]},
                                                      {"signature": signature[right]})
    assert score.dtype == want_score.dtype == np.float32
    np.testing.assert_array_equal(score, want_score)
    np.testing.assert_array_equal(accept, want_accept)
    assert 0 < accept.sum() < accept.size or verify == "none"
