"""Exact-substring de-duplication against a brute-force reference on small random
corpora, with chunks forced down to a few tokens so repeats cross chunk boundaries."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup.spans import (
    find_repeated_substrings,
    merge_ranges,
    remove_substrings,
    tokenize,
    window_hashes,
)

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])

texts_strategy = st.lists(
    st.lists(st.tuples(st.sampled_from(["a", "b", "c", "dé", "a."]),
                       st.sampled_from([" ", "\n", "  ", "\t"])), max_size=14)
    .map(lambda pieces: "".join(w + s for w, s in pieces)),
    max_size=8)


def _tokens(text):
    return [(m.start(), m.end(), m.group()) for m in re.finditer(r"\S+", text)]


def reference(texts, n, against=None):
    """Removed character ranges: windows of n tokens seen earlier (or in ``against``)."""
    seen = set()
    for text in against or ():
        words = [w for _, _, w in _tokens(text)]
        seen |= {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}
    earlier = set()
    ranges = []
    for d, text in enumerate(texts):
        tokens = _tokens(text)
        words = [w for _, _, w in tokens]
        for i in range(len(words) - n + 1):
            window = tuple(words[i:i + n])
            if (window in seen) if against is not None else (window in earlier):
                last = i + n - 1
                stop = tokens[last + 1][0] if last + 1 < len(tokens) else len(text)
                ranges.append((d, tokens[i][0], stop))
            earlier.add(window)
    if not ranges:
        return set()
    d, s, e = merge_ranges(*map(np.array, zip(*ranges)))
    return set(zip(d.tolist(), s.tolist(), e.tolist()))


def run(texts, n, tmp_path, *, chunk_tokens=None, against=None, batch=3):
    batches = [texts[i:i + batch] for i in range(0, len(texts), batch)]
    against_batches = [list(against)] if against is not None else None
    decisions = find_repeated_substrings(batches, n, work_dir=tmp_path, memory_limit=1 << 20,
                                         chunk_tokens=chunk_tokens, against=against_batches)
    found, lo = set(), 0
    for removal in remove_substrings(batches, decisions):
        for i, ranges in enumerate(removal.ranges):
            found |= {(lo + i, s, e) for s, e in ranges}
        lo += len(removal.texts)
    return found, decisions


@SETTINGS
@given(texts=texts_strategy, n=st.integers(1, 4), chunk=st.sampled_from([None, 1, 2, 5, 13]),
       batch=st.integers(1, 4))
def test_matches_brute_force(tmp_path_factory, texts, n, chunk, batch):
    found, decisions = run(texts, n, tmp_path_factory.mktemp("w"), chunk_tokens=chunk, batch=batch)
    assert found == reference(texts, n)


@SETTINGS
@given(texts=texts_strategy, other=texts_strategy, n=st.integers(1, 4),
       chunk=st.sampled_from([None, 1, 3, 7]))
def test_against_matches_brute_force(tmp_path_factory, texts, other, n, chunk):
    found, _ = run(texts, n, tmp_path_factory.mktemp("w"), chunk_tokens=chunk, against=other)
    assert found == reference(texts, n, against=other)


def test_tiny_chunks_cross_boundaries(tmp_path):
    texts = ["x " * 3 + "the quick brown fox jumps", "the quick brown fox jumps over", "a b c"]
    found, decisions = run(texts, 5, tmp_path, chunk_tokens=4, batch=1)
    assert decisions.chunks == 3 and decisions.shared_hashes > 0
    assert found == {(1, 0, len("the quick brown fox jumps "))}


def test_tokens_and_windows():
    tokens = tokenize(["  ab\u3000c \n", "", "x"])
    assert tokens.bounds.tolist() == [0, 2, 2, 3]
    assert tokens.start.tolist() == [2, 5, 0] and tokens.end.tolist() == [4, 6, 1]
    assert tokens.stop.tolist() == [5, 8, 1]
    same = tokenize(["c ab c"])
    assert same.hash[0] == same.hash[2] == tokens.hash[1]
    hashes, first = window_hashes(tokenize(["a b a b", "a b"]), 2)
    assert first.tolist() == [0, 1, 2, 4]
    assert hashes[0] == hashes[2] == hashes[3] != hashes[1]
