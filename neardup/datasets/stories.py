"""Source stories for benchmarks: real duplicates, template families and full-day splits.

Before any noise is added, a corpus of clean stories is organised the way a labelled
benchmark needs it (see :mod:`neardup.datasets.benchmark`):

* :func:`prepare_stories` turns records into :class:`Story` objects (headline, dateline and
  body kept apart for Reuters) and sets aside empty, short and undated ones;
* :func:`find_story_groups` finds what the corpus itself already duplicates. Reuters-21578
  holds exact duplicates, longer or corrected re-sends of a story and template stories,
  the same wording with other figures or names (Sanderson 1997). Candidate pairs come from
  neardup's exact n-gram overlap on word 3-grams of headline + body: digit-masked texts
  with Jaccard >= ``template_threshold`` and raw texts with containment >= 0.9. A pair is
  the *same story* when it can be a re-send (within 4 days, not at the same time of day on
  another day as scheduled reports are) and the texts are identical, or every figure of
  one (a word 3-gram holding a number) is also in the other and the raw Jaccard is >= 0.8
  or the containment >= 0.9; otherwise the two are *templates*, different events.
  Same-story links make the duplicate groups (one cluster each), all links the families
  (never split between two splits);
* :func:`assign_splits` gives each split whole days, as NEWS-COPY's full-day samples
  (Silcock et al. 2022, sec. 3.2), keeping every family inside one split.

References: Sanderson, "Duplicate detection in the Reuters collection", 1997; Silcock,
Arora, D'Amico-Wong & Dell, "Noise-robust de-duplication at scale", 2022.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from neardup.errors import check_choice, check_float, check_int
from neardup.graph.cluster import connected_components
from neardup.graph.edges import Pairs
from neardup.methods.base import Sketch
from neardup.methods.ngram import NGramOverlap, exact_similarity
from neardup.text import ShingleConfig, hash_shingles, normalize_batch

__all__ = [
    "SPLITS",
    "Story",
    "StoryGroups",
    "assign_splits",
    "find_story_groups",
    "parse_splits",
    "prepare_stories",
]

SPLITS = ("train", "validation", "test")
_WORD3 = ShingleConfig("word", 3)
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ][0-9:.]+)?$")
# The wire's sign-off: "Reuter" alone on the last line (on 19k of the 19.8k bodies), or
# "REUTER" in capitals after the last sentence; not "... said Reuters" in running text.
_SIGNOFF = re.compile(r"(?:\n\s*Reuters?|(?<=[.!?\"])\s+REUTERS?)\s*\Z", re.IGNORECASE)
_DIGITS = re.compile(r"\d+")
_UNDATED_BLOCK = 250  # stories of an undated corpus form pseudo-days of this many


# --------------------------------------------------------------------------------------
# Stories
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Story:
    """One clean source story.

    Attributes
    ----------
    id : str
        Unique id (the input's ``id``, else its position).
    title, dateline, body : str
        Headline and dateline ("" when absent) and body; a record without a ``body`` field
        has its whole ``text`` as body.
    date : str or None
        ISO 8601 date(-time) as given.
    day : str
        ``date[:10]``, or ``"undated-NNNN"`` when no story of the corpus has a date: then
        stories form pseudo-days of 250 in input order.
    topics : tuple of str
        Topic labels (Reuters ``TOPICS``); empty when unknown.
    """

    id: str
    title: str
    dateline: str
    body: str
    date: str | None
    day: str
    topics: tuple[str, ...] = ()

    @property
    def lead(self) -> str:
        """Dateline and body: what a newspaper reprints under its own headline."""
        return f"{self.dateline} {self.body}" if self.dateline else self.body

    @property
    def text(self) -> str:
        """Headline, dateline and body: the clean story."""
        return "\n".join(part for part in (self.title, self.lead) if part)

    @property
    def core(self) -> str:
        """Headline and body, without the dateline (whose date differs between re-sends)."""
        return "\n".join(part for part in (self.title, self.body) if part)


def _iso_date(value: Any) -> str | None:
    if isinstance(value, _dt.datetime | _dt.date):
        return value.isoformat()
    if isinstance(value, np.datetime64):
        return None if np.isnat(value) else str(value)
    if isinstance(value, str) and _ISO_DATE.match(value.strip()):
        return value.strip()
    return None


def _topics(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Iterable):
        return ()
    return tuple(sorted({str(v).strip() for v in value if str(v).strip()}))


def prepare_stories(
    records: Iterable[Mapping[str, Any]], *, min_words: int = 20
) -> tuple[list[Story], dict[str, int]]:
    """Turn input records into :class:`Story` objects, setting aside empty and short ones.

    Parameters
    ----------
    records : iterable of mapping
        Each needs ``text`` (str). Optional: ``id`` (default: position), ``date`` (ISO
        string or datetime), ``topics`` (list of str), and Reuters' ``title``, ``dateline``
        and ``body`` (as :func:`neardup.io.iter_records` gives them). A trailing "Reuter"
        sign-off is removed from ``body``.
    min_words : int, default 20
        Stories with fewer whitespace-separated words (headline, dateline and body) are
        skipped: a reprint of a one-line brief carries too few word 3-grams to judge.

    Returns
    -------
    stories : list of Story
        In input order. When some stories have a date, those without one are skipped
        (splits are whole days); when none has, all are kept, in pseudo-days.
    skipped : dict
        ``{"empty": n, "short": n, "undated": n}``.

    Raises
    ------
    TypeError
        If a record is not a mapping or its ``text`` is not a str.
    ValueError
        If two records share an id.
    """
    caller = "prepare_stories"
    min_words = check_int(caller, "min_words", min_words, low=1)
    stories: list[Story] = []
    skipped = {"empty": 0, "short": 0, "undated": 0}
    first_seen: dict[str, int] = {}
    for index, record in enumerate(records):
        if not isinstance(record, Mapping):
            raise TypeError(
                f"{caller}: record {index} must be a mapping; got {type(record).__name__}."
            )
        text = record.get("text")
        if not isinstance(text, str):
            raise TypeError(
                f"{caller}: record {index} must have a str 'text' field; got "
                f"{type(text).__name__}. Use --text-field to name the field holding the text."
            )
        raw_id = record.get("id")
        story_id = str(index) if raw_id is None else str(raw_id)
        if story_id in first_seen:
            raise ValueError(
                f"{caller}: story ids must be unique; id {story_id!r} is used by records "
                f"{first_seen[story_id]} and {index}. Pass --id-field with a unique field."
            )
        first_seen[story_id] = index
        body = record.get("body")
        if isinstance(body, str) and body.strip():
            title = str(record.get("title") or "").strip()
            dateline = str(record.get("dateline") or "").strip()
            body = body.strip()
            # Only the last line can hold it: search a short tail, not the whole body.
            while (signoff := _SIGNOFF.search(body, max(len(body) - 40, 0))) and signoff.start():
                body = body[: signoff.start()].rstrip()
        else:
            title, dateline, body = "", "", text.strip()
        date = _iso_date(record.get("date"))
        story = Story(story_id, title, dateline, body, date, "", _topics(record.get("topics")))
        n_words = len(story.text.split())
        if n_words == 0:
            skipped["empty"] += 1
            continue
        if n_words < min_words:
            skipped["short"] += 1
            continue
        stories.append(dataclasses.replace(story, day=date[:10] if date else ""))
    undated = [s for s in stories if s.date is None]
    if len(undated) < len(stories):
        # Full-day sampling cannot place a story without a date among dated ones.
        skipped["undated"] = len(undated)
        return [s for s in stories if s.date is not None], skipped
    return [
        dataclasses.replace(s, day=f"undated-{k // _UNDATED_BLOCK:04d}")
        for k, s in enumerate(stories)
    ], skipped


# --------------------------------------------------------------------------------------
# Real duplicates and template families
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoryGroups:
    """Real duplicates and templates among stories.

    Attributes
    ----------
    duplicate : ndarray of int64, shape (n_stories,)
        Duplicate group of each story (canonical labels 0..G-1): identical texts and
        edited re-sends of one story. One group is one cluster.
    family : ndarray of int64, shape (n_stories,)
        Family of each story (0..F-1): duplicate groups joined by template links. A family
        is never split between two splits.
    pairs : dict of str -> int
        Story pairs found: ``identical`` (re-sent word for word), ``same_story`` (edited,
        expanded or shortened re-sends) and ``template`` (different events, including
        identical texts of scheduled reports on different days).
    """

    duplicate: np.ndarray
    family: np.ndarray
    pairs: dict[str, int]


def _figure_grams(text: str) -> set[tuple[str, ...]]:
    """Word 3-grams (of a normalized text) holding a number: each figure in its context."""
    words = text.split()
    return {
        tuple(words[i : i + 3])
        for i in range(max(len(words) - 2, 1))
        if any(any(c.isdigit() for c in w) for w in words[i : i + 3])
    }


def _figures_compatible(a: str, b: str) -> bool:
    """True if every figure of one text, in its context, is also in the other: an
    expanded re-send adds figures, a template or a correction changes them."""
    fa, fb = _figure_grams(a), _figure_grams(b)
    return fa <= fb or fb <= fa


def _hours(date: str | None) -> float | None:
    """Hours since the epoch of an ISO date-time; None without a time of day."""
    if date is None or len(date) <= 10:
        return None
    try:
        moment = _dt.datetime.fromisoformat(date)
    except ValueError:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return (moment - _dt.datetime(1970, 1, 1)).total_seconds() / 3600


def _resend_possible(a: float | None, b: float | None, max_hours: float) -> bool:
    """Could two stories sent at these times be one story sent twice?

    Sanderson (1997) took texts relayed more than 48 hours apart for templates. Reuters-
    21578 has re-sends up to ~3 days later (Friday or Saturday, again on Monday), and
    scheduled reports ("FED ADDS RESERVES", 11:45 every day) whose text can repeat word
    for word a day or a week later. So: within ``max_hours``, and not at the same time of
    day (within 15 minutes) on another day.
    """
    if a is None or b is None:
        return True
    gap = abs(a - b)
    days = round(gap / 24)
    return gap <= max_hours and not (days >= 1 and abs(gap - 24 * days) <= 0.25)


def _components(n: int, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    return connected_components(Pairs(left, right, np.ones(len(left), np.float32)), n)


def find_story_groups(
    stories: Sequence[Story],
    *,
    template_threshold: float = 0.7,
    same_jaccard: float = 0.8,
    same_containment: float = 0.9,
    max_resend_hours: float = 96.0,
) -> StoryGroups:
    """Find real duplicates (one cluster) and template families (one split) among stories.

    Word 3-grams of headline + body after neardup's normalization. Candidate pairs: digit-
    masked texts (every digit run becomes "0") with Jaccard >= ``template_threshold``, or
    raw texts with containment >= ``same_containment``, both found exactly by
    :class:`~neardup.methods.ngram.NGramOverlap`. A candidate pair is the same story if
    it may be a re-send (sent within ``max_resend_hours``, and not at the same time of day
    on another day, which marks a scheduled report) and the texts are identical, or every
    word 3-gram holding a number in one text is also in the other (an expanded re-send adds
    figures, a template changes them) and the raw Jaccard is >= ``same_jaccard`` or the
    containment >= ``same_containment``. Otherwise the two are templates (same wording,
    other figures, names or dates: different events).

    Parameters
    ----------
    stories : sequence of Story
    template_threshold : float, default 0.7
        Masked-text Jaccard above which two stories count as one template family. On
        Reuters-21578, 0.7 keeps families small (at most a few dozen stories: the daily
        "FED ADDS RESERVES", "HOG AND CATTLE SLAUGHTER GUESSTIMATES", ...); 0.5 chains the
        earnings reports of hundreds of companies into one family.
    same_jaccard, same_containment : float, defaults 0.8 and 0.9
        Raw-text Jaccard or containment above which a pair without conflicting figures is
        one story (an edited or expanded re-send).
    max_resend_hours : float, default 96
        Longest gap between two sends of one story; Reuters re-sends weekend stories on
        Monday. Applies only when both dates have a time of day.

    Returns
    -------
    StoryGroups
    """
    caller = "find_story_groups"
    max_resend_hours = check_float(caller, "max_resend_hours", max_resend_hours, low=0.0)
    template_threshold = check_float(
        caller, "template_threshold", template_threshold, low=0.0, high=1.0
    )
    same_jaccard = check_float(caller, "same_jaccard", same_jaccard, low=0.0, high=1.0)
    same_containment = check_float(caller, "same_containment", same_containment, low=0.0, high=1.0)
    n = len(stories)
    norm = normalize_batch([s.core for s in stories])
    raw = hash_shingles(norm, _WORD3).unique()
    masked = hash_shingles([_DIGITS.sub("0", t) for t in norm], _WORD3).unique()
    max_df = max(n, 2)  # complete: every pair above the thresholds
    found = [
        NGramOverlap(threshold=template_threshold, max_df=max_df).find_pairs(
            Sketch(masked.counts(), sets=masked)
        ),
        NGramOverlap(
            threshold=same_containment, similarity="containment", max_df=max_df
        ).find_pairs(Sketch(raw.counts(), sets=raw)),
    ]
    codes = np.unique(np.concatenate([p.left * max(n, 1) + p.right for p in found]))
    left, right = codes // max(n, 1), codes % max(n, 1)
    jaccard = exact_similarity(raw, left, right)
    containment = exact_similarity(raw, left, right, kind="containment")
    pairs = list(zip(left.tolist(), right.tolist()))
    identical = np.array([norm[a] == norm[b] for a, b in pairs], dtype=bool)
    compatible = np.array([_figures_compatible(norm[a], norm[b]) for a, b in pairs], dtype=bool)
    hours = [_hours(s.date) for s in stories]
    resend = np.array(
        [_resend_possible(hours[a], hours[b], max_resend_hours) for a, b in pairs], dtype=bool
    )
    similar = compatible & ((jaccard >= same_jaccard) | (containment >= same_containment))
    same = resend & (identical | similar)
    counts = {
        "identical": int((same & identical).sum()),
        "same_story": int((same & ~identical).sum()),
        "template": int((~same).sum()),
    }
    return StoryGroups(
        duplicate=_components(n, left[same], right[same]),
        family=_components(n, left, right),
        pairs=counts,
    )


# --------------------------------------------------------------------------------------
# Splits from whole days
# --------------------------------------------------------------------------------------


def parse_splits(spec: Any) -> tuple[tuple[str, int | float | str], ...]:
    """Validate a split specification.

    Parameters
    ----------
    spec : str, mapping or sequence of (name, size)
        E.g. ``"train=8000,validation=4000,test=4000"`` or ``{"test": 0.1}``. Names are
        ``train``, ``validation`` and ``test``, each at most once. A size is an int >= 0
        (target number of documents; 0 skips the split), a float in (0, 1) (fraction of the
        usable stories) or ``"rest"`` (every story not taken by the other splits; at most
        one split).

    Returns
    -------
    tuple of (str, int | float | str)
    """
    caller = "parse_splits"
    items: list[tuple[Any, Any]]
    if isinstance(spec, str):
        items = []
        for part in (p.strip() for p in spec.split(",")):
            name, eq, value = part.partition("=")
            if not eq:
                raise ValueError(
                    f"{caller}: parameter 'splits' must be NAME=SIZE pairs joined by commas, "
                    f"e.g. 'validation=4000,test=4000'; got {spec!r}."
                )
            value = value.strip()
            size: Any = value
            if re.fullmatch(r"\d+", value):
                size = int(value)
            elif re.fullmatch(r"\d*\.\d+", value):
                size = float(value)
            items.append((name.strip(), size))
    elif isinstance(spec, Mapping):
        items = list(spec.items())
    else:
        items = [tuple(item) for item in spec]  # type: ignore[misc]
    out: list[tuple[str, int | float | str]] = []
    for name, size in items:
        check_choice(caller, "splits", name, SPLITS)
        if name in (n for n, _ in out):
            raise ValueError(f"{caller}: split {name!r} is given twice in {spec!r}.")
        if isinstance(size, str) and size == "rest":
            pass
        elif isinstance(size, float):
            check_float(
                caller,
                f"splits[{name}]",
                size,
                low=1e-9,
                high=1.0 - 1e-9,
                hint="Use an int for a number of documents.",
            )
        else:
            size = check_int(
                caller,
                f"splits[{name}]",
                size,
                low=0,
                hint="Sizes are documents (int), a fraction of stories, or 'rest'.",
            )
        out.append((name, size))
    if sum(1 for _, s in out if s == "rest") > 1:
        raise ValueError(f"{caller}: at most one split may be 'rest'; got {spec!r}.")
    if sum(s for _, s in out if isinstance(s, float)) > 1.0 + 1e-9:
        raise ValueError(f"{caller}: split fractions must sum to at most 1; got {spec!r}.")
    return tuple(out)


def assign_splits(
    stories: Sequence[Story],
    family: np.ndarray,
    splits: Any,
    rng: np.random.Generator,
    docs_per_story: float = 6.0,
) -> dict[str, dict[str, Any]]:
    """Give each split whole days of stories, keeping every family inside one split.

    Days are visited in a random order; a split takes a day when that keeps it within 10%
    above its target and stops once within 10% below it. If no day is small enough, it
    takes the day closest to its target. Taking a day takes every not yet assigned family
    with a story on it, with all its members (also those of other days). Splits are filled
    in the order test, validation, train; a ``"rest"`` split last.

    Parameters
    ----------
    stories : sequence of Story
    family : ndarray of int, shape (n_stories,)
        Family labels (:attr:`StoryGroups.family`).
    splits : see :func:`parse_splits`
    rng : numpy.random.Generator
    docs_per_story : float, default 6.0
        Expected documents per story, to turn document targets into story targets.

    Returns
    -------
    dict
        Split name -> ``{"stories": sorted story positions, "days": days taken in
        full, "other_day_stories": how many stories came from other days with a family}``,
        in :data:`SPLITS` order; splits of size 0 are left out.
    """
    spec = parse_splits(splits)
    family = np.asarray(family, dtype=np.int64)
    n = len(stories)
    n_units = int(family.max()) + 1 if n else 0
    members: list[list[int]] = [[] for _ in range(n_units)]
    for i, unit in enumerate(family.tolist()):
        members[unit].append(i)
    day_units: dict[str, set[int]] = {}
    for i, story in enumerate(stories):
        day_units.setdefault(story.day, set()).add(int(family[i]))
    days = sorted(day_units)
    order = [days[i] for i in rng.permutation(len(days)).tolist()]
    owner = np.full(n_units, -1, dtype=np.int64)
    used_days: set[str] = set()
    names = [name for name, _ in spec]

    def available(day: str) -> int:
        return sum(len(members[u]) for u in day_units[day] if owner[u] < 0)

    def take(day: str, code: int) -> int:
        got = 0
        for unit in sorted(day_units[day]):
            if owner[unit] < 0:
                owner[unit] = code
                got += len(members[unit])
        used_days.add(day)
        return got

    ordered = sorted(spec, key=lambda item: (item[1] == "rest", -SPLITS.index(item[0])))
    taken_days: dict[str, list[str]] = {name: [] for name in names}
    for name, size in ordered:
        code = names.index(name)
        if size == "rest":
            for day in order:
                if day not in used_days and available(day):
                    taken_days[name].append(day)
                    take(day, code)
            continue
        if size == 0:
            continue
        if isinstance(size, float):
            target = size * n
        else:
            target = size / max(docs_per_story, 1e-9)
        got = 0
        for day in order:
            if got >= 0.9 * target:
                break
            if day in used_days:
                continue
            avail = available(day)
            if avail and got + avail <= 1.1 * target:
                taken_days[name].append(day)
                got += take(day, code)
        if got == 0:
            options = [d for d in order if d not in used_days and available(d)]
            if options:
                best = min(options, key=lambda d: abs(available(d) - target))
                taken_days[name].append(best)
                take(best, code)
    result: dict[str, dict[str, Any]] = {}
    for name in SPLITS:
        if name not in names:
            continue
        code = names.index(name)
        positions = sorted(i for i in range(n) if owner[family[i]] == code)
        if not positions:
            continue
        days_taken = set(taken_days[name])
        result[name] = {
            "stories": positions,
            "days": sorted(days_taken),
            "other_day_stories": sum(stories[i].day not in days_taken for i in positions),
        }
    return result
