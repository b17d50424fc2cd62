"""Near-duplicate matching with any dedup method, both sides sketched in memory.

The index (:mod:`.near`) stores exact, minhash and simhash. Any other method (ngram,
sanderson, spotsigs, ...) runs here, as ``neardup leakage`` always ran it (Silcock et
al. 2022, sec. 7): each training batch is sketched as it streams by, together with
its exact digest. After the last batch the items are sketched, the method matches the
whole lot, and only pairs that cross from an item to a training document count.
Training documents whose normalized text equals an item's are reported as ``exact``.

Memory: the method's sketch of every training document (the in-memory engine's cost),
so this suits a training corpus that ``neardup dedup --engine memory`` could hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from neardup.graph.edges import Pairs
from neardup.methods.base import Method, Sketch
from neardup.methods.exact import ExactHash
from neardup.text.normalize import NormalizeConfig

__all__ = ["MemoryMatcher", "digest_keys"]


def _keys(digest: np.ndarray) -> np.ndarray:
    # One 64-bit key per 128-bit digest: collisions stay negligible at corpus scale.
    if not digest.shape[0]:
        return np.zeros(0, np.uint64)
    return digest[:, 0] ^ (digest[:, 1] * np.uint64(0x9E3779B97F4A7C15))


def digest_keys(texts: Sequence[str], exact: ExactHash) -> tuple[np.ndarray, np.ndarray]:
    """Each text's exact key (uint64) and whether it has any text to compare."""
    sketch = exact.sketch(list(texts))
    return _keys(sketch.arrays["digest"]), np.asarray(sketch.n_features) > 0


class MemoryMatcher:
    """Training batches in (:meth:`add`), then the matches with the items (:meth:`match`)."""

    def __init__(self, method: Method) -> None:
        self.method = method
        self.exact = ExactHash(normalize=method.normalize or NormalizeConfig())
        self._sketches: list[Sketch] = []
        self._keys: list[np.ndarray] = []
        self._valid: list[np.ndarray] = []

    def add(self, texts: Sequence[str]) -> None:
        """Sketch one training batch (kept until :meth:`match`)."""
        self._sketch(texts)

    def _sketch(self, texts: Sequence[str]) -> None:
        texts = list(texts)
        self._sketches.append(self.method.sketch(texts))
        key, valid = digest_keys(texts, self.exact)
        self._keys.append(key)
        self._valid.append(valid)

    def match(self, items: Sequence[str]) -> dict[str, Any]:
        """Matches of every item: ``train``, ``item``, ``score``, ``kind`` arrays (exact: a
        training document with the item's normalized text; near: the method's pairs)."""
        n_train = sum(len(k) for k in self._keys)
        self._sketch(items)
        sketch = Sketch.concat(self._sketches)
        key, valid = np.concatenate(self._keys), np.concatenate(self._valid)
        is_item = np.arange(key.size) >= n_train
        self._sketches = []
        near = self.method.match(sketch).pairs if key.size else Pairs.empty()
        left_item, right_item = is_item[near.left], is_item[near.right]
        cross = left_item != right_item
        item = np.where(left_item, near.left, near.right)[cross] - n_train
        train = np.where(left_item, near.right, near.left)[cross]
        e_train, e_item = _same_key(key, valid, is_item)
        return {"train": np.concatenate([e_train, train]),
                "item": np.concatenate([e_item - n_train, item]),
                "score": np.concatenate([np.ones(e_train.size, np.float32),
                                         near.score[cross].astype(np.float32)]),
                "kind": np.array(["exact"] * e_train.size + ["near"] * train.size, object)}


def _same_key(key: np.ndarray, valid: np.ndarray, is_item: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (training document, item) pair of equal keys: one sort, then for each item
    the run of training documents at the head of its key's group."""
    docs = np.flatnonzero(valid)
    docs = docs[np.lexsort((docs, is_item[docs], key[docs]))]  # per key: training first
    keys, item_flag = key[docs], is_item[docs]
    new = np.r_[True, keys[1:] != keys[:-1]] if keys.size else np.zeros(0, bool)
    group = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    n_train = np.bincount(group[~item_flag], minlength=starts.size)
    items = np.flatnonzero(item_flag)
    counts = n_train[group[items]]
    first = np.repeat(starts[group[items]] - np.cumsum(counts) + counts, counts)
    train = docs[first + np.arange(int(counts.sum()))]
    return train, np.repeat(docs[items], counts)
