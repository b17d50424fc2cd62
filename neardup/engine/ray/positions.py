"""Small numpy helpers over global document positions shared by the Ray tasks: sorted
unique positions, ranges of positions, cutting arrays by range, and the roots that
earlier waves gave documents."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def roots_of(docs: np.ndarray, seed: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
    """Component root of each document after the earlier waves (itself if it joined none)."""
    if seed is None or seed[0].size == 0:
        return docs.copy()
    nodes, roots = seed
    at = np.minimum(np.searchsorted(nodes, docs), nodes.size - 1)
    return np.where(nodes[at] == docs, roots[at], docs)


def unique_positions(values: np.ndarray) -> np.ndarray:
    """Distinct int64 positions, ascending (a sort and a neighbour test: faster here than
    ``np.unique``'s hash table)."""
    values = np.sort(values)
    keep = np.ones(values.size, bool)
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]



def requests_of(need: np.ndarray, offsets: np.ndarray) -> list[np.ndarray]:
    """Documents ``need`` (sorted positions) cut by shard: per shard, its rows to gather."""
    bounds = np.searchsorted(need, np.append(offsets, np.iinfo(np.int64).max))
    return [need[bounds[s]:bounds[s + 1]] - offsets[s] for s in range(len(offsets))]


def sum_count_dicts(counts: Iterable[dict]) -> dict:
    total: dict[str, float] = {}
    for c in counts:
        for k, v in c.items():
            total[k] = total.get(k, 0) + v
    return total


def range_bounds(n_docs: int, parts: int) -> np.ndarray:
    """Bounds of ``parts`` ranges of positions: range ``c`` is ``[bounds[c], bounds[c+1])``."""
    return np.linspace(0, max(n_docs, 1), parts + 1).astype(np.int64)


def range_of(nodes: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    return np.searchsorted(bounds, nodes, side="right") - 1


def split_by(part: np.ndarray, parts: int, **arrays: np.ndarray) -> list[dict]:
    """``arrays`` cut by ``part`` (values 0..parts-1) into ``parts`` dicts, order kept
    within each."""
    order = np.argsort(part, kind="stable")
    bounds = np.zeros(parts + 1, np.int64)
    np.cumsum(np.bincount(part, minlength=parts), out=bounds[1:])
    cut = {name: a[order] for name, a in arrays.items()}
    return [{name: a[bounds[c]:bounds[c + 1]] for name, a in cut.items()} for c in range(parts)]
