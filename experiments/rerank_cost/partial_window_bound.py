"""A rejected route of rerank's ninth round (decision 0051): rapidfuzz's
``fuzz.partial_ratio`` of a shorter text inside a longer one (the verifier's
``align_partial``), the same float to the bit, with most windows never scored. It was
exact but slower than rapidfuzz; ``main`` measures both on copy pairs and random pairs of
the scale corpus:

    python -m experiments.rerank_cost.partial_window_bound --data /tmp/neardup-scale/20k --out benchmarks/results/rerank/s52-partial-window-bound.json

How it works:

``partial_ratio`` is the best Indel ratio ``2 * LCS / (len1 + |w|)`` of the shorter text
against any window ``w`` of the longer: its prefixes, its windows of the shorter's length
and its suffixes (rapidfuzz's three loops; it skips windows that end on a character the
shorter text lacks, which cannot be best). Here every window first gets an upper bound
on its LCS, in O(1) from the window before it:

* the characters it shares with the shorter text as multisets, ``M``;
* ``(G + len1 + |w| + 1) / 3``, where ``G`` counts the character pairs (bigrams) they
  share: an LCS of ``l`` characters keeps at least ``3 l - len1 - |w| - 1`` of the
  shorter text's bigrams whole.

Windows are then scored exactly (bit-parallel LCS, Hyyrö 2004) only while their bound
beats the best score found, starting from the window with the highest bound. A copy's
heads align in a few windows, and the bigram bound rules out the windows shifted from
them. When the bounds rule out too little (texts that do not align), or the two heads are
equally long (rapidfuzz then also slides the other way), the pair is left to rapidfuzz.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit, uint64

from neardup.text.hashing import encode_codepoints

__all__ = ["partial_ratios"]

#: Exact window scores a pair may take before it is left to rapidfuzz (a pair that does
#: not align has many windows within reach of its best score).
MAX_SCORED_WINDOWS = 48


@njit(cache=True)
def _lcs(match, m, codes, start, end, v):
    """LCS length of the pattern whose match vectors are ``match`` (alphabet x words;
    ``m`` characters) and ``codes[start:end]`` (alphabet positions, -1 for characters the
    pattern lacks): Hyyrö's recurrence V = (V + (V & M)) | (V & ~M), the addition
    carried across words."""
    words = match.shape[1]
    for w in range(words):
        v[w] = ~uint64(0)
    for i in range(start, end):
        a = codes[i]
        if a < 0:
            continue
        carry = uint64(0)
        for w in range(words):
            old = v[w]
            u = old & match[a, w]
            s = old + u
            c1 = uint64(1) if s < old else uint64(0)
            s2 = s + carry
            c2 = uint64(1) if s2 < s else uint64(0)
            carry = c1 | c2
            v[w] = s2 | (old & ~u)
    ones = 0
    for w in range(words):
        bits = v[w]
        if w == words - 1 and m % 64:
            bits &= (uint64(1) << uint64(m % 64)) - uint64(1)
        while bits:  # one set bit at a time (a few words a window)
            bits &= bits - uint64(1)
            ones += 1
    return m - ones


@njit(cache=True)
def _codes(alphabet, values):
    """Position of each value in the sorted ``alphabet``, -1 where it is absent."""
    out = np.searchsorted(alphabet, values)
    for i in range(values.shape[0]):
        k = out[i]
        if k >= alphabet.shape[0] or alphabet[k] != values[i]:
            out[i] = -1
    return out


@njit(inline="always", cache=True)
def _add(have, need, a):
    """Count one more ``a`` in the window; 1 when it is shared."""
    if a < 0:
        return 0
    have[a] += 1
    return 1 if have[a] <= need[a] else 0


@njit(inline="always", cache=True)
def _drop(have, need, a):
    """Count one ``a`` fewer in the window; 1 when a shared one left."""
    if a < 0:
        return 0
    have[a] -= 1
    return 1 if have[a] < need[a] else 0


@njit(cache=True)
def _bounds(s_codes, t_codes, size, m, n, starts, ends, bound):
    """Every window's LCS bound: min(shared characters, (shared bigrams + m + |w| + 1) // 3)."""
    need = np.zeros(size, np.int64)
    for j in range(m):
        need[s_codes[j]] += 1
    s_pairs = s_codes[:-1] * size + s_codes[1:]
    pair_alphabet = np.unique(s_pairs)
    pair_need = np.zeros(pair_alphabet.shape[0], np.int64)
    for j in range(m - 1):
        pair_need[np.searchsorted(pair_alphabet, s_pairs[j])] += 1
    t_pairs = np.full(n, -1, np.int64)  # t_pairs[i]: the bigram t[i], t[i + 1]
    both = np.empty(n - 1, np.int64)
    for i in range(n - 1):
        both[i] = t_codes[i] * size + t_codes[i + 1] if t_codes[i] >= 0 and t_codes[i + 1] >= 0 else -1
    found = _codes(pair_alphabet, both)
    for i in range(n - 1):
        t_pairs[i] = found[i] if both[i] >= 0 else -1
    have = np.zeros(size, np.int64)
    pair_have = np.zeros(pair_alphabet.shape[0], np.int64)
    k = 0
    chars = pairs = 0
    # Prefixes [0, i), i = 1..m-1.
    for i in range(1, m):
        chars += _add(have, need, t_codes[i - 1])
        if i >= 2:
            pairs += _add(pair_have, pair_need, t_pairs[i - 2])
        starts[k], ends[k] = 0, i
        bound[k] = min(chars, (pairs + m + i + 1) // 3)
        k += 1
    # Full windows [i, i + m), i = 0..n-m; then suffixes [i, n), i = n-m+1..n-1.
    have[:] = 0
    pair_have[:] = 0
    chars = pairs = 0
    for i in range(m):
        chars += _add(have, need, t_codes[i])
        if i >= 1:
            pairs += _add(pair_have, pair_need, t_pairs[i - 1])
    for i in range(n):
        if i > 0:
            chars -= _drop(have, need, t_codes[i - 1])
            pairs -= _drop(pair_have, pair_need, t_pairs[i - 1])
            if i + m - 1 < n:
                chars += _add(have, need, t_codes[i + m - 1])
                pairs += _add(pair_have, pair_need, t_pairs[i + m - 2])
        end = min(i + m, n)
        starts[k], ends[k] = i, end
        bound[k] = min(chars, (pairs + m + end - i + 1) // 3)
        k += 1
    return k


@njit(cache=True)
def _best_windows(s_cps, s_off, t_cps, t_off, max_scored, lcs_out, len_out):
    """For each pair, the LCS and length of its best window (``len_out`` 0: left to
    rapidfuzz)."""
    for p in range(s_off.shape[0] - 1):
        s = s_cps[s_off[p]:s_off[p + 1]]
        t = t_cps[t_off[p]:t_off[p + 1]]
        m, n = s.shape[0], t.shape[0]
        len_out[p] = 0
        if m < 2 or n <= m:
            continue
        alphabet = np.unique(s)
        size = alphabet.shape[0]
        s_codes = np.searchsorted(alphabet, s)
        t_codes = _codes(alphabet, t)
        words = (m + 63) // 64
        match = np.zeros((size, words), np.uint64)
        for j in range(m):
            match[s_codes[j], j // 64] |= uint64(1) << uint64(j % 64)
        starts = np.empty(n + m - 1, np.int64)
        ends = np.empty(n + m - 1, np.int64)
        bound = np.empty(n + m - 1, np.int64)
        count = _bounds(s_codes, t_codes, size, m, n, starts, ends, bound)
        top = 0  # the highest bound 2 * bound / (m + length)
        for k in range(1, count):
            if bound[k] * (m + ends[top] - starts[top]) > bound[top] * (m + ends[k] - starts[k]):
                top = k
        v = np.empty(words, np.uint64)
        best = _lcs(match, m, t_codes, starts[top], ends[top], v)
        best_len = ends[top] - starts[top]
        scored = 1
        for k in range(count):
            length = ends[k] - starts[k]
            if k == top or bound[k] * (m + best_len) <= best * (m + length):
                continue  # cannot beat the best score
            scored += 1
            if scored > max_scored:
                break
            lcs = _lcs(match, m, t_codes, starts[k], ends[k], v)
            if lcs * (m + best_len) > best * (m + length):
                best, best_len = lcs, length
        if scored <= max_scored:
            lcs_out[p], len_out[p] = best, best_len


def partial_ratios(short: list[str], long: list[str], *, workers: int = 1) -> np.ndarray:
    """``rapidfuzz.process.cpdist(short, long, scorer=fuzz.partial_ratio,
    dtype=np.float32)``, equal to the bit, for pairs of strings where each ``short[i]``
    is no longer than ``long[i]``; ``workers`` are rapidfuzz's, for the pairs left to it."""
    from rapidfuzz import fuzz, process

    if len(short) != len(long):
        raise ValueError(f"partial_ratios: short and long must have one length; got {len(short)} and {len(long)}.")
    s_cps, s_off = encode_codepoints(short)
    t_cps, t_off = encode_codepoints(long)
    lcs = np.zeros(len(short), np.int64)
    length = np.zeros(len(short), np.int64)
    _best_windows(s_cps, s_off, t_cps, t_off, MAX_SCORED_WINDOWS, lcs, length)
    out = np.empty(len(short), np.float32)
    done = length > 0
    total = (np.diff(s_off)[done] + length[done]).astype(np.float64)
    # rapidfuzz's arithmetic: 100 * (1 - distance / (len1 + len2)), distance = total - 2 LCS.
    out[done] = (100.0 * (1.0 - (total - 2.0 * lcs[done]) / total)).astype(np.float32)
    rest = np.flatnonzero(~done).tolist()
    if rest:
        out[rest] = process.cpdist([short[i] for i in rest], [long[i] for i in rest],
                                   scorer=fuzz.partial_ratio, workers=workers, dtype=np.float32)
    return out


def main() -> None:
    import argparse
    import json
    import random
    import time
    from collections import defaultdict
    from pathlib import Path

    import pyarrow.parquet as pq
    from rapidfuzz import fuzz, process

    from neardup.text import normalize_batch

    parser = argparse.ArgumentParser(description="partial_ratio with window bounds against rapidfuzz")
    parser.add_argument("--data", type=Path, required=True, help="a scale corpus directory")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--copies", type=int, default=2000)
    parser.add_argument("--random", type=int, default=300)
    args = parser.parse_args()
    table = pq.read_table(sorted(args.data.glob("part-*.parquet"))[0]).to_pydict()
    texts = normalize_batch(table["text"])
    members = defaultdict(list)
    for i, c in enumerate(table["cluster"]):
        members[c].append(i)
    copies = [(v[0], v[k]) for v in members.values() for k in range(1, min(len(v), 6))][: args.copies]
    rng = random.Random(0)
    others = [(rng.randrange(len(texts)), rng.randrange(len(texts))) for _ in range(args.random)]
    partial_ratios(["abc"], ["xxabcx"])  # compiled before timing
    rows = {}
    for name, pairs in (("copy pairs", copies), ("random pairs", others)):
        short, long = [], []
        for a, b in pairs:
            if len(texts[a]) > len(texts[b]):
                a, b = b, a
            s, t = texts[a][:300], texts[b][:1500]
            if s and s in t:
                continue  # the verifier scores these 100 without an alignment
            short.append(s)
            long.append(t)
        start = time.process_time()
        want = process.cpdist(short, long, scorer=fuzz.partial_ratio, workers=1, dtype=np.float32)
        theirs = time.process_time() - start
        start = time.process_time()
        got = partial_ratios(short, long)
        ours = time.process_time() - start
        rows[name] = {"pairs": len(short), "rapidfuzz_us_a_pair": 1e6 * theirs / len(short),
                      "bounded_us_a_pair": 1e6 * ours / len(short),
                      "equal_to_the_bit": bool(np.array_equal(want, got))}
        print(name, rows[name], flush=True)
    args.out.write_text(json.dumps({"argv": sys.argv[1:], "results": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
