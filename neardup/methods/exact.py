"""Exact and normalized-exact duplicates: a 128-bit hash of each normalized text.

With the default :class:`~neardup.text.NormalizeConfig`, texts that differ only in case,
punctuation, whitespace, invisible characters, homoglyphs or end-of-line hyphenation hash
alike; pass ``NormalizeConfig(...)`` with steps switched off for stricter equality
(all off = byte-exact after decoding). Two independent 64-bit hashes make an accidental
collision negligible (about n**2 / 2**129).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from neardup.errors import check_int
from neardup.graph.buckets import bucket_edges
from neardup.graph.edges import Pairs
from neardup.methods.base import CandidateKeys, Method, Sketch
from neardup.methods.capabilities import Capabilities, KeyedCandidates, Verification
from neardup.text.hashing import encode_codepoints, seed_words, text_digests
from neardup.text.identity import identity_texts
from neardup.text.normalize import NormalizeConfig

__all__ = ["ExactHash"]


def link_equal_rows(keys: np.ndarray, docs: np.ndarray) -> Pairs:
    """Link documents whose key rows are equal (score 1), each group by the one bucket rule
    (:func:`neardup.graph.buckets.bucket_edges`: a star plus a chain, since equal keys
    imply a match), so that in memory and out of core the same edges join them.

    Parameters
    ----------
    keys : ndarray, shape (m,) or (m, k)
    docs : ndarray of int64, shape (m,), ascending
        The document position of each row.
    """
    if docs.size < 2:
        return Pairs.empty()
    keys2d = keys.reshape(keys.shape[0], -1)
    order = np.lexsort(keys2d.T[::-1])  # stable: each group keeps ascending positions
    sorted_keys = keys2d[order]
    first = np.ones(docs.size, dtype=bool)
    first[1:] = np.any(sorted_keys[1:] != sorted_keys[:-1], axis=1)
    starts = np.flatnonzero(first)
    sizes = np.diff(np.append(starts, docs.size))
    shared = sizes > 1
    left, right = bucket_edges(np.ascontiguousarray(docs[order], np.int64), starts[shared],
                               sizes[shared], 0)
    return Pairs(left, right, np.ones(left.size, np.float32)).canonical()


class ExactHash(Method):
    """Exact duplicates after normalization (``--method exact``).

    Parameters
    ----------
    normalize : NormalizeConfig, default all steps on
        Which differences to ignore.
    seed : int, default 0
        Keys the hash.

    Examples
    --------
    >>> m = ExactHash()
    >>> sk = m.sketch(["Hello, World!", "hello world", "goodbye"])
    >>> p = m.find_pairs(sk)
    >>> list(zip(p.left.tolist(), p.right.tolist()))
    [(0, 1)]
    """

    name = "exact"

    def __init__(self, *, normalize: NormalizeConfig = NormalizeConfig(), seed: int = 0) -> None:
        self.normalize = normalize
        self.seed = check_int("ExactHash", "seed", seed, low=0)

    def sketch(self, texts: Sequence[str]) -> Sketch:
        # A text of symbols only keeps a light form (neardup.text.identity), so its
        # identical copies match; a blank text has no features: never a duplicate.
        digests, lengths = self._digests_and_lengths(identity_texts(texts, self.normalize))
        return Sketch(lengths, {"digest": digests})

    def digest_normalized(self, normalized: Sequence[str]) -> np.ndarray:
        """128-bit digests (uint64, shape (n, 2)) of texts that are already normalized:
        equal digests mean identical texts (for callers that keep the normalized text,
        like the index)."""
        return self._digests_and_lengths(normalized)[0]

    def _digests_and_lengths(self, normalized: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        cps, offsets = encode_codepoints(list(normalized))
        key_a, key_b = seed_words(self.seed, 2, salt=0xE4AC7)
        return text_digests(cps, offsets, key_a, key_b), np.diff(offsets)

    def find_pairs(self, sketch: Sketch) -> Pairs:
        valid = np.flatnonzero(sketch.n_features > 0)
        return link_equal_rows(sketch.arrays["digest"][valid], valid)

    @property
    def capabilities(self) -> Capabilities:
        # Equal keys imply a match: every key group is linked as a star.
        return Capabilities(keyed=KeyedCandidates(), verification=Verification(arrays=("digest",)))

    def candidate_keys(self, sketch: Sketch) -> CandidateKeys:
        valid = np.flatnonzero(sketch.n_features > 0)
        # The first digest word is already a mixed hash; the second confirms it.
        return CandidateKeys(valid, np.ascontiguousarray(sketch.arrays["digest"][valid, 0]))

    def score_candidates(self, left, right):
        same = np.all(left["digest"] == right["digest"], axis=1)
        return same.astype(np.float32), same
