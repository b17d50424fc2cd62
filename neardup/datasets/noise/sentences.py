"""Sentence and paragraph boundaries of wire-style text (a small regex splitter, no NLP dependency)."""

from __future__ import annotations

import re
from collections.abc import Sequence

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


def segments(text: str) -> tuple[list[str], list[str], str]:
    """Split into ``(seps, sentences, tail)`` with
    ``text == "".join(sep + s for sep, s in zip(seps, sentences)) + tail``."""
    spans = sentence_spans(text)
    seps, sents, prev = [], [], 0
    for s, e in spans:
        seps.append(text[prev:s])
        sents.append(text[s:e])
        prev = e
    return seps, sents, text[prev:]


def join_segments(seps: list[str], sents: list[str], tail: str, keep: Sequence[bool], lead: str) -> str:
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
