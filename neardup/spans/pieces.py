"""Lines, paragraphs or sentences of a whole batch at once, normalized and hashed.

The vectorized form of :func:`neardup.spans.units.split_units` and
:func:`neardup.spans.units.normalize_span` (the tests hold the two to the same pieces and
forms): the batch's code points in one array, whitespace runs found with numpy, a run
made a separator by the line breaks in it or the sentence mark before it, and each
piece's normalized form (whitespace runs to one space, ``str.casefold``) built as code
points and hashed by :func:`neardup.text.hashing.text_digest64`. A piece holding a
character whose case folding is several characters (``ß`` -> ``ss``) or outside the Basic
Multilingual Plane is normalized by :func:`normalize_span` itself: the same form, so the
same hash.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from neardup.spans.tokens import TokenTable, runs, whitespace_mask
from neardup.text.hashing import encode_codepoints, text_digest64

__all__ = ["PieceTable", "normalize_span", "piece_table"]

_TERMINALS = np.array([ord(c) for c in ".!?\u3002\uff01\uff1f"], dtype=np.uint32)
_CLOSERS = np.array([ord(c) for c in "\"'\u201d\u2019)]"], dtype=np.uint32)
_BMP = 0x10000


def normalize_span(text: str) -> str:
    """The form spans are matched in: whitespace runs collapsed to one space, the ends
    stripped, letters case-folded (``str.casefold``)."""
    return " ".join(text.split()).casefold()


@functools.cache
def _fold_table() -> tuple[np.ndarray, np.ndarray]:
    """Per BMP code point: its one-character case folding, and whether its folding is
    not one character (those pieces are normalized in Python)."""
    table = np.arange(_BMP, dtype=np.uint32)
    special = np.zeros(_BMP, dtype=bool)
    for c in range(_BMP):
        folded = chr(c).casefold()
        if len(folded) == 1:
            table[c] = ord(folded)
        else:
            special[c] = True
    return table, special


@dataclass
class PieceTable(TokenTable):
    """The pieces of a batch, in document then position order: a
    :class:`~neardup.spans.tokens.TokenTable` whose tokens are lines, paragraphs or
    sentences (``start``/``end`` without surrounding whitespace, ``stop`` the next piece's
    start or the text's end, ``hash`` of the normalized piece), and:

    Attributes
    ----------
    length : ndarray of int64, shape (n_pieces,)
        Characters of the normalized piece.
    text_length : ndarray of int64, shape (n_docs,)
    """

    length: np.ndarray
    text_length: np.ndarray


def _separator_runs(cps: np.ndarray, offsets: np.ndarray, kind: str):
    """(first, last) global positions of the whitespace runs that separate pieces; and
    the whitespace mask."""
    total = cps.shape[0]
    space = whitespace_mask(cps)
    run_first, run_last = runs(space, offsets)
    # Line breaks (\n, \r\n, lone \r) per run, from the few break positions.
    lf = np.flatnonzero(cps == 10)
    cr = np.flatnonzero(cps == 13)
    cr = cr[(cr + 1 >= total) | (cps[np.minimum(cr + 1, total - 1)] != 10)]
    positions = np.sort(np.concatenate((lf, cr)))
    breaks = np.searchsorted(positions, run_last) - np.searchsorted(positions, run_first)
    if kind == "line":
        separator = breaks >= 1
    elif kind == "paragraph":
        separator = breaks >= 2
    else:
        doc_first = offsets[np.searchsorted(offsets, run_first, side="right") - 1]
        p = run_first - 1
        valid = p >= doc_first
        c1 = np.where(valid, cps[np.maximum(p, 0)], 0)
        valid2 = p - 1 >= doc_first
        c2 = np.where(valid2, cps[np.maximum(p - 1, 0)], 0)
        marked = valid & (np.isin(c1, _TERMINALS)
                          | (np.isin(c1, _CLOSERS) & valid2 & np.isin(c2, _TERMINALS)))
        separator = (breaks >= 2) | marked
    # Runs inside no piece: separators, and whitespace at a text's start or end.
    outside = separator.copy()
    if run_first.size:
        doc_of_run = np.searchsorted(offsets, run_first, side="right") - 1
        outside |= (run_first == offsets[doc_of_run]) | (run_last == offsets[doc_of_run + 1])
    return run_first, run_last, separator, outside, space


def _normalized_codes(cps, space, run_first, outside, starts, ends):
    """The normalized pieces' code points and offsets, and which pieces need Python.
    A few whole-batch passes; the per-piece counts come from the (few) dropped
    characters' positions."""
    n = starts.shape[0]
    keep = ~space.copy()
    keep[1:] |= ~space[:-1]  # a space after a non-space: the one kept of its run
    keep[run_first[outside]] = False  # runs outside every piece go whole
    dropped = np.flatnonzero(~keep)
    kept_at_start = starts - np.searchsorted(dropped, starts)
    kept_at_end = ends - np.searchsorted(dropped, ends)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(kept_at_end - kept_at_start, out=offsets[1:])
    codes = cps[keep]
    table, special = _fold_table()
    clipped = np.minimum(codes, _BMP - 1)
    folded = table[clipped]
    odd = (codes >= _BMP) | special[clipped]
    folded[space[keep]] = 32
    slow = np.zeros(n, dtype=bool)
    if odd.any():
        slow[np.searchsorted(offsets, np.flatnonzero(odd), side="right") - 1] = True
    return folded, offsets, slow


def piece_table(texts: Sequence[str], kind: str, hash_key: int) -> PieceTable:
    """The lines, paragraphs or sentences (``kind``) of ``texts``, normalized and hashed."""
    texts = list(texts)
    cps, offsets = encode_codepoints(texts)
    run_first, run_last, separator, outside, space = _separator_runs(cps, offsets, kind)
    starts = np.sort(np.concatenate((offsets[:-1], run_last[separator])))
    ends = np.sort(np.concatenate((run_first[separator], offsets[1:])))
    # A piece starts or ends in whitespace only at its text's edges: skip that run.
    if run_first.size:
        lead = space[np.minimum(starts, cps.shape[0] - 1)] & (starts < ends)
        starts[lead] = run_last[np.searchsorted(run_first, starts[lead])]
        trail = space[np.maximum(ends - 1, 0)] & (starts < ends)
        ends[trail] = run_first[np.searchsorted(run_last, ends[trail])]
    real = ends > starts
    starts, ends = starts[real], ends[real]
    doc = np.searchsorted(offsets, starts, side="right") - 1
    counts = np.bincount(doc, minlength=len(texts)) if doc.size else np.zeros(len(texts), np.int64)
    bounds = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(counts, out=bounds[1:])
    codes, code_offsets, slow = _normalized_codes(cps, space, run_first, outside, starts, ends)
    hashes = text_digest64(codes, code_offsets, hash_key) if starts.size else np.empty(0, np.uint64)
    lengths = np.diff(code_offsets)
    local_start, local_end = starts - offsets[doc], ends - offsets[doc]
    for i in np.flatnonzero(slow).tolist():
        form = normalize_span(texts[doc[i]][local_start[i]:local_end[i]])
        form_cps, form_offsets = encode_codepoints([form])
        hashes[i] = text_digest64(form_cps, form_offsets, hash_key)[0]
        lengths[i] = len(form)
    text_length = np.diff(offsets)
    stop = np.empty_like(local_start)
    stop[:-1] = local_start[1:]
    last_of_doc = bounds[1:][counts > 0] - 1
    stop[last_of_doc] = text_length[counts > 0]
    return PieceTable(bounds, local_start, local_end, stop, hashes, lengths.astype(np.int64),
                      text_length)
