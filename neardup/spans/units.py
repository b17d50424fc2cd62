"""Spans of a document (lines, paragraphs, windows of sentences), normalized and hashed.

A span has two ranges in its document's text (character offsets, end exclusive):

* its *match* range, the text compared across documents after :func:`normalize_span`
  (surrounding whitespace excluded);
* its *extent*, from the match's start to the start of the next unit (or the end of the
  text): what removing the span cuts, so that no empty line or double space is left
  where a line, paragraph or sentence was.

Units:

* ``line``: text between line breaks (``\\n``, ``\\r\\n``, ``\\r``); blank lines are no
  span and go with the extent of the line before them;
* ``paragraph``: text between blank lines (two line breaks with only spaces between);
* ``sentences:N``: every window of N consecutive sentences (overlapping, as datatrove's
  sentence dedup hashes them). A sentence ends at ``.``, ``!``, ``?`` (or their CJK
  forms), optionally followed by a closing quote or bracket, then whitespace; a blank
  line ends one too. A document with fewer than N sentences has no window.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from neardup.errors import ParameterError
from neardup.text.hashing import encode_codepoints, text_digest64

__all__ = ["SPAN_HASH_KEY", "SpanTable", "SpanUnit", "normalize_span", "split_spans", "span_table"]

#: Key of the 64-bit span hash (fixed: the same span hashes alike in every run).
SPAN_HASH_KEY = 0x5350414E53  # "SPANS"

# Each pattern starts with a literal character (a line break, a sentence's final mark),
# which keeps the scan fast; its last group is the separator. Whitespace left around a
# piece is stripped by _segments.
_BREAK = r"(?:\r\n|\r|\n)"
_SEPARATORS = {
    "line": re.compile(rf"({_BREAK}\s*)"),
    "paragraph": re.compile(rf"({_BREAK}[^\S\r\n]*{_BREAK}\s*)"),
    "sentences": re.compile(
        rf"[.!?\u3002\uff01\uff1f][\"'\u201d\u2019)\]]?(\s+)|({_BREAK}[^\S\r\n]*{_BREAK}\s*)"
    ),
}


@dataclass(frozen=True)
class SpanUnit:
    """What a span is: ``kind`` one of "line", "paragraph", "sentences", and for
    "sentences" the window length ``sentences`` (N >= 1)."""

    kind: str = "line"
    sentences: int = 1

    @classmethod
    def parse(cls, text: str) -> SpanUnit:
        """``"line"``, ``"paragraph"`` or ``"sentences:N"`` (``"sentences"`` alone is N=1)."""
        name, _, count = str(text).strip().partition(":")
        if name in ("line", "paragraph") and not count:
            return cls(name)
        if name == "sentences":
            try:
                n = int(count) if count else 1
            except ValueError:
                n = 0
            if n >= 1:
                return cls("sentences", n)
        raise ParameterError("spans", "unit", "one of line, paragraph, sentences:N (N >= 1)", text)

    def __str__(self) -> str:
        return f"sentences:{self.sentences}" if self.kind == "sentences" else self.kind


def normalize_span(text: str) -> str:
    """The form spans are matched in: whitespace runs collapsed to one space, the ends
    stripped, letters case-folded (``str.casefold``)."""
    return " ".join(text.split()).casefold()


def _segments(text: str, separator: re.Pattern) -> tuple[list[int], list[int]]:
    """Starts and ends of the non-blank pieces between separator matches."""
    starts, ends = [], []
    position = 0
    for match in separator.finditer(text):
        begin, end = match.span(match.lastindex)
        if begin > position:
            starts.append(position)
            ends.append(begin)
        position = end
    if position < len(text):
        starts.append(position)
        ends.append(len(text))
    # A piece may still begin or end with whitespace (the text's own edges).
    for i, (s, e) in enumerate(zip(starts, ends)):
        piece = text[s:e]
        stripped = piece.strip()
        if len(stripped) != len(piece):
            s += len(piece) - len(piece.lstrip())
            starts[i], ends[i] = s, s + len(stripped)
    keep = [i for i, (s, e) in enumerate(zip(starts, ends)) if e > s]
    return [starts[i] for i in keep], [ends[i] for i in keep]


def split_spans(text: str, unit: SpanUnit) -> list[tuple[int, int, int]]:
    """The spans of one text as ``(match_start, match_end, extent_end)``, in order."""
    starts, ends = _segments(text, _SEPARATORS[unit.kind])
    n = unit.sentences if unit.kind == "sentences" else 1
    spans = []
    for i in range(len(starts) - n + 1):
        last = i + n - 1
        extent = starts[last + 1] if last + 1 < len(starts) else len(text)
        spans.append((starts[i], ends[last], extent))
    return spans


@dataclass
class SpanTable:
    """The spans of a batch of documents, as parallel arrays (one entry per span, in
    document then position order).

    Attributes
    ----------
    doc : ndarray of int64
        Index of the span's document within the batch.
    start, end, stop : ndarray of int64
        Match start, match end and extent end (character offsets in the document).
    hash : ndarray of uint64
        64-bit hash of the normalized match text.
    length : ndarray of int64
        Characters of the normalized match text.
    """

    doc: np.ndarray
    start: np.ndarray
    end: np.ndarray
    stop: np.ndarray
    hash: np.ndarray
    length: np.ndarray

    def __len__(self) -> int:
        return int(self.doc.shape[0])


def span_table(texts: Sequence[str], unit: SpanUnit, min_length: int) -> SpanTable:
    """Split, normalize and hash the spans of ``texts``; spans whose normalized text is
    shorter than ``min_length`` characters are left out (never matched, never removed)."""
    docs, starts, ends, stops, forms = [], [], [], [], []
    for d, text in enumerate(texts):
        for start, end, stop in split_spans(text, unit):
            form = normalize_span(text[start:end])
            if len(form) >= min_length:
                docs.append(d)
                starts.append(start)
                ends.append(end)
                stops.append(stop)
                forms.append(form)
    cps, offsets = encode_codepoints(forms)
    hashes = text_digest64(cps, offsets, SPAN_HASH_KEY) if forms else np.empty(0, np.uint64)
    return SpanTable(
        doc=np.asarray(docs, dtype=np.int64),
        start=np.asarray(starts, dtype=np.int64),
        end=np.asarray(ends, dtype=np.int64),
        stop=np.asarray(stops, dtype=np.int64),
        hash=hashes,
        length=np.diff(offsets),
    )
