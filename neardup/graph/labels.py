"""Labels of a pair graph, shared by every clustering: canonical numbering, the
connected components, and the checks of a graph's inputs.

:mod:`neardup.graph.cluster`, :mod:`neardup.graph.community` and
:mod:`neardup.graph.agglomerative` all build on these, so they live below all three.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from neardup.errors import check_int
from neardup.graph.edges import Pairs

__all__ = [
    "adjacency",
    "as_python",
    "canonical_labels",
    "check_graph_input",
    "component_labels",
]


def canonical_labels(labels: Any) -> np.ndarray:
    """Renumber cluster labels as ``0..C-1`` in order of first appearance.

    Two labelings that describe the same partition get identical output, whatever their
    label values; this makes clustering output deterministic and comparable with ``==``.

    Parameters
    ----------
    labels : array-like, shape (n,)
        Any hashable labels: ints, strings, or a mix (mixed types fall back to a slower
        dictionary pass).

    Returns
    -------
    ndarray of int64, shape (n,)
        ``out[i]`` is the number of distinct labels that first appear before the first
        occurrence of ``labels[i]``. E.g. ``[7, 7, 3, 9, 3] -> [0, 0, 1, 2, 1]``.
    """
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(
            f"canonical_labels: parameter 'labels' must be a 1-D array; got shape {arr.shape}."
        )
    if arr.size == 0:
        return np.empty(0, dtype=np.int64)
    try:
        _, first, inverse = np.unique(arr, return_index=True, return_inverse=True)
    except TypeError:
        # Unorderable mix of label types (e.g. ints and tuples): number by first sight.
        seen: dict[Any, int] = {}
        return np.fromiter(
            (seen.setdefault(x, len(seen)) for x in arr.tolist()), np.int64, count=arr.size
        )
    # np.unique numbers labels in sorted order; re-rank them by first occurrence.
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size, dtype=np.int64)
    return rank[inverse.reshape(-1)]


def as_python(value: Any) -> Any:
    """NumPy scalars pass as Python numbers (``check_int`` accepts only ``int``)."""
    return value.item() if isinstance(value, (np.integer, np.floating)) else value


def check_graph_input(caller: str, pairs: Any, n_docs: Any) -> int:
    """Validate ``pairs`` and ``n_docs`` at a public boundary; return ``n_docs`` as int."""
    if not isinstance(pairs, Pairs):
        raise TypeError(
            f"{caller}: parameter 'pairs' must be a neardup.graph.Pairs; "
            f"got {type(pairs).__name__}. Build one with Pairs(left, right, score)."
        )
    n_docs = check_int(
        caller, "n_docs", as_python(n_docs), low=0, hint="Pass the number of documents."
    )
    if len(pairs):
        lo = int(min(pairs.left.min(), pairs.right.min()))
        hi = int(max(pairs.left.max(), pairs.right.max()))
        if lo < 0 or hi >= n_docs:
            raise ValueError(
                f"{caller}: parameter 'pairs' must hold document positions in "
                f"[0, n_docs) = [0, {n_docs}); got positions from {lo} to {hi}. "
                "Pairs hold positions (0..n_docs-1 in input order), not document ids; "
                "check that n_docs is the size of the whole corpus."
            )
    return n_docs


def adjacency(pairs: Pairs, n_docs: int):
    """Boolean (n_docs, n_docs) adjacency (scipy CSR); direction and repeats do not matter."""
    import scipy.sparse as sp  # here, not at import: scipy takes ~0.5 s to load

    data = np.ones(len(pairs), dtype=np.int8)
    return sp.csr_matrix((data, (pairs.left, pairs.right)), shape=(n_docs, n_docs))


def component_labels(pairs: Pairs, n_docs: int) -> np.ndarray:
    """Canonical connected-component labels, int64 (n_docs,); inputs trusted."""
    if n_docs == 0:
        return np.empty(0, dtype=np.int64)
    if len(pairs) == 0:
        return np.arange(n_docs, dtype=np.int64)
    from scipy.sparse.csgraph import connected_components

    _, labels = connected_components(adjacency(pairs, n_docs), directed=False)
    return canonical_labels(labels.astype(np.int64, copy=False))
