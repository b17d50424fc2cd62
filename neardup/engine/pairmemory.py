"""A bounded set of document pairs the corpus stage has already decided.

Linking meets the same pair of documents again and again: once under every key (LSH
band, shingle) the two share, and the keys of one pair land in different partitions. For
most methods checking a pair again costs about as much as looking it up, but a learned
scorer (rerank's verifier) computes a few dozen features per pair, and a rejected pair is
never skipped by the union-find (it joins nothing), so it would be scored once per
shared key. :class:`PairMemory` holds such pairs as sorted ``uint64`` codes
(:func:`~neardup.engine.overlap.pair_codes`, 8 bytes each) up to a capacity taken from
the stage's memory budget. It only saves work: a pair scored again gets the same
verdict, so what is held (and a resumed stage, which starts empty) never changes the
output.
"""

from __future__ import annotations

import numpy as np

__all__ = ["PairMemory"]


def _member(held: np.ndarray, codes: np.ndarray) -> np.ndarray:
    if held.size == 0:
        return np.zeros(codes.size, bool)
    at = np.minimum(np.searchsorted(held, codes), held.size - 1)
    return held[at] == codes


class PairMemory:
    """Pair codes held up to ``capacity``, in two sorted runs: new codes go to a small
    run merged into the large one when it reaches a quarter of its size, so adding a
    batch costs its own size (amortised), not the memory's.

    Parameters
    ----------
    capacity : int
        Most codes held; codes added beyond it are dropped (they will be checked again).
    """

    #: Size below which the recent run is never merged (a sort of this many is cheap).
    merge_floor = 1 << 16

    def __init__(self, capacity: int) -> None:
        self.capacity = max(int(capacity), 0)
        self._main = np.zeros(0, np.uint64)
        self._recent = np.zeros(0, np.uint64)

    def __len__(self) -> int:
        return int(self._main.size + self._recent.size)

    def contains(self, codes: np.ndarray) -> np.ndarray:
        """Mask of ``codes`` (any order) held."""
        codes = np.asarray(codes, np.uint64)
        return _member(self._main, codes) | _member(self._recent, codes)

    def add(self, codes: np.ndarray) -> None:
        """Hold ``codes`` (any order, repeats allowed) while there is room."""
        codes = np.unique(np.asarray(codes, np.uint64))
        codes = codes[~self.contains(codes)][: max(self.capacity - len(self), 0)]
        if codes.size == 0:
            return
        # Two sorted runs: the stable sort (timsort) finds them and merges in linear time.
        self._recent = np.sort(np.concatenate((self._recent, codes)), kind="stable")
        if self._recent.size >= max(self.merge_floor, self._main.size // 4):
            self._main = np.sort(np.concatenate((self._main, self._recent)), kind="stable")
            self._recent = np.zeros(0, np.uint64)
