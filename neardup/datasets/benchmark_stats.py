"""Statistics of a labelled near-duplicate benchmark, per split.

Document, cluster and pair counts in the shape of NEWS-COPY's Table 1 (Silcock et al.
2022), and the mean word-3-gram Jaccard of positive, hard-negative and random negative
pairs, measured with neardup's default normalization and shingling: Silcock et al. (sec. 1)
report 30% for the positive pairs of NEWS-COPY's test set. Pairs are only formed within a
split and counted from cluster sizes, never enumerated, except the ones whose Jaccard is
measured (sampled beyond ``max_pairs``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from neardup.errors import check_int
from neardup.datasets.stories import SPLITS
from neardup.graph.cluster import canonical_labels
from neardup.methods.ngram import exact_similarity
from neardup.text import ShingleConfig, ShingleSets, hash_shingles, normalize_batch

__all__ = ["benchmark_stats", "shingle_sets", "within_cluster_pairs"]

_WORD3 = ShingleConfig("word", 3)


def shingle_sets(texts: Sequence[str]) -> ShingleSets:
    """Word-3-gram sets of texts after neardup's default normalization."""
    return hash_shingles(normalize_batch(texts), _WORD3).unique()


def within_cluster_pairs(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All pairs of positions sharing a label: (left, right, label), label-major order."""
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    starts = np.flatnonzero(np.r_[True, sorted_labels[1:] != sorted_labels[:-1]])
    ends = np.r_[starts[1:], len(labels)]
    lefts, rights, labs = [], [], []
    for s, e in zip(starts.tolist(), ends.tolist()):
        if e - s >= 2:
            a, b = np.triu_indices(e - s, 1)
            lefts.append(order[s + a])
            rights.append(order[s + b])
            labs.append(np.full(a.size, sorted_labels[s]))
    if not lefts:
        empty = np.empty(0, np.int64)
        return empty, empty, empty
    return np.concatenate(lefts), np.concatenate(rights), np.concatenate(labs)


def _sample_pairs(
    left: np.ndarray, right: np.ndarray, cap: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    if left.size <= cap:
        return left, right
    pick = np.sort(rng.choice(left.size, size=cap, replace=False))
    return left[pick], right[pick]


def _draw_within(
    labels: np.ndarray, sizes: np.ndarray, count: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``count`` random pairs of positions sharing a label (with replacement), uniform over
    all such pairs: a cluster is drawn with probability proportional to its pair count."""
    order = np.argsort(labels, kind="stable")
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    weights = sizes * (sizes - 1) / 2.0
    cluster = rng.choice(sizes.size, size=count, p=weights / weights.sum())
    k = sizes[cluster]
    a = rng.integers(0, k)
    b = rng.integers(0, k - 1)
    b = b + (b >= a)
    return order[starts[cluster] + a], order[starts[cluster] + b]


def _mean(values: np.ndarray) -> float | None:
    return round(float(values.mean()), 4) if values.size else None


def _split_stats(
    records: Sequence[Mapping[str, Any]],
    positions: np.ndarray,
    sets: ShingleSets,
    max_pairs: int,
    rng: np.random.Generator,
) -> tuple[dict[str, Any], dict[str, tuple[float, int, int]], np.ndarray]:
    """Stats of one split, (sum of Jaccard, pairs scored, pairs in all) per pair type, and
    the cluster sizes."""
    n = positions.size
    clusters = [str(records[p]["cluster"]) for p in positions.tolist()]
    labels = canonical_labels(np.array(clusters, dtype=object)) if n else np.empty(0, np.int64)
    sizes = np.bincount(labels) if n else np.empty(0, np.int64)
    positive = int((sizes * (sizes - 1) // 2).sum())
    sums: dict[str, tuple[float, int, int]] = {}

    def score(name: str, left: np.ndarray, right: np.ndarray, total: int) -> np.ndarray:
        left, right = _sample_pairs(left, right, max_pairs, rng)
        values = exact_similarity(sets, positions[left], positions[right]).astype(np.float64)
        sums[name] = (float(values.sum()), int(values.size), int(total))
        return values

    if positive <= max_pairs:
        left, right, _ = within_cluster_pairs(labels)
    else:  # too many to list: draw pairs, each positive pair equally likely
        left, right = _draw_within(labels, sizes, max_pairs, rng)
    j_pos = score("positive", left, right, positive)

    # Hard-negative pairs: a record whose cluster is a hard negative of cluster C, with
    # every member of C; counted once per unordered pair.
    members: dict[str, list[int]] = {}
    for k, c in enumerate(clusters):
        members.setdefault(c, []).append(k)
    codes, kinds_of = [], []
    for k, p in enumerate(positions.tolist()):
        target = records[p].get("negative_of")
        if target is None or str(target) == clusters[k] or str(target) not in members:
            continue
        for m in members[str(target)]:
            codes.append(min(k, m) * n + max(k, m))
            kinds_of.append(str(records[p].get("kind")))
    by_kind: dict[str, float | None] = {}
    if codes:
        code_arr, first = np.unique(np.asarray(codes, dtype=np.int64), return_index=True)
        pair_kinds = np.asarray(kinds_of, dtype=object)[first]
        j_hard = score("hard_negative", code_arr // n, code_arr % n, code_arr.size)
        if j_hard.size == code_arr.size:
            for kind in sorted(set(pair_kinds.tolist())):
                by_kind[kind] = _mean(j_hard[pair_kinds == kind])
    else:
        j_hard = np.empty(0)
        sums["hard_negative"] = (0.0, 0, 0)
    hard_pairs = len(set(codes))

    # Random negatives: uniform pairs of documents from different clusters.
    if n >= 2 and len(sizes) >= 2:
        a = rng.integers(0, n, size=20_000)
        b = rng.integers(0, n, size=20_000)
        keep = labels[a] != labels[b]
        j_rand = exact_similarity(sets, positions[a[keep]], positions[b[keep]]).astype(np.float64)
    else:
        j_rand = np.empty(0)
    kinds = Counter(str(records[p].get("kind")) for p in positions.tolist())
    stats = {
        "docs": n,
        "clusters": int(sizes.size),
        "singletons": int((sizes == 1).sum()),
        "reproduced_clusters": int((sizes >= 2).sum()),
        "cluster_size_mean": round(float(sizes.mean()), 3) if sizes.size else None,
        "cluster_size_median": float(np.median(sizes)) if sizes.size else None,
        "cluster_size_max": int(sizes.max()) if sizes.size else None,
        "positive_pairs": positive,
        "negative_pairs": n * (n - 1) // 2 - positive,
        "jaccard_positive_mean": _mean(j_pos),
        "hard_negative_pairs": hard_pairs,
        "jaccard_hard_negative_mean": _mean(j_hard),
        "jaccard_hard_negative_by_kind": by_kind,
        "jaccard_random_negative_mean": _mean(j_rand),
        "kinds": dict(sorted(kinds.items())),
        "days": len({str(d)[:10] for p in positions.tolist() if (d := records[p].get("date"))}),
        "sources": len({records[p].get("source") for p in positions.tolist()}),
    }
    return stats, sums, sizes


def benchmark_stats(
    records: Iterable[Mapping[str, Any]], *, max_pairs: int = 2_000_000, seed: int = 0
) -> dict[str, dict[str, Any]]:
    """Statistics of a labelled benchmark, per split and for all splits together.

    Pairs are only formed within a split. Jaccard is the word-3-gram Jaccard of neardup's
    default normalization (:func:`neardup.text.normalize_batch`) and shingling, the measure
    Silcock et al. (2022) report (30% for NEWS-COPY's positive test pairs).

    Parameters
    ----------
    records : iterable of mapping
        Records with ``text``, ``cluster`` and optionally ``split`` (missing: pooled as
        ``"unsplit"``), ``kind``, ``negative_of``, ``date`` and ``source``.
    max_pairs : int, default 2,000,000
        Positive or hard-negative pairs of a split beyond this are sampled (uniformly,
        seeded) for the Jaccard means; the pair counts stay exact.
    seed : int, default 0
        Seeds the pair samples and the 20,000 random pairs behind
        ``jaccard_random_negative_mean``.

    Returns
    -------
    dict
        Split name -> stats, in :data:`SPLITS` order, then ``"all"``. Each stats dict has
        ``docs``, ``clusters``, ``singletons`` (clusters of one document),
        ``reproduced_clusters``, ``cluster_size_mean/median/max``, ``positive_pairs``,
        ``negative_pairs``, ``jaccard_positive_mean``, ``hard_negative_pairs`` (a hard
        negative or template document with a document of the cluster it is a hard negative
        of), ``jaccard_hard_negative_mean`` and ``..._by_kind``,
        ``jaccard_random_negative_mean``, ``kinds`` (documents per kind), ``days`` and
        ``sources`` (distinct source stories). In ``"all"`` counts are sums over splits
        and Jaccard means are weighted by pairs.
    """
    caller = "benchmark_stats"
    max_pairs = check_int(caller, "max_pairs", max_pairs, low=1)
    records = list(records)
    for k, record in enumerate(records):
        if not isinstance(record, Mapping) or not isinstance(record.get("text"), str):
            raise TypeError(f"{caller}: record {k} must be a mapping with a str 'text'.")
        if record.get("cluster") is None:
            raise ValueError(f"{caller}: record {k} has no 'cluster' label.")
    sets = shingle_sets([r["text"] for r in records])
    # Records without a split form one pool of their own, "unsplit".
    split_of = [str(r.get("split") or "unsplit") for r in records]
    names = [s for s in SPLITS if s in split_of] + sorted(set(split_of) - set(SPLITS))
    rng = np.random.default_rng(seed)
    out: dict[str, dict[str, Any]] = {}
    totals: dict[str, list[float]] = {}
    split_sizes: list[np.ndarray] = []
    for name in names:
        positions = np.array([k for k, s in enumerate(split_of) if s == name], dtype=np.int64)
        stats, sums, sizes = _split_stats(records, positions, sets, max_pairs, rng)
        out[name] = stats
        split_sizes.append(sizes)
        for key, (total, scored, pairs) in sums.items():
            acc = totals.setdefault(key, [0.0, 0.0])
            if scored:
                acc[0] += total / scored * pairs
                acc[1] += pairs
    all_sizes = np.concatenate(split_sizes) if split_sizes else np.empty(0, np.int64)
    kinds: Counter = Counter()
    for name in names:
        kinds.update(out[name]["kinds"])

    def pooled(key: str) -> float | None:
        total, pairs = totals.get(key, (0.0, 0.0))
        return round(total / pairs, 4) if pairs else None

    out["all"] = {
        "docs": len(records),
        "clusters": int(all_sizes.size),
        "singletons": int((all_sizes == 1).sum()),
        "reproduced_clusters": int((all_sizes >= 2).sum()),
        "cluster_size_mean": round(float(all_sizes.mean()), 3) if all_sizes.size else None,
        "cluster_size_median": float(np.median(all_sizes)) if all_sizes.size else None,
        "cluster_size_max": int(all_sizes.max()) if all_sizes.size else None,
        "positive_pairs": sum(out[n]["positive_pairs"] for n in names),
        "negative_pairs": sum(out[n]["negative_pairs"] for n in names),
        "jaccard_positive_mean": pooled("positive"),
        "hard_negative_pairs": sum(out[n]["hard_negative_pairs"] for n in names),
        "jaccard_hard_negative_mean": pooled("hard_negative"),
        "jaccard_hard_negative_by_kind": {},
        "jaccard_random_negative_mean": None,
        "kinds": dict(sorted(kinds.items())),
        "days": len({str(d)[:10] for r in records if (d := r.get("date"))}),
        "sources": len({r.get("source") for r in records}),
    }
    return out
