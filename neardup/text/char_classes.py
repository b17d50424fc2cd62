"""Python's ``\\s`` and ``\\d`` over code point arrays: the same characters as the
``re`` module's, applied to a whole batch without a regular expression per text.

:func:`neardup.text.hashing.encode_codepoints` turns texts into one array of code points;
these functions then remove whitespace, mask digits or keep the tokens that hold digits,
as ``re.sub(r"\\s+", "", t)``, ``re.sub(r"\\d", "0", t)`` and
``" ".join(re.findall(r"(?<!\\S)\\S*\\d\\S*", t))`` would on each text, but in one
compiled pass. The verifier's document profiles use them
(:func:`neardup.methods.pair_features.document_profiles`).
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np
from numba import njit

__all__ = ["DIGIT", "SPACE", "char_classes", "digit_tokens", "drop_spaces", "mask_digits"]

#: Bits of :func:`char_classes`' table.
SPACE, DIGIT = 1, 2


@lru_cache(maxsize=1)
def char_classes() -> np.ndarray:
    """uint8 table over every code point (0..0x10FFFF): :data:`SPACE` where ``re``'s
    ``\\s`` matches it, :data:`DIGIT` where ``\\d`` does. Read from ``re`` itself, so the
    two can never disagree."""
    every = np.arange(0x110000, dtype=np.uint32).tobytes().decode("utf-32-le", "surrogatepass")
    table = np.zeros(0x110000, np.uint8)
    for bit, pattern in ((SPACE, r"\s"), (DIGIT, r"\d")):
        table[[m.start() for m in re.finditer(pattern, every)]] |= bit
    table.flags.writeable = False
    return table


def drop_spaces(cps: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each text's code points without its whitespace (``re.sub(r"\\s+", "", text)``)."""
    keep = (char_classes()[cps] & SPACE) == 0
    kept = np.zeros(cps.size + 1, np.int64)
    np.cumsum(keep, out=kept[1:])
    return cps[keep], kept[offsets]


def mask_digits(cps: np.ndarray) -> np.ndarray:
    """Every digit replaced by ``0`` (``re.sub(r"\\d", "0", text)``), one code point each."""
    return np.where(char_classes()[cps] & DIGIT, cps.dtype.type(48), cps)


@njit(cache=True)
def _digit_tokens(cps, offsets, classes, whole, out, out_offsets):
    n_docs = offsets.shape[0] - 1
    k = 0
    for d in range(n_docs):
        first = True
        i, end = offsets[d], offsets[d + 1]
        while i < end:
            if classes[cps[i]] & SPACE:
                i += 1
                continue
            start = i
            digits = 0
            while i < end and not classes[cps[i]] & SPACE:
                if classes[cps[i]] & DIGIT:
                    digits += 1
                i += 1
            if digits > 0 and (not whole or digits == i - start):
                if not first:
                    out[k] = 32
                    k += 1
                for j in range(start, i):
                    out[k] = cps[j]
                    k += 1
                first = False
        out_offsets[d + 1] = k
    return k


def digit_tokens(cps: np.ndarray, offsets: np.ndarray, *, whole: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Each text's whitespace-delimited tokens that hold a digit, joined by single spaces:
    ``" ".join(re.findall(r"(?<!\\S)\\S*\\d\\S*", text))``; with ``whole``, only the
    tokens made of digits alone (``r"(?<!\\S)\\d+(?!\\S)"``)."""
    out = np.empty(cps.size + offsets.size, cps.dtype)
    out_offsets = np.zeros_like(offsets)
    k = _digit_tokens(cps, offsets, char_classes(), bool(whole), out, out_offsets)
    return out[:k], out_offsets
