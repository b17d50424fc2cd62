"""Names in template notices: two companies' notices share a template's wording, not
their names.

Wire services fill one template for every company (``Mercantile Bancorp said it raised
its prime rate to 7-3/4 pct`` against ``First Chicago Corp said it raised its prime rate
to 7-3/4 pct``). rerank's verifier, trained on copies damaged by OCR, takes such pairs for
copies, and their figures often agree. :func:`names_disagree` aligns the two texts word
by word and calls a pair a template when the alignment puts different names face to face:

* in the body, a short gap (at most 4 words a side) holding a title-case word on each
  side, in texts of at most 600 characters with lengths within 20%;
* at the opening, the subject a notice names first (``Chemical Bank, the main bank
  subsidiary of Chemical New York Corp, said it is raising`` against ``Marine Midland
  Banks Inc said it is raising``): up to 12 words, names in capitals too (``NMR
  Centers``), in texts of up to 1,000 characters with lengths within 40%, when the
  template's verb follows in both texts and the last names before it differ. A dateline
  or byline before a shared name (``LONDON, March 28 - Japan is``) is no subject.

A damaged copy garbles a few characters of a name (``Mercantlle``) and still matches it;
only a different name matches nothing. Words are compared once the case is folded, so a
copy whose noise changed the case of a word still matches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

from neardup.errors import check_float, check_int
from neardup.methods.pair_types import comparable_length_pairs, pair_positions
from neardup.text import NormalizeConfig, normalize_batch

__all__ = ["CASED", "names_disagree", "names_length_pairs"]

#: The normalization of :func:`names_disagree`: as the verifier's, but the case is kept
#: (a name is a capitalized word).
CASED = NormalizeConfig(casefold=False)
#: Longest company suffix that may stand between a name and its verb (``Inc``, ``Corp``).
_SUFFIX_LETTERS = 4


class _Words(NamedTuple):
    """One case-kept normalized text's words, and the same words case folded. What a word
    looks like (:func:`_title`, :func:`_capitals`, :func:`_initial`) is read only for
    the words a test reaches: the gaps of an alignment, which are short."""

    raw: list[str]
    folded: list[str]


def _words(text: str) -> _Words:
    # Case folding maps no character to whitespace or from it, so the folded text splits
    # into the folded words (tests/methods/test_template_names.py checks every character).
    return _Words(text.split(), text.casefold().split())


def _title(word: str) -> bool:
    """Title case, three letters or more: ``Bancorp``."""
    return len(word) >= 3 and word[0].isupper() and word[1:].islower() and word.isalpha()


def _capitals(word: str) -> bool:
    """Capitals alone, two letters or more: ``NMR``."""
    return len(word) >= 2 and word.isupper() and word.isalpha()


def _initial(word: str) -> bool:
    """Opens with a capital: ``Co``, ``NMR``, ``Bancorp``."""
    return word[0].isupper()


def _names(words: _Words, start: int, end: int, max_capitals: int) -> bool:
    """Whether words ``start:end`` hold a name: a title-case word, or at most
    ``max_capitals`` words in capitals alone (``NMR Centers``; more are a headline)."""
    span = words.raw[start:end]
    return any(map(_title, span)) or 0 < sum(map(_capitals, span)) <= max_capitals


def _subject(words: _Words, start: int, end: int) -> bool:
    """Whether words ``start:end`` read as a company named as a subject: at least half
    open with a capital (``Chemical Bank, the main bank subsidiary of Chemical New York
    Corp``), not a sentence (a cropped or reordered copy's opening)."""
    return 2 * sum(map(_initial, words.raw[start:end])) >= end - start


def _subject_name(words: _Words, start: int, end: int) -> list[str]:
    """The last run of capitalized words in words ``start:end``: the name just before a
    sentence's verb (``Chemical New York Corp``), past words OCR broke (``Continental
    Airlines aid``)."""
    stop = end
    while stop > start and not _initial(words.raw[stop - 1]):
        stop -= 1
    k = stop
    while k > start and _initial(words.raw[k - 1]):
        k -= 1
    return words.folded[k:stop]


def _renamed(name_a: list[str], name_b: list[str], cutoff: float) -> bool:
    """Whether two subjects' names differ: the last words of the longer, as many as the
    shorter holds (a dateline or headline may run into the name: ``LONDON March 28
    Japan`` against ``Japann``), are less than ``cutoff`` similar to the shorter."""
    k = min(len(name_a), len(name_b))
    return k > 0 and fuzz.ratio("".join(name_a[-k:]), "".join(name_b[-k:])) < cutoff


def _opens_template(a: _Words, b: _Words, start_a: int, start_b: int, length: int,
                    min_anchor: int) -> bool:
    """Whether the aligned run after the opening gap is a template's wording after its
    subject: at least ``min_anchor`` words, opening on its verb in both texts (a
    lower-case word: ``said it``, ``is raising``) or on a company's short suffix before
    it (``Inc said``, ``Corp said``). A run opening on a name (``France is to provide``,
    ``Presidential Airways Inc said``) follows a byline or dateline, not the subject."""
    return length >= min_anchor and _verb_at(a, start_a) and _verb_at(b, start_b)


def _verb_at(words: _Words, k: int) -> bool:
    """A lower-case word (the template's own: ``said``, ``is``), or a short suffix
    before one."""
    raw = words.raw
    if raw[k].islower():
        return True
    return (_initial(raw[k]) and len(words.folded[k]) <= _SUFFIX_LETTERS
            and k + 1 < len(raw) and raw[k + 1].islower()
            and len(words.folded[k + 1]) > 1)  # not ``Corp s`` (``Corp's``)


def _swapped_names(a: _Words, b: _Words, *, cutoff: float, max_gap: int, lead_gap: int,
                   min_anchor: int, min_aligned: float, max_capitals: int) -> int:
    """How many places the two word sequences, aligned, put different names face to face:
    a gap between aligned words of at most ``max_gap`` words on each side, each side
    holding a title-case word, whose letters (words joined) are less than ``cutoff``
    similar. The gap that opens both texts, when a template's wording follows it
    (:func:`_opens_template`), is the subject of a notice's first sentence: it may hold
    ``lead_gap`` words, and names in capitals count. A limit of 0 leaves those gaps
    untested. 0 when fewer than ``min_aligned`` of the longer text's words align (not
    one template)."""
    wa, wb = a.folded, b.folded
    if not wa or not wb:
        return 0
    runs = [op for op in Levenshtein.opcodes(wa, wb) if op.tag == "equal"]
    aligned = sum(op.src_end - op.src_start for op in runs)
    if aligned < min_aligned * max(len(wa), len(wb)):
        return 0
    swaps = 0
    i = j = 0  # start of the current gap
    for op in [*runs, None]:
        i2, j2 = (op.src_start, op.dest_start) if op is not None else (len(wa), len(wb))
        lead = (i == 0 and j == 0 and op is not None and lead_gap > 0
                and _opens_template(a, b, i2, j2, op.src_end - op.src_start, min_anchor)
                and _subject(a, 0, i2) and _subject(b, 0, j2)
                and _renamed(_subject_name(a, 0, i2), _subject_name(b, 0, j2), cutoff))
        limit, capitals = (max(lead_gap, max_gap), max_capitals) if lead else (max_gap, 0)
        if (0 < i2 - i <= limit and 0 < j2 - j <= limit
                and _names(a, i, i2, capitals) and _names(b, j, j2, capitals)
                and fuzz.ratio("".join(wa[i:i2]), "".join(wb[j:j2])) < cutoff):
            swaps += 1
        if op is not None:
            i, j = op.src_end, op.dest_end
    return swaps


def names_disagree(
    texts: Sequence[str],
    left: np.ndarray,
    right: np.ndarray,
    *,
    max_chars: int = 600,
    min_length_ratio: float = 0.8,
    max_similarity: float = 0.5,
    max_gap: int = 4,
    min_aligned: float = 0.5,
    lead_max_chars: int = 1000,
    lead_min_length_ratio: float = 0.6,
    lead_max_gap: int = 12,
    min_anchor: int = 2,
    max_capitals: int = 2,
    cased: bool = False,
) -> np.ndarray:
    """Which pairs are one template filled with different names: aligned word by word,
    the two texts put different names face to face.

    Parameters
    ----------
    texts : sequence of str
        Raw texts by document position (normalized here, case kept), or texts already
        normalized with :data:`CASED` when ``cased`` is True.
    left, right : ndarray of int, shape (n_pairs,)
        Positions of the two documents of each pair.
    max_chars : int >= 1, default 600
        Longest shorter text (normalized characters) the test applies to.
    min_length_ratio : float in [0, 1], default 0.8
        Shorter over longer length at least this: a story against its expanded copy is
        left to the scorer.
    max_similarity : float in [0, 1], default 0.5
        A gap between aligned words is a name swap when the letters of its two sides are
        less similar than this (normalized Indel similarity, :func:`rapidfuzz.fuzz.ratio`):
        ``Mercantile Bancorp`` against ``First Chicago Corp`` is, ``Mercantlle Bancorb``
        (OCR) against ``Mercantile Bancorp`` is not.
    max_gap : int >= 1, default 4
        Most words on each side of a gap: a name, not a paragraph.
    min_aligned : float in [0, 1], default 0.5
        Least share of the longer text's words that align: two texts that share less are
        not one template, and are left to the scorer.
    lead_max_chars : int >= 1, default 1000
        As ``max_chars``, for the opening gap alone (the subject of a notice's first
        sentence: ``Time Inc is raising`` against ``Outboard Marine Corp is raising``),
        which is tested in longer texts too.
    lead_min_length_ratio : float in [0, 1], default 0.6
        As ``min_length_ratio``, for the opening gap alone: a notice that adds a clause
        (``Chemical Bank, the main bank subsidiary of Chemical New York Corp, said``)
        still names its company first.
    lead_max_gap : int >= 1, default 12
        As ``max_gap``, for the opening gap: a company's name with its parent's.
    min_anchor : int >= 1, default 2
        Least aligned words after the opening gap for it to count as one: the template's
        wording after the name (``said it is raising``).
    max_capitals : int >= 0, default 2
        Most words in capitals alone a gap's side may hold for them to count as a name
        (``NMR Centers``, ``BELL ATLANTIC``); more are a headline, which noise and rewording
        change. Title-case words always count.
    cased : bool, default False
        The texts are already normalized with :data:`CASED`.

    Returns
    -------
    ndarray of bool, shape (n_pairs,)

    Examples
    --------
    >>> texts = ["Mercantile Bancorp said it raised its prime rate to 7-3/4 pct.",
    ...          "First Chicago Corp said it raised its prime rate to 7-3/4 pct.",
    ...          "Mercantlle Bancorb said it raised its prime rate to 7-3/4 pct."]
    >>> names_disagree(texts, np.array([0, 0]), np.array([1, 2])).tolist()
    [True, False]
    """
    caller = "names_disagree"
    check_int(caller, "max_chars", max_chars, low=1)
    for pname, value, low in (("max_gap", max_gap, 1), ("lead_max_chars", lead_max_chars, 1),
                              ("lead_max_gap", lead_max_gap, 0), ("min_anchor", min_anchor, 1),
                              ("max_capitals", max_capitals, 0)):
        check_int(caller, pname, value, low=low)
    for pname, value in (("min_length_ratio", min_length_ratio),
                         ("lead_min_length_ratio", lead_min_length_ratio),
                         ("max_similarity", max_similarity), ("min_aligned", min_aligned)):
        check_float(caller, pname, value, low=0.0, high=1.0)
    left, right = pair_positions(caller, left, right)
    out = np.zeros(left.size, bool)
    if not left.size:
        return out
    used, where = np.unique(np.concatenate((left, right)), return_inverse=True)
    raw = [texts[i] for i in used.tolist()]
    norm = raw if cased else normalize_batch(raw, CASED)
    lengths = np.fromiter(map(len, norm), np.int64, len(norm))
    a, b = where[: left.size], where[left.size:]
    la, lb = lengths[a], lengths[b]
    comparable = np.flatnonzero(names_length_pairs(
        la, lb, max_chars=max(max_chars, lead_max_chars),
        min_length_ratio=min(min_length_ratio, lead_min_length_ratio)))
    lead = comparable_length_pairs(la, lb, max_chars=lead_max_chars,
                                   min_length_ratio=lead_min_length_ratio)
    body = comparable_length_pairs(la, lb, max_chars=max_chars, min_length_ratio=min_length_ratio)
    tokens: dict[int, _Words] = {}
    settings = dict(cutoff=100.0 * max_similarity, min_aligned=min_aligned,
                    max_capitals=max_capitals, min_anchor=min_anchor)
    for k in comparable.tolist():
        i, j = int(a[k]), int(b[k])
        ti = tokens.get(i) or tokens.setdefault(i, _words(norm[i]))
        tj = tokens.get(j) or tokens.setdefault(j, _words(norm[j]))
        out[k] = _swapped_names(ti, tj, max_gap=max_gap if body[k] else 0,
                                lead_gap=lead_max_gap if lead[k] else 0, **settings) > 0
    return out


def names_length_pairs(length_left: np.ndarray, length_right: np.ndarray, *,
                       max_chars: int = 1000, min_length_ratio: float = 0.6) -> np.ndarray:
    """The length test of :func:`names_disagree` at its defaults (bool per pair, from the
    two texts' normalized lengths: the widest of its two limits, the opening gap's), for a
    caller that reads the texts of passing pairs alone: the figure test's, with longer
    limits."""
    return comparable_length_pairs(length_left, length_right, max_chars=max_chars,
                                   min_length_ratio=min_length_ratio)
