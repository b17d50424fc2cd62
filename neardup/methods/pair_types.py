"""Duplicate types of linked document pairs, after Sanderson (1997).

Examining the pairs his mutual-retrieval test found in the Reuters collection, Sanderson
(1997, sec. 4-5) told four kinds of duplicate apart:

* **exact** — the same story, identical text;
* **expanded** — the same event, one story a longer version of the other;
* **corrected** — the same event, one story a corrected version of the other;
* **template** — nearly identical wording reporting *different* events: wire services
  reuse templates for regular events (earnings, dividends, central bank operations), so
  such stories differ in figures and names, and are usually relayed days apart (he set
  aside mutual pairs more than 48 hours apart as template candidates).

:func:`classify_pairs` assigns one of these types, or ``"near"`` for a linked pair that
fits none, to the pairs of *any* method from cheap text features computed for all pairs
at once (:func:`pair_features`): equality of the normalized texts, the Jaccard similarity
and containment of their word-shingle sets, and the Jaccard similarity once every run of
digits is masked (a template's differences are mostly figures, so masking them makes its
two texts much more alike; a correction's differences are mostly words). Dates and
cluster sizes, when given, add the time-window and large-cluster tests.

The rules, in order (the first that holds wins):

1. ``exact``: the normalized texts are equal (whatever the dates: identical text is the
   report's definition; exact copies relayed days apart were 4 of its 33 template
   candidates).
2. ``template``: the dates are more than ``time_window_hours`` apart, or either document
   is in a cluster of at least ``large_cluster`` documents, or masking digits raises the
   Jaccard similarity by at least ``template_gain`` to at least ``template_masked_min``.
3. ``expanded``: containment ``>= containment_min`` but Jaccard ``< expanded_jaccard_max``
   (the smaller text is nearly all inside a notably longer one).
4. ``corrected``: Jaccard ``>= corrected_jaccard_min`` (same wording, a few edits).
5. ``near``: anything else (linked by the method, but with low textual overlap).

:func:`figures_disagree` is the template test rerank applies to the pairs it accepts
(``RerankMethod(template_guard=True)``): short notices of similar length whose figures,
counted with their repeats, differ both ways (``Qtly div 25 cts ... Pay July 10`` against ``Qtly
div 96 cts ... Pay August one``: each holds a figure the other lacks) are two companies'
notices, not a copy. OCR damage to a figure usually drops it from one side only (``25``
read as ``2S``), and longer texts are left to the scorer: the noise of the indep-* sets'
copies changes figures both ways in longer texts
(experiments/reuters_templates/reuters_templates.py).

Reference: M. Sanderson, *Duplicate detection in the Reuters collection*, Technical
Report TR-1997-5, Department of Computing Science, University of Glasgow, 1997.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from neardup.errors import check_float, check_int
from neardup.graph.edges import Pairs, check_time_window, outside_time_window
from neardup.methods.ngram import exact_similarity
from neardup.text.shingle import ShingleConfig, hash_shingles

__all__ = ["NUMBER_WORDS", "PAIR_TYPES", "classify_pairs", "count_pair_types", "figures_disagree",
           "mask_digits", "pair_features", "comparable_length_pairs"]

#: Every type :func:`classify_pairs` assigns, in rule order.
PAIR_TYPES = ("exact", "expanded", "corrected", "template", "near")

_DIGITS = re.compile(r"\d+")
#: Tokens made of digits only, in normalized text (number punctuation became spaces).
_NUMERAL = re.compile(r"(?<!\S)\d+(?!\S)")
#: Number words counted as figures by :func:`figures_disagree`: wire notices spell small
#: figures out ("Qtly div nine cts", "Pay August one"). English only.
NUMBER_WORDS = frozenset({
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    "hundred", "thousand",
})
_MASK = "0"
# Joins texts so the digit regex runs once per batch; a private-use character that
# normalized text never holds (checked, with a per-text fallback).
_SEPARATOR = "\ue000"


def mask_digits(texts: Sequence[str]) -> list[str]:
    """Replace every run of digits by ``"0"``: ``"net 1 5 mln"`` -> ``"net 0 0 mln"``.

    Parameters
    ----------
    texts : sequence of str

    Returns
    -------
    list of str, same length
    """
    texts = list(texts)
    joined = _SEPARATOR.join(texts)
    if texts and joined.count(_SEPARATOR) == len(texts) - 1:
        return _DIGITS.sub(_MASK, joined).split(_SEPARATOR)
    return [_DIGITS.sub(_MASK, t) for t in texts]


def _figures(text: str) -> Counter[str]:
    # Counted, not a set: "10 cts vs 10 cts ... Record April 15" against "15 cts vs 15 cts
    # ... Record April 15" holds no figure the other lacks, only more 15s and fewer 10s.
    words = text.split()
    return Counter(_NUMERAL.findall(text)) + Counter(w for w in words if w in NUMBER_WORDS)


def comparable_length_pairs(length_left: np.ndarray, length_right: np.ndarray, *,
                            max_chars: int = 147,
                            min_length_ratio: float = 0.8) -> np.ndarray:
    """The length test of :func:`figures_disagree` (bool per pair, from the two texts'
    normalized lengths): only pairs passing it can be called templates, so a caller
    that knows the lengths normalizes the texts of those pairs alone."""
    lo = np.minimum(length_left, length_right)
    hi = np.maximum(length_left, length_right)
    return (lo > 0) & (lo <= max_chars) & (lo >= min_length_ratio * hi)


def pair_positions(caller: str, left, right) -> tuple[np.ndarray, np.ndarray]:
    """``left`` and ``right`` as int64 arrays of one shape (a template test's pairs), or a
    ValueError naming ``caller``."""
    left = np.asarray(left, np.int64)
    right = np.asarray(right, np.int64)
    if left.shape != right.shape:
        raise ValueError(
            f"{caller}: parameters 'left' and 'right' must have one length; got {left.size} "
            f"and {right.size}."
        )
    return left, right


def figures_disagree(
    normalized_texts: Sequence[str],
    left: np.ndarray,
    right: np.ndarray,
    *,
    max_chars: int = 147,
    min_length_ratio: float = 0.8,
) -> np.ndarray:
    """Which pairs are short template notices: both texts at most ``max_chars`` long, of
    similar length, each holding a figure the other lacks.

    Parameters
    ----------
    normalized_texts : sequence of str
        Normalized text (:func:`neardup.text.normalize_batch`) by document position.
    left, right : ndarray of int, shape (n_pairs,)
        Positions of the two documents of each pair.
    max_chars : int >= 1, default 147
        Longest shorter text the rule applies to (about 25 words: dividend and earnings
        notices). Chosen on validation splits: longer copies of the indep-* sets have
        figures changed by their noise, and the rule then splits them
        (docs/decisions/0023-template-guard-counts-figures.md).
    min_length_ratio : float in [0, 1], default 0.8
        Shorter over longer length (characters) at least this: a notice against its
        abridged or expanded copy is left to the scorer.

    Returns
    -------
    ndarray of bool, shape (n_pairs,)
        True where the figures (tokens of digits only, and :data:`NUMBER_WORDS`), counted
        with their repeats, of each text include one the other lacks: a copy damaged by
        OCR only loses figures, so only one side has figures to spare.

    Examples
    --------
    >>> from neardup.text import normalize_batch
    >>> texts = normalize_batch([
    ...     "Qtly div 25 cts vs 25 cts prior. Pay July 10. Record June 30.",
    ...     "Qtly div 96 cts vs 96 cts prior. Pay August one. Record June 30.",
    ...     "Qtly dlv 2S cts vs 25 cts pri0r. Pay July 10. Record June 30.",
    ... ])
    >>> figures_disagree(texts, np.array([0, 0]), np.array([1, 2])).tolist()
    [True, False]
    """
    caller = "figures_disagree"
    check_int(caller, "max_chars", max_chars, low=1)
    check_float(caller, "min_length_ratio", min_length_ratio, low=0.0, high=1.0)
    left, right = pair_positions(caller, left, right)
    out = np.zeros(left.size, bool)
    if not left.size:
        return out
    lengths = np.fromiter(map(len, normalized_texts), np.int64, len(normalized_texts))
    # Cheap length tests first: nearly every pair of news stories fails them.
    short = np.flatnonzero(comparable_length_pairs(lengths[left], lengths[right],
                                                   max_chars=max_chars,
                                                   min_length_ratio=min_length_ratio))
    figures: dict[int, Counter[str]] = {}
    for k in short.tolist():
        a, b = int(left[k]), int(right[k])
        fa = figures.get(a)
        if fa is None:
            fa = figures[a] = _figures(normalized_texts[a])
        fb = figures.get(b)
        if fb is None:
            fb = figures[b] = _figures(normalized_texts[b])
        out[k] = bool(fa - fb) and bool(fb - fa)
    return out


def _texts_of(caller: str, normalized_texts, docs: np.ndarray) -> list[str]:
    try:
        texts = [normalized_texts[int(d)] for d in docs]
    except (KeyError, IndexError):
        raise ValueError(
            f"{caller}: parameter 'normalized_texts' must hold the text of every document "
            "in 'pairs' (indexed by document position); some are missing."
        ) from None
    for t in texts:
        if not isinstance(t, str):
            raise ValueError(
                f"{caller}: parameter 'normalized_texts' must map positions to str; "
                f"got a {type(t).__name__}."
            )
    return texts


def pair_features(
    pairs: Pairs,
    normalized_texts: Sequence[str] | Mapping[int, str],
    *,
    shingle: ShingleConfig = ShingleConfig(unit="word", n=3),
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Textual features of every pair, computed in one pass over the documents involved.

    Parameters
    ----------
    pairs : Pairs
        Document positions (any order, any method).
    normalized_texts : sequence or mapping of int -> str
        Normalized text (:func:`neardup.text.normalize_batch`) by document position; a
        list for the whole corpus, or a dict with an entry for each document in ``pairs``.
    shingle : ShingleConfig, default word 3-grams
        Shingles compared by the Jaccard and containment features.
    seed : int, default 0
        Keys the shingle hashes (any value gives the same features up to collisions).

    Returns
    -------
    dict of str -> ndarray, each of shape (n_pairs,)
        ``identical`` (bool): the normalized texts are equal; ``jaccard`` and
        ``containment`` (float32): ``|A ∩ B| / |A ∪ B|`` and ``|A ∩ B| / min(|A|, |B|)``
        of the two shingle sets; ``masked_jaccard`` (float32): Jaccard after
        :func:`mask_digits`.
    """
    caller = "pair_features"
    if not isinstance(pairs, Pairs):
        raise ValueError(
            f"{caller}: parameter 'pairs' must be a Pairs; got {type(pairs).__name__}."
        )
    if not isinstance(shingle, ShingleConfig):
        raise ValueError(f"{caller}: parameter 'shingle' must be a ShingleConfig; got {shingle!r}.")
    check_int(caller, "seed", seed, low=0)
    if len(pairs) == 0:
        empty = np.zeros(0, np.float32)
        return {"identical": np.zeros(0, bool), "jaccard": empty, "containment": empty.copy(),
                "masked_jaccard": empty.copy()}  # fmt: skip
    if min(pairs.left.min(), pairs.right.min()) < 0:
        raise ValueError(f"{caller}: parameter 'pairs' must hold document positions >= 0.")
    docs, local = np.unique(np.concatenate([pairs.left, pairs.right]), return_inverse=True)
    left, right = local[: len(pairs)], local[len(pairs) :]
    texts = _texts_of(caller, normalized_texts, docs)
    text_code: dict[str, int] = {}
    code = np.fromiter(
        (text_code.setdefault(t, len(text_code)) for t in texts), np.int64, len(texts)
    )
    sets = hash_shingles(texts, shingle, seed=seed).unique()
    masked = hash_shingles(mask_digits(texts), shingle, seed=seed).unique()
    return {
        "identical": code[left] == code[right],
        "jaccard": exact_similarity(sets, left, right, "jaccard"),
        "containment": exact_similarity(sets, left, right, "containment"),
        "masked_jaccard": exact_similarity(masked, left, right, "jaccard"),
    }


def classify_pairs(
    pairs: Pairs,
    normalized_texts: Sequence[str] | Mapping[int, str],
    *,
    dates: np.ndarray | None = None,
    cluster_sizes: np.ndarray | None = None,
    time_window_hours: float | None = 48,
    large_cluster: int = 50,
    containment_min: float = 0.9,
    expanded_jaccard_max: float = 0.8,
    corrected_jaccard_min: float = 0.5,
    template_masked_min: float = 0.7,
    template_gain: float = 0.15,
    shingle: ShingleConfig = ShingleConfig(unit="word", n=3),
) -> np.ndarray:
    """Sanderson's duplicate type of every pair (see the module docstring for the rules).

    Parameters
    ----------
    pairs : Pairs
        Linked pairs from any method (document positions).
    normalized_texts : sequence or mapping of int -> str
        Normalized text by document position (a list for the corpus, or a dict with an
        entry for each document in ``pairs``). Normalize as the method did
        (:func:`neardup.text.normalize_batch`); digits must survive normalization.
    dates : ndarray of datetime64, shape (n_docs,), or None, default None
        Document dates by position (NaT where unknown: that side never fails the window).
    cluster_sizes : ndarray of int, shape (n_docs,), or None, default None
        Size of each document's cluster (``Clustering.sizes`` per document, or
        ``Result.cluster_size``).
    time_window_hours : float > 0 or None, default 48
        Pairs relayed further apart are templates (Sanderson's 48 hours). None disables.
    large_cluster : int >= 2, default 50
        Pairs with a document in a cluster this large are templates: genuine copies of
        one story rarely number 50 in a news corpus, template-filled items do.
    containment_min : float in [0, 1], default 0.9
        Minimum shingle containment of an ``expanded`` pair.
    expanded_jaccard_max : float in [0, 1], default 0.8
        An ``expanded`` pair's Jaccard must be below this (the longer text adds at least
        about 10% more shingles); at or above it the pair is ``corrected``.
    corrected_jaccard_min : float in [0, 1], default 0.5
        Minimum Jaccard of a ``corrected`` pair. One changed word removes up to three
        word 3-grams, so a 50-word story with three corrections is near 0.7.
    template_masked_min : float in [0, 1], default 0.7
        Minimum Jaccard after masking digits for the textual template test. Below 0.8
        so that earnings reports of two different companies (names differ too, which
        masking digits cannot hide) still qualify.
    template_gain : float in [0, 1], default 0.15
        Minimum rise of the Jaccard when digits are masked for the textual template test.
        One corrected figure in a 50-word story gives about 0.1; different figures
        throughout (earnings tables) give 0.3 or more.
    shingle : ShingleConfig, default word 3-grams
        Shingles of the similarity features.

    Returns
    -------
    ndarray of str (dtype ``<U9``), shape (n_pairs,)
        One of :data:`PAIR_TYPES` per pair.

    Examples
    --------
    >>> from neardup.text import normalize_batch
    >>> texts = normalize_batch([
    ...     "Acme Corp said first quarter net profit rose to 12 mln dlrs from 10 mln dlrs.",
    ...     "Acme Corp said first quarter net profit rose to 12 mln dlrs from 10 mln dlrs.",
    ...     "Acme Corp said first quarter net profit rose to 12 mln dlrs from 10 mln dlrs, "
    ...     "and it expects further gains this year as sales of its new products grow.",
    ... ])
    >>> pairs = Pairs(np.array([0, 0]), np.array([1, 2]), np.ones(2))
    >>> classify_pairs(pairs, texts).tolist()
    ['exact', 'expanded']
    """
    caller = "classify_pairs"
    for pname, value in (
        ("containment_min", containment_min),
        ("expanded_jaccard_max", expanded_jaccard_max),
        ("corrected_jaccard_min", corrected_jaccard_min),
        ("template_masked_min", template_masked_min),
        ("template_gain", template_gain),
    ):
        check_float(caller, pname, value, low=0.0, high=1.0)
    check_int(caller, "large_cluster", large_cluster, low=2)
    time_window_hours = check_time_window(caller, time_window_hours)
    top = int(max(pairs.left.max(initial=-1), pairs.right.max(initial=-1)))
    if dates is not None:
        dates = np.asarray(dates)
        if dates.ndim != 1 or not np.issubdtype(dates.dtype, np.datetime64) or dates.size <= top:
            raise ValueError(
                f"{caller}: parameter 'dates' must be a 1-D datetime64 array indexed by "
                f"document position (length > {top}); got dtype {dates.dtype} and shape "
                f"{dates.shape}."
            )
    if cluster_sizes is not None:
        cluster_sizes = np.asarray(cluster_sizes)
        ok = cluster_sizes.ndim == 1 and cluster_sizes.dtype.kind in "iu"
        if not ok or cluster_sizes.size <= top:
            raise ValueError(
                f"{caller}: parameter 'cluster_sizes' must be a 1-D integer array indexed by "
                f"document position (length > {top}); got dtype {cluster_sizes.dtype} and "
                f"shape {cluster_sizes.shape}."
            )

    features = pair_features(pairs, normalized_texts, shingle=shingle)
    jaccard = features["jaccard"].astype(np.float64)
    containment = features["containment"].astype(np.float64)
    masked = features["masked_jaccard"].astype(np.float64)

    template = (masked >= template_masked_min) & (masked - jaccard >= template_gain)
    template |= outside_time_window(pairs, dates, time_window_hours)
    if cluster_sizes is not None and len(pairs):
        size = np.maximum(cluster_sizes[pairs.left], cluster_sizes[pairs.right])
        template |= size >= large_cluster
    expanded = (containment >= containment_min) & (jaccard < expanded_jaccard_max)
    corrected = jaccard >= corrected_jaccard_min

    # np.select takes the first true condition: the rule order of the module docstring.
    return np.select(
        [features["identical"], template, expanded, corrected],
        ["exact", "template", "expanded", "corrected"],
        default="near",
    ).astype("<U9")


def count_pair_types(types: np.ndarray) -> dict[str, int]:
    """How many pairs of each type, for every type in :data:`PAIR_TYPES` (zeros included)."""
    types = np.asarray(types)
    return {t: int(np.count_nonzero(types == t)) for t in PAIR_TYPES}
