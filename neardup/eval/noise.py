"""Seeded text corruption for building near-duplicate evaluation sets.

Two kinds of noise are modelled:

* **Reprint noise** (Silcock et al. 2022, "Noise-Robust De-Duplication at Scale", sec. 3 and
  appendix A.2): a wire story copied by local newspapers is abridged from the bottom, loses
  its lead when continued from another page, loses middle paragraphs, gets a restyled
  dateline or a byline, gains local sentences, and is then scanned and OCR'ed.
* **Adversarial noise** (Zhang et al. 2023, "RETSim", sec. 3.2, 4.2 and appendix A.2, the
  W4NT3D augmentations): sentence-, word- and character-level insertion, deletion,
  substitution and transposition, plus homoglyphs, invisible characters, case changes
  and hash-busting padding as seen in spam.

Two edits make *different* stories that look alike (hard negatives, Silcock et al. sec.
3.3): :func:`replace_sentences` turns a story into an update of itself, and
:func:`quoted_sentences` finds the quotes one story can lend another (inserted with
:func:`insert_local_sentences`).

Every function takes an explicit ``numpy.random.Generator`` and returns a new string, so
the same text and seed always give byte-identical output. :func:`reprint` combines the
families into one noisy copy and reports what it did; :func:`reprint_cluster_sizes` draws
how many copies each source gets.

Sentences are found by :func:`sentence_spans`, a small regex splitter for wire-style text
(no NLP dependency); paragraphs by :func:`paragraph_spans` (Reuters indents each
paragraph by four spaces). Editorial functions cut at those boundaries, so ``abridge``
returns a prefix of its input and ``drop_lead`` a suffix.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence

import numpy as np

from neardup.errors import check_choice, check_float, check_int

__all__ = [
    "HOMOGLYPHS",
    "INVISIBLE_CHARS",
    "PROFILES",
    "abridge",
    "case_changes",
    "change_dateline",
    "drop_lead",
    "drop_middle_sentences",
    "homoglyphs",
    "insert_local_sentences",
    "invisible_chars",
    "ocr_noise",
    "pad",
    "paragraph_spans",
    "quoted_sentences",
    "replace_sentences",
    "reprint",
    "reprint_cluster_sizes",
    "sentence_edits",
    "sentence_spans",
    "split_paragraphs",
    "split_sentences",
    "typos",
    "word_edits",
]

PROFILES = ("news", "adversarial")
EDIT_OPS = ("substitute", "insert", "delete", "transpose")

# --------------------------------------------------------------------------------------
# Validation and small helpers
# --------------------------------------------------------------------------------------


def _check_text(caller: str, text: object) -> str:
    if not isinstance(text, str):
        raise TypeError(f"{caller}: parameter 'text' must be a str; got {type(text).__name__}.")
    return text


def _check_rng(caller: str, rng: object) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{caller}: parameter 'rng' must be a numpy.random.Generator; got "
            f"{type(rng).__name__}. Pass numpy.random.default_rng(seed)."
        )
    return rng


def _check_strings(caller: str, name: str, values: object) -> tuple[str, ...]:
    if values is None:
        return ()
    ok = not isinstance(values, str)
    if ok:
        try:
            values = tuple(values)  # type: ignore[arg-type]
        except TypeError:
            ok = False
    if not ok or not all(isinstance(v, str) for v in values):  # type: ignore[union-attr]
        raise TypeError(
            f"{caller}: parameter '{name}' must be a sequence of str; got {values!r:.80}."
        )
    return tuple(v for v in values if v.strip())  # type: ignore[union-attr]


def _check_ops(caller: str, ops: object) -> tuple[str, ...]:
    ops = (ops,) if isinstance(ops, str) else tuple(ops)  # type: ignore[arg-type]
    if not ops:
        raise ValueError(f"{caller}: parameter 'ops' must name at least one of {EDIT_OPS}; got ().")
    for op in ops:
        check_choice(caller, "ops", op, EDIT_OPS)
    return ops


def _selected(n: int, rate: float, rng: np.random.Generator) -> np.ndarray:
    """Indices in ``range(n)`` chosen independently with probability ``rate``."""
    if n == 0:
        return np.empty(0, dtype=np.int64)
    return np.flatnonzero(rng.random(n) < rate)


def _apply_edits(text: str, edits: list[tuple[int, int, str]]) -> str:
    """Replace ``text[start:end]`` by ``new`` for sorted, non-overlapping ``(start, end, new)``."""
    parts, prev = [], 0
    for start, end, new in edits:
        parts.append(text[prev:start])
        parts.append(new)
        prev = end
    parts.append(text[prev:])
    return "".join(parts)


# --------------------------------------------------------------------------------------
# Sentence and paragraph splitting
# --------------------------------------------------------------------------------------

# Words that end in a period without ending the sentence ("No." is left out: it is
# followed by a number, which never starts a sentence here). Reuters writes "mln", "dlrs",
# "pct" and "Feb 26" without periods, so "mln." really does end a sentence there
# ("... 6.2 mln. Bonus ...") and is deliberately absent; "5.93 mln" is safe anyway because
# a period inside a number is not followed by whitespace.
_ABBREVIATIONS = frozenset(
    "Mr Mrs Ms Dr Prof St Mt Ft Jr Sr Gen Gov Sen Rep Lt Col Capt Sgt Cmdr Adm Rev Hon Pres "
    "Inc Corp Co Ltd Bros Assn Dept vs Vol Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct "
    "Nov Dec Ala Ariz Ark Calif Colo Conn Del Fla Ga Ill Ind Kan Ky La Md Mass Mich Minn "
    "Miss Mo Mont Neb Nev Okla Ore Pa Tenn Tex Va Vt Wash Wis Wyo".split()
)
_OPENERS = "\"'“‘«([{"
# Latin terminators need following whitespace; CJK/Devanagari ones do not.
_SENTENCE_END = re.compile(r"""[.!?]+["'”’»)\]]*(\s+)|[。！？।]+["'”’」』)\]]*\s*""")
# A paragraph starts after a blank line or on a line indented by 2+ spaces (Reuters uses 4).
_PARAGRAPH_START = re.compile(r"\n(?:[^\S\n]*\n)+[^\S\n]*(?=\S)|\n[^\S\n]{2,}(?=\S)")
_DOTTED_INITIALS = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]")


def _first_nonspace(text: str) -> int:
    return len(text) - len(text.lstrip())


def _is_abbreviation(text: str, period: int) -> bool:
    """True if the period at ``text[period]`` closes an abbreviation, not a sentence."""
    start = max(text.rfind(ws, 0, period) for ws in " \n\t")
    token = text[start + 1 : period].lstrip(_OPENERS)
    if token in _ABBREVIATIONS:
        return True
    if len(token) == 1 and token.isupper():  # an initial: "John F. Kennedy"
        return True
    return _DOTTED_INITIALS.fullmatch(token) is not None  # "U.S.", "N.Y.", "a.m."


def _sentence_starts(text: str) -> list[int]:
    first = _first_nonspace(text)
    if first == len(text):
        return []
    starts = {first}
    starts.update(m.end() for m in _PARAGRAPH_START.finditer(text, first))
    n = len(text)
    for m in _SENTENCE_END.finditer(text, first):
        nxt = m.end()
        if nxt >= n:
            continue
        if m.group(1) is None:  # CJK-style terminator: always a boundary
            starts.add(nxt)
            continue
        j = nxt
        while j < n and text[j] in _OPENERS:
            j += 1
        # Next sentence must start with a letter that is not lower case (upper case, or a
        # script without case such as Arabic or Thai); digits are too ambiguous.
        if j == n or not text[j].isalpha() or text[j].islower():
            continue
        # A lone period directly followed by whitespace may close an abbreviation; after
        # "!", "?", an ellipsis or a closing quote it is a boundary anyway.
        end = m.start()
        if text[end] == "." and text[end + 1].isspace() and _is_abbreviation(text, end):
            continue
        starts.add(nxt)
    return sorted(starts)


def _spans_from_starts(text: str, starts: list[int]) -> list[tuple[int, int]]:
    bounds = [*starts, len(text)]
    spans = []
    for s, e in zip(bounds[:-1], bounds[1:]):
        spans.append((s, s + len(text[s:e].rstrip())))
    return spans


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character offsets ``(start, end)`` of each sentence; ``text[start:end]`` is the sentence.

    A boundary is ``.``, ``!`` or ``?`` (plus closing quotes) followed by whitespace and a
    letter that is not lower case, unless the period closes an abbreviation ("U.S.",
    "Inc.", "Feb.", a single initial); or ``。！？।``; or the start of a paragraph (see
    :func:`paragraph_spans`), even without a period. Spans exclude surrounding whitespace
    and together cover every non-space character of ``text``.

    Parameters
    ----------
    text : str
        Any text; wire-style English is what the rules are tuned for.

    Returns
    -------
    list of (int, int)
        Sorted, non-overlapping spans; empty for blank text.
    """
    return _spans_from_starts(text, _sentence_starts(text))


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` as strings, without surrounding whitespace.

    See :func:`sentence_spans` for the rules. Inner line breaks are kept as they are.
    """
    return [text[s:e] for s, e in sentence_spans(text)]


def paragraph_spans(text: str) -> list[tuple[int, int]]:
    """Character offsets ``(start, end)`` of each paragraph, excluding surrounding whitespace.

    A paragraph starts after a blank line or at a line indented by two or more spaces
    (Reuters-21578 indents each paragraph by four); a single newline inside a paragraph is
    line wrapping, not a break.
    """
    first = _first_nonspace(text)
    if first == len(text):
        return []
    starts = [first, *(m.end() for m in _PARAGRAPH_START.finditer(text, first))]
    return _spans_from_starts(text, starts)


def split_paragraphs(text: str) -> list[str]:
    """The paragraphs of ``text`` as strings; see :func:`paragraph_spans`."""
    return [text[s:e] for s, e in paragraph_spans(text)]


def _segments(text: str) -> tuple[list[str], list[str], str]:
    """Split into ``(seps, sentences, tail)`` with
    ``text == "".join(sep + s for sep, s in zip(seps, sentences)) + tail``."""
    spans = sentence_spans(text)
    seps, sents, prev = [], [], 0
    for s, e in spans:
        seps.append(text[prev:s])
        sents.append(text[s:e])
        prev = e
    return seps, sents, text[prev:]


def _join(seps: list[str], sents: list[str], tail: str, keep: Sequence[bool], lead: str) -> str:
    """Reassemble segments, dropping those with ``keep[i]`` false.

    A paragraph break in front of a dropped sentence moves to the next kept sentence, so
    dropping a paragraph's first sentence does not glue the rest onto the paragraph before.
    """
    out, carry, first = [], None, True
    for sep, sent, k in zip(seps, sents, keep):
        if not k:
            if "\n" in sep and carry is None:
                carry = sep
            continue
        if carry is not None and "\n" not in sep:
            sep = carry
        carry = None
        out.append(lead if first else sep)
        out.append(sent)
        first = False
    out.append(tail)
    return "".join(out)


# --------------------------------------------------------------------------------------
# OCR noise
# --------------------------------------------------------------------------------------

# Shapes Tesseract confuses on old newsprint; two-character keys are tried first.
_OCR_CONFUSIONS: dict[str, tuple[str, ...]] = {
    "rn": ("m",), "cl": ("d",), "ii": ("u",), "vv": ("w",), "li": ("h",),
    "m": ("rn", "nn"), "d": ("cl",), "u": ("ii", "n"), "n": ("u", "ri"), "w": ("vv",),
    "l": ("1", "I", "|"), "1": ("l", "I"), "I": ("l", "1"), "O": ("0",), "0": ("O", "o"),
    "e": ("c", "o"), "c": ("e",), "h": ("b", "li"), "b": ("h",), "S": ("5",), "5": ("S",),
    "B": ("8",), "8": ("B",), ",": (".",), ".": (",",), "t": ("f",), "f": ("t",),
}  # fmt: skip
_OCR_STRAY = (".", ",", "'", "`", ":", "‘", ";")
# Relative weights of OCR operations; the ones that do not fit the character are dropped.
_OCR_WEIGHTS = {
    "confuse": 0.45, "drop": 0.18, "double": 0.08, "split": 0.1, "hyphen": 0.07, "stray": 0.07,
    "merge": 0.75,
}  # fmt: skip


def ocr_noise(text: str, rng: np.random.Generator, severity: float = 0.05) -> str:
    """Simulate OCR of a scanned newspaper column.

    Each character is hit independently with probability ``severity``. A hit letter, digit
    or punctuation mark gets one of: a shape confusion (``rn``/``m``, ``l``/``1``/``I``,
    ``O``/``0``, ``e``/``c``, ``cl``/``d``, ``h``/``b``, ``u``/``n``, ``ii``/``u``,
    ``vv``/``w``, ``S``/``5``, ``B``/``8``, comma/period, ...), deletion, doubling, a word
    split by a space (``"ne ws"``), an end-of-line hyphenation artefact (``"elec- tric"``
    or ``"elec-\\ntric"``), or a stray mark (``. , ' ` :``) before it. A hit space or
    newline is usually deleted, merging two words.

    Parameters
    ----------
    text : str
        Clean text.
    rng : numpy.random.Generator
        Source of all randomness.
    severity : float, default 0.05
        Expected fraction of characters affected, in [0, 1]. 0 returns ``text`` unchanged;
        0.005 is a good scan, 0.02-0.05 typical 1930s newsprint, 0.1+ barely readable.
        The edit distance comes out near 1.1 x ``severity`` x ``len(text)``.

    Returns
    -------
    str
    """
    caller = "ocr_noise"
    _check_text(caller, text)
    _check_rng(caller, rng)
    severity = check_float(caller, "severity", severity, low=0.0, high=1.0)
    hits = _selected(len(text), severity, rng)
    k = len(hits)
    if k == 0:
        return text
    u_op, u_arg = rng.random(k), rng.random(k)
    edits: list[tuple[int, int, str]] = []
    last_end = 0
    for p, uo, ua in zip(hits.tolist(), u_op, u_arg):
        if p < last_end:
            continue
        c = text[p]
        options: dict[str, float] = {}
        if c.isspace():
            options = {"merge": _OCR_WEIGHTS["merge"], "stray": _OCR_WEIGHTS["stray"]}
        else:
            key = text[p : p + 2] if text[p : p + 2] in _OCR_CONFUSIONS else c
            if key in _OCR_CONFUSIONS:
                options["confuse"] = _OCR_WEIGHTS["confuse"]
            options.update(drop=_OCR_WEIGHTS["drop"], double=_OCR_WEIGHTS["double"])
            if c.isalpha() and p > 0 and text[p - 1].isalpha():
                options.update(split=_OCR_WEIGHTS["split"], hyphen=_OCR_WEIGHTS["hyphen"])
            options["stray"] = _OCR_WEIGHTS["stray"]
        names = list(options)
        cum = np.cumsum(list(options.values()))
        op = names[int(np.searchsorted(cum, uo * cum[-1], side="right"))]
        if op == "confuse":
            targets = _OCR_CONFUSIONS[key]
            edits.append((p, p + len(key), targets[int(ua * len(targets))]))
        elif op in ("drop", "merge"):
            edits.append((p, p + 1, ""))
        elif op == "double":
            edits.append((p, p + 1, c + c))
        elif op == "split":
            edits.append((p, p + 1, " " + c))
        elif op == "hyphen":
            edits.append((p, p + 1, ("-\n" if ua < 0.5 else "- ") + c))
        else:  # stray
            edits.append((p, p + 1, _OCR_STRAY[int(ua * len(_OCR_STRAY))] + c))
        last_end = edits[-1][1]
    return _apply_edits(text, edits)


# --------------------------------------------------------------------------------------
# Layout and editorial changes
# --------------------------------------------------------------------------------------


def abridge(
    text: str, rng: np.random.Generator, keep: float | tuple[float, float] = (0.4, 0.9)
) -> str:
    """Cut the story from the bottom at a sentence boundary, as a paper short of space does.

    A target fraction of characters is drawn uniformly from ``keep``; the text is cut at the
    sentence end nearest to it, keeping at least the first sentence. The result is always a
    prefix of ``text`` (trailing whitespace removed); text with one sentence or fewer is
    returned unchanged.

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    keep : float or (float, float), default (0.4, 0.9)
        Fraction of characters to keep, or a range to draw it from; within [0, 1].
        Silcock et al. see abridgement from a few lines to most of the story.

    Returns
    -------
    str
    """
    caller = "abridge"
    _check_text(caller, text)
    _check_rng(caller, rng)
    if isinstance(keep, (int, float)):
        lo = hi = keep
    elif isinstance(keep, Sequence) and len(keep) == 2:
        lo, hi = keep
    else:
        raise ValueError(
            f"{caller}: parameter 'keep' must be a float or a (low, high) pair; got {keep!r}."
        )
    lo = check_float(caller, "keep", lo, low=0.0, high=1.0)
    hi = check_float(caller, "keep", hi, low=lo, high=1.0)
    fraction = rng.uniform(lo, hi)
    spans = sentence_spans(text)
    if len(spans) <= 1:
        return text
    ends = np.array([e for _, e in spans])
    cut = int(ends[int(np.argmin(np.abs(ends - fraction * len(text))))])
    return text[:cut]


def drop_middle_sentences(
    text: str, rng: np.random.Generator, rate: float = 0.2, contiguous: bool = False
) -> str:
    """Remove sentences from the middle of the story; the first and last always stay.

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    rate : float, default 0.2
        Probability that each middle sentence is removed, in [0, 1].
    contiguous : bool, default False
        False removes sentences independently (an editor trimming); True removes one run
        of the same expected length (a lost column or skipped paragraphs, as in
        Silcock et al. A.2.2).

    Returns
    -------
    str
        The kept sentences in order, with their original separators.
    """
    caller = "drop_middle_sentences"
    _check_text(caller, text)
    _check_rng(caller, rng)
    rate = check_float(caller, "rate", rate, low=0.0, high=1.0)
    seps, sents, tail = _segments(text)
    n_mid = len(sents) - 2
    if n_mid <= 0:
        return text
    keep = np.ones(len(sents), dtype=bool)
    if contiguous:
        k = int(rng.binomial(n_mid, rate))
        if k:
            start = 1 + int(rng.integers(0, n_mid - k + 1))
            keep[start : start + k] = False
    else:
        keep[1:-1] = rng.random(n_mid) >= rate
    if keep.all():
        return text
    return _join(seps, sents, tail, keep.tolist(), seps[0])


def drop_lead(
    text: str, rng: np.random.Generator, max_sentences: int = 3, paragraph_prob: float = 0.5
) -> str:
    """Remove the opening, as when a story is continued from another page.

    Either the first paragraph (with probability ``paragraph_prob``, if there are at
    least two) or the first 1 to ``max_sentences`` sentences are removed; at least one
    sentence always remains. The result is a suffix of ``text`` starting at a sentence;
    text with one sentence or fewer is returned unchanged. The dateline goes with the lead.

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    max_sentences : int, default 3
        Most sentences removed when cutting by sentence; >= 1.
    paragraph_prob : float, default 0.5
        Probability of cutting the whole first paragraph instead, in [0, 1].

    Returns
    -------
    str
    """
    caller = "drop_lead"
    _check_text(caller, text)
    _check_rng(caller, rng)
    max_sentences = check_int(caller, "max_sentences", max_sentences, low=1)
    paragraph_prob = check_float(caller, "paragraph_prob", paragraph_prob, low=0.0, high=1.0)
    use_paragraph = rng.random() < paragraph_prob
    paragraphs = paragraph_spans(text)
    if use_paragraph and len(paragraphs) >= 2:
        return text[paragraphs[1][0] :]
    spans = sentence_spans(text)
    if len(spans) <= 1:
        return text
    k = int(rng.integers(1, min(max_sentences, len(spans) - 1) + 1))
    return text[spans[k][0] :]


_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_MONTH_PREFIX = r"(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)"
# "SALVADOR, Feb 26 - ", "Greeley, Colo., Jan. 28. — ", "AMSTERDAM, 2 March - ",
# "WASHINGTON (AP) — ", "PEPPERELL, Mass., Jan. 27 (AP) — ".
_DATELINE = re.compile(
    rf"""(?P<indent>\s*)
    (?P<place>[A-Z][A-Za-z.'&/ -]{{1,40}}?(?:,\s*[A-Z][A-Za-z. ]{{1,20}}?)?)
    ,?\s*(?:-\s*)?
    (?:(?P<month>{_MONTH_PREFIX})[A-Za-z]*\.?\s+(?P<day>\d{{1,2}})[.,]?
      |(?P<day2>\d{{1,2}})\s+(?P<month2>{_MONTH_PREFIX})[A-Za-z]*[.,]?)?
    \s*(?:\((?P<wire>[^()\n]{{1,25}})\)\s*)?
    [-—–]+[^\S\n]*""",
    re.VERBOSE,
)
_WIRES = ("AP", "UP", "UPI", "INS", "Reuter", "Reuters")
_AGENCIES = (
    "Associated Press", "United Press", "United Press International",
    "International News Service", "Reuters", "Staff Correspondent",
)  # fmt: skip
_FIRST_NAMES = tuple("JOHN MARY ROBERT HELEN JAMES RUTH WILLIAM ALICE GEORGE EDNA".split())
_LAST_NAMES = tuple("SMITH JOHNSON BROWN MILLER DAVIS WILSON MOORE TAYLOR CLARK HALL".split())
_CITIES = (
    "WASHINGTON", "NEW YORK", "CHICAGO", "LONDON", "PARIS", "TOKYO", "BOSTON",
    "SAN FRANCISCO", "KANSAS CITY, Mo.", "DENVER, Colo.", "ATLANTA, Ga.", "TORONTO",
)  # fmt: skip


def _find_dateline(text: str) -> re.Match[str] | None:
    m = _DATELINE.match(text)
    if m is None:
        return None
    city, comma, _ = m.group("place").partition(",")
    # Without a date or wire tag, only "CITY, State - " is trusted ("WOODBRIDGE, N.J. - "),
    # so that "NOTE - ..." is not taken for a dateline.
    if (m.group("month") or m.group("month2") or m.group("wire")) is None and not (
        comma and city.isupper()
    ):
        return None
    return m


def _choose(rng: np.random.Generator, options: Sequence[str]) -> str:
    return options[int(rng.integers(len(options)))]


def _render_dateline(
    rng: np.random.Generator, place: str, month: str | None, day: str | None
) -> str:
    """One of the dateline styles seen across wire services and papers."""
    city, _, state = place.partition(",")
    city = city.strip().upper() if rng.random() < 0.7 else city.strip().title()
    place = f"{city},{state}" if state else city
    wire = _choose(rng, _WIRES)
    if month is None:
        return f"{place} ({wire}) — "
    month = month.title()
    full = next((m for m in _MONTHS if m.startswith(month)), month)
    shift = int(rng.choice([-1, 0, 0, 0, 1]))  # reprinted a day later, or a typo
    day_text = str(min(max(int(day) + shift, 1), 31)) if day else ""
    month_text = _choose(rng, (month, full if len(full) <= 5 else full[:3] + ".", full))
    styles = (
        f"{place}, {month_text} {day_text} - ",
        f"{place}, {month_text} {day_text}. — ",
        f"{place}, {month_text} {day_text} ({wire}) — ",
        f"{place} ({wire}) — ",
    )
    return _choose(rng, styles)


def change_dateline(
    text: str,
    rng: np.random.Generator,
    remove_prob: float = 0.3,
    city_prob: float = 0.15,
    byline_prob: float = 0.3,
) -> str:
    """Restyle, replace or remove a leading dateline, and maybe add a byline.

    A dateline such as ``"SALVADOR, Feb 26 - "``, ``"Greeley, Colo., Jan. 28. — "`` or
    ``"WASHINGTON (AP) — "`` at the start of ``text`` is removed (``remove_prob``) or
    re-rendered in another paper's style (case, month format, wire tag, dash, date off by
    a day at most), with its city replaced by another with ``city_prob``. A byline such as
    ``"By JOHN SMITH, Associated Press"`` is then prepended on its own line with
    ``byline_prob``. Text without a dateline always gets a byline or a new dateline.

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    remove_prob, city_prob, byline_prob : float
        Probabilities in [0, 1], defaults 0.3, 0.15 and 0.3.

    Returns
    -------
    str
    """
    caller = "change_dateline"
    _check_text(caller, text)
    _check_rng(caller, rng)
    remove_prob = check_float(caller, "remove_prob", remove_prob, low=0.0, high=1.0)
    city_prob = check_float(caller, "city_prob", city_prob, low=0.0, high=1.0)
    byline_prob = check_float(caller, "byline_prob", byline_prob, low=0.0, high=1.0)
    m = _find_dateline(text)
    add_byline = rng.random() < byline_prob
    if m is None:
        body = text.lstrip()
        if add_byline or rng.random() < 0.5:
            add_byline = True
        else:
            month = _MONTHS[int(rng.integers(12))][:3]
            day = str(rng.integers(1, 29))
            body = _render_dateline(rng, _choose(rng, _CITIES), month, day) + body
    else:
        body = text[m.end() :]
        if rng.random() >= remove_prob:
            place = m.group("place")
            if rng.random() < city_prob:
                place = _choose(rng, _CITIES)
            month, day = m.group("month") or m.group("month2"), m.group("day") or m.group("day2")
            body = m.group("indent") + _render_dateline(rng, place, month, day) + body
    if add_byline:
        name = f"{_choose(rng, _FIRST_NAMES)} {_choose(rng, _LAST_NAMES)}"
        byline = f"By {name}, {_choose(rng, _AGENCIES)}" if rng.random() < 0.6 else f"By {name}"
        body = f"{byline}\n{body.lstrip()}"
    return body


def insert_local_sentences(
    text: str, rng: np.random.Generator, donor_sentences: Sequence[str], n: int = 1
) -> str:
    """Insert ``n`` sentences taken from ``donor_sentences`` after random sentences.

    Models a local paper adding its own angle to a wire story, and the hard case where two
    different stories share a quote. Insertions go after the first sentence or later;
    donors are drawn without replacement while possible. Blank text or an empty donor
    list returns ``text`` unchanged.

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    donor_sentences : sequence of str
        Sentences to insert, e.g. ``split_sentences`` of other stories.
    n : int, default 1
        Number of sentences to insert; >= 0.

    Returns
    -------
    str
    """
    caller = "insert_local_sentences"
    _check_text(caller, text)
    _check_rng(caller, rng)
    donors = _check_strings(caller, "donor_sentences", donor_sentences)
    n = check_int(caller, "n", n, low=0)
    seps, sents, tail = _segments(text)
    if not sents or not donors or n == 0:
        return text
    picks = rng.choice(len(donors), size=n, replace=n > len(donors))
    slots = np.sort(rng.integers(1, len(sents) + 1, size=n))
    for offset, (slot, pick) in enumerate(zip(slots.tolist(), picks.tolist())):
        seps.insert(slot + offset, " ")
        sents.insert(slot + offset, donors[pick].strip())
    return _join(seps, sents, tail, [True] * len(sents), seps[0])


def replace_sentences(
    text: str,
    rng: np.random.Generator,
    donor_sentences: Sequence[str],
    fraction: float = 0.5,
) -> str:
    """Replace a fixed share of the sentences by donor sentences, as an updated story does.

    Models a wire story rewritten for breaking news (Silcock et al. 2022, sec. 3.3: such
    updates are *different* articles): ``round(fraction * n)`` of the ``n`` sentences, at
    positions drawn without replacement, are replaced by consecutive donor sentences
    (starting at a random donor), so new material arrives in runs as rewritten paragraphs
    do. At least one sentence is replaced and, when there are two or more, at least one
    is kept. The other sentences and all separators stay as they are. Blank text or an
    empty donor list returns ``text`` unchanged.

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    donor_sentences : sequence of str
        Replacement sentences, in reading order, e.g. ``split_sentences`` of another story
        on the same topic.
    fraction : float, default 0.5
        Share of sentences replaced, in [0, 1].

    Returns
    -------
    str
    """
    caller = "replace_sentences"
    _check_text(caller, text)
    _check_rng(caller, rng)
    donors = _check_strings(caller, "donor_sentences", donor_sentences)
    fraction = check_float(caller, "fraction", fraction, low=0.0, high=1.0)
    seps, sents, tail = _segments(text)
    n = len(sents)
    if n == 0 or not donors:
        return text
    k = min(max(1, round(fraction * n)), max(n - 1, 1))
    positions = np.sort(rng.choice(n, size=k, replace=False)).tolist()
    start = int(rng.integers(len(donors)))
    for t, p in enumerate(positions):
        sents[p] = donors[(start + t) % len(donors)].strip()
    return _join(seps, sents, tail, [True] * n, seps[0])


# A double-quoted passage of three words or more: "..." or “...”.
_QUOTE = re.compile(r"\"[^\"\n]*?\S+\s+\S+\s+\S+[^\"\n]*?\"|“[^”\n]*?\S+\s+\S+\s+\S+[^”\n]*?”")


def quoted_sentences(text: str) -> list[str]:
    """The sentences of ``text`` that contain a double-quoted passage of 3+ words.

    Two different stories carrying the same quote are a classic false positive of
    near-duplicate detection (Silcock et al. 2022, sec. 3.3 label them as different); these
    are the sentences to share. Straight (``"``) and curly (``“ ”``) quotes count; a quote
    must open and close within one line of the sentence.

    Parameters
    ----------
    text : str

    Returns
    -------
    list of str
        In reading order, as :func:`split_sentences` gives them.
    """
    _check_text("quoted_sentences", text)
    return [s for s in split_sentences(text) if _QUOTE.search(s)]


# --------------------------------------------------------------------------------------
# Adversarial (W4NT3D-like) noise
# --------------------------------------------------------------------------------------


@functools.cache
def _qwerty_neighbours() -> dict[str, str]:
    """Keys physically adjacent on a US QWERTY keyboard (same row, or rows above/below)."""
    rows = ("1234567890", "qwertyuiop", "asdfghjkl", "zxcvbnm")
    stagger = (0.0, 0.5, 0.75, 1.25)  # horizontal offset of each row, in key widths
    pos = {k: (r, c + stagger[r]) for r, row in enumerate(rows) for c, k in enumerate(row)}
    out = {}
    for k, (r, x) in pos.items():
        out[k] = "".join(
            o for o, (r2, x2) in pos.items()
            if o != k and ((r2 == r and abs(x2 - x) == 1) or (abs(r2 - r) == 1 and abs(x2 - x) < 1))
        )  # fmt: skip
    return out


def _typo_char(c: str, u: float, alphabet: str) -> str:
    """A keyboard neighbour of ``c`` keeping its case; for keys not on the QWERTY grid a
    different character of the text's own alphabet. Returns ``c`` if there is none."""
    near = _qwerty_neighbours().get(c.lower())
    if near:
        new = near[int(u * len(near))]
        return new.upper() if c.isupper() else new
    others = alphabet.replace(c, "")
    return others[int(u * len(others))] if others else c


def typos(
    text: str,
    rng: np.random.Generator,
    rate: float = 0.05,
    ops: Sequence[str] = EDIT_OPS,
) -> str:
    """Character-level typos: substitution, insertion, deletion and transposition.

    Each letter or digit is hit with probability ``rate`` and gets one operation drawn
    uniformly from ``ops``: ``"substitute"`` by a QWERTY neighbour (case kept; characters
    off the keyboard, e.g. Cyrillic, take another character of the same text),
    ``"insert"`` a neighbour or a repeat after it, ``"delete"`` it, or ``"transpose"`` it
    with the next character (nothing happens when that is not a different letter or digit,
    so each operation can be tested alone).

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    rate : float, default 0.05
        Probability per letter/digit, in [0, 1]. W4NT3D uses up to 0.25 combined with
        word edits; MinHash collapses above about 0.05.
    ops : sequence of str, default all four
        Subset of ``("substitute", "insert", "delete", "transpose")``.

    Returns
    -------
    str
    """
    caller = "typos"
    _check_text(caller, text)
    _check_rng(caller, rng)
    rate = check_float(caller, "rate", rate, low=0.0, high=1.0)
    ops = _check_ops(caller, ops)
    hits = _selected(len(text), rate, rng)
    k = len(hits)
    if k == 0:
        return text
    u_op, u_arg, u_ins = rng.random(k), rng.random(k), rng.random(k)
    alphabet = "".join(sorted(ch for ch in set(text) if ch.isalnum()))
    edits: list[tuple[int, int, str]] = []
    last_end = 0
    for p, uo, ua, ui in zip(hits.tolist(), u_op, u_arg, u_ins):
        c = text[p]
        if p < last_end or not c.isalnum():
            continue
        op = ops[int(uo * len(ops))]
        if op == "transpose":
            nxt = text[p + 1] if p + 1 < len(text) else ""
            if not nxt.isalnum() or nxt == c:
                continue
            edits.append((p, p + 2, nxt + c))
        elif op == "delete":
            edits.append((p, p + 1, ""))
        elif op == "insert":
            extra = c if ui < 0.3 else _typo_char(c, ua, alphabet)  # repeat, or fat finger
            edits.append((p, p + 1, c + extra))
        else:
            edits.append((p, p + 1, _typo_char(c, ua, alphabet)))
        last_end = edits[-1][1]
    return _apply_edits(text, edits)


# A word, keeping "U.S", "155,221", "Aug/Sept" and "farmer-owned" in one piece.
_WORD = re.compile(r"[^\W_]+(?:['’.,/-][^\W_]+)*")


def _match_case(word: str, model: str) -> str:
    if model.isupper() and len(model) > 1:
        return word.upper()
    if model[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def word_edits(
    text: str,
    rng: np.random.Generator,
    rate: float = 0.1,
    vocabulary: Sequence[str] | None = None,
    ops: Sequence[str] = EDIT_OPS,
) -> str:
    """Word-level edits: insertion, deletion, substitution and neighbour transposition.

    Each word is hit with probability ``rate`` and gets one operation drawn uniformly from
    ``ops``: ``"substitute"`` by a vocabulary word (capitalisation kept), ``"insert"`` a
    vocabulary word after it, ``"delete"`` it with the space after it, or ``"transpose"``
    it with the next word (nothing for the last word). Punctuation and line breaks stay
    where they are.

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    rate : float, default 0.1
        Probability per word, in [0, 1].
    vocabulary : sequence of str, optional
        Words to insert or substitute; by default the words of ``text`` itself.
    ops : sequence of str, default all four
        Subset of ``("substitute", "insert", "delete", "transpose")``.

    Returns
    -------
    str
    """
    caller = "word_edits"
    _check_text(caller, text)
    _check_rng(caller, rng)
    rate = check_float(caller, "rate", rate, low=0.0, high=1.0)
    ops = _check_ops(caller, ops)
    vocab = _check_strings(caller, "vocabulary", vocabulary)
    words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    vocab = vocab or tuple(text[s:e] for s, e in words)
    hits = _selected(len(words), rate, rng)
    k = len(hits)
    if k == 0:
        return text
    u_op, u_word = rng.random(k), rng.integers(0, len(vocab), size=k)
    edits: list[tuple[int, int, str]] = []
    last_end = 0
    for i, uo, v in zip(hits.tolist(), u_op, u_word.tolist()):
        s, e = words[i]
        if s < last_end:
            continue
        op, w, new = ops[int(uo * len(ops))], text[s:e], vocab[v].strip()
        if op == "transpose":
            if i + 1 == len(words):
                continue
            s2, e2 = words[i + 1]
            edits.append((s, e2, text[s2:e2] + text[e:s2] + w))
        elif op == "delete":
            # Take the following space too, or the preceding one at the end of a line.
            if e < len(text) and text[e] == " ":
                edits.append((s, e + 1, ""))
            elif s > last_end and text[s - 1] == " ":
                edits.append((s - 1, e, ""))
            else:
                edits.append((s, e, ""))
        elif op == "insert":
            edits.append((s, e, f"{w} {new}"))
        else:
            edits.append((s, e, _match_case(new, w)))
        last_end = edits[-1][1]
    return _apply_edits(text, edits)


def sentence_edits(
    text: str,
    rng: np.random.Generator,
    rate: float = 0.1,
    donor_sentences: Sequence[str] = (),
    ops: Sequence[str] = EDIT_OPS,
) -> str:
    """Sentence-level edits: insertion, deletion, substitution and neighbour swap.

    Each sentence is hit with probability ``rate`` and gets one operation drawn uniformly
    from ``ops``: ``"insert"`` a donor sentence after it (or repeat it if there are no
    donors), ``"delete"`` it (never the only sentence), ``"substitute"`` it by a donor
    sentence (or by its upper- or lower-cased self), or ``"transpose"`` it with the next
    (nothing for the last sentence).

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    rate : float, default 0.1
        Probability per sentence, in [0, 1]. W4NT3D uses up to 0.25.
    donor_sentences : sequence of str, default ()
        Sentences from other documents.
    ops : sequence of str, default all four
        Subset of ``("substitute", "insert", "delete", "transpose")``.

    Returns
    -------
    str
    """
    caller = "sentence_edits"
    _check_text(caller, text)
    _check_rng(caller, rng)
    rate = check_float(caller, "rate", rate, low=0.0, high=1.0)
    ops = _check_ops(caller, ops)
    donors = _check_strings(caller, "donor_sentences", donor_sentences)
    seps, sents, tail = _segments(text)
    n = len(sents)
    hits = _selected(n, rate, rng)
    k = len(hits)
    if k == 0:
        return text
    u_op, u_arg = rng.random(k), rng.random(k)
    keep = [True] * n
    inserts: dict[int, str] = {}
    done = -1
    for i, uo, ua in zip(hits.tolist(), u_op, u_arg):
        if i <= done:
            continue
        op = ops[int(uo * len(ops))]
        donor = donors[int(ua * len(donors))].strip() if donors else None
        if op == "transpose":
            if i + 1 < n:
                sents[i], sents[i + 1] = sents[i + 1], sents[i]
                done = i + 1
        elif op == "delete":
            if sum(keep) > 1:
                keep[i] = False
        elif op == "insert":
            inserts[i] = donor if donor is not None else sents[i]
        elif donor is not None:
            sents[i] = donor
        else:
            sents[i] = sents[i].upper() if ua < 0.5 else sents[i].lower()
    out_seps, out_sents, out_keep = [], [], []
    for i in range(n):
        out_seps.append(seps[i])
        out_sents.append(sents[i])
        out_keep.append(keep[i])
        if i in inserts:
            out_seps.append(" ")
            out_sents.append(inserts[i])
            out_keep.append(True)
    return _join(out_seps, out_sents, tail, out_keep, seps[0])


# Latin letter -> look-alikes from Cyrillic and Greek. NFKC leaves every one of these alone
# (they are distinct letters, not compatibility variants), which is why spam uses them;
# neardup.text.normalize folds them back explicitly.
HOMOGLYPHS: dict[str, tuple[str, ...]] = {
    "a": ("\u0430",), "c": ("\u0441",), "d": ("\u0501",), "e": ("\u0435",), "h": ("\u04bb",),
    "i": ("\u0456",), "j": ("\u0458",), "l": ("\u04cf",), "o": ("\u043e", "\u03bf"),
    "p": ("\u0440", "\u03c1"), "q": ("\u051b",), "s": ("\u0455",), "w": ("\u051d",),
    "x": ("\u0445",), "y": ("\u0443",),
    "A": ("\u0410", "\u0391"), "B": ("\u0412", "\u0392"), "C": ("\u0421",),
    "E": ("\u0415", "\u0395"), "H": ("\u041d", "\u0397"), "I": ("\u0406", "\u0399"),
    "J": ("\u0408",), "K": ("\u041a", "\u039a"), "M": ("\u041c", "\u039c"), "N": ("\u039d",),
    "O": ("\u041e", "\u039f"), "P": ("\u0420", "\u03a1"), "S": ("\u0405",),
    "T": ("\u0422", "\u03a4"), "X": ("\u0425", "\u03a7"), "Y": ("\u04ae", "\u03a5"),
    "Z": ("\u0396",),
}  # fmt: skip


def homoglyphs(text: str, rng: np.random.Generator, rate: float = 0.1) -> str:
    """Replace Latin letters by Cyrillic or Greek look-alikes (``a`` -> U+0430 ``а``, ...).

    The text looks unchanged but shares few character n-grams with the original. Unicode
    NFKC does *not* undo this, because the look-alikes are letters in their own right; a
    deduplicator needs an explicit confusables fold (see ``neardup.text.normalize``).

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    rate : float, default 0.1
        Probability that each letter with a look-alike in :data:`HOMOGLYPHS` is replaced,
        in [0, 1].

    Returns
    -------
    str
        Same length as ``text``.
    """
    caller = "homoglyphs"
    _check_text(caller, text)
    _check_rng(caller, rng)
    rate = check_float(caller, "rate", rate, low=0.0, high=1.0)
    hits = _selected(len(text), rate, rng)
    if len(hits) == 0:
        return text
    u = rng.random(len(hits))
    chars = list(text)
    for p, up in zip(hits.tolist(), u):
        options = HOMOGLYPHS.get(chars[p])
        if options:
            chars[p] = options[int(up * len(options))]
    return "".join(chars)


# Zero-width space, zero-width non-joiner, zero-width joiner, word joiner, soft hyphen, BOM.
INVISIBLE_CHARS = ("\u200b", "\u200c", "\u200d", "\u2060", "\u00ad", "\ufeff")


def invisible_chars(text: str, rng: np.random.Generator, rate: float = 0.05) -> str:
    """Insert invisible code points between characters (a hash-busting trick).

    Deleting every character of :data:`INVISIBLE_CHARS` from the result gives back
    ``text`` exactly (if ``text`` had none to begin with).

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    rate : float, default 0.05
        Probability that one invisible character is inserted in each of the
        ``len(text) - 1`` gaps between characters, in [0, 1].

    Returns
    -------
    str
    """
    caller = "invisible_chars"
    _check_text(caller, text)
    _check_rng(caller, rng)
    rate = check_float(caller, "rate", rate, low=0.0, high=1.0)
    gaps = _selected(max(len(text) - 1, 0), rate, rng) + 1
    if len(gaps) == 0:
        return text
    picks = rng.integers(0, len(INVISIBLE_CHARS), size=len(gaps))
    bounds = [0, *gaps.tolist(), len(text)]
    pieces = [text[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    fillers = [INVISIBLE_CHARS[i] for i in picks.tolist()] + [""]
    return "".join(p + f for p, f in zip(pieces, fillers))


def case_changes(text: str, rng: np.random.Generator, rate: float = 0.1) -> str:
    """Change the case of random words: UPPER, lower, Title or rAnDoM.

    Only case changes: ``result.lower() == text.lower()`` for ASCII text, and a word whose
    length would change (German ``ß`` -> ``SS``) is left alone.

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    rate : float, default 0.1
        Probability per word, in [0, 1].

    Returns
    -------
    str
    """
    caller = "case_changes"
    _check_text(caller, text)
    _check_rng(caller, rng)
    rate = check_float(caller, "rate", rate, low=0.0, high=1.0)
    words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    hits = _selected(len(words), rate, rng)
    if len(hits) == 0:
        return text
    styles = rng.integers(0, 4, size=len(hits))
    edits = []
    for i, style in zip(hits.tolist(), styles.tolist()):
        s, e = words[i]
        w = text[s:e]
        if style == 0:
            new = w.upper()
        elif style == 1:
            new = w.lower()
        elif style == 2:
            new = w[:1].upper() + w[1:].lower()
        else:
            flips = rng.random(len(w)) < 0.5
            new = "".join(ch.swapcase() if f else ch for ch, f in zip(w, flips))
        edits.append((s, e, new if len(new) == len(w) else w))
    return _apply_edits(text, edits)


def _gibberish_sentence(rng: np.random.Generator) -> str:
    n_words = int(rng.integers(5, 13))
    lengths = rng.integers(2, 10, size=n_words)
    letters = rng.integers(0, 26, size=int(lengths.sum()))
    flat = "".join(chr(97 + i) for i in letters.tolist())
    cuts = np.cumsum(lengths)[:-1].tolist()
    words = [flat[a:b] for a, b in zip([0, *cuts], [*cuts, len(flat)])]
    return " ".join(words).capitalize() + "."


def pad(
    text: str,
    rng: np.random.Generator,
    padding_sentences: Sequence[str] = (),
    amount: float = 0.5,
    where: str = "random",
) -> str:
    """Add hash-busting padding before and/or after the text, as spam does.

    Sentences are drawn from ``padding_sentences`` (random letter salad if empty) until
    the padding reaches ``amount`` x ``len(text)`` characters, at least one sentence. The
    original text is kept verbatim, so it is always a substring of the result.

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    padding_sentences : sequence of str, default ()
        Filler, e.g. sentences of unrelated documents (Bayesian poisoning).
    amount : float, default 0.5
        Padding length as a fraction of ``len(text)``; >= 0.
    where : {"random", "prepend", "append", "both"}, default "random"
        Where the padding goes; "random" picks one of the other three.

    Returns
    -------
    str
    """
    caller = "pad"
    _check_text(caller, text)
    _check_rng(caller, rng)
    donors = _check_strings(caller, "padding_sentences", padding_sentences)
    amount = check_float(caller, "amount", amount, low=0.0)
    where = check_choice(caller, "where", where, ("random", "prepend", "append", "both"))
    if where == "random":
        where = ("prepend", "append", "both")[int(rng.integers(3))]
    target = amount * len(text)
    sentences: list[str] = []
    total = 0
    while not sentences or total < target:
        s = donors[int(rng.integers(len(donors)))].strip() if donors else _gibberish_sentence(rng)
        sentences.append(s)
        total += len(s) + 1
    if where == "prepend":
        return " ".join(sentences) + "\n" + text
    if where == "append":
        return text + "\n" + " ".join(sentences)
    half = max(1, len(sentences) // 2)
    return " ".join(sentences[:half]) + "\n" + text + "\n" + " ".join(sentences[half:])


# --------------------------------------------------------------------------------------
# Composition
# --------------------------------------------------------------------------------------


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def reprint(
    text: str,
    rng: np.random.Generator,
    profile: str = "news",
    donor_sentences: Sequence[str] = (),
    rate: float | None = None,
) -> tuple[str, list[str]]:
    """Make one noisy copy of ``text`` from a random mix of the noise families.

    ``profile="news"`` models a wire story reprinted by a local paper (Silcock et al. 2022):
    with probability 0.15 the lead is dropped (continued from another page), otherwise 0.4
    a dateline change; 0.6 abridgement; 0.15 dropped middle sentences; 0.15 local donor
    sentences (if donors are given); then always OCR noise at a severity drawn
    log-uniformly from [0.005, 0.08].

    ``profile="adversarial"`` models W4NT3D / spam (Zhang et al. 2023): with probability
    0.3 sentence edits and 0.3 padding, then each of word edits, case changes, typos,
    homoglyphs and invisible characters with probability 0.5 (at least one), in that
    order; the chosen word- and character-level families share the ``rate`` budget evenly.

    Parameters
    ----------
    text : str
    rng : numpy.random.Generator
    profile : {"news", "adversarial"}, default "news"
    donor_sentences : sequence of str, default ()
        Sentences from *other* stories, for local insertions and sentence substitutions.
    rate : float, optional
        "news": the OCR severity (default drawn as above). "adversarial": the total word-
        and character-level edit rate (default drawn uniformly from [0.05, 0.25], as in
        W4NT3D). In [0, 1].

    Returns
    -------
    text : str
    applied : list of str
        The steps that changed the text, in order, each a function name with the drawn
        knob in parentheses where there is one, e.g.
        ``["abridge", "ocr_noise(severity=0.0213)"]``.
    """
    caller = "reprint"
    _check_text(caller, text)
    _check_rng(caller, rng)
    profile = check_choice(caller, "profile", profile, PROFILES)
    donors = _check_strings(caller, "donor_sentences", donor_sentences)
    if rate is not None:
        rate = check_float(caller, "rate", rate, low=0.0, high=1.0)
    applied: list[str] = []

    def step(name: str, new: str) -> None:
        nonlocal text
        if new != text:
            applied.append(name)
        text = new

    if profile == "news":
        if rng.random() < 0.15:
            step("drop_lead", drop_lead(text, rng))
        elif rng.random() < 0.4:
            step("change_dateline", change_dateline(text, rng))
        if rng.random() < 0.6:
            step("abridge", abridge(text, rng))
        if rng.random() < 0.15:
            contiguous = bool(rng.random() < 0.5)
            new = drop_middle_sentences(text, rng, rate=0.25, contiguous=contiguous)
            step("drop_middle_sentences", new)
        if donors and rng.random() < 0.15:
            n = int(rng.integers(1, 3))
            step("insert_local_sentences", insert_local_sentences(text, rng, donors, n=n))
        severity = _log_uniform(rng, 0.005, 0.08) if rate is None else rate
        step(f"ocr_noise(severity={severity:.4g})", ocr_noise(text, rng, severity))
        return text, applied

    budget = float(rng.uniform(0.05, 0.25)) if rate is None else rate
    if rng.random() < 0.3:
        r = min(budget, 0.25)
        step(f"sentence_edits(rate={r:.4g})", sentence_edits(text, rng, r, donors))
    if rng.random() < 0.3:
        amount = float(rng.uniform(0.2, 1.0))
        step(f"pad(amount={amount:.4g})", pad(text, rng, donors, amount))
    families = {
        "word_edits": word_edits, "case_changes": case_changes, "typos": typos,
        "homoglyphs": homoglyphs, "invisible_chars": invisible_chars,
    }  # fmt: skip
    names = list(families)
    chosen = [name for name in names if rng.random() < 0.5]
    if not chosen:
        chosen = [names[int(rng.integers(len(names)))]]
    share = budget / len(chosen)
    for name in chosen:
        step(f"{name}(rate={share:.4g})", families[name](text, rng, share))
    return text, applied


def _lognormal_cdf(x: float, mu: float, sigma: float) -> float:
    return 0.5 * (1.0 + math.erf((math.log(x) - mu) / (sigma * math.sqrt(2.0))))


def _clipped_ceil_mean(mu: float, sigma: float, max_size: int) -> float:
    """E[clip(ceil(X), 1, max_size)] for X ~ LogNormal(mu, sigma), in closed form:
    sum over k of P(size >= k)."""
    return 1.0 + sum(1.0 - _lognormal_cdf(k, mu, sigma) for k in range(1, max_size))


def reprint_cluster_sizes(
    n_sources: int,
    rng: np.random.Generator,
    mean: float = 6.0,
    max_size: int = 200,
    sigma: float = 1.5,
) -> np.ndarray:
    """Draw how many copies each source story has: long-tailed, many singletons.

    Sizes are ``clip(ceil(X), 1, max_size)`` with ``X ~ LogNormal(mu, sigma)``, where
    ``mu`` is solved (by bisection on the exact expectation) so that the mean size is
    ``mean``. NEWS-COPY's full-day samples average about 5-6 articles per reproduced
    story, with a tail of stories in dozens of papers and many singletons.

    Parameters
    ----------
    n_sources : int
        Number of source stories; >= 0.
    rng : numpy.random.Generator
    mean : float, default 6.0
        Expected copies per source (singletons included), in [1, max_size].
    max_size : int, default 200
        Largest cluster; >= 1.
    sigma : float, default 1.5
        Tail weight (log-scale spread); larger means more singletons and bigger giants.
        At the defaults about 35% of sources are singletons, the median is 2 and about 1%
        exceed 60 copies.

    Returns
    -------
    numpy.ndarray of int64, shape (n_sources,)
        Sizes in ``[1, max_size]``.
    """
    caller = "reprint_cluster_sizes"
    n_sources = check_int(caller, "n_sources", n_sources, low=0)
    _check_rng(caller, rng)
    max_size = check_int(caller, "max_size", max_size, low=1)
    mean = check_float(caller, "mean", mean, low=1.0, high=float(max_size))
    sigma = check_float(caller, "sigma", sigma, low=1e-3, high=10.0)
    mu = _solve_mu(mean, sigma, max_size)
    x = rng.lognormal(mu, sigma, size=n_sources)
    return np.clip(np.ceil(x), 1, max_size).astype(np.int64)


@functools.lru_cache(maxsize=64)
def _solve_mu(mean: float, sigma: float, max_size: int) -> float:
    lo, hi = -30.0, math.log(max_size) + 30.0
    for _ in range(100):  # the expectation increases with mu
        mid = 0.5 * (lo + hi)
        if _clipped_ceil_mean(mid, sigma, max_size) < mean:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)
