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
  sentence dedup hashes them); two windows match when their N sentences match one by one
  after normalization. A sentence ends at ``.``, ``!``, ``?`` (or their CJK
  forms), optionally followed by a closing quote or bracket, then whitespace; a blank
  line ends one too. A document with fewer than N sentences has no window.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from neardup.errors import ParameterError
from neardup.spans.pieces import normalize_span, piece_table
from neardup.spans.tokens import window_hashes

__all__ = ["SPAN_HASH_KEY", "SpanTable", "SpanUnit", "normalize_span", "span_table", "split_spans",
           "split_units"]

#: Key of the 64-bit span hash (fixed: the same span hashes alike in every run).
SPAN_HASH_KEY = 0x5350414E53  # "SPANS"

# Each pattern starts with a literal character (a line break, a sentence's final mark),
# which keeps the scan fast; its last group is the separator. Whitespace left around a
# piece is stripped by _segments.
_BREAK = r"(?>\r\n|\r|\n)"  # atomic: \r\n is one break, never two
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


def split_units(text: str, kind: str) -> tuple[list[int], list[int]]:
    """Starts and ends of the lines, paragraphs or sentences (``kind``: "line",
    "paragraph", "sentences") of ``text``: its non-blank pieces between separators,
    without surrounding whitespace."""
    starts, ends = [], []
    position = 0
    for match in _SEPARATORS[kind].finditer(text):
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
        if text[s].isspace() or text[e - 1].isspace():
            piece = text[s:e]
            stripped = piece.strip()
            s += len(piece) - len(piece.lstrip())
            starts[i], ends[i] = s, s + len(stripped)
    if any(e == s for s, e in zip(starts, ends)):
        keep = [i for i, (s, e) in enumerate(zip(starts, ends)) if e > s]
        return [starts[i] for i in keep], [ends[i] for i in keep]
    return starts, ends


def split_spans(text: str, unit: SpanUnit) -> list[tuple[int, int, int]]:
    """The spans of one text as ``(match_start, match_end, extent_end)``, in order."""
    starts, ends = split_units(text, unit.kind)
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
        64-bit hash of the span's normalized pieces, in order.
    length : ndarray of int64
        Characters of the normalized span (its pieces' forms joined by single spaces).
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
    shorter than ``min_length`` characters are left out (never matched, never removed).

    Each piece (line, paragraph, sentence) is normalized and hashed once; a window of N
    sentences hashes its pieces' hashes in order (:func:`neardup.spans.tokens.window_hashes`),
    so two windows match when their N sentences match one by one."""
    pieces = piece_table(texts, unit.kind, SPAN_HASH_KEY)
    offsets = np.zeros(pieces.length.shape[0] + 1, dtype=np.int64)
    np.cumsum(pieces.length, out=offsets[1:])
    n = unit.sentences if unit.kind == "sentences" else 1
    window, first = window_hashes(pieces, n)
    last = first + n - 1
    doc = np.searchsorted(pieces.bounds, first, side="right") - 1
    # Normalized window: its pieces' forms joined by single spaces.
    length = offsets[last + 1] - offsets[first] + (n - 1)
    keep = length >= min_length
    return SpanTable(doc=doc[keep], start=pieces.start[first[keep]], end=pieces.end[last[keep]],
                     stop=pieces.stop[last[keep]], hash=window[keep], length=length[keep])
