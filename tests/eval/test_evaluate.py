"""evaluate() and recall_at_k() (neardup/eval/evaluate.py)."""

from __future__ import annotations

import numpy as np
import pytest

from neardup.eval.evaluate import build_method, evaluate, recall_at_k
from neardup.eval.labeled import LabeledCorpus
from neardup.eval.metrics import cluster_metrics
from neardup.graph import Pairs
from neardup.pipeline import ClusterConfig
from neardup.text import ShingleConfig

WORDS = ("wire story bank rate wheat corn oil price market senate house vote storm fire "
         "river bridge mayor city council school board police court judge jury").split()


def planted(n_clusters=8, seed=0, substitutions=2):
    """Clusters of 1-3 noisy copies of random 40-word stories."""
    rng = np.random.default_rng(seed)
    ids, texts, labels = [], [], []
    for c in range(n_clusters):
        base = rng.choice(WORDS, 40).tolist()
        for copy in range(int(rng.integers(1, 4))):
            words = list(base)
            for _ in range(copy * substitutions):
                words[int(rng.integers(len(words)))] = str(rng.choice(WORDS))
            ids.append(f"c{c}-{copy}")
            texts.append(" ".join(words))
            labels.append(f"c{c}")
    return LabeledCorpus(ids=ids, texts=texts, clusters=labels)


def exact_copies():
    texts = ["The cat sat on the mat.", "the cat sat on the mat", "A dog barked twice.",
             "a dog  barked twice", "Nothing like the others."]
    return LabeledCorpus(ids=list("abcde"), texts=texts, clusters=["x", "x", "y", "y", "z"])


def test_evaluate_reports_metrics_time_and_params():
    corpus = exact_copies()
    report = evaluate(corpus, "exact", params={})
    assert report["ari"] == 1.0 and report["f1"] == 1.0
    assert report["n_docs"] == 5
    assert report["n_true_clusters"] == report["n_pred_clusters"] == 3
    assert report["method"] == "exact"
    assert report["params"]["seed"] == 0 and isinstance(report["params"]["normalize"], dict)
    assert report["cluster"]["algorithm"] == "components"
    assert report["seconds"] >= 0 and set(report["timings"]) >= {"sketch", "pairs", "cluster"}
    assert "retrieval" not in report


def test_evaluate_metrics_match_cluster_metrics_of_the_run():
    import neardup

    corpus = planted(seed=3)
    report = evaluate(corpus, "minhash", params={"threshold": 0.6})
    result = neardup.dedup(corpus.texts, method="minhash", threshold=0.6)
    expected = cluster_metrics(corpus.clusters, result.clusters)
    assert {k: report[k] for k in expected} == expected


def test_evaluate_accepts_dict_configs_and_cluster_dict():
    corpus = planted(seed=1)
    as_objects = evaluate(corpus, "ngram", params={"shingle": ShingleConfig(n=2)},
                          cluster=ClusterConfig(algorithm="components"))
    as_dicts = evaluate(corpus, "ngram", params={"shingle": {"unit": "word", "n": 2}},
                        cluster={"algorithm": "components"})
    assert as_objects["params"] == as_dicts["params"]
    assert as_objects["ari"] == as_dicts["ari"]


def test_evaluate_rejects_bad_input():
    corpus = exact_copies()
    with pytest.raises(ValueError, match="does not take parameter"):
        evaluate(corpus, "exact", params={"threshold": 0.5})
    with pytest.raises(ValueError, match="must be one of"):
        evaluate(corpus, "nope", params={})
    with pytest.raises(ValueError, match="'cluster' must be a ClusterConfig"):
        evaluate(corpus, "exact", params={}, cluster={"bogus": 1})
    with pytest.raises(ValueError, match="must be a LabeledCorpus"):
        evaluate(["a"], "exact", params={})


def test_build_method_turns_dicts_into_configs():
    method = build_method("minhash", {"shingle": {"unit": "char", "n": 5}, "threshold": 0.3})
    assert method.shingle == ShingleConfig(unit="char", n=5)
    with pytest.raises(ValueError, match="ShingleConfig or a dict of its fields"):
        build_method("minhash", {"shingle": {"size": 5}})


def test_evaluate_with_ks_adds_retrieval():
    report = evaluate(exact_copies(), "exact", params={}, ks=(1, 2))
    assert report["retrieval"]["recall@1"] == 1.0
    assert report["retrieval"]["n_queries"] == 4


def test_evaluate_empty_corpus():
    empty = LabeledCorpus(ids=[], texts=[], clusters=[])
    report = evaluate(empty, "minhash", params={}, ks=[1])
    assert report["n_docs"] == 0 and report["ari"] == 1.0
    assert report["retrieval"]["n_queries"] == 0


# ------------------------------------------------------------------------ recall_at_k


def P(left, right, score):
    return Pairs(np.array(left), np.array(right), np.array(score, dtype=np.float32))


def test_recall_ranks_by_score():
    # 0's true duplicate is 2; it scores below the false candidate 1.
    pairs = P([0, 0, 3], [1, 2, 4], [0.9, 0.5, 0.7])
    labels = ["a", "b", "a", "c", "c"]
    out = recall_at_k(pairs, labels, ks=(1, 2))
    # queries: 0 (rank 2), 2 (only candidate 0: rank 1), 3 and 4 (rank 1 each)
    assert out["n_queries"] == 4
    assert out["recall@1"] == 0.75
    assert out["recall@2"] == 1.0
    assert out["mrr"] == pytest.approx((0.5 + 1 + 1 + 1) / 4)


def test_queries_without_candidates_are_misses():
    out = recall_at_k(P([0], [1], [1.0]), ["a", "a", "b", "b"], ks=[1, 10])
    assert out["n_queries"] == 4 and out["n_queries_without_candidates"] == 2
    assert out["recall@1"] == out["recall@10"] == 0.5


def test_singletons_are_not_queries():
    out = recall_at_k(P([0], [1], [0.2]), ["a", "b", "c"])
    assert out["n_queries"] == 0
    assert out["recall@1"] == out["recall@5"] == out["recall@10"] == out["mrr"] == 1.0


def test_ties_are_ranked_by_position():
    # Query 1 has candidates 0 (false) and 2 (true) with equal scores: 0 comes first.
    out = recall_at_k(P([0, 1], [1, 2], [0.8, 0.8]), ["x", "t", "t"], ks=[1])
    assert out["n_queries"] == 2
    assert out["recall@1"] == 0.5  # query 1 misses at k=1, query 2 hits


def test_repeated_pairs_count_once_with_the_best_score():
    pairs = P([0, 1, 0], [1, 0, 2], [0.1, 0.95, 0.5])
    out = recall_at_k(pairs, ["a", "a", "b"], ks=[1])
    assert out["recall@1"] == 1.0


def brute_force(pairs, labels, ks):
    labels = list(labels)
    n = len(labels)
    best = {}
    for a, b, s in zip(pairs.left.tolist(), pairs.right.tolist(), pairs.score.tolist()):
        if a == b:
            continue
        for q, c in ((a, b), (b, a)):
            best[(q, c)] = max(best.get((q, c), -np.inf), s)
    hits = {k: 0 for k in ks}
    queries = [i for i in range(n) if labels.count(labels[i]) > 1]
    for q in queries:
        cands = sorted(((-s, c) for (qq, c), s in best.items() if qq == q))
        ranks = [r for r, (_, c) in enumerate(cands) if labels[c] == labels[q]]
        for k in ks:
            hits[k] += bool(ranks) and ranks[0] < k
    return {k: hits[k] / len(queries) if queries else 1.0 for k in ks}


@pytest.mark.parametrize("seed", range(6))
def test_recall_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    labels = rng.integers(0, max(1, n // 2), n)
    m = int(rng.integers(0, 4 * n))
    pairs = Pairs(rng.integers(0, n, m), rng.integers(0, n, m),
                  rng.choice([0.25, 0.5, 0.75, 1.0], m))  # coarse scores: many ties
    ks = (1, 2, 5)
    out = recall_at_k(pairs, labels, ks)
    expected = brute_force(pairs, labels, ks)
    assert {k: out[f"recall@{k}"] for k in ks} == pytest.approx(expected)


def test_recall_validates_input():
    pairs = P([0], [5], [1.0])
    with pytest.raises(ValueError, match=r"positions in \[0, 3\)"):
        recall_at_k(pairs, ["a", "a", "b"])
    with pytest.raises(ValueError, match="'ks' must be an integer >= 1"):
        recall_at_k(P([0], [1], [1.0]), ["a", "a"], ks=[0])
    with pytest.raises(ValueError, match="at least one k"):
        recall_at_k(P([0], [1], [1.0]), ["a", "a"], ks=[])
    with pytest.raises(ValueError, match="must be a Pairs"):
        recall_at_k([(0, 1)], ["a", "a"])
    with pytest.raises(ValueError, match="1-D"):
        recall_at_k(P([0], [1], [1.0]), [["a", "a"]])


def test_groups_score_each_group_on_its_own_documents():
    corpus = exact_copies()
    groups = ["en", "en", "fr", "fr", "fr"]
    out = evaluate(corpus, "exact", groups=groups)
    assert sorted(out["groups"]) == ["en", "fr"]
    assert out["groups"]["en"]["n_docs"] == 2 and out["groups"]["fr"]["n_docs"] == 3
    assert out["groups"]["fr"]["n_true_clusters"] == 2
    assert out["groups"]["en"]["ari"] == pytest.approx(1.0)


def test_groups_must_match_the_corpus():
    with pytest.raises(ValueError, match="parameter 'groups' must hold one group per document"):
        evaluate(exact_copies(), "exact", groups=["en"])
