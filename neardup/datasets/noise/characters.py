"""Character-level adversarial edits seen in spam: homoglyphs, invisible characters, case
changes and hash-busting padding."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from neardup.datasets.noise.checks import apply_edits, check_rng, check_strings, check_text, selected_indices
from neardup.datasets.noise.words import WORD_PATTERN
from neardup.errors import check_choice, check_float

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
    check_text(caller, text)
    check_rng(caller, rng)
    rate = check_float(caller, "rate", rate, low=0.0, high=1.0)
    hits = selected_indices(len(text), rate, rng)
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
    check_text(caller, text)
    check_rng(caller, rng)
    rate = check_float(caller, "rate", rate, low=0.0, high=1.0)
    gaps = selected_indices(max(len(text) - 1, 0), rate, rng) + 1
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
    check_text(caller, text)
    check_rng(caller, rng)
    rate = check_float(caller, "rate", rate, low=0.0, high=1.0)
    words = [(m.start(), m.end()) for m in WORD_PATTERN.finditer(text)]
    hits = selected_indices(len(words), rate, rng)
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
    return apply_edits(text, edits)


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
    check_text(caller, text)
    check_rng(caller, rng)
    donors = check_strings(caller, "padding_sentences", padding_sentences)
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
