"""Training pairs and cluster batches built from labeled clusters."""

from __future__ import annotations

import numpy as np
import pytest

from neardup.eval.labeled import LabeledCorpus
from neardup.train.data import (
    add_hard_negatives,
    cluster_batches,
    hard_negative_links,
    default_benchmark_dir,
    load_training_corpus,
    make_pairs,
    mine_hard_negatives,
)

pytestmark = pytest.mark.train

_WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron".split()


def _corpus(n_clusters: int = 12, size: int = 4, seed: int = 0) -> LabeledCorpus:
    rng = np.random.default_rng(seed)
    texts, clusters = [], []
    for c in range(n_clusters):
        base = " ".join(rng.choice(_WORDS, 30)) + f" story{c}"
        for k in range(size if c % 3 else 1):  # every third cluster is a singleton
            texts.append(base + f" copy{k}")
            clusters.append(str(c))
    ids = [f"d{i}" for i in range(len(texts))]
    return LabeledCorpus(ids=np.array(ids, dtype=object), texts=texts, clusters=np.array(clusters, dtype=object))


def test_pairs_are_labeled_by_the_true_clusters():
    corpus = _corpus()
    pairs = make_pairs(corpus, seed=1)
    cluster_of = dict(zip(corpus.texts, corpus.clusters))
    same = np.array([cluster_of[a] == cluster_of[b] for a, b in zip(pairs.text_a, pairs.text_b)])
    assert np.array_equal(same, pairs.label == 1.0)
    assert np.all((pairs.kind == "positive") == (pairs.label == 1.0))
    assert all(a != b for a, b in zip(pairs.text_a, pairs.text_b))


def test_pairs_mix_hard_and_random_negatives_and_repeat_with_the_seed():
    corpus = _corpus()
    pairs = make_pairs(corpus, seed=3, hard_share=2 / 3)
    counts = pairs.counts()
    negatives = len(pairs) - counts["positive"]
    assert negatives == counts["positive"]  # negatives_per_positive=1
    assert counts.get("mined_negative", 0) >= 0.5 * negatives
    again = make_pairs(corpus, seed=3, hard_share=2 / 3)
    assert again.text_a == pairs.text_a and again.text_b == pairs.text_b


def test_explicit_negative_links_become_hard_negatives():
    corpus = _corpus()
    negative_of = np.array([None] * len(corpus), dtype=object)
    negative_of[0] = corpus.clusters[-1]  # doc 0 is a hard negative of the last cluster
    pairs = make_pairs(corpus, negative_of=negative_of, seed=0)
    hard = pairs.kind == "hard_negative"
    assert hard.any()
    last = {t for t, c in zip(corpus.texts, corpus.clusters) if c == corpus.clusters[-1]}
    for a, b in zip(np.array(pairs.text_a, dtype=object)[hard], np.array(pairs.text_b, dtype=object)[hard]):
        assert corpus.texts[0] in (a, b) and (a in last or b in last)


def test_positives_are_capped_per_cluster():
    texts = [f"same story number {i % 3} with words {' '.join(_WORDS)}" for i in range(60)]
    clusters = np.array(["big"] * 60, dtype=object)
    corpus = LabeledCorpus(ids=np.array([str(i) for i in range(60)], dtype=object), texts=texts, clusters=clusters)
    pairs = make_pairs(corpus, max_positives_per_cluster=25, seed=0)
    assert pairs.counts()["positive"] == 25


def test_mined_negatives_cross_clusters():
    corpus = _corpus()
    pairs = mine_hard_negatives(corpus.texts, corpus.clusters, per_doc=2)
    assert len(pairs) > 0
    assert np.all(pairs[:, 0] < pairs[:, 1])
    assert np.all(corpus.clusters[pairs[:, 0]] != corpus.clusters[pairs[:, 1]])


def test_cluster_batches_cover_each_cluster_once():
    corpus = _corpus(n_clusters=30)
    batches = cluster_batches(corpus.clusters, batch_size=8, per_cluster=2, seed=0)
    assert all(len(b) <= 8 for b in batches)
    flat = np.concatenate(batches)
    assert len(flat) == len(set(flat.tolist()))  # no document twice in an epoch
    for batch in batches:
        labels, counts = np.unique(corpus.clusters[batch], return_counts=True)
        multi = {c for c in corpus.clusters if (corpus.clusters == c).sum() >= 2}
        for label, count in zip(labels, counts):
            if label in multi:
                assert count == 2  # a positive pair for in-batch losses
    with pytest.raises(ValueError, match="per_cluster"):
        cluster_batches(corpus.clusters, per_cluster=1)


def test_hard_negative_links_join_linked_and_mined_clusters():
    clusters = np.array(["b", "b", "a", "a", "c", "d"], dtype=object)  # numbered a=0 b=1 c=2 d=3
    negative_of = np.array([None, None, None, None, "a", "zzz"], dtype=object)  # zzz: unknown
    mined = np.array([[0, 5], [2, 3]])  # b~d across clusters; a-a inside one cluster: ignored
    links = hard_negative_links(clusters, negative_of, mined_pairs=mined)
    assert {k: v.tolist() for k, v in links.items()} == {0: [2], 1: [3], 3: [1]}
    assert hard_negative_links(clusters) == {}


def test_add_hard_negatives_brings_linked_clusters_into_the_batch():
    clusters = np.repeat(np.array([f"c{i:02d}" for i in range(12)], dtype=object), 3)
    links = {0: np.array([11])}  # c11 mimics c00
    batches = cluster_batches(clusters, batch_size=6, per_cluster=2, seed=5)
    added = add_hard_negatives(batches, clusters, links, seed=5)
    codes = np.unique(clusters, return_inverse=True)[1]
    for before, after in zip(batches, added):
        assert np.array_equal(after[: len(before)], before)  # appended, nothing replaced
        assert len(np.unique(after)) == len(after)
        if 0 in codes[before] and 11 not in codes[before]:
            assert (codes[after] == 11).sum() == 2
        else:
            assert len(after) == len(before)
    assert add_hard_negatives(batches, clusters, {}) is batches


def test_training_corpus_refuses_the_test_split():
    with pytest.raises(ValueError, match="test"):
        load_training_corpus(split="test")


@pytest.mark.skipif(default_benchmark_dir() is None, reason="standard benchmark not in this checkout")
def test_default_training_corpus_is_the_benchmark_train_split():
    corpus, negative_of = load_training_corpus()
    assert set(corpus.splits.tolist()) == {"train"}
    assert negative_of is not None and sum(v is not None for v in negative_of) > 100
