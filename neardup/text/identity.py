"""When two texts count as identical: the same text after normalization.

A text that normalizes to nothing but is not blank (only emoji, symbols or punctuation)
keeps its identity through a lighter normalization (Unicode NFKC, case folded, spaces,
control and invisible characters dropped), marked so that it never equals a text with words: identical copies of such a
text are still identical, where shingling would call them empty and match them with
nothing.

:func:`text_identity` gives one 64-bit digest per text (0 for a blank text, which is
identical to nothing). The time window lets only identical pairs through (a story
re-sent unchanged days later is still the same story), and the exact method hashes the
same :func:`identity_texts`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import numpy as np

from neardup.text.hashing import encode_codepoints, seed_words, text_digest64
from neardup.text.normalize import NormalizeConfig, normalize_batch, normalize_codes

__all__ = ["NO_IDENTITY", "identity_from_codes", "identity_from_digests", "identity_key",
           "identity_texts", "text_identity"]

#: The identity of a blank text: identical to no other text.
NO_IDENTITY = np.uint64(0)

# Prefixes the light form of a text whose full normalization is empty; the control
# character cannot survive the full normalization, so the two forms never collide.
_SYMBOLS_ONLY = "\x01"


def _light_form(text: str) -> str:
    # Separators, control, format (invisible) and surrogate characters dropped: a text of
    # zero-width spaces is blank, as the full normalization makes it.
    folded = "".join(c for c in unicodedata.normalize("NFKC", text).casefold()
                     if unicodedata.category(c)[0] not in "CZ")
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
    texts = texts if isinstance(texts, list) else list(texts)
    # Normalized straight to code points (no Python strings): this runs on every batch.
    return identity_from_codes(texts, *normalize_codes(texts, normalize), seed=seed)


def identity_from_codes(texts: Sequence[str], cps: np.ndarray, offsets: np.ndarray,
                        seed: int = 0) -> np.ndarray:
    """:func:`text_identity` of ``texts`` from their normalized code points (as
    :func:`~neardup.text.normalize.normalize_codes` gives them), for a method that has
    them already: the normalization, the costly part, is not run twice."""
    return identity_from_digests(texts, offsets, text_digest64(cps, offsets, identity_key(seed)))


def identity_key(seed: int = 0) -> np.uint64:
    """The key of :func:`~neardup.text.hashing.text_digest64` that identities hash with."""
    return seed_words(seed, 1, salt=0x1DE7)[0]


def identity_from_digests(texts: Sequence[str], offsets: np.ndarray, digests: np.ndarray,
                          seed: int = 0) -> np.ndarray:
    """:func:`text_identity` from the normalized texts' ``offsets`` and their digests
    (:func:`~neardup.text.hashing.text_digest64` with :func:`identity_key`), for a
    compiled pass that hashed them while reading the code points for another purpose
    (MinHash's shingling). ``digests`` is updated in place and returned."""
    key = identity_key(seed)
    empty = np.flatnonzero(np.diff(offsets) == 0)
    light = None
    if empty.size:  # symbols only, or blank: the light form, as identity_texts gives it
        light_cps, light = encode_codepoints([_light_form(texts[i]) for i in empty.tolist()])
        digests[empty] = text_digest64(light_cps, light, key)
    # A real digest of 0 would read as "blank": move it (one value in 2**64).
    digests[digests == NO_IDENTITY] = np.uint64(1)
    if light is not None:
        digests[empty[np.diff(light) == 0]] = NO_IDENTITY
    return digests
