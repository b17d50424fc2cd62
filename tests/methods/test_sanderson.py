"""Mutual retrieval (Sanderson 1997): the mutual rule, the time window, rankings, edge
cases, parameters, and the Reuters-21578 collection."""

from __future__ import annotations

import doctest
import itertools
import time
from collections import defaultdict

import numpy as np
import pytest

import neardup.methods.sanderson as sanderson_module
from neardup.graph.edges import Pairs
from neardup.methods.base import Sketch
from neardup.methods.sanderson import Sanderson
from neardup.text.normalize import NormalizeConfig

# --------------------------------------------------------------------------- helpers


def words(rng: np.random.Generator, k: int, vocab: int = 3000) -> list[str]:
    return [f"w{int(x)}" for x in rng.integers(0, vocab, size=k)]


def background(seed: int = 0, n: int = 300) -> list[str]:
    """Unrelated documents over a large vocabulary, so idf and the rest of each ranking
    behave as in a real collection."""
    rng = np.random.default_rng(seed)
    return [" ".join(words(rng, int(rng.integers(30, 90)))) for _ in range(n)]


def pair_set(pairs: Pairs) -> set[tuple[int, int]]:
    return set(zip(pairs.left.tolist(), pairs.right.tolist()))


def planted(seed: int = 1):
    """Background plus known relations; returns (texts, positions by name)."""
    rng = np.random.default_rng(seed + 1000)  # not the background's stream
    texts = background(seed)
    pos = {}

    def add(name: str, text: str) -> None:
        pos[name] = len(texts)
        texts.append(text)

    story = words(rng, 60)
    add("a", " ".join(story))
    add("a_copy", " ".join(story).upper().replace(" ", ", "))  # same after normalization
    edited = list(story)
    edited[10] = "zzcorrection"
    add("a_edit", " ".join(edited))  # one word corrected: still a mutual pair
    add("", "")
    add("punct", " ,;  ...")
    add("empty2", "")
    return texts, pos


# --------------------------------------------------------------------------- behaviour


@pytest.mark.parametrize("ranking", ["bm25", "tfidf"])
def test_copies_pair_and_unrelated_do_not(ranking):
    texts, pos = planted()
    method = Sanderson(ranking=ranking)
    pairs = method.find_pairs(method.sketch(texts))
    a, c, e = pos["a"], pos["a_copy"], pos["a_edit"]
    assert pair_set(pairs) == {(a, c), (a, e), (c, e)}
    score = dict(zip(zip(pairs.left.tolist(), pairs.right.tolist()), pairs.score.tolist()))
    assert score[(a, c)] == 1.0
    assert 0.8 <= score[(a, e)] < 1.0
    assert np.all((pairs.score >= 0) & (pairs.score <= 1))
    assert np.all(pairs.left < pairs.right)
    assert method.stats_["pairs"] == len(pairs) == method.stats_["mutual"]


def test_mutual_rule_hub_is_retrieved_but_not_paired():
    """A hub containing three short stories is retrieved by each (one-way), but its own
    query spreads over all three, so it retrieves none: no pair. b=0 (no length
    normalization, as in Sanderson's system) makes the short stories retrieve the hub."""
    rng = np.random.default_rng(1005)
    texts = background(5)
    shorts = [" ".join(words(rng, 25, vocab=10**6)) for _ in range(3)]
    first = len(texts)
    texts += shorts
    hub = len(texts)
    texts.append(" ".join(shorts))
    a = len(texts)
    control = " ".join(words(rng, 30, vocab=10**6))
    texts += [control, control + " extra"]  # a true mutual pair
    method = Sanderson(b=0.0, time_window_hours=None)
    pairs = method.find_pairs(method.sketch(texts))
    assert pair_set(pairs) == {(a, a + 1)}
    one_way = pair_set(method.one_way_)
    for k in range(3):
        assert (first + k, hub) in one_way  # the short story retrieves the hub...
        assert (first + k, hub) not in pair_set(method.mutual_)  # ...not the reverse
    assert method.stats_["one_way"] == len(method.one_way_) >= 3


def test_margin_requires_partner_to_stand_out():
    """A partner just over the threshold, with another result just under it, stands out
    only when the margin allows the small gap. Queries hold every term (query_terms=100),
    so normalized scores follow the share of words in common."""
    rng = np.random.default_rng(1003)
    texts = background(3)
    story = words(rng, 40, vocab=10**6)
    near_a = list(story)
    near_a[:3] = words(rng, 3, vocab=10**6)  # ~0.9 of the story
    near_b = list(story)
    near_b[:8] = words(rng, 8, vocab=10**6)  # ~0.8 of the story
    base = len(texts)
    texts += [" ".join(story), " ".join(near_a), " ".join(near_b)]
    kwargs = dict(query_terms=100, threshold=0.85, time_window_hours=None)
    loose = Sanderson(margin=1.0, **kwargs)
    strict = Sanderson(margin=1.5, **kwargs)
    sketch = loose.sketch(texts)
    assert pair_set(loose.find_pairs(sketch)) == {(base, base + 1)}
    assert pair_set(strict.find_pairs(sketch)) == set()
    assert pair_set(Sanderson(threshold=0.75, margin=1.5, query_terms=100).find_pairs(sketch)) == {
        (base, base + 1), (base, base + 2), (base + 1, base + 2)
    }


def test_exact_copies_more_than_top_k_stay_connected():
    from scipy.sparse.csgraph import connected_components
    import scipy.sparse as sp

    rng = np.random.default_rng(1002)
    texts = background(2)
    story = " ".join(words(rng, 50))
    copies = [len(texts) + 7 * k for k in range(9)]  # spread among other documents
    for k in range(9):
        texts += [story] + background(100 + k, n=6)
    method = Sanderson(top_k=3, time_window_hours=None)
    pairs = method.find_pairs(method.sketch(texts))
    assert set(np.concatenate([pairs.left, pairs.right]).tolist()) == set(copies)
    graph = sp.coo_matrix((np.ones(len(pairs)), (pairs.left, pairs.right)), shape=(len(texts),) * 2)
    _, labels = connected_components(graph, directed=False)
    assert len(set(labels[copies].tolist())) == 1
    assert np.all(pairs.score == 1.0)


def test_time_window_reports_far_pairs_separately():
    texts, pos = planted()
    n = len(texts)
    t0 = np.datetime64("1987-03-02T11:44:41", "s")
    dates = np.full(n, t0)
    dates[pos["a_copy"]] = t0 + np.timedelta64(72 * 3600, "s")  # 72 h later: outside
    dates[pos["a_edit"]] = t0 + np.timedelta64(3600, "s")  # 1 h later: inside
    a, c, e = pos["a"], pos["a_copy"], pos["a_edit"]
    method = Sanderson()
    sketch = method.sketch(texts)
    pairs = method.find_pairs(sketch, dates=dates)
    assert pair_set(pairs) == {(a, e)}
    assert pair_set(method.outside_window_) == {(a, c), (c, e)}
    assert pair_set(method.mutual_) == {(a, c), (a, e), (c, e)}
    mutual = zip(method.mutual_.left.tolist(), method.mutual_.right.tolist())
    assert method.outside_window_mask_.tolist() == [p in {(a, c), (c, e)} for p in mutual]
    assert method.stats_["outside_window"] == 2

    # The pipeline's entry point returns the same, in one result object.
    matches = method.match(sketch, dates=dates)
    assert pair_set(matches.pairs) == {(a, e)}
    assert pair_set(matches.outside_window) == {(a, c), (c, e)}
    assert matches.stats["outside_window"] == 2
    # Without dates there is no window.
    assert len(method.find_pairs(sketch)) == 3
    # A wider window, no window, or unknown dates keep everything.
    assert len(Sanderson(time_window_hours=100).find_pairs(sketch, dates=dates)) == 3
    assert len(Sanderson(time_window_hours=None).find_pairs(sketch, dates=dates)) == 3
    unknown = dates.copy()
    unknown[c] = np.datetime64("NaT")
    assert len(method.find_pairs(sketch, dates=unknown)) == 3
    assert len(method.outside_window_) == 0


def test_deterministic_and_batch_split_invariant():
    texts, _ = planted(7)
    method = Sanderson()
    whole = method.find_pairs(method.sketch(texts))
    again = Sanderson().find_pairs(Sanderson().sketch(texts))
    split = Sketch.concat([method.sketch(texts[:100]), method.sketch(texts[100:])])
    for other in (again, method.find_pairs(split)):
        assert np.array_equal(whole.left, other.left)
        assert np.array_equal(whole.right, other.right)
        assert np.array_equal(whole.score, other.score)


def test_small_blocks_give_the_same_pairs(monkeypatch):
    texts, _ = planted(8)
    method = Sanderson(time_window_hours=None)
    sketch = method.sketch(texts)
    expected = method.find_pairs(sketch)
    monkeypatch.setattr(sanderson_module, "_BLOCK_SCORES", 50)
    got = method.find_pairs(sketch)
    assert pair_set(got) == pair_set(expected) and len(expected) > 0
    assert np.array_equal(got.score, expected.score)


def test_empty_documents_never_paired_and_tiny_corpora():
    method = Sanderson()
    sketch = method.sketch(["", "", " ,. ", "", "same words here", "same words here"])
    assert sketch.n_features.tolist() == [0, 0, 0, 0, 3, 3]
    assert pair_set(method.find_pairs(sketch)) == {(4, 5)}
    for texts in ([], [""], ["one doc"], ["", ""], ["solo text", ""]):
        assert len(method.find_pairs(method.sketch(texts))) == 0
    assert len(method.mutual_) == len(method.one_way_) == len(method.outside_window_) == 0


def test_sketch_keeps_token_counts():
    method = Sanderson()
    sketch = method.sketch(["b a b c b", "Hello, hello!"])
    assert sketch.n_features.tolist() == [5, 2]
    sets = sketch.sets
    first = sets.doc(0)
    assert np.all(first[1:] >= first[:-1])  # sorted, repeats kept
    assert sorted(np.unique(first, return_counts=True)[1].tolist()) == [1, 1, 3]
    assert len(np.unique(sets.doc(1))) == 1  # case folded: one term, twice


def test_unicode_and_normalization():
    method = Sanderson(time_window_hours=None)
    texts = background(4, n=50) + [
        "Ｔｈｅ ｃａｔ sat on the mat with a hat\u200b today",
        "The cat sat on the mat with a hat today",
    ]
    pairs = method.find_pairs(method.sketch(texts))
    assert pair_set(pairs) == {(50, 51)}
    strict = Sanderson(normalize=NormalizeConfig(nfkc=False, remove_invisible=False))
    assert pair_set(strict.find_pairs(strict.sketch(texts))) == set()


def test_query_terms_and_top_k_matter():
    texts, pos = planted()
    one_term = Sanderson(query_terms=1, margin=1.0, time_window_hours=None)
    # A one-term query scores every document holding that term: many retrievals.
    one_term.find_pairs(one_term.sketch(texts))
    default = Sanderson(time_window_hours=None)
    default.find_pairs(default.sketch(texts))
    assert default.stats_["scores"] > one_term.stats_["scores"]


def test_docstring_example():
    assert doctest.testmod(sanderson_module).failed == 0


# --------------------------------------------------------------------------- parameters


def test_get_params_and_repr():
    method = Sanderson(query_terms=10, ranking="tfidf", top_k=3, margin=1.1, threshold=0.7,
                       time_window_hours=None, seed=4)  # fmt: skip
    params = method.get_params()
    assert params == {
        "query_terms": 10, "ranking": "tfidf", "k1": 1.2, "b": 0.75, "top_k": 3,
        "margin": 1.1, "threshold": 0.7, "time_window_hours": None,
        "normalize": NormalizeConfig().get_params(), "seed": 4,
    }  # fmt: skip
    assert Sanderson(**{**params, "normalize": NormalizeConfig()}).get_params() == params
    assert repr(method).startswith("Sanderson(query_terms=10, ranking='tfidf'")
    assert Sanderson.name == "sanderson"


@pytest.mark.parametrize(
    "name, value",
    [
        ("query_terms", 0), ("query_terms", 2.5), ("ranking", "bm26"), ("k1", 0.0),
        ("k1", -1.0), ("b", 1.5), ("top_k", 0), ("top_k", True), ("margin", 0.9),
        ("threshold", 1.2), ("threshold", float("nan")), ("time_window_hours", 0),
        ("time_window_hours", -5), ("time_window_hours", "48"),
        ("time_window_hours", float("inf")), ("normalize", {}), ("seed", -1),
    ],
)  # fmt: skip
def test_invalid_params_name_the_parameter(name, value):
    with pytest.raises(ValueError, match=rf"Sanderson: parameter '{name}'"):
        Sanderson(**{name: value})


def test_find_pairs_input_errors():
    method = Sanderson()
    with pytest.raises(ValueError, match="parameter 'sketch' must carry token hashes"):
        method.find_pairs(Sketch(np.zeros(3, np.int64)))
    sketch = method.sketch(["a b", "a b", "c"])
    with pytest.raises(ValueError, match="parameter 'dates'"):
        method.find_pairs(sketch, dates=np.zeros(3))
    with pytest.raises(ValueError, match="parameter 'dates'"):
        method.find_pairs(sketch, dates=np.array(["2020-01-01"] * 2, "datetime64[s]"))


# --------------------------------------------------------------------------- Reuters


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:.*not a valid date:UserWarning")
def test_reuters_identical_bodies_and_types():
    from neardup.methods.pair_types import PAIR_TYPES, classify_pairs, count_pair_types
    from neardup.io import ReaderConfig, find_reuters_dir, iter_records, read_corpus
    from neardup.text import normalize_batch

    root = find_reuters_dir()
    if root is None:
        pytest.skip("Reuters-21578 not found (../shared/data or $NEARDUP_REUTERS_DIR)")
    files = sorted(str(p) for p in root.glob("reut2-*.sgm"))
    texts, dates = [], []
    for batch in read_corpus(files, ReaderConfig()):  # text = TITLE + BODY
        texts += batch.texts
        dates.append(batch.dates)
    dates = np.concatenate(dates)
    assert len(texts) == 21578

    start = time.perf_counter()
    method = Sanderson()
    pairs = method.find_pairs(method.sketch(texts), dates=dates)
    seconds = time.perf_counter() - start

    groups = defaultdict(list)
    for k, record in enumerate(iter_records(files)):
        body = (record["body"] or "").strip()
        if body:
            groups[body].append(k)
    identical = [p for g in groups.values() for p in itertools.combinations(g, 2)]
    mutual = pair_set(method.mutual_)  # inside the window or not
    found = sum(p in mutual for p in identical)
    recall = found / len(identical)

    normalized = normalize_batch(texts)
    sets = {"mutual <= 48h": pairs, "mutual > 48h": method.outside_window_,
            "one-way": method.one_way_}  # fmt: skip
    print(f"\nSanderson on Reuters-21578: {seconds:.1f} s, stats {method.stats_}")
    print(f"identical-body pairs: {len(identical)}, found {found} ({recall:.1%})")
    print("report: 322 mutual <= 48h (320 exact), 33 mutual > 48h, 283 one-way (139 expanded)")
    for name, subset in sets.items():
        counts = count_pair_types(classify_pairs(subset, normalized, dates=dates))
        assert sum(counts.values()) == len(subset) and set(counts) == set(PAIR_TYPES)
        print(f"  {name:14s} {len(subset):5d} {counts}")
    assert recall >= 0.9
    exact_in = count_pair_types(classify_pairs(pairs, normalized, dates=dates))["exact"]
    assert exact_in >= 250  # the bulk of the report's 320 exact duplicates
