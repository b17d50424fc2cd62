"""The exact set-overlap search shared by ``ngram`` and ``spotsigs``.

Both methods compare documents as sets of 64-bit feature hashes (shingles, spot
signatures) and report every pair whose exact similarity reaches a threshold among the
pairs that share at least one *rare* feature. Each builds its own inverted index (ngram:
documents in input order; SpotSigs: documents ranked by size, with a length window); from
then on the search is the same, and lives here:

* positions ``0..n-1`` index the documents in the index's order; ``order[position]`` is
  the document (its row of ``hashes``/``offsets``), ``sizes``/``frequent`` are per
  position (set size, number of frequent features left out of the index);
* ``keep``/``keep_end`` are the kept posting lists (positions ascending within a list,
  ``keep_end[p]`` the end of the partners ``p`` may emit) and ``doc_ptr``/``doc_posts``
  map each position to its postings; ``emits[i]`` counts its emissions;
* :func:`indexed_pairs` walks the positions in blocks of bounded memory and, in a
  compiled parallel kernel, reduces each position's emissions to distinct candidates
  with their shared counts, drops those whose count bound ``shared + min(frequent)``
  cannot reach the threshold, and merges the sorted hash arrays of the rest.

See :mod:`neardup.methods.ngram` for the full description and the exactness argument.
"""

from __future__ import annotations

import numpy as np
from numba import get_num_threads, get_thread_id, njit, prange

from neardup.graph.edges import Pairs

__all__ = ["bounded_similarity", "count_bound_passes", "count_similarity", "indexed_pairs",
           "intersection_size", "set_similarity"]

# Candidate (i, j) emissions held in memory at once (12 bytes each); a single position
# needing more gets a block of its own.
BLOCK_PAIRS = 1 << 22
# Largest dense candidate counter (4 bytes per thread and document) to allocate; beyond
# it, candidates are reduced by sorting instead (slower, no O(n) memory).
DENSE_BYTES = 1 << 28


@njit(cache=True)
def set_similarity(inter, size_a, size_b, containment):
    """Exact similarity from integer counts, in float64 (0 for two empty sets): Jaccard,
    or containment ``inter / min(size_a, size_b)``."""
    if containment:
        low = min(size_a, size_b)
        return inter / low if low > 0 else 0.0
    union = size_a + size_b - inter
    return inter / union if union > 0 else 0.0


@njit(inline="always", cache=True)
def intersection_size(hashes, a0, a1, b0, b1):
    """Size of the intersection of two sorted, duplicate-free runs of ``hashes``."""
    inter = 0
    while a0 < a1 and b0 < b1:
        x = hashes[a0]
        y = hashes[b0]
        # Branch-free steps: which run advances is unpredictable, and a mispredicted
        # branch per element costs more than the two extra comparisons.
        inter += x == y
        a0 += x <= y
        b0 += x >= y
    return inter


@njit(inline="always", cache=True)
def _verify(i, j, shared, sizes, frequent, order, hashes, offsets, threshold, containment):
    """Bound, then exact similarity of positions (i, j) sharing ``shared`` rare features.

    Returns ``(how, sim)``: ``how`` is 0 if the intersection was known without merging,
    1 if the bound pruned the pair (``sim`` is then meaningless), 2 if the hash arrays
    were merged.
    """
    size_i = sizes[i]
    size_j = sizes[j]
    slack = min(frequent[i], frequent[j])
    bound = min(shared + slack, min(size_i, size_j))
    # Similarity is monotone in the intersection, so the bound's similarity is an upper
    # bound of the exact one (same float64 formula: no tolerance needed).
    if set_similarity(bound, size_i, size_j, containment) < threshold:
        return 1, 0.0
    if slack == 0:  # one side had no frequent feature: nothing shared was left out
        return 0, set_similarity(shared, size_i, size_j, containment)
    a, b = order[i], order[j]
    inter = intersection_size(hashes, offsets[a], offsets[a + 1], offsets[b], offsets[b + 1])
    return 2, set_similarity(inter, size_i, size_j, containment)


@njit(parallel=True, cache=True)
def _block_pairs(
    d0, d1, seg_start, doc_ptr, doc_posts, keep, keep_end,
    sizes, frequent, order, hashes, offsets, threshold, containment,
    acc, buf_j, buf_score, n_kept, counts,
):  # fmt: skip
    """Candidates, bound and exact check for positions d0..d1-1, in parallel.

    Position ``i`` emits every ``j > i`` following it in one of its posting lists and
    owns ``buf_j[seg_start[i - d0]:]`` (room for all its emissions). Distinct candidates and
    their shared counts come from one of two reductions:

    * ``acc`` of shape (n_threads, n_docs): a dense per-thread counter indexed by ``j``
      (a direct-address hash table); first sightings go to the segment, and counters are
      reset while reading them back. No sort, O(1) per emission.
    * ``acc`` of shape (0, 0): the segment holds all emissions, is sorted, and runs of
      equal ``j`` are counted (the sort/unique of pair codes ``i * n + j``, segmented by
      ``i``). Used when dense counters would take too much memory.

    Kept pairs are written back to the front of the segment (writes never pass the read
    position) with ``buf_score``; ``n_kept[i - d0]`` says how many. ``counts[i - d0]``
    receives the numbers of distinct candidates, of bound-pruned ones and of merges.
    """
    dense = acc.shape[0] > 0
    for i in prange(d0, d1):
        r = i - d0
        base = seg_start[r]
        counts[r, 0] = 0
        counts[r, 1] = 0
        counts[r, 2] = 0
        w = 0
        if dense:
            tally = acc[get_thread_id()]
            m = 0
            for q in range(doc_ptr[i], doc_ptr[i + 1]):
                p = doc_posts[q]
                for t in range(p + 1, keep_end[p]):
                    j = keep[t]
                    if tally[j] == 0:
                        buf_j[base + m] = j
                        m += 1
                    tally[j] += 1
            for t in range(m):
                j = buf_j[base + t]
                shared = tally[j]
                tally[j] = 0
                how, sim = _verify(
                    i, j, shared, sizes, frequent, order, hashes, offsets, threshold, containment
                )
                if how:
                    counts[r, how] += 1
                if how != 1 and sim >= threshold:
                    buf_j[base + w] = j
                    buf_score[base + w] = sim
                    w += 1
            counts[r, 0] = m
        else:
            m = 0
            for q in range(doc_ptr[i], doc_ptr[i + 1]):
                p = doc_posts[q]
                for t in range(p + 1, keep_end[p]):
                    buf_j[base + m] = keep[t]
                    m += 1
            seg = buf_j[base : base + m]
            seg.sort()
            run = 1
            for t in range(1, m + 1):
                if t < m and seg[t] == seg[t - 1]:
                    run += 1
                    continue
                j = seg[t - 1]
                how, sim = _verify(
                    i, j, run, sizes, frequent, order, hashes, offsets, threshold, containment
                )
                run = 1
                counts[r, 0] += 1
                if how:
                    counts[r, how] += 1
                if how != 1 and sim >= threshold:
                    seg[w] = j  # w <= t - 1
                    buf_score[base + w] = sim
                    w += 1
        n_kept[r] = w



@njit(cache=True)
def _gather(d0, seg_start, n_kept, buf_j, buf_score, order):
    """A block's kept pairs as documents (not positions)."""
    total = 0
    for r in range(n_kept.shape[0]):
        total += n_kept[r]
    left = np.empty(total, dtype=np.int64)
    right = np.empty(total, dtype=np.int64)
    score = np.empty(total, dtype=np.float32)
    k = 0
    for r in range(n_kept.shape[0]):
        base = seg_start[r]
        for t in range(n_kept[r]):
            left[k] = order[d0 + r]
            right[k] = order[buf_j[base + t]]
            score[k] = buf_score[base + t]
            k += 1
    return left, right, score


def indexed_pairs(
    *,
    doc_ptr: np.ndarray,
    doc_posts: np.ndarray,
    keep: np.ndarray,
    keep_end: np.ndarray,
    emits: np.ndarray,
    sizes: np.ndarray,
    frequent: np.ndarray,
    order: np.ndarray,
    hashes: np.ndarray,
    offsets: np.ndarray,
    threshold: float,
    containment: bool,
    stats: dict,
) -> Pairs:
    """Every candidate of the index whose exact similarity is ``>= threshold``, as
    canonical document pairs; adds the numbers of distinct candidates, bound-pruned ones
    and merges to ``stats`` ("candidates", "pruned", "merged")."""
    n = sizes.shape[0]
    # Blocks of consecutive positions emitting at most BLOCK_PAIRS (i, j) between them.
    cum = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(emits, out=cum[1:])
    capacity = max(BLOCK_PAIRS, int(emits.max(initial=0)))
    buf_j = np.empty(capacity, dtype=np.int64)
    buf_score = np.empty(capacity, dtype=np.float32)
    # Dense per-thread counters when they fit in DENSE_BYTES, else segment sorts.
    threads = get_num_threads()
    shape = (threads, n) if threads * n * 4 <= DENSE_BYTES else (0, 0)
    tally = np.zeros(shape, dtype=np.int32)
    parts = []
    d0 = 0
    while d0 < n:
        d1 = int(np.searchsorted(cum, cum[d0] + capacity, side="right")) - 1
        d1 = min(max(d1, d0 + 1), n)
        if cum[d1] > cum[d0]:
            seg_start = cum[d0:d1] - cum[d0]
            n_kept = np.empty(d1 - d0, np.int64)
            counts = np.empty((d1 - d0, 3), np.int64)
            _block_pairs(
                d0, d1, seg_start, doc_ptr, doc_posts, keep, keep_end,
                sizes, frequent, order, hashes, offsets, threshold, containment,
                tally, buf_j, buf_score, n_kept, counts,
            )  # fmt: skip
            parts.append(Pairs(*_gather(d0, seg_start, n_kept, buf_j, buf_score, order)))
            totals = counts.sum(axis=0)
            stats["candidates"] += int(totals[0])
            stats["pruned"] += int(totals[1])
            stats["merged"] += int(totals[2])
        d0 = d1
    return Pairs.concat(parts).canonical()


# -- shared by the keyed corpus stage of ngram and spotsigs ---------------------------------


@njit(cache=True)
def bounded_similarity(hashes, offsets, left, right, containment, threshold):
    """The exact similarity of the pairs ``(left[p], right[p])``, but a pair whose size bound (the intersection is at
    most the smaller set) is below ``threshold`` scores -1 without a merge. Serial: it
    runs on one step of edges at a time, where starting threads costs more than it
    saves on a busy machine."""
    out = np.empty(left.shape[0], dtype=np.float64)
    for p in range(left.shape[0]):
        i = left[p]
        j = right[p]
        a0, a1, b0, b1 = offsets[i], offsets[i + 1], offsets[j], offsets[j + 1]
        low = min(a1 - a0, b1 - b0)
        if set_similarity(low, a1 - a0, b1 - b0, containment) < threshold:
            out[p] = -1.0
            continue
        inter = intersection_size(hashes, a0, a1, b0, b1)
        out[p] = set_similarity(inter, a1 - a0, b1 - b0, containment)
    return out


def count_bound_passes(shared, known_left, known_right, size_left, size_right, threshold: float,
                       containment: bool) -> np.ndarray:
    """Which candidate pairs may reach ``threshold`` (step 4 of :mod:`neardup.methods.ngram`)
    when every feature is a key: the intersection is at most the ``shared`` keys counted
    plus the smaller number of either side's features not seen (``size - known``), and at
    most the smaller set."""
    bound = shared + np.minimum(size_left - known_left, size_right - known_right)
    bound = np.minimum(bound, np.minimum(size_left, size_right)).astype(np.float64)
    if containment:
        sim = bound / np.maximum(np.minimum(size_left, size_right), 1)
    else:
        sim = bound / np.maximum(size_left + size_right - bound, 1)
    # The exact check compares in float64 too; the slack keeps rounding on the safe side.
    return sim >= threshold - 1e-9


def jaccard_min_shared(sizes, threshold: float) -> np.ndarray:
    """The fewest elements a set must share with one of each size in ``sizes`` for a
    Jaccard similarity of at least ``threshold``: ``|A ∩ B| / |A ∪ B| >= t`` needs
    ``|A ∩ B| >= t |A|`` since the union holds ``A``. Rounded down by a margin far above
    float error, so it never exceeds the exact overlap the float check accepts."""
    sizes = np.asarray(sizes, np.int64)
    need = np.ceil(threshold * sizes.astype(np.float64) - 1e-6).astype(np.int64)
    return np.clip(need, 0, sizes)


def count_similarity(inter, size_left, size_right, threshold: float, containment: bool):
    """:func:`set_similarity` of arrays of counts (float64, the same division) and whether
    each reaches ``threshold``: what :func:`bounded_similarity` gives pairs whose
    intersection is known without a merge."""
    inter = np.asarray(inter, np.int64)
    size_left = np.asarray(size_left, np.int64)
    size_right = np.asarray(size_right, np.int64)
    if containment:
        denominator = np.minimum(size_left, size_right)
    else:
        denominator = size_left + size_right - inter
    sim = np.zeros(inter.shape[0], np.float64)
    np.divide(inter, denominator, out=sim, where=denominator > 0)
    return sim, sim >= threshold
