"""Frozen copy of neardup.text.normalize as of 747815e: the oracle the rewritten module must match.

Do not edit; it only exists so tests can compare outputs.


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
import unicodedata
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from neardup.errors import check_int

__all__ = ["NormalizeConfig", "normalize_text", "normalize_batch"]



@functools.cache
def _invisible_pattern() -> re.Pattern[str]:
    """Characters removed outright: format (Cf) characters are invisible by definition, and
    C0/C1 controls other than tab/newline carry no text. Built on first use, not at import,
    as one character class of ranges (a regex runs far faster than a translate table)."""
    codepoints = [
        cp
        for cp in range(0x110000)
        if unicodedata.category(chr(cp)) == "Cf"
        or (cp < 0x20 and chr(cp) not in "\t\n\r")
        or 0x7F <= cp < 0xA0
    ]
    ranges, start = [], codepoints[0]
    for prev, cp in zip(codepoints, codepoints[1:] + [-1]):
        if cp != prev + 1:
            ranges.append(re.escape(chr(start)) + ("-" + re.escape(chr(prev)) if prev > start else ""))
            start = cp
    return re.compile("[" + "".join(ranges) + "]+")


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

# "elec-\ntric", "elec- \n tric", "elec- tric": a hyphen between word characters followed by
# a line break, or by spaces and a lower-case continuation.
_HYPHEN_BREAK = re.compile(r"(?<=\w)-[ \t]*(?:\r?\n[ \t]*|[ \t]+(?=[a-z]))(?=\w)")
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
        check_int("NormalizeConfig", "spell_max_edit_distance", self.spell_max_edit_distance, low=1, high=5)

    def get_params(self) -> dict:
        return asdict(self)


def _apply(text: str, config: NormalizeConfig) -> str:
    """Every step but whitespace collapsing, on any text (the general path)."""
    if config.remove_invisible:
        text = _invisible_pattern().sub("", text)
    if config.nfkc:
        text = unicodedata.normalize("NFKC", text)
    if config.repair_hyphens:
        text = _HYPHEN_BREAK.sub("", text)
    if config.fold_homoglyphs:
        text = text.translate(_HOMOGLYPH_TABLE)
    if config.casefold:
        text = text.casefold()
    if config.strip_punctuation:
        text = _NOT_WORD.sub(" ", text)
    return text


@functools.cache
def _ascii_tables(config: NormalizeConfig) -> tuple[bytes, bytes]:
    """(translation table, bytes to delete) doing invisible removal, case folding and
    punctuation stripping for ASCII text in two C-level passes."""
    table = bytearray(range(256))
    if config.casefold:
        for c in range(ord("A"), ord("Z") + 1):
            table[c] = c + 32
    if config.strip_punctuation:
        for c in range(0x21, 0x7F):
            if not chr(c).isalnum():
                table[c] = 0x20
    if config.collapse_whitespace:
        for c in b"\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f":
            table[c] = 0x20
    delete = bytes(c for c in list(range(0x20)) + [0x7F] if chr(c) not in "\t\n\r")
    return bytes(table), delete if config.remove_invisible else b""


# Starts with the literal "-" so the regex engine can skip ahead quickly.
_ASCII_HYPHEN_BREAK = re.compile(rb"-(?<=\w-)[ \t]*(?:\r?\n[ \t]*|[ \t]+(?=[a-z]))(?=\w)")
_ASCII_SEPARATOR = "\xff"
_ASCII_SPACE_RUNS = re.compile(rb"  +")


def _apply_ascii(texts: list[str], config: NormalizeConfig) -> list[str]:
    """The same steps as :func:`_apply` for pure-ASCII texts, on bytes: NFKC and homoglyph
    folding are identities there, and the rest is two translates and a regex."""
    table, delete = _ascii_tables(config)
    data = _ASCII_SEPARATOR.join(texts).encode("latin-1")
    if delete:
        data = data.translate(None, delete)
    if config.repair_hyphens:
        data = _ASCII_HYPHEN_BREAK.sub(b"", data)
    data = data.translate(table)
    if config.collapse_whitespace:
        # Whitespace is all " " now: collapse runs and trim around document boundaries.
        data = _ASCII_SPACE_RUNS.sub(b" ", data)
        data = data.replace(b" \xff", b"\xff").replace(b"\xff ", b"\xff").strip(b" ")
    return data.decode("latin-1").split(_ASCII_SEPARATOR)


def _finish(parts: list[str], config: NormalizeConfig) -> list[str]:
    if config.collapse_whitespace:
        return [" ".join(p.split()) for p in parts]
    return parts


def normalize_text(text: str, config: NormalizeConfig = NormalizeConfig()) -> str:
    """Normalize one text; see the module docstring for the steps."""
    return normalize_batch([text], config)[0]


def normalize_batch(texts: Sequence[str], config: NormalizeConfig = NormalizeConfig()) -> list[str]:
    """Normalize a batch of texts; equal to ``[normalize_text(t, config) for t in texts]``.

    Pure-ASCII texts go through a bytes fast path; the others are joined and each regex or
    table runs once over the joined string instead of once per text.
    """
    texts = list(texts)
    is_ascii = [t.isascii() for t in texts]
    ascii_index = [i for i, a in enumerate(is_ascii) if a]
    other_index = [i for i, a in enumerate(is_ascii) if not a]
    out: list[str] = [""] * len(texts)
    if ascii_index:
        parts = _apply_ascii([texts[i] for i in ascii_index], config)
        for i, part in zip(ascii_index, parts):
            out[i] = part
    if other_index:
        others = [texts[i] for i in other_index]
        joined = _SEPARATOR.join(others)
        if joined.count(_SEPARATOR) == len(others) - 1:
            parts = _apply(joined, config).split(_SEPARATOR)
        else:  # a text contains the separator itself
            parts = [_apply(t, config) for t in others]
        for i, part in zip(other_index, _finish(parts, config)):
            out[i] = part
    if config.spell_correct:
        from neardup.text.spelling import get_corrector

        out = get_corrector(config.spell_max_edit_distance).correct_batch(out)
    return out
