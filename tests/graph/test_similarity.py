"""Cosine-similarity neighbours with faiss (neardup/graph/similarity.py)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("faiss")

from neardup.graph import Pairs  # noqa: E402
from neardup.graph.similarity import chunk_similarity_pairs, similarity_pairs  # noqa: E402


def normalize(x):
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def random_unit(n, d, seed=0):
    return normalize(np.random.default_rng(seed).standard_normal((n, d)))


def clustered(n_clusters, size, d, spread, seed=0):
    """``n_clusters * size`` unit rows; rows i*size..(i+1)*size-1 share a centre."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_clusters, d))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    noise = rng.standard_normal((n_clusters * size, d)) * spread / np.sqrt(d)
    return normalize(np.repeat(centres, size, axis=0) + noise)


def pair_set(pairs):
    return set(zip(pairs.left.tolist(), pairs.right.tolist()))


def cosine(x):
    """All-pairs cosine in float64."""
    x = x.astype(np.float64)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x @ x.T


def brute_force(x, threshold, margin=1e-6):
    """(pairs with cosine >= threshold, pairs within ``margin`` of it, cosines), by numpy.

    Pairs within ``margin`` may go either way: the library thresholds float32 scores.
    """
    sim = cosine(x)
    i, j = np.triu_indices(x.shape[0], k=1)
    s = sim[i, j]
    above = {(a, b) for a, b, v in zip(i.tolist(), j.tolist(), s.tolist()) if v >= threshold}
    border = {
        (a, b) for a, b, v in zip(i.tolist(), j.tolist(), s.tolist()) if abs(v - threshold) < margin
    }
    return above, border, sim


def assert_canonical(pairs):
    assert pairs.left.dtype == np.int64 and pairs.score.dtype == np.float32
    assert (pairs.left < pairs.right).all()
    order = np.lexsort((pairs.right, pairs.left))
    assert (order == np.arange(len(pairs))).all()
    assert len(pair_set(pairs)) == len(pairs)
    assert ((pairs.score > 0) & (pairs.score <= 1)).all()


def recall(found, exact):
    return len(found & exact) / len(exact)


# --------------------------------------------------------------------- exact (flat) search


@pytest.mark.parametrize("threshold", [0.25, 0.4, 0.55, 1.0])
def test_flat_range_search_equals_brute_force(threshold):
    x = random_unit(400, 24, seed=1)
    x[7] = x[3]  # an exact duplicate: cosine 1, whatever float32 did to the norm
    pairs = similarity_pairs(x, threshold=threshold, index="flat")
    assert_canonical(pairs)
    exact, border, sim = brute_force(x, threshold)
    assert pair_set(pairs) - border == exact - border
    assert (3, 7) in pair_set(pairs)
    np.testing.assert_allclose(pairs.score, np.minimum(sim[pairs.left, pairs.right], 1), atol=1e-6)
    assert len(pairs.above(threshold)) == len(pairs)  # re-thresholding keeps every pair


def test_flat_range_search_on_clusters_finds_every_copy():
    x = clustered(40, 5, 64, spread=0.3)
    pairs = similarity_pairs(x, threshold=0.8)
    exact, border, _ = brute_force(x, 0.8)
    assert not border
    assert pair_set(pairs) == exact
    same_cluster = {(i, j) for i in range(200) for j in range(i + 1, 200) if i // 5 == j // 5}
    assert exact == same_cluster  # the fixture is what it claims to be


@pytest.mark.parametrize("k", [1, 3, 10])
def test_flat_knn_keeps_k_nearest_then_threshold(k):
    x = random_unit(300, 16, seed=2)
    threshold = 0.3
    pairs = similarity_pairs(x, threshold=threshold, k=k, index="flat")
    assert_canonical(pairs)
    sim = cosine(x)
    np.fill_diagonal(sim, -np.inf)
    expected = set()
    for i, row in enumerate(sim):
        for j in np.argsort(-row)[:k].tolist():
            if row[j] >= threshold:
                expected.add((min(i, j), max(i, j)))
    assert pair_set(pairs) == expected
    # Range search holds every kNN pair above the threshold.
    assert pair_set(pairs) <= pair_set(similarity_pairs(x, threshold=threshold))


def test_knn_with_many_identical_rows_excludes_self_and_keeps_k():
    x = np.repeat(random_unit(1, 8, seed=3), 12, axis=0)
    pairs = similarity_pairs(x, threshold=0.9, k=3, index="flat")
    assert_canonical(pairs)
    assert (pairs.score == 1).all()
    degree = np.bincount(np.concatenate([pairs.left, pairs.right]), minlength=12)
    assert (degree >= 3).all()  # each document kept 3 neighbours other than itself
    assert len(pairs) <= 12 * 3
    # Float32 normalisation leaves these rows' norm at 1 - 6e-8; still cosine 1.
    assert np.einsum("ij,ij->i", x, x)[0] != 1
    everything = similarity_pairs(x, threshold=1.0)
    assert len(everything) == 12 * 11 // 2 and (everything.score == 1).all()


# --------------------------------------------------------------------- approximate search


@pytest.fixture(scope="module")
def clustered_corpus():
    """~3,000 documents in clusters of 1..12 noisy copies, 96-d, and the exact pairs.

    All cluster centres lean towards one shared direction (median cosine between
    clusters ~0.46), as embeddings of one genre of text do, so clusters are not trivially
    far apart. Copies of a cluster have median cosine ~0.92: many exact pairs sit near
    the 0.9 threshold.
    """
    rng = np.random.default_rng(5)
    d = 96
    sizes = rng.integers(1, 13, size=600)
    sizes = sizes[np.cumsum(sizes) <= 3000]
    common = normalize(rng.standard_normal((1, d)))
    centres = normalize(common + rng.standard_normal((sizes.size, d)) / np.sqrt(d))
    noise = 0.3 * rng.standard_normal((int(sizes.sum()), d)) / np.sqrt(d)
    x = normalize(np.repeat(centres, sizes, axis=0) + noise)
    exact = pair_set(similarity_pairs(x, threshold=0.9, index="flat"))
    assert len(exact) > 8000
    return x, exact


@pytest.mark.parametrize(
    "index, options",
    [("hnsw", {}), ("hnsw", {"ef_search": 32, "hnsw_m": 16}), ("ivf", {}), ("ivf", {"nprobe": 4})],
)
def test_approximate_recall_against_exact(clustered_corpus, index, options):
    x, exact = clustered_corpus
    pairs = similarity_pairs(x, threshold=0.9, index=index, **options)
    assert_canonical(pairs)
    found = pair_set(pairs)
    assert found <= exact  # scores are exact: approximation only loses pairs
    r = recall(found, exact)
    assert r >= 0.95, f"{index} {options}: recall {r:.4f} of {len(exact)} exact pairs"


def test_recall_check_can_fail(clustered_corpus):
    # A starved HNSW graph does lose pairs on this corpus (recall ~0.84 with faiss 1.15).
    x, exact = clustered_corpus
    weak = similarity_pairs(
        x, threshold=0.9, index="hnsw", hnsw_m=4, ef_construction=8, ef_search=8
    )
    assert recall(pair_set(weak), exact) < 0.99


def test_auto_switches_to_ivf_above_exact_limit(clustered_corpus):
    x, _ = clustered_corpus
    auto = similarity_pairs(x, threshold=0.9, exact_limit=1000)
    ivf = similarity_pairs(x, threshold=0.9, index="ivf")
    assert pair_set(auto) == pair_set(ivf)
    flat = similarity_pairs(x, threshold=0.9, exact_limit=len(x))
    assert pair_set(flat) == pair_set(similarity_pairs(x, threshold=0.9, index="flat"))


def test_approximate_scores_equal_exact_scores(clustered_corpus):
    x, _ = clustered_corpus
    flat = similarity_pairs(x, threshold=0.9, index="flat")
    for index in ("hnsw", "ivf"):
        approx = similarity_pairs(x, threshold=0.9, index=index)
        lookup = dict(zip(zip(flat.left.tolist(), flat.right.tolist()), flat.score.tolist()))
        got = dict(zip(zip(approx.left.tolist(), approx.right.tolist()), approx.score.tolist()))
        assert all(lookup[p] == s for p, s in got.items())


# --------------------------------------------------------------------- batching, determinism


def assert_same(a, b):
    np.testing.assert_array_equal(a.left, b.left)
    np.testing.assert_array_equal(a.right, b.right)
    np.testing.assert_array_equal(a.score, b.score)


@pytest.mark.parametrize(
    "options",
    [{"index": "flat"}, {"index": "flat", "k": 4}, {"index": "hnsw"}, {"index": "ivf"}],
)
def test_batched_queries_equal_one_batch(options):
    x = clustered(150, 4, 48, spread=0.5, seed=7)
    one = similarity_pairs(x, threshold=0.7, query_batch=len(x), **options)
    assert len(one) > 300
    for batch in (1, 7, 64):
        assert_same(similarity_pairs(x, threshold=0.7, query_batch=batch, **options), one)


@pytest.mark.parametrize("index", ["flat", "hnsw", "ivf"])
def test_deterministic_and_thread_setting_restored(index):
    import faiss

    x = clustered(300, 3, 32, spread=0.6, seed=8)
    before = faiss.omp_get_max_threads()
    first = similarity_pairs(x, threshold=0.75, index=index)
    assert_same(similarity_pairs(x, threshold=0.75, index=index), first)
    assert_same(similarity_pairs(x, threshold=0.75, index=index, threads=1), first)
    assert faiss.omp_get_max_threads() == before


@pytest.mark.parametrize("n", [0, 1])
def test_tiny_inputs_give_no_pairs(n):
    for index in ("flat", "hnsw", "ivf"):
        pairs = similarity_pairs(random_unit(2, 4)[:n], threshold=0.5, index=index)
        assert len(pairs) == 0 and isinstance(pairs, Pairs)


# --------------------------------------------------------------------- chunks


def chunk_brute_force(x, offsets, threshold):
    doc_of = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    sim = cosine(x)
    best = {}
    for a in range(len(x)):
        for b in range(len(x)):
            da, db = int(doc_of[a]), int(doc_of[b])
            if da < db and sim[a, b] >= threshold:
                best[(da, db)] = max(best.get((da, db), -1.0), min(sim[a, b], 1.0))
    return best


@pytest.mark.parametrize("options", [{}, {"k": 3}, {"index": "hnsw"}, {"query_batch": 5}])
def test_chunk_pairs_score_the_best_chunk_pair(options):
    rng = np.random.default_rng(9)
    base = random_unit(30, 32, seed=10)
    # 25 documents of 0..4 chunks; chunks copy a base paragraph with noise, so documents
    # sharing a paragraph are partial duplicates.
    counts = rng.integers(0, 5, size=25)
    counts[0] = 0  # a document without chunks
    picks = rng.integers(0, 30, size=int(counts.sum()))
    x = normalize(base[picks] + 0.15 * rng.standard_normal((picks.size, 32)) / np.sqrt(32))
    doc1_start = int(counts[0])
    if counts[1] >= 2:  # two identical chunks inside one document: no self pair
        x[doc1_start + 1] = x[doc1_start]
    offsets = np.concatenate([[0], np.cumsum(counts)])
    pairs = chunk_similarity_pairs(x, offsets, threshold=0.8, **options)
    assert_canonical(pairs)
    expected = chunk_brute_force(x, offsets, 0.8)
    assert len(expected) > 10
    got = dict(zip(zip(pairs.left.tolist(), pairs.right.tolist()), pairs.score.tolist()))
    if "k" in options:
        # kNN may miss a document pair, or its best chunk pair, but never invents one.
        assert set(got) <= set(expected)
        assert len(got) >= 0.5 * len(expected)
        assert all(s <= expected[p] + 1e-6 for p, s in got.items())
    else:
        assert set(got) == set(expected)
        for p, s in got.items():
            assert s == pytest.approx(expected[p], abs=1e-6)
    assert pairs.right.max() < 25
    assert 0 not in pairs.left.tolist()  # document 0 has no chunks


def test_chunk_pairs_of_single_chunk_documents_equal_similarity_pairs():
    x = clustered(30, 4, 32, spread=0.5, seed=11)
    offsets = np.arange(len(x) + 1)
    chunked = chunk_similarity_pairs(x, offsets, threshold=0.7)
    assert_same(chunked, similarity_pairs(x, threshold=0.7))


def test_chunk_pairs_one_document_has_no_pairs():
    x = np.repeat(random_unit(1, 8), 5, axis=0)
    assert len(chunk_similarity_pairs(x, [0, 5], threshold=0.5)) == 0
    assert len(chunk_similarity_pairs(x[:0], [0, 0, 0], threshold=0.5)) == 0


# --------------------------------------------------------------------- invalid input


def with_nan_in_row_5(x):
    x = x.copy()
    x[5, 1] = np.nan
    return x


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda x: x.astype(np.float64), "must be a float32 array; got dtype float64"),
        (lambda x: x * 2, "L2-normalised rows .* got norm 2 in row 0"),
        (with_nan_in_row_5, "NaN or infinity in row 5"),
        (lambda x: x[0], "must be a 2-D array"),
        (lambda x: np.zeros((3, 4), np.float32), "norm 0 in row 0.*all-zero row"),
        (lambda x: x.tolist(), "float32"),
    ],
)
def test_bad_embeddings_raise(make, match):
    x = random_unit(10, 4)
    with pytest.raises(ValueError, match=match):
        similarity_pairs(make(x), threshold=0.5)
    with pytest.raises(ValueError, match=match):
        chunk_similarity_pairs(make(x), [0, len(x)], threshold=0.5)


@pytest.mark.parametrize(
    "options, match",
    [
        ({"threshold": 0.0}, r"'threshold' must be a number in \(0, 1\]"),
        ({"threshold": 1.5}, "'threshold' must be a number in"),
        ({"threshold": float("nan")}, "'threshold' must be a number in"),
        ({"threshold": 0.5, "k": 0}, "'k' must be an integer >= 1"),
        ({"threshold": 0.5, "index": "annoy"}, "'index' must be one of 'auto', 'flat'"),
        ({"threshold": 0.5, "query_batch": 0}, "'query_batch' must be an integer >= 1"),
        ({"threshold": 0.5, "threads": 0}, "'threads' must be an integer >= 1"),
        ({"threshold": 0.5, "seed": -1}, "'seed' must be an integer in"),
        ({"threshold": 0.5, "nlist": 0}, "'nlist' must be an integer >= 1"),
        ({"threshold": 0.5, "deterministic": "yes"}, "'deterministic' must be True or False"),
    ],
)
def test_bad_parameters_raise(options, match):
    with pytest.raises(ValueError, match=f"similarity_pairs: parameter {match}"):
        similarity_pairs(random_unit(10, 4), **options)


@pytest.mark.parametrize("offsets", [[0, 3], [1, 10], [0, 6, 4, 10], [[0, 10]], [0.0, 10.0], []])
def test_bad_offsets_raise(offsets):
    with pytest.raises(ValueError, match="chunk_similarity_pairs: parameter 'offsets' must be"):
        chunk_similarity_pairs(random_unit(10, 4), offsets, threshold=0.5)
