"""Text normalization: the defences every lexical method shares.

Each step is switchable in :class:`NormalizeConfig`. The order matters and is fixed:

1. remove invisible characters (zero-width space/joiner, soft hyphen, BOM, bidi
   controls, other format and control characters) — a classic hash-busting trick;
2. Unicode NFKC (full-width letters, ligatures, compatibility forms);
3. repair end-of-line hyphenation (``"elec-\\ntric"`` and ``"elec- tric"`` -> ``"electric"``),
   the most common OCR layout artefact in scanned newspapers;
4. fold homoglyphs (Cyrillic/Greek letters that look Latin) to Latin; NFKC leaves them
   alone, so spam uses them to defeat hashing;
5. case folding;
6. punctuation -> space (Silcock et al. 2022, sec. 4.3, strip punctuation before shingling);
7. whitespace collapsed to single spaces and stripped.

Folding homoglyphs also rewrites genuine Cyrillic/Greek text, but consistently, so two
copies of a Russian story still match; switch it off for corpora where that matters.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from dataclasses import replace as dataclass_replace
from itertools import accumulate

import numpy as np
from numba import njit

from neardup.errors import check_choice, check_int
from neardup.text.hashing import readonly

__all__ = ["NormalizeConfig", "normalize_text", "normalize_batch", "normalize_codes"]

# Confusable letters seen in hash-busting spam; each maps to the Latin letter it imitates.
_HOMOGLYPH_PAIRS = {
    # Cyrillic lower / upper
    "а": "a", "в": "b", "е": "e", "ё": "e", "һ": "h", "і": "i", "ї": "i", "ј": "j", "к": "k",
    "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s",
    "ԁ": "d", "ԛ": "q", "ԝ": "w", "ӏ": "l",
    "А": "A", "В": "B", "Е": "E", "Ё": "E", "Ѕ": "S", "І": "I", "Ї": "I", "Ј": "J", "К": "K",
    "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T", "У": "Y", "Х": "X", "Ү": "Y",
    "Ԁ": "D", "Ԛ": "Q", "Ԝ": "W", "Ӏ": "I",
    # Greek lower / upper
    "α": "a", "ο": "o", "ν": "v", "ι": "i", "κ": "k", "ρ": "p", "τ": "t", "υ": "u", "χ": "x",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N",
    "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    # Latin look-alikes outside ASCII that NFKC keeps
    "ı": "i", "ȷ": "j", "ɑ": "a", "ɡ": "g", "ɩ": "i", "ʏ": "y", "ᴀ": "a", "ʙ": "b", "ᴄ": "c",
    "ᴅ": "d", "ᴇ": "e", "ɢ": "g", "ʜ": "h", "ɪ": "i", "ᴊ": "j", "ᴋ": "k", "ʟ": "l", "ᴍ": "m",
    "ɴ": "n", "ᴏ": "o", "ᴘ": "p", "ʀ": "r", "ꜱ": "s", "ᴛ": "t", "ᴜ": "u", "ᴠ": "v", "ᴡ": "w",
    "ᴢ": "z",
}  # fmt: skip
_HOMOGLYPH_TABLE = str.maketrans(_HOMOGLYPH_PAIRS)

_NOT_WORD = re.compile(r"[^\w\s\ue000]|_")
# Joins documents for whole-batch passes; a private-use character that NFKC, case folding
# and the patterns above leave alone.
_SEPARATOR = "\ue000"


@dataclass(frozen=True)
class NormalizeConfig:
    """Which normalization steps run (all on by default).

    Parameters
    ----------
    remove_invisible : bool, default True
        Delete zero-width and other format/control characters.
    nfkc : bool, default True
        Apply Unicode NFKC.
    repair_hyphens : bool, default True
        Join words split by end-of-line hyphenation.
    fold_homoglyphs : bool, default True
        Map Cyrillic/Greek look-alike letters to Latin.
    casefold : bool, default True
        Unicode case folding (stronger than ``lower``).
    strip_punctuation : bool, default True
        Replace punctuation and symbols by spaces.
    collapse_whitespace : bool, default True
        Collapse runs of whitespace to one space and strip the ends.
    spell_correct : bool, default False
        After the steps above, replace each word by its nearest English dictionary word
        (SymSpell; needs the ``spelling`` extra). Helps n-gram methods on OCR text
        (Silcock et al. 2022, Table A3); slower, and English only.
    spell_max_edit_distance : int, default 2
        Largest edit distance spelling correction repairs.
    """

    remove_invisible: bool = True
    nfkc: bool = True
    repair_hyphens: bool = True
    fold_homoglyphs: bool = True
    casefold: bool = True
    strip_punctuation: bool = True
    collapse_whitespace: bool = True
    spell_correct: bool = False
    spell_max_edit_distance: int = 2

    def __post_init__(self) -> None:
        for switch in fields(self):
            if switch.type == "bool":
                check_choice("NormalizeConfig", switch.name, getattr(self, switch.name), (True, False))
        check_int("NormalizeConfig", "spell_max_edit_distance", self.spell_max_edit_distance, low=1, high=5)

    def get_params(self) -> dict:
        return asdict(self)




# ---------------------------------------------------------------------------------------
# Implementation. Every step but NFKC is either a per-code-point map (invisible removal,
# homoglyphs, case folding, punctuation, whitespace classes) or the hyphenation rule, which
# looks one word character back and a few characters ahead. Texts are processed as arrays
# of code points (bytes for pure-ASCII texts, UTF-32 otherwise) by two compiled passes;
# NFKC runs once per batch on the joined non-ASCII texts. What each code point maps to is
# worked out with the reference operations themselves (the regexes and str methods below)
# the first time the code point is seen, and kept in per-configuration tables, so the
# output is by construction the one of applying the steps to the whole string:
#
# 1. delete invisible characters;
# 2. NFKC;
# 3. hyphenation repair: delete ``-[ \t]*(\r?\n[ \t]*|[ \t]+(?=[a-z]))`` between two word
#    characters (``\w``);
# 4. map each code point c to ``_NOT_WORD.sub(" ", c.translate(homoglyphs).casefold())``;
# 5. collapse whitespace (``str.isspace``) runs to one space, strip each document.
# ---------------------------------------------------------------------------------------

_N_CODEPOINTS = 0x110000
_KNOWN_RAW = np.uint8(1)  # "drop" is set for this code point
_DROP = np.uint8(2)  # removed by step 1
_KNOWN_MAPPED = np.uint8(4)  # "word" and the map are set for this code point
_WORD = np.uint8(8)  # ``\w`` for the hyphenation rule
_PENDING = np.uint8(16)  # scratch bit while collecting unknown code points
_WORD_CHAR = re.compile(r"\w")


def _is_invisible(cp: int) -> bool:
    """The characters step 1 removes: format (Cf) characters are invisible by definition,
    and C0/C1 controls other than tab/newline/carriage return carry no text."""
    return (
        unicodedata.category(chr(cp)) == "Cf"
        or (cp < 0x20 and chr(cp) not in "\t\n\r")
        or 0x7F <= cp < 0xA0
    )


def _ascii_tables(config: NormalizeConfig) -> tuple[np.ndarray, np.ndarray]:
    """(kind, lut) for pure-ASCII texts: ``lut[c]`` is the byte c becomes, ``kind[c]`` has
    bit 1 when c is deleted and bit 2 when c is a word character (``[A-Za-z0-9_]``).

    The same steps as for other text, with one historical difference kept: with
    ``remove_invisible`` off, C0 controls stay as they are in ASCII text, while
    punctuation stripping turns them into spaces in other text.
    """
    lut = np.arange(256, dtype=np.uint8)
    kind = np.zeros(256, dtype=np.uint8)
    for c in range(128):
        ch = chr(c)
        if config.casefold and "A" <= ch <= "Z":
            lut[c] = c + 32
        if config.strip_punctuation and 0x21 <= c < 0x7F and not ch.isalnum():
            lut[c] = 0x20
        if config.collapse_whitespace and ch in "\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f":
            lut[c] = 0x20
        if config.remove_invisible and (c < 0x20 or c == 0x7F) and ch not in "\t\n\r":
            kind[c] |= 1
        if ch.isalnum() or ch == "_":
            kind[c] |= 2
    return kind, lut


class _Tables:
    """Per-configuration lookup tables over all code points, filled on first sight."""

    def __init__(self, config: NormalizeConfig) -> None:
        self.config = config
        self.flags = np.zeros(_N_CODEPOINTS, dtype=np.uint8)
        # np.zeros maps untouched pages lazily: only code points seen cost memory.
        self.map_start = np.zeros(_N_CODEPOINTS, dtype=np.int32)
        self.map_len = np.zeros(_N_CODEPOINTS, dtype=np.uint8)
        self.pool = np.zeros(256, dtype=np.uint32)
        self.pool_size = 0
        self.max_expansion = 1
        self._lock = threading.RLock()
        self.ascii_kind, self.ascii_lut = _ascii_tables(config)

    def _map(self, ch: str) -> str:
        config = self.config
        if config.fold_homoglyphs:
            ch = ch.translate(_HOMOGLYPH_TABLE)
        if config.casefold:
            ch = ch.casefold()
        if config.strip_punctuation:
            ch = _NOT_WORD.sub(" ", ch)
        if config.collapse_whitespace:
            ch = "".join(" " if c.isspace() else c for c in ch)
        return ch

    def learn(self, cps: np.ndarray, bit: np.uint8) -> None:
        """Classify code points ``cps`` (distinct) for step 1 (_KNOWN_RAW) or steps 3-5."""
        with self._lock:
            for cp in cps.tolist():
                if self.flags[cp] & bit:
                    continue
                if bit == _KNOWN_RAW:
                    if self.config.remove_invisible and _is_invisible(cp):
                        self.flags[cp] |= _DROP
                else:
                    ch = chr(cp)
                    if _WORD_CHAR.match(ch):
                        self.flags[cp] |= _WORD
                    mapped = [ord(c) for c in self._map(ch)]
                    if self.pool_size + len(mapped) > self.pool.size:
                        self.pool = np.concatenate([self.pool, np.zeros_like(self.pool)])
                    self.pool[self.pool_size : self.pool_size + len(mapped)] = mapped
                    self.map_start[cp] = self.pool_size
                    self.map_len[cp] = len(mapped)
                    self.pool_size += len(mapped)
                    self.max_expansion = max(self.max_expansion, len(mapped))
                self.flags[cp] |= bit

    def ensure(self, cps: np.ndarray, bit: np.uint8) -> None:
        """Classify every code point of ``cps`` not yet known."""
        with self._lock:
            unknown = _unknown(readonly(cps), self.flags, bit, _PENDING)
            if unknown.size:
                self.learn(unknown, bit)


@functools.cache
def _tables(config: NormalizeConfig) -> _Tables:
    return _Tables(config)


@njit(cache=True)
def _unknown(cps, flags, bit, pending):
    """Distinct code points of ``cps`` without ``bit``, in order of first occurrence.

    Two passes (count while marking ``pending``, then collect while clearing it) rather
    than a growing buffer, which numba compiles into a far slower loop.
    """
    n = 0
    for i in range(cps.shape[0]):
        f = flags[cps[i]]
        if (f & bit) == 0 and (f & pending) == 0:
            flags[cps[i]] = f | pending
            n += 1
    out = np.empty(n, dtype=np.uint32)
    k = 0
    for i in range(cps.shape[0]):
        if k == n:
            break
        c = cps[i]
        f = flags[c]
        if (f & pending) != 0:
            flags[c] = f ^ pending
            out[k] = c
            k += 1
    return out


@njit(cache=True)
def _drop_invisible(cps, flags, drop):
    """Step 1 on one array of code points: the kept ones, in order."""
    out = np.empty_like(cps)
    n = 0
    for i in range(cps.shape[0]):
        c = cps[i]
        if (flags[c] & drop) == 0:
            out[n] = c
            n += 1
    return out[:n]


@njit(cache=True)
def _skip_dropped(cps, j, end, flags, drop, use_drop):
    while use_drop and j < end and (flags[cps[j]] & drop) != 0:
        j += 1
    return j


@njit(cache=True)
def _skip_blanks(cps, j, end, flags, drop, use_drop):
    """First position >= j that is neither a dropped code point nor a space or tab."""
    while j < end:
        c = cps[j]
        if c == 32 or c == 9 or (use_drop and (flags[c] & drop) != 0):
            j += 1
        else:
            break
    return j


@njit(cache=True)
def _map_documents(cps, offsets, flags, map_start, map_len, pool, use_drop, repair, collapse, out):
    """Steps (1,) 3, 4 and 5 over documents ``cps[offsets[d]:offsets[d + 1]]``.

    With ``use_drop`` step 1 happens here too (dropped code points are invisible to the
    hyphenation rule, as if deleted first). Writes into ``out``; returns output offsets.
    """
    drop = np.uint8(2)
    word = np.uint8(8)
    n_docs = offsets.shape[0] - 1
    out_offsets = np.zeros(n_docs + 1, dtype=np.int64)
    o = 0
    for d in range(n_docs):
        start, end = offsets[d], offsets[d + 1]
        doc_start = o
        last = 32
        prev_word = False  # the last kept code point is \w
        i = start
        while i < end:
            c = cps[i]
            f = flags[c]
            if use_drop and (f & drop) != 0:
                i += 1
                continue
            if repair and c == 45 and prev_word:
                # -[ \t]*(?:\r?\n[ \t]*|[ \t]+(?=[a-z]))(?=\w)
                j = _skip_blanks(cps, i + 1, end, flags, drop, use_drop)
                resume = -1
                if j < end:
                    cj = cps[j]
                    k = -1
                    if cj == 10:
                        k = j + 1
                    elif cj == 13:
                        j2 = _skip_dropped(cps, j + 1, end, flags, drop, use_drop)
                        if j2 < end and cps[j2] == 10:
                            k = j2 + 1
                    if k >= 0:
                        k = _skip_blanks(cps, k, end, flags, drop, use_drop)
                        if k < end and (flags[cps[k]] & word) != 0:
                            resume = k
                    elif 97 <= cj <= 122:
                        # at least one space or tab between the hyphen and the letter
                        for q in range(i + 1, j):
                            x = cps[q]
                            if x == 32 or x == 9:
                                resume = j
                                break
                if resume >= 0:
                    i = resume
                    prev_word = False  # the next code point is read afresh
                    continue
            prev_word = (f & word) != 0
            s = map_start[c]
            for q in range(s, s + map_len[c]):
                x = pool[q]
                out[o] = x
                o += (not collapse) | (x != 32) | (last != 32)
                last = x
            i += 1
        if collapse and last == 32 and o > doc_start:
            o -= 1
        out_offsets[d + 1] = o
    return out_offsets


@njit(cache=True)
def _map_ascii(cps, offsets, kind, lut, repair, collapse, out):
    """:func:`_map_documents` for bytes, with 256-entry tables: ``lut[c]`` is the one byte
    c maps to; ``kind[c]`` has bit 1 for dropped bytes and bit 2 for word characters."""
    n_docs = offsets.shape[0] - 1
    out_offsets = np.zeros(n_docs + 1, dtype=np.int64)
    o = 0
    for d in range(n_docs):
        start, end = offsets[d], offsets[d + 1]
        doc_start = o
        last = 32  # the last output byte; a space before the start strips leading ones
        prev_word = False
        i = start
        while i < end:
            c = cps[i]
            k = kind[c]
            if k & 1:
                i += 1
                continue
            if c == 45 and repair and prev_word:
                j = i + 1
                blanks = 0
                while j < end:
                    x = cps[j]
                    if x == 32 or x == 9:
                        blanks += 1
                    elif (kind[x] & 1) == 0:
                        break
                    j += 1
                resume = -1
                if j < end:
                    cj = cps[j]
                    q = -1
                    if cj == 10:
                        q = j + 1
                    elif cj == 13:
                        j += 1
                        while j < end and (kind[cps[j]] & 1) != 0:
                            j += 1
                        if j < end and cps[j] == 10:
                            q = j + 1
                    elif 97 <= cj <= 122 and blanks > 0:
                        resume = j
                    if q >= 0:
                        while q < end:
                            x = cps[q]
                            if x == 32 or x == 9 or (kind[x] & 1) != 0:
                                q += 1
                            else:
                                break
                        if q < end and (kind[cps[q]] & 2) != 0:
                            resume = q
                if resume >= 0:
                    i = resume
                    continue
            prev_word = (k & 2) != 0
            x = lut[c]
            out[o] = x
            # Branch-free collapsing: a space is kept only after a kept non-space.
            o += (not collapse) | (x != 32) | (last != 32)
            last = x
            i += 1
        if collapse and last == 32 and o > doc_start:
            o -= 1  # the trailing space
        out_offsets[d + 1] = o
    return out_offsets


def _run_tables(
    cps: np.ndarray, offsets: np.ndarray, tables: _Tables, use_drop: bool
) -> tuple[np.ndarray, np.ndarray]:
    config = tables.config
    expansion = 1 if cps.dtype == np.uint8 else tables.max_expansion  # ASCII maps to <= 1
    out = np.empty(cps.shape[0] * expansion, dtype=cps.dtype)
    out_offsets = _map_documents(
        readonly(cps), offsets, tables.flags, tables.map_start, tables.map_len,
        tables.pool.astype(cps.dtype) if cps.dtype != np.uint32 else tables.pool,
        use_drop and config.remove_invisible, config.repair_hyphens,
        config.collapse_whitespace, out,
    )  # fmt: skip
    return out[: out_offsets[-1]], out_offsets


def _lengths_offsets(texts: Sequence[str]) -> np.ndarray:
    return np.fromiter(accumulate(map(len, texts), initial=0), dtype=np.int64, count=len(texts) + 1)


def _encode(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _decode(cps: np.ndarray) -> str:
    return cps.astype(np.uint32, copy=False).tobytes().decode("utf-32-le", "surrogatepass")


def _ascii_codes(texts: list[str], tables: _Tables) -> tuple[np.ndarray, np.ndarray]:
    """Pure-ASCII texts (steps 1, 3-5; NFKC and homoglyphs are identities) as bytes."""
    offsets = _lengths_offsets(texts)
    cps = np.frombuffer("".join(texts).encode("ascii"), dtype=np.uint8)
    config = tables.config
    out = np.empty(cps.shape[0], dtype=np.uint8)
    out_offsets = _map_ascii(
        cps, offsets, tables.ascii_kind, tables.ascii_lut, config.repair_hyphens,
        config.collapse_whitespace, out,
    )  # fmt: skip
    return out[: out_offsets[-1]], out_offsets


def _unicode_codes(text: str, tables: _Tables, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """Every step on ``n_docs`` texts joined by _SEPARATOR (1 text: no separator role)."""
    config = tables.config
    cps = _encode(text)
    if config.remove_invisible:
        tables.ensure(cps, _KNOWN_RAW)
        cps = _drop_invisible(cps, tables.flags, _DROP)
    if config.nfkc:
        cps = _encode(unicodedata.normalize("NFKC", _decode(cps)))
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    offsets[-1] = cps.shape[0]
    if n_docs > 1:
        seps = np.flatnonzero(cps == ord(_SEPARATOR))
        if seps.size != n_docs - 1:  # cannot happen: NFKC keeps private-use characters
            raise AssertionError("normalize: document separators changed")
        offsets[1:-1] = seps + 1
        ends = np.append(seps, cps.shape[0])
    else:
        ends = offsets[1:]
    tables.ensure(cps, _KNOWN_MAPPED)
    # Documents run from one separator (excluded) to the next.
    starts = offsets[:-1]
    lengths = ends - starts
    flat_offsets = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(lengths, out=flat_offsets[1:])
    if n_docs > 1:
        keep = np.ones(cps.shape[0], dtype=bool)
        keep[seps] = False
        cps = cps[keep]
    return _run_tables(cps, flat_offsets, tables, use_drop=False)


def _other_codes(texts: list[str], tables: _Tables) -> tuple[np.ndarray, np.ndarray]:
    """Texts with non-ASCII characters, as UTF-32 code points with offsets."""
    joined = _SEPARATOR.join(texts)
    if joined.count(_SEPARATOR) == len(texts) - 1:
        return _unicode_codes(joined, tables, len(texts))
    # A text contains the separator itself: one text at a time.
    parts = [_unicode_codes(t, tables, 1) for t in texts]
    lengths = np.fromiter((p[0].shape[0] for p in parts), dtype=np.int64, count=len(parts))
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return np.concatenate([p[0] for p in parts]), offsets


@njit(cache=True)
def _scatter(out, offsets, index, cps, cps_offsets):
    """Copy document k of (cps, cps_offsets) to document index[k] of (out, offsets)."""
    for k in range(index.shape[0]):
        o = offsets[index[k]]
        a, b = cps_offsets[k], cps_offsets[k + 1]
        out[o : o + (b - a)] = cps[a:b]  # a slice copy: 2x the element loop (measured)


def _merge(n_docs: int, parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]):
    """Interleave sets of documents ``(positions, cps, offsets)`` into one array, of bytes
    when every code point fits."""
    lengths = np.zeros(n_docs, dtype=np.int64)
    for index, _, off in parts:
        lengths[index] = np.diff(off)
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    small = all(cps.dtype == np.uint8 or cps.size == 0 or int(cps.max()) < 256 for _, cps, _ in parts)
    out = np.empty(offsets[-1], dtype=np.uint8 if small else np.uint32)
    for index, cps, off in parts:
        _scatter(out, offsets, index, cps.astype(out.dtype, copy=False), off)
    return out, offsets


def _split(cps: np.ndarray, offsets: np.ndarray) -> list[str]:
    joined = cps.tobytes().decode("ascii") if cps.dtype == np.uint8 else _decode(cps)
    if offsets.shape[0] == 2:
        return [joined]
    bounds = offsets.tolist()
    return [joined[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def _partition(texts: list[str], tables: _Tables):
    """``(positions, cps, offsets)`` for the ASCII texts and for the others."""
    is_ascii = [t.isascii() for t in texts]
    if all(is_ascii):
        return [(None, *_ascii_codes(texts, tables))]
    if not any(is_ascii):
        return [(None, *_other_codes(texts, tables))]
    mask = np.asarray(is_ascii)
    ascii_index, other_index = np.flatnonzero(mask), np.flatnonzero(~mask)
    return [
        (ascii_index, *_ascii_codes([texts[i] for i in ascii_index.tolist()], tables)),
        (other_index, *_other_codes([texts[i] for i in other_index.tolist()], tables)),
    ]


def normalize_codes(
    texts: Sequence[str], config: NormalizeConfig = NormalizeConfig()
) -> tuple[np.ndarray, np.ndarray]:
    """Normalize a batch straight to code points, without building Python strings.

    Returns
    -------
    codepoints : ndarray of uint8 (every text ASCII) or uint32, shape (total,)
    offsets : ndarray of int64, shape (len(texts) + 1,)
        Normalized text ``i`` is ``codepoints[offsets[i]:offsets[i + 1]]``; the same code
        points as ``normalize_batch(texts, config)[i]``.
    """
    texts = texts if isinstance(texts, list) else list(texts)
    if config.spell_correct:
        from neardup.text.hashing import encode_codepoints

        return encode_codepoints(normalize_batch(texts, config))
    parts = _partition(texts, _tables(config))
    if len(parts) == 1:
        return parts[0][1], parts[0][2]
    return _merge(len(texts), parts)


def normalize_text(text: str, config: NormalizeConfig = NormalizeConfig()) -> str:
    """Normalize one text; see the module docstring for the steps."""
    return normalize_batch([text], config)[0]


def normalize_batch(texts: Sequence[str], config: NormalizeConfig = NormalizeConfig()) -> list[str]:
    """Normalize a batch of texts; equal to ``[normalize_text(t, config) for t in texts]``.

    Pure-ASCII texts go through one compiled pass over their bytes; the others are joined
    so that invisible-character removal and NFKC run once per batch, then take the same
    compiled pass over their code points.
    """
    texts = list(texts)
    if not texts:
        return []
    base = dataclass_replace(config, spell_correct=False) if config.spell_correct else config
    parts = _partition(texts, _tables(base))
    if len(parts) == 1:
        out = _split(parts[0][1], parts[0][2])
    else:
        out = [""] * len(texts)
        for index, cps, offsets in parts:
            for i, text in zip(index.tolist(), _split(cps, offsets)):
                out[i] = text
    if config.spell_correct:
        from neardup.text.spelling import get_corrector

        out = get_corrector(config.spell_max_edit_distance).correct_batch(out)
    return out
