"""Distributed connected components: identical texts linked by range of identity, then
large-star / small-star rounds over ranges of document positions."""

from __future__ import annotations

import time

import numpy as np

from neardup import faults
from neardup.engine.buckets import group_runs
from neardup.engine.facts import identity_pairs
from neardup.engine.ray.positions import range_bounds, range_of, split_by
from neardup.engine.ray.shards import IDENTITY
from neardup.engine.ray.tasks import traced

# -- distributed connected components ---------------------------------------------------
#
# The forests of the link tasks are joined into components by large-star / small-star
# (Kiveris et al., "Connected components in MapReduce and beyond", SoCC 2014): O(log^2 n)
# rounds, O(log n) in practice, whatever the components' diameter (a chain of bucket
# edges needs no more rounds than a star), never more edges than it started with.
# Documents are cut into C ranges of positions (C from RayConfig.components_memory); a
# task holds one range's edges. The graph converges to stars, each centred on its
# component's smallest position: the local engine's root.

#: Bytes a components task holds per directed edge of its range (two int64 arrays, the
#: sort order, the grouped copies).
_CC_BYTES_PER_EDGE = 64
COMPONENTS_MEMORY = 1 << 30


def identity_split_task(arrays: dict, offset: int, ranges: int):
    """One shard's non-blank documents (global positions) and their text identities, split
    by range (``identity % ranges``) for :func:`identity_link_task`."""
    identity = np.asarray(arrays[IDENTITY], np.uint64)
    docs = np.flatnonzero(identity != 0)
    identity = identity[docs]
    part = (identity % np.uint64(ranges)).astype(np.int64)
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(ranges + 1))
    docs, identity = docs[order] + offset, identity[order]
    out = [{"doc": docs[bounds[r]:bounds[r + 1]], IDENTITY: identity[bounds[r]:bounds[r + 1]]}
           for r in range(ranges)]
    return tuple(out) if ranges > 1 else out[0]


def identity_link_task(*parts: dict) -> tuple:
    """One range's identical texts linked (:func:`~neardup.engine.facts.identity_pairs`),
    as a link result (no pair outside a time window): its pair count, the result."""
    same = identity_pairs(np.concatenate([np.zeros(0, np.uint64)] + [p[IDENTITY] for p in parts]),
                          np.concatenate([np.zeros(0, np.int64)] + [p["doc"] for p in parts]))
    none = np.zeros(0, np.int64)
    return len(same), {"forest": (same.left, same.right, same.score),
                       "outside": (none, none, np.zeros(0, np.float32))}


def component_partitions(edges: int, budget: int) -> int:
    """Ranges of documents for ``edges`` undirected edges (each held twice, once per
    endpoint's range), a power of two, each range's edges within ``budget`` bytes."""
    need = max(2 * edges * _CC_BYTES_PER_EDGE / budget, 1.0)
    return int(min(1 << int(np.ceil(np.log2(need))), 1 << 12))


def _edges_of(source: dict) -> tuple[np.ndarray, np.ndarray]:
    """Undirected edges of a link result (its forest) or of a range's labels (node -> root
    stars)."""
    if "forest" in source:
        return np.asarray(source["forest"][0], np.int64), np.asarray(source["forest"][1], np.int64)
    joined = source["node"] != source["root"]
    return source["root"][joined], source["node"][joined]


def _directed(a: np.ndarray, b: np.ndarray, bounds: np.ndarray) -> list[dict]:
    """Each edge both ways, ``src -> dst``, in the range of ``src``."""
    src, dst = np.concatenate((a, b)), np.concatenate((b, a))
    return split_by(range_of(src, bounds), bounds.size - 1, src=src, dst=dst)


def scatter_task(bounds: np.ndarray, source: dict) -> tuple:
    """One link result's forest (or one range's labels) as the first large-star round's
    input: per range, the directed edges leaving its documents."""
    a, b = _edges_of(source)
    return (int(a.size), *_directed(a, b, bounds))


@traced
def large_star_task(bounds: np.ndarray, *parts: dict) -> tuple:
    """Large-star over one range: each document ``u`` links its larger neighbours to
    ``m(u)``, the smallest of ``u`` and its neighbours. Also checks whether the range is
    already converged (every document a centre with only larger neighbours, or a leaf with
    one smaller neighbour and no other: the graph is stars centred on their minimum) and
    returns the range's labels (document, root) valid once every range is. Returns the
    info, the labels, then per range the new edges ``(a < b)`` whose ``b`` lies in it."""
    faults.checkpoint("ray-components")
    cpu = time.process_time()
    src = np.concatenate([np.zeros(0, np.int64)] + [p["src"] for p in parts])
    dst = np.concatenate([np.zeros(0, np.int64)] + [p["dst"] for p in parts])
    order = np.lexsort((dst, src))
    src, dst = src[order], dst[order]
    first = np.ones(src.size, bool)
    first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
    src, dst = src[first], dst[first]
    del order, first
    starts, sizes = group_runs(src)
    nodes = src[starts]
    if src.size:
        smallest = np.minimum(nodes, np.minimum.reduceat(dst, starts))
        smaller = np.add.reduceat((dst < src).astype(np.int64), starts)
    else:
        smallest = smaller = np.zeros(0, np.int64)
    centre = smaller == 0
    star = bool(np.all(centre | ((smaller == 1) & (sizes == 1))))
    labels = {"node": nodes, "root": np.where(centre, nodes, smallest)}
    up = dst > src
    a, b = np.repeat(smallest, sizes)[up], dst[up]
    out = split_by(range_of(b, bounds), bounds.size - 1, a=a, b=b)
    info = {"star": star, "edges": int(src.size), "nodes": int(nodes.size),
            "centres": int(centre.sum()), "cpu_s": time.process_time() - cpu}
    return (info, labels, *out)


@traced
def small_star_task(bounds: np.ndarray, *parts: dict) -> tuple:
    """Small-star over one range: each document ``u`` links itself and its smaller
    neighbours to the smallest of them. Returns the info, then per range the directed
    edges leaving its documents (the next large-star's input)."""
    cpu = time.process_time()
    a = np.concatenate([np.zeros(0, np.int64)] + [p["a"] for p in parts])
    b = np.concatenate([np.zeros(0, np.int64)] + [p["b"] for p in parts])
    order = np.lexsort((a, b))
    a, b = a[order], b[order]
    first = np.ones(a.size, bool)
    first[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    a, b = a[first], b[first]
    starts, sizes = group_runs(b)
    smallest = np.repeat(a[starts], sizes)  # a is sorted within each b: its first is the min
    others = a != smallest
    lo = np.concatenate((smallest[starts] if b.size else np.zeros(0, np.int64), smallest[others]))
    hi = np.concatenate((b[starts], a[others]))
    return ({"edges": int(lo.size), "cpu_s": time.process_time() - cpu}, *_directed(lo, hi, bounds))


def identity_links(ray, identity_refs: list, offsets: np.ndarray, shard_docs: np.ndarray, budget: int
                   ) -> tuple[list, int]:
    """Link results that join the documents of identical texts, whatever the method
    found (as every engine does): the shards' identities (``identity_refs``: per
    shard, a dict holding them) exchanged by range, each range's groups chained.
    ``budget``: bytes a task may hold. Returns the results and their pair count."""
    ranges = int(min(max(-(-int(shard_docs.sum()) * 32 // budget), 1), 1 << 12))  # 16 bytes a row, twice
    split = ray.remote(identity_split_task).options(num_returns=ranges)
    parts = [split.remote(ref, int(offsets[s]), ranges)
             for s, ref in enumerate(identity_refs) if shard_docs[s]]
    parts = [p if isinstance(p, list) else [p] for p in parts]
    link = ray.remote(identity_link_task).options(num_returns=2)
    out = [link.remote(*[p[r] for p in parts]) for r in range(ranges)]
    return [o[1] for o in out], int(sum(ray.get([o[0] for o in out])))


def join_components(ray, sources: list, edges: int, n_docs: int, budget: int, trace: bool, advance
                    ) -> tuple[np.ndarray, list, dict]:
    """Connected components of the edges in ``sources`` (link results' forests, earlier
    labels' stars; ``edges`` of them in all) by large-star / small-star rounds over
    ranges of ``n_docs`` documents sized from ``budget`` (``RayConfig.components_memory``;
    ``trace``: its trace_memory), each round shown
    as ``advance``'s status. Returns the ranges' bounds and per range an object: its
    joined documents (sorted) and their roots, and the rounds' statistics."""
    ranges = component_partitions(edges, budget)
    bounds = range_bounds(n_docs, ranges)
    scatter = ray.remote(scatter_task).options(num_returns=ranges + 1)
    large = ray.remote(large_star_task).options(num_returns=ranges + 2)
    small = ray.remote(small_star_task).options(num_returns=ranges + 1)
    parts = [scatter.remote(bounds, source)[1:] for source in sources]
    rounds, cpu, small_infos = 0, 0.0, []
    while True:
        out = [large.remote(trace, bounds, *[p[c] for p in parts]) for c in range(ranges)]
        infos = ray.get([o[0] for o in out])
        rounds += 1
        advance(0, status=f"components: round {rounds}")
        cpu += sum(i["cpu_s"] for i in infos)
        if all(i["star"] for i in infos):
            break
        smalls = [small.remote(trace, bounds, *[o[2 + c] for o in out]) for c in range(ranges)]
        small_infos.extend(s[0] for s in smalls)
        parts = [s[1:] for s in smalls]
        del out, smalls
    small_infos = ray.get(small_infos)
    cpu += sum(i["cpu_s"] for i in small_infos)
    peak = max([i["peak_bytes"] for i in small_infos + infos], default=0)
    joined = sum(i["nodes"] for i in infos)
    stats = {
        "ranges": ranges, "rounds": rounds, "input_edges": int(edges), "joined_documents": int(joined),
        "components": int(sum(i["centres"] for i in infos)),
        "largest_range_edges": int(max(i["edges"] for i in infos)), "cpu_s": round(cpu, 3),
        "peak_task_bytes": int(peak)}
    return bounds, [o[1] for o in out], stats
