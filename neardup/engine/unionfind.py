"""Union-find over integer arrays: connected components without a graph object.

The corpus stage links documents through edges that arrive in batches (one key
partition at a time). A parent array of ``n_docs`` int64 is the only corpus-wide state
(8 bytes per document); each root is the smallest document position of its component,
so the forest does not depend on the order in which edges arrive.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["UnionFind"]


@njit(cache=True)
def _find(parent, x):
    root = x
    while parent[root] != root:
        root = parent[root]
    while parent[x] != root:  # path compression
        nxt = parent[x]
        parent[x] = root
        x = nxt
    return root


@njit(cache=True)
def _connected(parent, left, right, out):
    for i in range(left.shape[0]):
        out[i] = _find(parent, left[i]) == _find(parent, right[i])


@njit(cache=True)
def _union(parent, left, right, accept, merged):
    for i in range(left.shape[0]):
        merged[i] = False
        if not accept[i]:
            continue
        a = _find(parent, left[i])
        b = _find(parent, right[i])
        if a == b:
            continue
        # The smaller position becomes the root: roots are order-independent.
        if a < b:
            parent[b] = a
        else:
            parent[a] = b
        merged[i] = True


@njit(cache=True)
def _roots(parent, out):
    for i in range(parent.shape[0]):
        out[i] = _find(parent, i)


class UnionFind:
    """Disjoint sets over document positions ``0..n_docs-1``.

    Parameters
    ----------
    n_docs : int
        Number of documents; every document starts as its own set.
    parent : ndarray of int64, shape (n_docs,), optional
        A saved forest (from :attr:`parent`) to continue from.
    """

    def __init__(self, n_docs: int, parent: np.ndarray | None = None) -> None:
        if parent is None:
            parent = np.arange(n_docs, dtype=np.int64)
        self.parent = np.ascontiguousarray(parent, dtype=np.int64)

    def connected(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        """Whether each pair is already in one set (bool, shape (n_pairs,))."""
        out = np.empty(left.shape[0], dtype=np.bool_)
        _connected(self.parent, _i64(left), _i64(right), out)
        return out

    def union(self, left: np.ndarray, right: np.ndarray, accept: np.ndarray | None = None) -> np.ndarray:
        """Join the sets of each accepted pair, in order; returns which pairs joined two
        different sets (the forest's edges)."""
        if accept is None:
            accept = np.ones(left.shape[0], dtype=np.bool_)
        merged = np.empty(left.shape[0], dtype=np.bool_)
        _union(self.parent, _i64(left), _i64(right), np.ascontiguousarray(accept, np.bool_), merged)
        return merged

    def roots(self) -> np.ndarray:
        """Root (smallest member position) of every document's set, int64 (n_docs,)."""
        out = np.empty(self.parent.shape[0], dtype=np.int64)
        _roots(self.parent, out)
        return out


def _i64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)
