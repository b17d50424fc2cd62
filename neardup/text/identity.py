"""When two texts count as identical: the same text after normalization.

A text that normalizes to nothing but is not blank (only emoji, symbols or punctuation)
keeps its identity through a lighter normalization (Unicode NFKC, case folded, whitespace
collapsed), marked so that it never equals a text with words: identical copies of such a
text are still identical, where shingling would call them empty and match them with
nothing.

:func:`text_identity` gives one 64-bit digest per text (0 for a blank text, which is
identical to nothing). The time window lets only identical pairs through (a story
re-sent unchanged days later is still the same story), and the exact method hashes the
same :func:`identity_texts`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

import numpy as np

from neardup.text.hashing import encode_codepoints, seed_words, text_digests
from neardup.text.normalize import NormalizeConfig, normalize_batch

__all__ = ["NO_IDENTITY", "identity_texts", "text_identity"]

#: The identity of a blank text: identical to no other text.
NO_IDENTITY = np.uint64(0)

# Prefixes the light form of a text whose full normalization is empty; the control
# character cannot survive the full normalization, so the two forms never collide.
_SYMBOLS_ONLY = "\x01"
_SPACES = re.compile(r"\s+")


def _light_form(text: str) -> str:
    folded = _SPACES.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()
    return _SYMBOLS_ONLY + folded if folded else ""


def identity_texts(texts: Sequence[str], normalize: NormalizeConfig = NormalizeConfig()) -> list[str]:
    """``texts`` normalized for identity: two texts are identical when these are equal.
    Empty only for blank texts."""
    normalized = normalize_batch(texts, normalize)
    return [n if n else _light_form(t) for t, n in zip(texts, normalized)]


def text_identity(texts: Sequence[str], normalize: NormalizeConfig = NormalizeConfig(),
                  seed: int = 0) -> np.ndarray:
    """A 64-bit digest (uint64, shape (n,)) of each text's :func:`identity_texts` form:
    equal digests mean identical texts (an accidental collision among n texts has
    probability about n**2 / 2**65, and only pairs already found similar are compared).
    :data:`NO_IDENTITY` for blank texts."""
    forms = identity_texts(texts, normalize)
    cps, offsets = encode_codepoints(forms)
    key_a, key_b = seed_words(seed, 2, salt=0x1DE7)
    digests = text_digests(cps, offsets, key_a, key_b)[:, 0]
    # A real digest of 0 would read as "blank": move it (one value in 2**64).
    digests[digests == NO_IDENTITY] = np.uint64(1)
    digests[np.diff(offsets) == 0] = NO_IDENTITY
    return digests
