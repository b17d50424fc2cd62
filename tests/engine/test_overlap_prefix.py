"""The exchange's prefix filter (neardup.engine.overlap): no pair that can reach the
threshold is left uncounted, and the uncounted bound holds for every counted pair."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from neardup.engine.overlap import (
    DF_CLASS_UPPER,
    add_key_classes,
    df_classes,
    prefix_cuts,
    uncounted_keys,
)
from neardup.methods.overlap_kernels import jaccard_min_shared


def _random_sets(rng, n_docs, vocab, upto):
    # Skewed key frequencies (a few keys in many sets, most in few) and some near-copies,
    # so that pairs at the threshold exist and some groups are over ``upto``.
    weights = 1.0 / np.arange(1, vocab + 1) ** 0.9
    weights /= weights.sum()
    sets = []
    for d in range(n_docs):
        if d and rng.random() < 0.3:  # a near-copy of an earlier set
            base = sets[int(rng.integers(0, d))]
            keep = base[rng.random(base.size) < 0.85]
            extra = rng.choice(vocab, size=int(rng.integers(0, 4)), p=weights)
            sets.append(np.unique(np.concatenate((keep, extra))))
        else:
            size = int(rng.integers(1, 30))
            sets.append(np.unique(rng.choice(vocab, size=size, p=weights)))
    return sets


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.8])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_pair_at_the_threshold_shares_a_key_in_both_prefixes(threshold, seed):
    rng = np.random.default_rng(seed)
    n_docs, upto = 150, 12
    sets = _random_sets(rng, n_docs, 400, upto)
    df = Counter(k for s in sets for k in s.tolist())
    sizes = np.array([s.size for s in sets], np.int64)
    docs = np.repeat(np.arange(n_docs), sizes)
    keys = np.concatenate(sets)
    row_df = np.array([df[k] for k in keys.tolist()], np.int64)
    counts = np.zeros((n_docs, DF_CLASS_UPPER.size), np.uint16)
    unseen = np.zeros(n_docs, np.int64)
    for part in range(3):  # rows arrive by key partition
        mine = keys % 3 == part
        add_key_classes(counts, unseen, docs[mine], row_df[mine], upto)
    cut, suffix = prefix_cuts(counts, unseen, jaccard_min_shared(sizes, threshold))
    assert np.array_equal(unseen, [sum(df[k] > upto for k in s.tolist()) for s in sets])
    in_prefix = [{k for k in s.tolist() if df[k] <= upto and df_classes(df[k]) <= cut[d]}
                 for d, s in enumerate(sets)]
    for d, s in enumerate(sets):  # the suffix is the compared keys past the prefix
        compared = sum(df[k] <= upto for k in s.tolist())
        assert suffix[d] == compared - len(in_prefix[d])
    found = 0
    for a in range(n_docs):
        for b in range(a + 1, n_docs):
            common = set(sets[a].tolist()) & set(sets[b].tolist())
            compared = {k for k in common if df[k] <= upto}
            counted = len(in_prefix[a] & in_prefix[b])
            bound = counted + uncounted_keys(cut[[a]], cut[[b]], suffix[[a]], suffix[[b]],
                                             unseen[[a]], unseen[[b]])[0]
            assert len(common) <= bound
            jaccard = len(common) / len(set(sets[a].tolist()) | set(sets[b].tolist()))
            if compared and jaccard >= threshold:
                found += 1
                assert counted >= 1, (a, b)
    assert found > 10  # the corpus has pairs at the threshold


def test_saturated_counts_make_the_whole_set_the_prefix():
    counts = np.zeros((2, DF_CLASS_UPPER.size), np.uint16)
    counts[0, 0] = 65535  # saturated: at least this many
    counts[0, 3] = 5
    counts[1, 0] = 10
    counts[1, 2] = 10
    cut, suffix = prefix_cuts(counts, np.zeros(2, np.int64), np.array([60000, 10]))
    assert cut[0] == DF_CLASS_UPPER.size - 1 and suffix[0] == 0
    # 20 compared keys, 10 needed: the first 11 end in class 2, whose 10 keys all count.
    assert cut[1] == 2 and suffix[1] == 0
    cut, suffix = prefix_cuts(counts[1:], np.zeros(1, np.int64), None)  # no filter
    assert cut[0] == 2 and suffix[0] == 0
    cut, suffix = prefix_cuts(counts[1:], np.zeros(1, np.int64), np.array([15]))
    assert cut[0] == 0 and suffix[0] == 10  # 6 keys are enough: all df-1 keys


def test_jaccard_min_shared_never_exceeds_an_accepted_overlap():
    from neardup.methods.overlap_kernels import count_similarity

    size, other, overlap = np.meshgrid(np.arange(1, 120), np.arange(1, 120), np.arange(0, 120),
                                       indexing="ij")
    possible = overlap <= np.minimum(size, other)
    size, other, overlap = size[possible], other[possible], overlap[possible]
    for threshold in (0.1, 0.3, 0.5, 0.7, 0.9, 1.0):
        need = jaccard_min_shared(size, threshold)
        _, accept = count_similarity(overlap, size, other, threshold, False)
        assert accept.any()
        assert np.all(overlap[accept] >= need[accept])
        assert np.all(need <= size)
