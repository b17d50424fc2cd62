"""Word-level alignment of two texts: what a copy inserted, deleted and substituted.

The texts are cut into words (runs of non-space characters, each keeping the white space
that follows it, so the aligned text reads as the original); the word sequences are
aligned by Levenshtein distance over words (rapidfuzz's ``Levenshtein.opcodes``, compiled,
bit-parallel), and the edit script is returned as segments:

* ``("equal", a, b)`` — the same words in both texts;
* ``("delete", a, "")`` — words of ``a`` missing from ``b``;
* ``("insert", "", b)`` — words of ``b`` missing from ``a``;
* ``("replace", a, b)`` — words of ``a`` substituted by the words of ``b``.

Words compare after ``key`` (default: case-folded, so a capitalised copy is not a
substitution). Joining the ``a`` sides gives ``a`` back, and the ``b`` sides ``b``: the
segments are the two texts interleaved, never a rewrite of either.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

__all__ = ["OPS", "align_words", "alignment_stats", "split_words"]

#: The segment kinds of :func:`align_words`.
OPS = ("equal", "delete", "insert", "replace")

_WORD = re.compile(r"\s*\S+\s*|\s+")


def split_words(text: str) -> list[str]:
    """Words of ``text`` with their trailing white space (leading space joins the first):
    ``"".join(split_words(t)) == t`` for every ``t``."""
    if not isinstance(text, str):
        raise ValueError(f"split_words: parameter 'text' must be a str; got {type(text).__name__}.")
    return _WORD.findall(text)


def _default_key(word: str) -> str:
    return word.strip().casefold()


@lru_cache(maxsize=8)
def _default_tokens(text: str) -> tuple[list[str], list[str]]:
    """Words and their default keys; cached, since a report aligns every member of a
    cluster against the same representative."""
    words = split_words(text)
    keys = text.casefold().split()  # one pass; casefolding never makes or removes spaces
    if len(keys) != len(words):  # a text of white space only (one token, no key)
        keys = [_default_key(w) for w in words]
    return words, keys


def align_words(
    a: str, b: str, *, key: Callable[[str], str] | None = None
) -> list[tuple[str, str, str]]:
    """Align the words of ``b`` against those of ``a``.

    Parameters
    ----------
    a, b : str
        The reference text (a cluster's representative) and the text compared with it.
    key : callable str -> str or None, default None
        What two words must agree on to be equal; None compares case-folded words
        without their white space.

    Returns
    -------
    list of (op, a_text, b_text)
        ``op`` is one of :data:`OPS`; consecutive words with one op form one segment.

    Examples
    --------
    >>> align_words("the cat sat on the mat", "the dog sat on the mat today")
    ... # doctest: +NORMALIZE_WHITESPACE
    [('equal', 'the ', 'the '), ('replace', 'cat ', 'dog '),
     ('equal', 'sat on the mat', 'sat on the mat '), ('insert', '', 'today')]
    """
    from rapidfuzz.distance import Levenshtein

    for name, value in (("a", a), ("b", b)):
        if not isinstance(value, str):
            raise ValueError(
                f"align_words: parameter '{name}' must be a str; got {type(value).__name__}."
            )
    if key is None:
        (words_a, keys_a), (words_b, keys_b) = _default_tokens(a), _default_tokens(b)
    else:
        words_a, words_b = split_words(a), split_words(b)
        keys_a, keys_b = [key(w) for w in words_a], [key(w) for w in words_b]
    segments: list[tuple[str, str, str]] = []
    for op in Levenshtein.opcodes(keys_a, keys_b):
        segments.append(
            (op.tag, "".join(words_a[op.src_start : op.src_end]),
             "".join(words_b[op.dest_start : op.dest_end]))
        )  # fmt: skip
    return segments


def alignment_stats(segments: list[tuple[str, str, str]]) -> dict[str, int]:
    """Words equal, deleted, inserted and substituted (counted on the ``a`` side, or the
    ``b`` side for insertions) in the segments of :func:`align_words`."""
    counts = dict.fromkeys(OPS, 0)
    for op, text_a, text_b in segments:
        counts[op] += len((text_b if op == "insert" else text_a).split())
    return counts
