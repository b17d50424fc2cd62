"""Dictionary spelling correction before shingling (SymSpell).

Silcock et al. (2022, Table A3, "In Dict.") corrected OCR'd words to their nearest
dictionary entry before shingling, which lifted n-gram overlap on NEWS-COPY. neardup does the same with ``symspellpy`` and the English frequency dictionary
that ships inside that package (no download). Each distinct word is looked up once per
process (a cache across batches), so the cost grows with the vocabulary, not the corpus.

Words containing digits are left alone (figures are content, not typos).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence

__all__ = ["SpellingCorrector", "get_corrector"]


def _require_symspell():
    try:
        import symspellpy
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "Spelling correction needs the optional dependency symspellpy: "
            "pip install 'neardup[spelling]'."
        ) from exc
    return symspellpy


class SpellingCorrector:
    """Replace each word by its most frequent dictionary word within an edit distance.

    Parameters
    ----------
    max_edit_distance : int, default 2
        Largest Damerau-Levenshtein distance to correct. 2 fixes most OCR confusions
        (``rnarket`` -> ``market``); larger values (the paper went to 5) correct more but
        load the dictionary much more slowly and start "correcting" names.
    """

    def __init__(self, *, max_edit_distance: int = 2) -> None:
        symspellpy = _require_symspell()
        self.max_edit_distance = max_edit_distance
        self._symspell = symspellpy.SymSpell(max_dictionary_edit_distance=max_edit_distance)
        dictionary = os.path.join(os.path.dirname(symspellpy.__file__), "frequency_dictionary_en_82_765.txt")
        self._symspell.load_dictionary(dictionary, term_index=0, count_index=1)
        self._verbosity = symspellpy.Verbosity.TOP
        self._cache: dict[str, str] = {}

    def _lookup(self, word: str) -> str:
        if any(c.isdigit() for c in word):
            return word
        found = self._symspell.lookup(word, self._verbosity, self.max_edit_distance)
        return found[0].term if found else word

    def correct_batch(self, normalized_texts: Sequence[str]) -> list[str]:
        """Correct every word of already-normalized (lower-case, space-separated) texts."""
        tokenized = [t.split() for t in normalized_texts]
        cache = self._cache
        for word in {w for words in tokenized for w in words} - cache.keys():
            cache[word] = self._lookup(word)
        return [" ".join([cache[w] for w in words]) for words in tokenized]


@functools.cache
def get_corrector(max_edit_distance: int) -> SpellingCorrector:
    """One shared corrector per edit distance (the dictionary takes seconds to load)."""
    return SpellingCorrector(max_edit_distance=max_edit_distance)
