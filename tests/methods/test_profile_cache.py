"""Document profiles: computed once per document, kept between the verifier's batches,
and giving exactly the features computed from the texts."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rapidfuzz")

from neardup.methods.pair_features import (  # noqa: E402
    LEXICAL_FEATURES,
    document_profiles,
    pair_features,
    profile_pair_features,
)
from neardup.methods.profile_cache import ProfileCache  # noqa: E402


@pytest.fixture(scope="module")
def texts():
    """Copies of a few demo stories (noisy reprints) and some other stories, then a head
    found whole inside another text (the rapidfuzz shortcut), an empty text and one
    without numbers."""
    import gzip
    import json
    from collections import defaultdict

    from neardup.data import demo_corpus_path

    by_cluster = defaultdict(list)
    with gzip.open(demo_corpus_path(), "rt") as handle:
        for line in handle:
            record = json.loads(line)
            by_cluster[record["cluster"]].append(record["text"])
    copies = [t for group in by_cluster.values() if len(group) >= 3 for t in group[:3]][:15]
    others = [group[0] for group in by_cluster.values() if len(group) == 1][:9]
    texts = copies + others
    return texts + [texts[0][:200], "", "no figures here at all"]


class _Source:
    """Stands for a work directory's text reader (weak-referenceable)."""


def _profile_columns(profiles, a, b, features):
    cols = profile_pair_features(profiles, a, b, features=features, threads=1)
    return np.column_stack([np.asarray(cols[f], np.float32) for f in features])


def test_taken_profiles_give_the_features_of_the_texts(texts):
    left, right = np.triu_indices(len(texts), 1)
    features = list(LEXICAL_FEATURES)
    expected = pair_features(texts, left, right, features=features, threads=1)
    whole = document_profiles(texts)
    np.testing.assert_array_equal(_profile_columns(whole, left, right, features), expected)
    # The same documents taken in another order, as ProfileCache.profiles gathers them.
    order = np.random.default_rng(0).permutation(len(texts))
    taken = whole.take(order).take(np.argsort(order))
    np.testing.assert_array_equal(_profile_columns(taken, left, right, features), expected)
    assert taken.nbytes() > 0 and len(taken) == len(texts)


def test_cache_profiles_each_document_once_per_source(texts):
    cache = ProfileCache()
    source = _Source()
    computed = []

    def compute(ids):
        def run(where):
            computed.extend(ids[where].tolist())
            return document_profiles([texts[i] for i in ids[where].tolist()])
        return run

    first = np.arange(0, 12)
    second = np.arange(6, 20)
    cache.profiles(first, source, compute(first))
    got = cache.profiles(second, source, compute(second))
    assert sorted(computed) == list(range(20))  # 6..11 were kept, not recomputed
    assert (cache.hits, cache.misses) == (6, 20)
    np.testing.assert_array_equal(got.lengths, document_profiles([texts[i] for i in second]).lengths)
    assert got.aligned == document_profiles([texts[i] for i in second]).aligned
    # Another source: the same positions are other documents, nothing is reused.
    computed.clear()
    cache.profiles(first, _Source(), compute(first))
    assert computed == first.tolist()
    # No source (texts given as a list): nothing kept.
    computed.clear()
    cache.profiles(first, None, compute(first))
    cache.profiles(first, None, compute(first))
    assert computed == first.tolist() * 2


def test_cache_stays_within_its_budget(texts):
    one = document_profiles(texts[:4]).nbytes()
    cache = ProfileCache(max_bytes=int(one * 1.5))
    source = _Source()
    for start in (0, 4, 8):
        ids = np.arange(start, start + 4)
        cache.profiles(ids, source, lambda where, ids=ids: document_profiles(
            [texts[i] for i in ids[where].tolist()]))
        assert cache._bytes <= cache.max_bytes
    # The oldest documents were dropped: what is kept is the newest batch's last ones.
    kept = cache._ids.tolist()
    assert kept and kept == list(range(12 - len(kept), 12))


def test_cached_scoring_decides_as_the_texts_do(texts):
    """rerank's corpus-stage scoring through the profile cache, twice over overlapping
    batches, gives the decisions and scores of the scorer on the texts."""
    from neardup.methods.base import CandidateRows
    from neardup.methods.rerank import RerankMethod

    method = RerankMethod(threshold=0.5)
    scorer = method._get_scorer()

    class _Texts:
        def __init__(self, docs):
            self.source, self.docs = source, docs

        def take(self, positions):
            return [texts[i] for i in self.docs[np.asarray(positions)].tolist()]

    source = _Source()
    left, right = np.triu_indices(len(texts), 1)
    from neardup.methods.rerank import _template_pairs

    expected = scorer.score_positions(texts, left, right)
    # The template guard's verdicts, from the texts (the cached path reads only the
    # texts of short notices).
    expected[_template_pairs(texts, left, right) & (expected >= 0.5)] = 0.0
    for part in (slice(0, 150), slice(100, None)):
        docs = np.unique(np.concatenate((left[part], right[part])))
        rows = CandidateRows(docs, texts=_Texts(docs))
        a, b = np.searchsorted(docs, left[part]), np.searchsorted(docs, right[part])
        score, accept = method._score_verified(rows, a, b, np.ones(a.size, bool))
        np.testing.assert_array_equal(accept, expected[part] >= 0.5)
        np.testing.assert_array_equal(score[accept], expected[part][accept])
    assert scorer.profile_cache.hits > 0
    assert (expected >= 0.5).any() and (expected < 0.5).any()


def test_the_engines_row_sources_reach_the_cache(texts):
    """The cache keys documents by the engine's text source (``LazyTexts.source``): rows
    served by :class:`~neardup.engine.rows.ArrayRows`, as every engine serves them, are
    profiled once across overlapping batches (a renamed attribute once left the cache
    keeping nothing, silently)."""
    from neardup.engine.rows import ArrayRows
    from neardup.methods.rerank import RerankMethod

    class _Texts:
        def texts(self, docs):
            return [texts[i] for i in np.asarray(docs).tolist()]

    n = len(texts)
    store = ArrayRows(np.arange(n), {}, texts=_Texts())
    method = RerankMethod(threshold=0.5)
    cache = method._get_scorer().profile_cache
    left, right = np.triu_indices(n, 1)
    for part in (slice(0, 150), slice(100, None)):
        docs = np.unique(np.concatenate((left[part], right[part])))
        rows = store.rows(docs)
        a, b = np.searchsorted(docs, left[part]), np.searchsorted(docs, right[part])
        method._score_verified(rows, a, b, np.ones(a.size, bool))
    assert cache.misses == n and cache.hits > 0  # each document profiled once


def test_profiles_count_their_strings_at_their_real_size():
    # The cache evicts by this count: a Greek text's characters take 2 bytes each in
    # Python, a CJK one's up to 4, not one byte a character.
    import sys

    ascii_text, greek_text = "grain prices rose " * 40, "οι τιμές των σιτηρών " * 40
    ascii_profiles, greek_profiles = document_profiles([ascii_text]), document_profiles([greek_text])
    assert greek_profiles.aligned is not None
    strings = sum(sys.getsizeof(s) for part in (greek_profiles.aligned, greek_profiles.short_heads,
                                                greek_profiles.long_heads) if part for s in part)
    arrays = greek_profiles.lengths.nbytes + sum(s.hashes.nbytes + s.offsets.nbytes
                                                 for s in greek_profiles.sets.values())
    assert greek_profiles.nbytes() == arrays + strings
    assert strings > 2 * len(greek_profiles.aligned[0])  # two bytes a character at least
    assert ascii_profiles.nbytes() > 0


def test_profiles_handed_out_stay_whole_when_the_cache_grows_or_drops(texts):
    """A caller indexes the cache's own profiles through the rows it was given; later
    lookups append to the arena or drop its oldest documents, and must leave those
    profiles as they were."""
    features = list(LEXICAL_FEATURES)
    cache = ProfileCache(max_bytes=document_profiles(texts[:6]).nbytes())
    source = _Source()

    def compute(ids):
        return lambda where: document_profiles([texts[i] for i in ids[where].tolist()])

    first = np.arange(0, 6)
    found, rows = cache.lookup(first, source, compute(first))
    left, right = np.triu_indices(first.size, 1)
    expected = pair_features([texts[i] for i in first], left, right, features=features, threads=1)
    for start in (4, 10, 14, 18):  # overlapping batches: hits, appends and drops
        ids = np.arange(start, min(start + 6, len(texts)))
        got, at = cache.lookup(ids, source, compute(ids))
        assert np.array_equal(got.lengths[at], document_profiles([texts[i] for i in ids]).lengths)
        np.testing.assert_array_equal(
            _profile_columns(found, rows[left], rows[right], features), expected)
    assert cache._bytes <= cache.max_bytes and 0 not in cache._ids.tolist()
