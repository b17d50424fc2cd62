"""N-gram overlap: which training documents share a word n-gram with an evaluation item.

The rule of the GPT-3 report (Brown et al. 2020, appendix C) and of datatrove's
``NGramsDecontFilter``: a training document is contaminated by an evaluation item when
they share one word n-gram (13 by default) after normalization (:mod:`neardup.text.
normalize`: case folded, punctuation dropped, whitespace collapsed). N-grams are hashed to
64 bits with :mod:`neardup.text.shingle`'s rolling hash, in one compiled pass per batch.

An item shorter than ``n`` words is matched on all its words, as one n-gram of its own
length, when it has at least ``min_words`` (GPT-3 bounded its n below by 8): the
training batches are then also hashed at each such length. Shorter items are too short
for the rule (a handful of common words would flag unrelated text) and are counted apart.

The evaluation side is held as one sorted ``uint64`` array per n-gram length, with the
items of each n-gram beside it (CSR): 16 bytes per distinct (n-gram, item) pair. The
training side is streamed: a batch's n-grams are looked up with one ``searchsorted``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from neardup.text import NormalizeConfig, ShingleConfig, normalize_codes, shingle_codes

__all__ = ["EvalNgrams", "NgramHits"]

_SEED = 0x13C0FFEE  # one fixed key: the same text gives the same hashes in every process


@dataclass(frozen=True)
class NgramHits:
    """Training documents that share n-grams with evaluation items (one row per pair).

    train : int64, position of the training document within its batch
    item : int64, index of the evaluation item
    shared : int64, how many distinct n-grams they share
    """

    train: np.ndarray
    item: np.ndarray
    shared: np.ndarray

    def __len__(self) -> int:
        return int(self.train.size)


def _word_counts(cps: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Words per normalized text (single spaces separate words, no edge spaces)."""
    spaces = np.zeros(cps.size + 1, np.int64)
    np.cumsum(cps == 32, out=spaces[1:])
    chars = np.diff(offsets)
    return np.where(chars > 0, spaces[offsets[1:]] - spaces[offsets[:-1]] + 1, 0)


def _grams(cps: np.ndarray, offsets: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Each text's distinct word n-gram hashes (flat) and the text of each."""
    sets = shingle_codes(cps, offsets, ShingleConfig(unit="word", n=n), seed=_SEED).unique()
    docs = np.repeat(np.arange(offsets.size - 1, dtype=np.int64), np.diff(sets.offsets))
    return sets.hashes, docs


class EvalNgrams:
    """The word n-grams of a set of evaluation items, for :meth:`match`.

    Parameters
    ----------
    texts : sequence of str
        The evaluation items (raw; normalized here).
    n : int
        N-gram length in words.
    min_words : int
        Items with fewer words than this are not matched (``too_short``).
    normalize : NormalizeConfig
    """

    def __init__(self, texts: Sequence[str], n: int = 13, min_words: int = 8,
                 normalize: NormalizeConfig = NormalizeConfig()) -> None:
        self.n, self.min_words, self.normalize = n, min_words, normalize
        cps, offsets = normalize_codes(list(texts), normalize)
        words = _word_counts(cps, offsets)
        self.too_short = words < min(min_words, n)
        # Per n-gram length: sorted distinct hashes, and the items of each (CSR).
        self._tables: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        lengths = {n} | set(words[(words < n) & ~self.too_short].tolist())
        for length in sorted(lengths):
            # Items of exactly this length when shorter than n; every longer item for n.
            chosen = words >= n if length == n else words == length
            hashes, docs = _grams(cps, offsets, length)
            keep = chosen[docs]
            self._tables[length] = _by_hash(hashes[keep], docs[keep])
        self.n_items = int(words.size)

    @property
    def lengths(self) -> list[int]:
        """The n-gram lengths a training batch is hashed at."""
        return sorted(self._tables)

    def match(self, texts: Sequence[str]) -> NgramHits:
        """The (training document, item) pairs of a training batch sharing an n-gram."""
        cps, offsets = normalize_codes(list(texts), self.normalize)
        trains, items = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        for length, (keys, starts, owners) in self._tables.items():
            if keys.size == 0:
                continue
            hashes, docs = _grams(cps, offsets, length)
            at = np.minimum(np.searchsorted(keys, hashes), keys.size - 1)
            hit = keys[at] == hashes
            at, docs = at[hit], docs[hit]
            # Each matched n-gram names every item it occurs in.
            counts = starts[at + 1] - starts[at]
            trains.append(np.repeat(docs, counts))
            first = np.repeat(starts[at] - np.cumsum(counts) + counts, counts)
            items.append(owners[first + np.arange(int(counts.sum()))])
        train, item = np.concatenate(trains), np.concatenate(items)
        if train.size == 0:
            return NgramHits(train, item, np.zeros(0, np.int64))
        pair = np.unique(np.stack([train, item], axis=1), axis=0, return_counts=True)
        return NgramHits(pair[0][:, 0].copy(), pair[0][:, 1].copy(), pair[1].astype(np.int64))


def _by_hash(hashes: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted distinct hashes, CSR starts into ``owners``, and the owners (items) sorted by
    hash."""
    order = np.lexsort((docs, hashes))
    hashes, docs = hashes[order], docs[order]
    new = np.ones(hashes.size, bool)
    new[1:] = hashes[1:] != hashes[:-1]
    starts = np.append(np.flatnonzero(new), hashes.size).astype(np.int64)
    return hashes[new], starts, docs
