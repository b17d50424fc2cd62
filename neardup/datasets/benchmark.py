"""Labelled near-duplicate benchmarks from a clean, dated news corpus (``neardup augment``).

Builds NEWS-COPY-like sets (Silcock et al. 2022, "Noise-Robust De-Duplication at Scale",
sec. 3) and W4NT3D-like sets (Zhang et al. 2023, "RETSim", sec. 4.2 and appendix A.2) from
any corpus of clean stories, by default the 21,578 dated Reuters-21578 wire stories of 1987.
Nothing is downloaded and the output depends only on the input and ``seed``.

Steps
-----
Steps 1-3 are in :mod:`neardup.datasets.stories`, the statistics in
:mod:`neardup.datasets.benchmark_stats`.

1. **Stories** (:func:`prepare_stories`). Records become :class:`Story` objects: headline,
   dateline and body when the record has them (Reuters), else the whole text as body.
   Empty stories, stories under ``min_words`` words, and undated stories among dated ones
   are set aside and counted.
2. **Real duplicates and templates** (:func:`find_story_groups`). Reuters holds exact
   duplicates, longer or corrected re-sends of a story, and template stories: the same
   wording with other figures or names (Sanderson 1997). Same-story pairs make duplicate
   groups (one cluster each); template pairs join groups into families, which never
   straddle two splits.
3. **Splits from whole days** (:func:`assign_splits`). As in NEWS-COPY's full-day samples,
   each split takes every story of a few whole days, so same-day stories on the same topic
   and same-day templates are present as natural negatives and most pairs are negative.
   Test is filled first, then validation, then train; a family touching a chosen day
   joins that split with all its members, so no family is split and splits share no
   source story.
4. **Clusters and hard negatives.** Each duplicate group is a cluster; each member of a
   family with several clusters in the split is a ``"template"`` cluster. A share
   ``hard_negative_share`` of the clusters become anchors of one labelled hard negative
   each, a separate cluster: ``"hard_negative:update"`` (the anchor with about half its
   sentences replaced by the most similar other story on its topic), ``"hard_negative:
   same_topic"`` (the most similar real story of the same day and topic) or
   ``"hard_negative:shared_quote"`` (such a story with a quoted sentence of the anchor
   inserted). Cluster sizes are drawn by :func:`neardup.datasets.noise.reprint_cluster_sizes`
   (long-tailed: mean ``mean_cluster_size``, at most ``max_cluster_size``).
5. **Copies.** ``profile="news"``: every member of a cluster is a copy printed by a
   simulated newspaper: the wire headline dropped (papers write their own; NEWS-COPY
   leaves headlines out) or kept, and the dateline + body passed through
   :func:`neardup.datasets.noise.reprint` (dateline and byline changes, missing lead,
   abridgement, dropped middle sentences, local sentences, OCR noise).
   ``profile="adversarial"``: the first member is the clean story (``"source"``), the
   others W4NT3D-style copies (``"adversarial"``: sentence-, word- and character-level
   insertion, deletion, substitution and transposition, typos, homoglyphs, invisible
   characters, case changes, padding). Template and hard-negative clusters keep their own
   kind on every member.
6. **Calibration.** For ``"news"``, OCR severity is scaled so that the mean word-3-gram
   Jaccard of positive pairs in the test split (neardup's normalization and shingling)
   is near ``target_jaccard``, 0.30 by default: the value Silcock et al. (sec. 1) report
   for NEWS-COPY's test set. The scale is found by regula falsi (Illinois) in log scale,
   scoring the split's copies at each step; every copy has its own random stream, so the
   score moves smoothly with the scale and the final statistic is the last estimate.

Records
-------
The shared labelled format, one dict per document: ``id`` (``"<split>-NNNNNN"``),
``split``, ``cluster`` (the id of the cluster's first story; updates add ``"~update"``),
``kind`` (:data:`KINDS`), ``date`` (the story's ISO date or None), ``source`` (id of the
real story the text comes from), ``negative_of`` (hard negatives and templates only: the
cluster they are a hard negative of), ``noise`` (list of the edits applied, in order) and
``text``. Records are grouped by split in :data:`SPLITS` order and shuffled within it.

References
----------
Silcock, Arora, D'Amico-Wong & Dell, "Noise-robust de-duplication at scale", 2022, sec. 3
and A.2. Zhang et al., "RETSim: Resilient and efficient text similarity", 2023, sec. 4.2
and A.2. Sanderson, "Duplicate detection in the Reuters collection", 1997.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from neardup.errors import check_choice, check_float, check_int
from neardup.datasets.benchmark_stats import benchmark_stats, shingle_sets, within_cluster_pairs
from neardup.datasets.noise import (
    PROFILES,
    insert_local_sentences,
    ocr_noise,
    quoted_sentences,
    replace_sentences,
    reprint,
    reprint_cluster_sizes,
    split_sentences,
)
from neardup.datasets.stories import (
    SPLITS,
    Story,
    StoryGroups,
    assign_splits,
    find_story_groups,
    parse_splits,
    prepare_stories,
)
from neardup.methods.ngram import exact_similarity
from neardup.progress import progress_bar
from neardup.text import normalize_batch

__all__ = [
    "HARD_NEGATIVE_KINDS",
    "KINDS",
    "NEWS_COPY_JACCARD",
    "SPLITS",
    "Story",
    "StoryGroups",
    "assign_splits",
    "benchmark_stats",
    "make_benchmark",
    "find_story_groups",
    "parse_splits",
    "prepare_stories",
]

KINDS = (
    "reprint",
    "source",
    "adversarial",
    "template",
    "hard_negative:update",
    "hard_negative:same_topic",
    "hard_negative:shared_quote",
)
HARD_NEGATIVE_KINDS = KINDS[4:]
#: Mean word-3-gram Jaccard of positive pairs in NEWS-COPY's test set (Silcock et al. sec. 1).
NEWS_COPY_JACCARD = 0.30
# Split codes in the random-stream keys: fixed, so a split's noise does not depend on
# which other splits are built.
SPLIT_CODE = {name: code for code, name in enumerate(SPLITS)}
_HEADLINE_DROP = 0.5  # papers wrote their own headlines; NEWS-COPY leaves them out
_NEWS_OCR = (0.005, 0.08)  # log-uniform OCR severity range of noise.reprint, before scaling
_ADVERSARIAL_RATE = (0.05, 0.25)  # W4NT3D: up to 25% word and character edits
# Calibration scores every copy of the split (so the final statistic is the estimate), or,
# above this many copies, the first k of each cluster with k as large as fits.
_CALIBRATION_COPIES = 20_000


# --------------------------------------------------------------------------------------
# Clusters and hard negatives within one split
# --------------------------------------------------------------------------------------


@dataclass
class StoryCluster:
    label: str
    members: list[Story]  # copy j is made from members[j % len(members)]
    family: int
    kind: str | None = None  # None: the profile's default kinds
    negative_of: str | None = None
    notes: list[str] = field(default_factory=list)
    size: int = 1


def _bag(text: str) -> frozenset[str]:
    """Content words of a normalized text, for picking the most similar other story."""
    return frozenset(w for w in text.split() if len(w) > 3 and not any(c.isdigit() for c in w))


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def _quote_for(story: Story, rng: np.random.Generator) -> str | None:
    """A quoted sentence of the story's body, else a long non-lead sentence, else None."""
    quotes = quoted_sentences(story.body)
    if quotes:
        return quotes[int(rng.integers(len(quotes)))]
    sentences = [s for s in split_sentences(story.body)[1:] if len(s.split()) >= 8]
    return sentences[int(rng.integers(len(sentences)))] if sentences else None


def make_clusters(
    stories: Sequence[Story], groups: StoryGroups, positions: Sequence[int]
) -> list[StoryCluster]:
    """One cluster per duplicate group; families with several clusters become templates."""
    by_group: dict[int, list[int]] = {}
    for i in positions:
        by_group.setdefault(int(groups.duplicate[i]), []).append(i)
    clusters = [
        StoryCluster(stories[idx[0]].id, [stories[i] for i in idx], int(groups.family[idx[0]]))
        for idx in by_group.values()
    ]
    by_family: dict[int, list[StoryCluster]] = {}
    for cluster in clusters:
        by_family.setdefault(cluster.family, []).append(cluster)
    for siblings in by_family.values():
        if len(siblings) > 1:
            for k, cluster in enumerate(siblings):
                cluster.kind = "template"
                cluster.negative_of = siblings[(k + 1) % len(siblings)].label
    return clusters


def add_hard_negatives(
    clusters: list[StoryCluster], share: float, rng: np.random.Generator
) -> dict[str, int]:
    """Turn ``share`` of the clusters into anchors of one hard negative each (in place)."""
    n_anchors = round(share * len(clusters))
    made = dict.fromkeys(HARD_NEGATIVE_KINDS, 0)
    if n_anchors == 0:
        return made
    firsts = [c.members[0] for c in clusters]
    bags = [_bag(t) for t in normalize_batch([s.core for s in firsts])]
    by_day: dict[str, list[int]] = {}
    for k, story in enumerate(firsts):
        by_day.setdefault(story.day, []).append(k)
    taken = np.zeros(len(clusters), dtype=bool)  # anchors and partners, used once

    def best(anchor: int, candidates: Iterable[int], free: bool) -> int | None:
        story = firsts[anchor]
        pick, pick_score = None, -1.0
        for k in candidates:
            other = firsts[k]
            if k == anchor or clusters[k].family == clusters[anchor].family:
                continue
            if free and (taken[k] or clusters[k].kind is not None or len(clusters[k].members) > 1):
                continue
            if story.topics and not set(story.topics) & set(other.topics):
                continue
            score = _overlap(bags[anchor], bags[k])
            if score > pick_score:
                pick, pick_score = k, score
        return pick

    anchors_done = 0
    kinds = ("update", "same_topic", "shared_quote")
    n_original = len(clusters)
    for anchor in rng.permutation(n_original).tolist():
        if anchors_done >= n_anchors:
            break
        if taken[anchor] or clusters[anchor].kind is not None:
            continue
        story = firsts[anchor]
        first_kind = anchors_done % len(kinds)
        for kind in kinds[first_kind:] + kinds[:first_kind]:
            if kind == "update":
                n_sentences = len(split_sentences(story.body))
                if n_sentences < 3:
                    continue
                donor = best(anchor, range(n_original), free=False)
                if donor is None:
                    continue
                donor_sentences = split_sentences(firsts[donor].body)
                if len(donor_sentences) < 2:
                    continue
                k = min(max(1, round(rng.uniform(0.4, 0.6) * n_sentences)), n_sentences - 1)
                body = replace_sentences(story.body, rng, donor_sentences, k / n_sentences)
                update = dataclasses.replace(story, body=body)
                clusters.append(
                    StoryCluster(
                        f"{clusters[anchor].label}~update", [update], -1 - anchor,
                        kind="hard_negative:update", negative_of=clusters[anchor].label,
                        notes=[f"update(donor={firsts[donor].id}, replaced={k}/{n_sentences})"],
                    )
                )  # fmt: skip
            else:
                partner = best(anchor, by_day[story.day], free=True)
                if partner is None:
                    continue
                if kind == "shared_quote":
                    quote = _quote_for(story, rng)
                    if quote is None:
                        continue
                    member = clusters[partner].members[0]
                    body = insert_local_sentences(member.body, rng, [quote], n=1)
                    clusters[partner].members = [dataclasses.replace(member, body=body)]
                    clusters[partner].notes = [f"shared_quote(from={story.id})"]
                clusters[partner].kind = f"hard_negative:{kind}"
                clusters[partner].negative_of = clusters[anchor].label
                taken[partner] = True
            taken[anchor] = True
            made[f"hard_negative:{kind}"] += 1
            anchors_done += 1
            break
    return made


# --------------------------------------------------------------------------------------
# Copies
# --------------------------------------------------------------------------------------


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _news_copy(
    story: Story, rng: np.random.Generator, donors: Sequence[str], scale: float, rate: float | None
) -> tuple[str, list[str]]:
    """A newspaper's reprint: headline dropped or kept (dropped with a missing lead), then
    dateline + body reprinted."""
    severity = rate if rate is not None else min(0.5, scale * _log_uniform(rng, *_NEWS_OCR))
    noise: list[str] = []
    headline = ""
    if story.title:
        if rng.random() < _HEADLINE_DROP:
            noise.append("drop_headline")
        else:
            headline = story.title
            if rng.random() < 0.5:  # wire headlines are upper case; many papers are not
                headline = headline.title()
                noise.append("recase_headline")
    body, applied = reprint(story.lead, rng, "news", donors, rate=severity)
    if headline and "drop_lead" in applied:  # continued from another page: no headline
        headline = ""
        noise = ["drop_headline"]
    noise.extend(applied)
    if headline:
        headline = ocr_noise(headline, rng, severity)
        return f"{headline}\n{body}", noise
    return body, noise


def _adversarial_copy(
    story: Story, rng: np.random.Generator, donors: Sequence[str], scale: float, rate: float | None
) -> tuple[str, list[str]]:
    budget = rate if rate is not None else min(1.0, scale * float(rng.uniform(*_ADVERSARIAL_RATE)))
    return reprint(story.text, rng, "adversarial", donors, rate=budget)


@dataclass
class _SplitPlan:
    name: str
    clusters: list[StoryCluster]
    donors: list[str]
    info: dict[str, Any]


def _copy(
    plan: _SplitPlan, ci: int, j: int, profile: str, seed: int, scale: float, rate: float | None
) -> dict[str, Any]:
    """Copy ``j`` of cluster ``ci``, with its own random stream (seed, split, cluster, copy)."""
    cluster = plan.clusters[ci]
    story = cluster.members[j % len(cluster.members)]
    rng = np.random.default_rng([seed, 3, SPLIT_CODE[plan.name], ci, j])
    picks = rng.integers(0, len(plan.donors), size=min(30, len(plan.donors))).tolist()
    donors = [plan.donors[p] for p in picks]
    if profile == "news":
        text, noise = _news_copy(story, rng, donors, scale, rate)
        kind = cluster.kind or "reprint"
    elif j == 0:
        text, noise = story.text, []
        kind = cluster.kind or "source"
    else:
        text, noise = _adversarial_copy(story, rng, donors, scale, rate)
        kind = cluster.kind or "adversarial"
    record: dict[str, Any] = {
        "split": plan.name,
        "cluster": cluster.label,
        "kind": kind,
        "date": story.date,
        "source": story.id,
    }
    if cluster.negative_of is not None:
        record["negative_of"] = cluster.negative_of
    record["noise"] = [*cluster.notes, *noise]
    record["text"] = text
    return record


def _split_donors(stories: Sequence[Story], rng: np.random.Generator) -> list[str]:
    """Sentences of up to 300 stories of the split, for local insertions and padding."""
    picks = rng.permutation(len(stories))[:300].tolist()
    out = [
        s
        for p in sorted(picks)
        for s in split_sentences(stories[p].body)
        if 5 <= len(s.split()) <= 40
    ]
    return out or ["The council will meet again next week."]


# --------------------------------------------------------------------------------------
# Calibration
# --------------------------------------------------------------------------------------


def _estimate_jaccard(plan: _SplitPlan, profile: str, seed: int, scale: float) -> float:
    """Pair-weighted mean positive Jaccard of the split's copies (a per-cluster sample of
    copies when the split is larger than ``_CALIBRATION_COPIES``)."""
    sizes = [c.size for c in plan.clusters if c.size >= 2]
    cap = max(sizes, default=2)
    while cap > 2 and sum(min(s, cap) for s in sizes) > _CALIBRATION_COPIES:
        cap = max(2, int(cap * 0.8))
    texts, labels, weights = [], [], {}
    for ci, cluster in enumerate(plan.clusters):
        if cluster.size < 2:
            continue
        weights[ci] = cluster.size * (cluster.size - 1) / 2
        for j in range(min(cluster.size, cap)):
            texts.append(_copy(plan, ci, j, profile, seed, scale, None)["text"])
            labels.append(ci)
    if not weights:
        return float("nan")
    left, right, lab = within_cluster_pairs(np.asarray(labels, dtype=np.int64))
    scores = exact_similarity(shingle_sets(texts), left, right).astype(np.float64)
    cluster_ids = np.array(sorted(weights))
    where = np.searchsorted(cluster_ids, lab)
    means = np.bincount(where, weights=scores, minlength=len(cluster_ids)) / np.bincount(
        where, minlength=len(cluster_ids)
    )
    w = np.array([weights[c] for c in cluster_ids.tolist()])
    return float((means * w).sum() / w.sum())


def _calibrate(
    plan: _SplitPlan, profile: str, seed: int, target: float, progress: bool | None
) -> dict[str, Any]:
    """Noise scale whose estimated positive Jaccard is ``target`` (regula falsi, log scale)."""
    history: list[tuple[float, float]] = []

    def f(log_scale: float) -> float:
        value = _estimate_jaccard(plan, profile, seed, math.exp(log_scale))
        history.append((round(math.exp(log_scale), 5), round(value, 5)))
        advance(1)
        return value - target

    with progress_bar(f"augment: calibrating on {plan.name}", total=None, unit="steps",
                      enabled=progress) as advance:  # fmt: skip
        lo, hi = 0.0, 0.0
        f_lo = f_hi = f(0.0)
        if math.isnan(f_lo):
            return {"scale": 1.0, "estimate": None, "history": history}
        step = math.log(2.0)
        # Jaccard falls as noise grows: widen the bracket until it changes sign.
        for _ in range(8):
            if f_lo > 0 and f_hi > 0:
                hi += step
                f_hi = f(hi)
            elif f_lo < 0 and f_hi < 0:
                lo -= step
                f_lo = f(lo)
            else:
                break
            step *= 1.5
        if f_lo * f_hi > 0:  # target out of reach: take the closer end
            best = lo if abs(f_lo) < abs(f_hi) else hi
            return {"scale": math.exp(best), "estimate": target + min(f_lo, f_hi, key=abs),
                    "history": history}  # fmt: skip
        if f_lo == 0 or f_hi == 0:
            best = lo if f_lo == 0 else hi
            return {"scale": math.exp(best), "estimate": target, "history": history}
        # Illinois regula falsi: (lo, f_lo > 0 at low noise) and (hi, f_hi < 0).
        x, fx, side = lo, f_lo, 0
        for _ in range(10):
            x = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
            fx = f(x)
            if abs(fx) < 0.002:
                break
            if fx > 0:
                lo, f_lo = x, fx
                if side == 1:
                    f_hi /= 2
                side = 1
            else:
                hi, f_hi = x, fx
                if side == -1:
                    f_lo /= 2
                side = -1
    return {"scale": math.exp(x), "estimate": target + fx, "history": history}


# --------------------------------------------------------------------------------------
# Public entry point
# --------------------------------------------------------------------------------------


def make_benchmark(
    stories: Iterable[Mapping[str, Any]],
    *,
    seed: int = 0,
    profile: str = "news",
    splits: Any = (("validation", 4000), ("test", 4000)),
    mean_cluster_size: float = 6.0,
    max_cluster_size: int = 200,
    hard_negative_share: float = 0.2,
    target_jaccard: float | None | str = "auto",
    noise_scale: float | None = None,
    rate: float | None = None,
    min_words: int = 20,
    template_threshold: float = 0.7,
    progress: bool | None = None,
    return_info: bool = False,
) -> list[dict[str, Any]] | tuple[list[dict[str, Any]], dict[str, Any]]:
    """Build a labelled near-duplicate benchmark from clean stories.

    See the module docstring for the steps. Deterministic: the same stories, parameters
    and ``seed`` give the same records, and writing them with
    :func:`neardup.io.write_records` gives byte-identical files.

    Parameters
    ----------
    stories : iterable of mapping
        Clean stories, e.g. ``neardup.io.iter_records`` over the Reuters-21578 ``.sgm``
        files; see :func:`prepare_stories` for the fields used.
    seed : int >= 0, default 0
        Seeds every random choice.
    profile : {"news", "adversarial"}, default "news"
        ``"news"``: NEWS-COPY-like newspaper reprints (every copy noisy). ``"adversarial"``:
        W4NT3D-like, each cluster is the clean story plus adversarial copies.
    splits : str, mapping or sequence of (name, size), default validation=4000, test=4000
        Which splits to build and how large (see :func:`parse_splits`): an int is a target
        number of documents, reached within a day's worth since splits take whole days.
    mean_cluster_size : float >= 1, default 6.0
        Mean number of documents per cluster, singletons included. NEWS-COPY's reproduced
        articles appear in about 5-6 papers on average.
    max_cluster_size : int >= 1, default 200
        Largest cluster (NEWS-COPY's largest have about 200 copies).
    hard_negative_share : float in [0, 1], default 0.2
        Share of a split's clusters that get one labelled hard negative (update, same-topic
        story or shared quote, in rotation). Templates come on top, from the data.
    target_jaccard : float in (0, 1), None or "auto", default "auto"
        Calibrate the noise so that the mean word-3-gram Jaccard of positive pairs in the
        test split (else validation, else train) is about this. "auto": 0.30 for "news"
        (NEWS-COPY's test set), no calibration for "adversarial" (W4NT3D's rates).
    noise_scale : float > 0, optional
        Fixed multiplier of the drawn noise rates (news: OCR severity log-uniform in
        [0.005, 0.08]; adversarial: total edit rate uniform in [0.05, 0.25]) instead of
        calibrating. Default: calibrated, or 1.0 without a target.
    rate : float in [0, 1], optional
        One fixed noise rate for every copy instead of drawn ones (news: OCR severity;
        adversarial: the word- and character-level edit budget); turns calibration off.
    min_words : int >= 1, default 20
        Shorter stories are skipped.
    template_threshold : float, default 0.7
        See :func:`find_story_groups`.
    progress : bool, optional
        Progress bars on stderr; default on when stderr is a terminal.
    return_info : bool, default False
        Also return a dict describing the run (stories skipped, real duplicates and
        templates found, days per split, hard negatives made, the noise scale and its
        calibration).

    Returns
    -------
    records : list of dict
        The shared labelled format (see the module docstring), grouped by split.
    info : dict
        Only with ``return_info=True``.

    Examples
    --------
    >>> from neardup.io import iter_records, find_reuters_dir  # doctest: +SKIP
    >>> files = sorted(find_reuters_dir().glob("reut2-*.sgm"))  # doctest: +SKIP
    >>> records = make_benchmark(iter_records(files), seed=1, splits="test=3000")  # doctest: +SKIP
    """
    caller = "make_benchmark"
    seed = check_int(caller, "seed", seed, low=0)
    profile = check_choice(caller, "profile", profile, PROFILES)
    spec = parse_splits(splits)
    max_cluster_size = check_int(caller, "max_cluster_size", max_cluster_size, low=1)
    mean_cluster_size = check_float(
        caller, "mean_cluster_size", mean_cluster_size, low=1.0, high=float(max_cluster_size),
        hint="The mean cannot exceed max_cluster_size.",
    )  # fmt: skip
    hard_negative_share = check_float(
        caller, "hard_negative_share", hard_negative_share, low=0.0, high=1.0
    )
    if rate is not None:
        rate = check_float(caller, "rate", rate, low=0.0, high=1.0)
    if noise_scale is not None:
        noise_scale = check_float(caller, "noise_scale", noise_scale, low=1e-6, high=1e3)
    if target_jaccard == "auto":
        calibrate = rate is None and noise_scale is None and profile == "news"
        target = NEWS_COPY_JACCARD if calibrate else None
    elif target_jaccard is None:
        target = None
    else:
        target = check_float(caller, "target_jaccard", target_jaccard, low=0.01, high=0.99)
        if rate is not None or noise_scale is not None:
            raise ValueError(
                f"{caller}: parameter 'target_jaccard' calibrates the noise, so it cannot be "
                "combined with a fixed 'rate' or 'noise_scale'; pass target_jaccard=None."
            )

    kept, skipped = prepare_stories(stories, min_words=min_words)
    groups = find_story_groups(kept, template_threshold=template_threshold)
    extra = hard_negative_share / 3  # updates are new clusters; the other kinds are not
    assignment = assign_splits(
        kept, groups.family, spec, np.random.default_rng([seed, 1]),
        docs_per_story=mean_cluster_size * (1 + extra),
    )  # fmt: skip
    plans: list[_SplitPlan] = []
    for name, chosen in assignment.items():
        rng = np.random.default_rng([seed, 2, SPLIT_CODE[name]])
        clusters = make_clusters(kept, groups, chosen["stories"])
        made = add_hard_negatives(clusters, hard_negative_share, rng)
        sizes = reprint_cluster_sizes(len(clusters), rng, mean_cluster_size, max_cluster_size)
        for cluster, size in zip(clusters, sizes.tolist()):
            cluster.size = size
        donors = _split_donors([kept[i] for i in chosen["stories"]], rng)
        info = {
            "days": chosen["days"],
            "stories": len(chosen["stories"]),
            "other_day_stories": chosen["other_day_stories"],
            "clusters": len(clusters),
            "template_clusters": sum(c.kind == "template" for c in clusters),
            "hard_negatives": made,
        }
        plans.append(_SplitPlan(name, clusters, donors, info))

    scale = 1.0 if noise_scale is None else noise_scale
    calibration = None
    if target is not None and plans:
        by_name = {p.name: p for p in plans}
        on = next(by_name[n] for n in ("test", "validation", "train") if n in by_name)
        calibration = _calibrate(on, profile, seed, target, progress)
        calibration["split"] = on.name
        calibration["target"] = target
        scale = calibration["scale"]

    records: list[dict[str, Any]] = []
    for plan in plans:
        work = [(ci, j) for ci, c in enumerate(plan.clusters) for j in range(c.size)]
        out = []
        with progress_bar(f"augment: {plan.name}", total=len(work), enabled=progress) as advance:
            for ci, j in work:
                out.append(_copy(plan, ci, j, profile, seed, scale, rate))
                advance(1)
        order = np.random.default_rng([seed, 4, SPLIT_CODE[plan.name]]).permutation(len(out))
        for k, i in enumerate(order.tolist()):
            records.append({"id": f"{plan.name}-{k:06d}", **out[i]})
        plan.info["docs"] = len(out)
    if not return_info:
        return records
    info = {
        "profile": profile,
        "seed": seed,
        "stories_in": len(kept) + sum(skipped.values()),
        "stories_used": len(kept),
        "skipped": skipped,
        "real_pairs": groups.pairs,
        "duplicate_groups": int(np.sum(np.bincount(groups.duplicate) > 1)) if len(kept) else 0,
        "families": int(np.sum(np.bincount(groups.family) > 1)) if len(kept) else 0,
        "noise_scale": round(scale, 6),
        "rate": rate,
        "calibration": calibration,
        "splits": {p.name: p.info for p in plans},
    }
    return records, info
