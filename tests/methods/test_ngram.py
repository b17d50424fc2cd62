"""Exact n-gram overlap: agreement with brute force, the max_df bound, edge cases, params."""

from __future__ import annotations

import doctest
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup.methods.ngram as ngram_module
import neardup.methods.overlap_kernels as overlap_kernels
from neardup.graph.edges import Pairs
from neardup.methods.base import Sketch
from neardup.methods.ngram import NGramOverlap, exact_similarity
from neardup.text.normalize import NormalizeConfig
from neardup.text.shingle import ShingleConfig, ShingleSets

THRESHOLDS = (0.0, 0.2, 0.5, 0.8, 1.0)


# --------------------------------------------------------------------------- helpers


def planted_corpus(seed: int = 0, n_base: int = 120, vocab: int = 10) -> list[str]:
    """Random short docs over a small vocabulary plus edited copies of some of them.

    The small vocabulary makes shingles recur across unrelated docs, so there are many
    partial overlaps, frequent shingles and pairs near every threshold.
    """
    rng = np.random.default_rng(seed)
    words = [f"w{k}" for k in range(vocab)]
    docs = []
    for _ in range(n_base):
        docs.append(list(rng.choice(words, size=int(rng.integers(1, 30)))))
    for base in list(docs[:80]):
        for _ in range(int(rng.integers(1, 4))):
            copy = list(base)
            for _ in range(int(rng.integers(0, 4))):
                edit = rng.integers(0, 3)
                pos = int(rng.integers(0, len(copy) + 1))
                if edit == 0 and copy:
                    copy[min(pos, len(copy) - 1)] = str(rng.choice(words))
                elif edit == 1 and len(copy) > 1:
                    del copy[min(pos, len(copy) - 1)]
                else:
                    copy.insert(pos, str(rng.choice(words)))
            docs.append(copy)
    texts = [" ".join(d) for d in docs]
    texts += ["", "   ,;  ", texts[0].upper() + "!!", texts[1]]  # empties and exact copies
    order = rng.permutation(len(texts))
    return [texts[k] for k in order]


def python_sets(sets: ShingleSets) -> list[set[int]]:
    return [set(sets.doc(i).tolist()) for i in range(len(sets))]


def _similarity(a: set[int], b: set[int], kind: str) -> float:
    inter = len(a & b)
    if kind == "jaccard":
        return inter / len(a | b)
    return inter / min(len(a), len(b))


def chained(docs: list[set[int]], max_df: int) -> set[tuple[int, int]]:
    """Pairs adjacent in a frequent shingle's posting list sorted by (chain payload, doc):
    the one key-group rule's chain (step 6 of the ngram module docstring), in plain Python
    over the rows ``candidate_keys`` gives (key, document, payload)."""
    hashes = np.array([h for d in docs for h in sorted(d)], dtype=np.uint64)
    offsets = np.zeros(len(docs) + 1, np.int64)
    np.cumsum([len(d) for d in docs], out=offsets[1:])
    sets = ShingleSets(hashes, offsets)
    rows = NGramOverlap().candidate_keys(Sketch(sets.counts(), sets=sets))
    postings: dict[int, list[tuple[int, int]]] = {}
    for doc, key, payload in zip(rows.docs.tolist(), rows.keys.tolist(), rows.payload.tolist(),
                                 strict=True):
        postings.setdefault(key, []).append((payload, doc))
    out = set()
    for members in postings.values():
        if len(members) <= max_df:
            continue
        ranked = [doc for _, doc in sorted(members)]
        out.update((min(a, b), max(a, b)) for a, b in itertools.pairwise(ranked))
    return out


def brute_force(
    docs: list[set[int]], threshold: float, kind: str, max_df: int
) -> dict[tuple[int, int], float]:
    """All pairs sharing a shingle with df <= max_df, or adjacent in a frequent shingle's
    chain, whose exact similarity >= threshold."""
    df: dict[int, int] = {}
    for d in docs:
        for h in d:
            df[h] = df.get(h, 0) + 1
    out = {}
    for i, j in itertools.combinations(range(len(docs)), 2):
        a, b = docs[i], docs[j]
        if not any(df[h] <= max_df for h in a & b):
            continue
        sim = _similarity(a, b, kind)
        if sim >= threshold:
            out[(i, j)] = sim
    for i, j in chained(docs, max_df):
        sim = _similarity(docs[i], docs[j], kind)
        if sim >= threshold:
            out[(i, j)] = sim
    return out


def as_dict(pairs: Pairs) -> dict[tuple[int, int], float]:
    return {
        (int(i), int(j)): float(s)
        for i, j, s in zip(pairs.left, pairs.right, pairs.score, strict=True)
    }


def assert_matches(pairs: Pairs, expected: dict[tuple[int, int], float]) -> None:
    got = as_dict(pairs)
    assert set(got) == set(expected)
    for key, sim in expected.items():
        assert got[key] == float(np.float32(sim)), key
    assert np.all(pairs.left < pairs.right)


@pytest.fixture(params=["dense", "sort"])
def reduction(request, monkeypatch):
    """Run a test with each candidate reduction: dense counters, or segment sorts."""
    if request.param == "sort":
        monkeypatch.setattr(overlap_kernels, "DENSE_BYTES", 0)
    return request.param


@pytest.fixture(scope="module")
def corpus():
    texts = planted_corpus()
    sketch = NGramOverlap().sketch(texts)
    return texts, sketch, python_sets(sketch.sets)


# --------------------------------------------------------------------------- brute force


@pytest.mark.parametrize("kind", ["jaccard", "containment"])
@pytest.mark.parametrize("max_df", [10**6, 8, 4, 2])
def test_agrees_with_brute_force(corpus, kind, max_df, reduction):
    _, sketch, docs = corpus
    for threshold in THRESHOLDS:
        method = NGramOverlap(threshold=threshold, similarity=kind, max_df=max_df)
        assert_matches(method.find_pairs(sketch), brute_force(docs, threshold, kind, max_df))


def test_small_max_df_exercises_bound_and_merge(corpus):
    """With a small max_df many shingles are frequent: the bound prunes and merges run."""
    _, sketch, _ = corpus
    method = NGramOverlap(threshold=0.5, max_df=3)
    method.find_pairs(sketch)
    stats = method.stats_
    assert stats["frequent_shingles"] > 50
    assert stats["pruned"] > 0
    assert stats["merged"] > 0
    found = stats["candidates"] + stats["chained_candidates"]
    assert found >= stats["pruned"] + stats["pairs"]


def test_unlimited_max_df_is_full_brute_force(corpus):
    """max_df >= n_docs: every pair with similarity >= threshold (> 0) is found."""
    _, sketch, docs = corpus
    method = NGramOverlap(threshold=0.3, max_df=len(docs))
    expected = {}
    for i, j in itertools.combinations(range(len(docs)), 2):
        union = docs[i] | docs[j]
        if union and len(docs[i] & docs[j]) / len(union) >= 0.3:
            expected[(i, j)] = len(docs[i] & docs[j]) / len(union)
    assert_matches(method.find_pairs(sketch), expected)
    assert method.stats_["frequent_shingles"] == 0


@pytest.mark.parametrize("kind", ["jaccard", "containment"])
def test_blocks_and_reductions_agree(corpus, monkeypatch, kind):
    _, sketch, _ = corpus
    method = NGramOverlap(threshold=0.2, similarity=kind, max_df=5)
    whole = method.find_pairs(sketch)
    stats = dict(method.stats_)
    assert len(whole) > 100
    for block, dense in ((7, overlap_kernels.DENSE_BYTES), (10**9, 0), (7, 0)):
        monkeypatch.setattr(overlap_kernels, "BLOCK_PAIRS", block)  # 7: many tiny blocks
        monkeypatch.setattr(overlap_kernels, "DENSE_BYTES", dense)  # 0: sort path
        other = method.find_pairs(sketch)
        np.testing.assert_array_equal(whole.left, other.left)
        np.testing.assert_array_equal(whole.right, other.right)
        np.testing.assert_array_equal(whole.score, other.score)
        assert method.stats_ == stats


@settings(max_examples=100, deadline=None)
@given(
    docs=st.lists(st.sets(st.integers(0, 15), max_size=10), min_size=0, max_size=14),
    threshold=st.sampled_from(THRESHOLDS + (0.35, 2 / 3)),
    kind=st.sampled_from(["jaccard", "containment"]),
    max_df=st.integers(2, 16),
)
def test_random_sets_agree_with_brute_force(docs, threshold, kind, max_df):
    hashes = np.array([h for d in docs for h in sorted(d)], dtype=np.uint64)
    offsets = np.zeros(len(docs) + 1, np.int64)
    np.cumsum([len(d) for d in docs], out=offsets[1:])
    sets = ShingleSets(hashes, offsets)
    sketch = Sketch(sets.counts(), sets=sets)
    method = NGramOverlap(threshold=threshold, similarity=kind, max_df=max_df)
    expected = brute_force(docs, threshold, kind, max_df)
    assert_matches(method.find_pairs(sketch), expected)
    dense_bytes = overlap_kernels.DENSE_BYTES
    try:  # the sort reduction too (hypothesis forbids function-scoped fixtures here)
        overlap_kernels.DENSE_BYTES = 0
        assert_matches(method.find_pairs(sketch), expected)
    finally:
        overlap_kernels.DENSE_BYTES = dense_bytes


# --------------------------------------------------------------------------- exact_similarity


@pytest.mark.parametrize("kind", ["jaccard", "containment"])
def test_exact_similarity_matches_python_sets(corpus, kind):
    _, sketch, docs = corpus
    rng = np.random.default_rng(1)
    left = rng.integers(0, len(docs), 500)
    right = rng.integers(0, len(docs), 500)
    got = exact_similarity(sketch.sets, left, right, kind=kind)
    assert got.dtype == np.float32 and got.shape == (500,)
    for i, j, s in zip(left, right, got, strict=True):
        a, b = docs[i], docs[j]
        denom = len(a | b) if kind == "jaccard" else min(len(a), len(b))
        assert s == np.float32(len(a & b) / denom if denom else 0.0)


def test_exact_similarity_validates_inputs():
    sets = ShingleSets(np.array([3, 1, 2], np.uint64), np.array([0, 3]))
    with pytest.raises(ValueError, match="'sets'.*unique"):
        exact_similarity(sets, [0], [0])
    good = sets.unique()
    with pytest.raises(ValueError, match="'kind'"):
        exact_similarity(good, [0], [0], kind="cosine")
    with pytest.raises(ValueError, match="'left' and 'right'"):
        exact_similarity(good, [0, 0], [0])
    with pytest.raises(ValueError, match="'left' and 'right'"):
        exact_similarity(good, [0], [1])
    assert exact_similarity(good, [], []).shape == (0,)


# --------------------------------------------------------------------------- edge cases


def test_empty_docs_never_paired():
    texts = ["", "   ", "!!! ...", "same words in here", "same words in here", ""]
    method = NGramOverlap(threshold=0.0)
    sketch = method.sketch(texts)
    assert sketch.n_features.tolist()[:3] == [0, 0, 0]
    pairs = method.find_pairs(sketch)
    assert as_dict(pairs) == {(3, 4): 1.0}


@pytest.mark.parametrize("kind", ["jaccard", "containment"])
def test_identical_docs_score_one(kind):
    text = "the quick brown fox jumps over the lazy dog near the river bank"
    texts = [text, "something else entirely different here", "The Quick, brown fox jumps over "
             "the lazy dog -- near the river bank!", text]  # fmt: skip
    pairs = NGramOverlap(threshold=0.9, similarity=kind).find_pairs(
        NGramOverlap().sketch(texts)
    )
    assert as_dict(pairs) == {(0, 2): 1.0, (0, 3): 1.0, (2, 3): 1.0}


def test_containment_finds_excerpt():
    long = " ".join(f"word{k}" for k in range(60))
    excerpt = " ".join(f"word{k}" for k in range(20, 40))
    sketch = NGramOverlap().sketch([long, excerpt])
    assert len(NGramOverlap(threshold=0.9).find_pairs(sketch)) == 0
    pairs = NGramOverlap(threshold=0.9, similarity="containment").find_pairs(sketch)
    assert as_dict(pairs) == {(0, 1): 1.0}


def test_empty_corpus_and_single_doc():
    method = NGramOverlap()
    assert len(method.find_pairs(method.sketch([]))) == 0
    assert len(method.find_pairs(method.sketch(["only one document here"]))) == 0
    assert len(method.find_pairs(method.sketch(["", ""]))) == 0


def test_deterministic_and_batch_independent(corpus):
    texts, sketch, _ = corpus
    first = NGramOverlap(threshold=0.3, max_df=4).find_pairs(sketch)
    method = NGramOverlap(threshold=0.3, max_df=4)
    batched = Sketch.concat([method.sketch(texts[:100]), method.sketch(texts[100:])])
    second = method.find_pairs(batched)
    for a, b in ((first.left, second.left), (first.right, second.right),
                 (first.score, second.score)):  # fmt: skip
        np.testing.assert_array_equal(a, b)


def test_seed_changes_hashes_not_result(corpus):
    texts, sketch, _ = corpus
    other = NGramOverlap(seed=7)
    sketch7 = other.sketch(texts)
    assert not np.array_equal(sketch.sets.hashes, sketch7.sets.hashes)
    a = NGramOverlap(threshold=0.5, max_df=10**6).find_pairs(sketch)
    b = other.find_pairs(sketch7)
    assert as_dict(a) == as_dict(b)


def test_sketch_without_sets_rejected():
    with pytest.raises(ValueError, match="'sketch'"):
        NGramOverlap().find_pairs(Sketch(np.array([1, 1])))


# --------------------------------------------------------------------------- parameters


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"threshold": -0.1}, "threshold"),
        ({"threshold": 1.5}, "threshold"),
        ({"threshold": float("nan")}, "threshold"),
        ({"threshold": "0.5"}, "threshold"),
        ({"similarity": "cosine"}, "similarity"),
        ({"max_df": 1}, "max_df"),
        ({"max_df": 2.5}, "max_df"),
        ({"max_df": True}, "max_df"),
        ({"seed": -1}, "seed"),
        ({"normalize": {"casefold": True}}, "normalize"),
        ({"shingle": "word"}, "shingle"),
    ],
)
def test_invalid_params_raise(kwargs, name):
    with pytest.raises(ValueError, match=f"NGramOverlap: parameter '{name}'"):
        NGramOverlap(**kwargs)


def test_keyword_only():
    with pytest.raises(TypeError):
        NGramOverlap(0.5)  # type: ignore[misc]


def test_get_params_and_repr():
    method = NGramOverlap(
        threshold=0.4,
        similarity="containment",
        normalize=NormalizeConfig(casefold=False),
        shingle=ShingleConfig(unit="char", n=5),
        max_df=50,
        seed=3,
    )
    params = method.get_params()
    assert params == {
        "threshold": 0.4,
        "similarity": "containment",
        "normalize": NormalizeConfig(casefold=False).get_params(),
        "shingle": {"unit": "char", "n": 5},
        "max_df": 50,
        "seed": 3,
    }
    assert NGramOverlap.name == "ngram"
    assert repr(method).startswith("NGramOverlap(threshold=0.4, similarity='containment'")
    assert NGramOverlap().get_params()["shingle"] == {"unit": "word", "n": 3}


def test_docstring_examples_run():
    result = doctest.testmod(ngram_module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


# --------------------------------------------------------------------------- frequent shingles


@pytest.mark.parametrize("copies", [3, 1001])
def test_exact_copies_above_max_df_are_linked(copies):
    """Issue #18: 1,001 identical documents were 1,001 singletons with max_df=1000."""
    story = "the same story about wheat prices in chicago today"
    texts = [story] * copies + ["an unrelated text about something else entirely"]
    method = NGramOverlap(max_df=2)
    pairs = method.find_pairs(method.sketch(texts))
    # A chain over all copies: copies - 1 pairs, each of exact similarity 1.
    assert len(pairs) == copies - 1 and np.all(pairs.score == 1.0)
    linked = np.union1d(pairs.left, pairs.right)
    np.testing.assert_array_equal(linked, np.arange(copies))
    assert method.pruning_ == {
        "max_df_shingles": 7, "max_df_documents": copies, "max_df_only_documents": copies,
    }  # fmt: skip


def test_default_max_df_keeps_1001_copies_in_one_cluster():
    import neardup

    story = "the same story about wheat prices in chicago today"
    result = neardup.dedup([story] * 1001 + ["something else"], method="ngram")
    assert result.clusters.tolist() == [0] * 1001 + [1]
    summary = result.summary()
    # The keyed stage (the default engine) counts the key groups over max_df it chained.
    assert summary["clusters"] == 2 and summary["max_df_shingles"] == 7  # its 7 word 3-grams
    memory = neardup.dedup([story] * 1001 + ["something else"], method="ngram", engine="memory")
    assert memory.summary()["max_df_only_documents"] == 1001


def test_near_copy_of_frequent_text_is_found():
    """A copy with one changed word shares only frequent shingles with the 1,001 copies."""
    story = "the same story about wheat prices in chicago today and more words follow"
    near = story.replace("today", "yesterday")
    texts = [story] * 1001 + [near]
    method = NGramOverlap(threshold=0.5)
    pairs = method.find_pairs(method.sketch(texts))
    assert 1001 in pairs.right.tolist()
    assert method.stats_["chained_pairs"] >= 1001


def test_chained_pairs_carry_exact_similarity(corpus):
    """Every reported pair, chained or not, has its exact similarity and reaches the threshold."""
    _, sketch, docs = corpus
    method = NGramOverlap(threshold=0.3, max_df=2)
    pairs = method.find_pairs(sketch)
    assert method.stats_["chained_pairs"] > 0
    for i, j, score in zip(pairs.left.tolist(), pairs.right.tolist(), pairs.score.tolist()):
        assert score == float(np.float32(_similarity(docs[i], docs[j], "jaccard")))
        assert _similarity(docs[i], docs[j], "jaccard") >= 0.3


# --------------------------------------------------------------------------- keyed stage


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 40), min_size=1, max_size=25), min_size=2, max_size=12),
       st.sampled_from([0.2, 0.5, 0.7, 0.9, 1.0]))
def test_prefix_keys_are_shared_by_every_pair_at_the_threshold(sets, threshold):
    """Prefix filtering is exact for Jaccard: a pair at or above the threshold shares a key."""
    from neardup.methods.ngram import prefix_sizes

    hashes = [np.unique(np.asarray(s, np.uint64)) for s in sets]
    sizes = np.array([h.size for h in hashes])
    prefix = prefix_sizes(sizes, threshold, containment=False)
    for i in range(len(hashes)):
        for j in range(i + 1, len(hashes)):
            a, b = set(hashes[i].tolist()), set(hashes[j].tolist())
            if len(a & b) / len(a | b) >= threshold:
                assert set(hashes[i][: prefix[i]].tolist()) & set(hashes[j][: prefix[j]].tolist())


def test_keyed_contract_declares_ragged_sets():
    method = NGramOverlap(threshold=0.5, max_df=100)
    caps = method.capabilities
    assert caps.reads.sets and caps.reads.arrays == ()
    assert not caps.fixed_width  # verification reads ragged sets, not fixed-width rows
    assert caps.keyed.star_upto == 100
    sketch = method.sketch(["a b c d e f", "", "a b c d e g"])
    keys = method.candidate_keys(sketch)
    assert set(keys.docs.tolist()) == {0, 2}  # the empty document files no key
    assert keys.payload.shape == keys.keys.shape
