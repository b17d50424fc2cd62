"""Names in template notices: two companies' notices share a template's wording, not
their names.

Wire services fill one template for every company (``Mercantile Bancorp said it raised
its prime rate to 7-3/4 pct`` against ``First Chicago Corp said it raised its prime rate
to 7-3/4 pct``). rerank's verifier, trained on copies damaged by OCR, takes such pairs for
copies, and their figures often agree. :func:`names_disagree` calls a pair a template when
each text holds a capitalized word (a name) that matches no word of the other text, not
even approximately. A damaged copy garbles a few characters of a name (``Mercantlle``)
and still matches it; only a different name matches nothing. Words are compared once the
case is folded, so a copy whose noise changed the case of a word still matches.
"""

from __future__ import annotations

from collections.abc import Sequence

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


def _tokens(text: str) -> tuple[list[str], list[bool]]:
    """Words of one case-kept normalized text, case folded, and whether each is a name:
    three letters or more in title case (``Bancorp``; not ``BANCORP``: capitals alone
    are headlines and tickers, whose words noise and rewording change)."""
    words = text.split()
    return ([w.casefold() for w in words],
            [len(w) >= 3 and w[0].isupper() and w[1:].islower() and w.isalpha() for w in words])


def _swapped_names(a: tuple[list[str], list[bool]], b: tuple[list[str], list[bool]],
                   cutoff: float, max_gap: int, min_aligned: float) -> int:
    """How many places the two word sequences, aligned, put different names face to face:
    a gap between aligned words of at most ``max_gap`` words on each side, each side
    holding a name, whose letters (words joined) are less than ``cutoff`` similar. 0 when
    fewer than ``min_aligned`` of the longer text's words align (not one template)."""
    wa, na = a
    wb, nb = b
    if not wa or not wb:
        return 0
    ops = Levenshtein.opcodes(wa, wb)
    aligned = sum(op.src_end - op.src_start for op in ops if op.tag == "equal")
    if aligned < min_aligned * max(len(wa), len(wb)):
        return 0
    swaps = 0
    i = j = 0  # start of the current gap
    for op in [*ops, None]:
        if op is not None and op.tag != "equal":
            continue
        i2, j2 = (op.src_start, op.dest_start) if op is not None else (len(wa), len(wb))
        if 0 < i2 - i <= max_gap and 0 < j2 - j <= max_gap and any(na[i:i2]) and any(nb[j:j2]):
            if fuzz.ratio("".join(wa[i:i2]), "".join(wb[j:j2])) < cutoff:
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
    check_int(caller, "max_gap", max_gap, low=1)
    for pname, value in (("min_length_ratio", min_length_ratio),
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
    comparable = np.flatnonzero(names_length_pairs(lengths[a], lengths[b], max_chars=max_chars,
                                                   min_length_ratio=min_length_ratio))
    tokens: dict[int, tuple[list[str], list[bool]]] = {}
    cutoff = 100.0 * max_similarity
    for k in comparable.tolist():
        i, j = int(a[k]), int(b[k])
        ti = tokens.get(i) or tokens.setdefault(i, _tokens(norm[i]))
        tj = tokens.get(j) or tokens.setdefault(j, _tokens(norm[j]))
        out[k] = _swapped_names(ti, tj, cutoff, max_gap, min_aligned) > 0
    return out


def names_length_pairs(length_left: np.ndarray, length_right: np.ndarray, *,
                       max_chars: int = 600, min_length_ratio: float = 0.8) -> np.ndarray:
    """The length test of :func:`names_disagree` (bool per pair, from the two texts'
    normalized lengths), for a caller that reads the texts of passing pairs alone: the
    figure test's, with a longer limit."""
    return comparable_length_pairs(length_left, length_right, max_chars=max_chars,
                                   min_length_ratio=min_length_ratio)
