"""Which stored documents a new document is checked against, and how clusters merge.

The rule is the one ``neardup dedup`` applies to a key group
(:func:`neardup.graph.buckets.bucket_edges`), replayed one batch at a time, so that adding a corpus in
batches links what one-shot ``dedup`` of the concatenation links. Documents keep their
insertion order (an index position), which is the input order of the concatenation.

**Keyed methods (exact, minhash).** For a key shared by ``e`` stored and ``k`` new
documents, with ``cap`` the keyed spec's ``all_pairs_upto`` (MinHash's ``max_bucket_pairs``,
50 by default; 0 for exact):

* ``e + k <= cap``: each new document is checked against every stored member and every
  earlier new member (all pairs, as ``dedup`` does for a small bucket);
* otherwise: each new document is checked against the group's *anchor* (its earliest
  member) and its *predecessor* (the member just before it in position order): the star
  plus chain ``dedup`` uses for a large bucket.

In one batch this is exactly ``dedup``'s candidate set. Across batches a bucket that grew
past ``cap`` had all its pairs checked while it was small, a superset of ``dedup``'s star
plus chain; the extra pairs can only join documents that verify as duplicates anyway, and
on the demo corpus the clusters are identical (tested). A key group of ``e > cap`` members
costs two stored documents per new document, whatever its size: the index keeps the
anchor, the last member and the count of such groups in a small table.

**SimHash.** A new fingerprint is compared with every distinct stored fingerprint sharing
one of its block keys (``dedup`` compares all distinct fingerprints of a block run) while
the group holds at most ``max_block_size`` postings; a larger group is read in a window of
``max_block_size`` postings on each side of the new fingerprint (``dedup``'s window
approximation). New documents among themselves are linked by ``SimHash.link_bucket``,
``dedup``'s own rule.

Verified edges then join clusters with union-find semantics: a new document that matches
documents of two clusters merges them, and the merged cluster keeps the smaller id (the
position of its earliest founder), as ``dedup``'s union-find keeps the smallest root.
"""

from __future__ import annotations

import numpy as np

from neardup.engine.unionfind import UnionFind
from neardup.graph.buckets import bucket_edges, key_groups

__all__ = ["keyed_candidates", "link_edges", "simhash_candidates", "unique_edges"]


def keyed_candidates(
    keys: np.ndarray,
    docs: np.ndarray,
    stored: dict[int, np.ndarray],
    big: dict[int, tuple[int, int, int]],
    cap: int,
    *,
    with_new: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Candidate edges of new documents under the keyed rule (module docstring).

    Parameters
    ----------
    keys : ndarray of int64, shape (m,)
        The new documents' keys (uint64 bits as int64), one row per (document, key).
    docs : ndarray of int64, shape (m,)
        The new document of each row: its index position (add) or any id above every
        stored position (query).
    stored : dict of int -> ndarray of int64
        Stored members (ascending positions) of each key with at most ``cap`` of them.
    big : dict of int -> (first, last, count)
        Keys with more stored members: anchor, last member and count.
    cap : int
        the keyed spec's ``all_pairs_upto``.
    with_new : bool, default True
        Link new documents among themselves (add). False (query): every new document is
        checked as if it alone were added.

    Returns
    -------
    left, right : ndarray of int64
        Edges (earlier member, new document); may repeat.
    """
    # The key groups in dedup's order (graph.buckets.key_groups; the keyed methods the
    # index holds have no payload, so positions ascending).
    order, starts, sizes = key_groups(keys, docs)
    keys, docs = keys[order], docs[order]
    known = np.fromiter(stored.keys(), np.int64, len(stored))
    known = np.concatenate((known, np.fromiter(big.keys(), np.int64, len(big))))
    has_stored = np.isin(keys[starts], known)
    busy = has_stored | ((sizes > 1) & with_new)
    # Each group of new documents becomes one bucket of dedup's rule: the stored members
    # it extends, then the group. A key with more than ``cap`` stored members is past the
    # cap whatever the group, so its bucket is a star plus a chain, which reach the new
    # documents only from the anchor and the last member: those two stand for the rest.
    rows: list[np.ndarray] = []  # each bucket's members, in bucket order
    new: list[np.ndarray] = []  # whether each member is a new document
    past_cap: list[bool] = []
    for s, m in zip(starts[busy].tolist(), sizes[busy].tolist()):
        key = int(keys[s])
        members = stored.get(key)
        info = big.get(key)
        if members is not None:
            head = np.asarray(members, np.int64)
        elif info is not None:
            first, last, _ = info
            head = np.asarray([first] if first == last else [first, last], np.int64)
        else:
            head = np.zeros(0, np.int64)
        group = docs[s : s + m]
        for part in [group] if with_new else np.split(group, m):
            rows.append(np.concatenate((head, part)))
            new.append(np.repeat((False, True), (head.size, part.size)))
            past_cap.append(info is not None)
    if not rows:
        empty = np.zeros(0, np.int64)
        return empty, empty
    bucket_sizes = np.fromiter(map(len, rows), np.int64, len(rows))
    bucket_starts = np.cumsum(bucket_sizes) - bucket_sizes
    past_cap_ = np.asarray(past_cap, bool)
    # Bucket edges over row numbers (the same rule, all pairs up to ``cap`` for the
    # buckets whose members are all known, star plus chain for the rest), then only the
    # edges that reach a new document, grouped by it in bucket order.
    row_ids = np.arange(int(bucket_sizes.sum()), dtype=np.int64)
    known_left, known_right = bucket_edges(row_ids, bucket_starts[~past_cap_],
                                           bucket_sizes[~past_cap_], all_pairs_upto=cap)
    big_left, big_right = bucket_edges(row_ids, bucket_starts[past_cap_],
                                       bucket_sizes[past_cap_], all_pairs_upto=0)
    left = np.concatenate((known_left, big_left))
    right = np.concatenate((known_right, big_right))
    keep = np.concatenate(new)[right]
    left, right = left[keep], right[keep]
    by = np.argsort(right, kind="stable")
    values = np.concatenate(rows)
    return values[left[by]], values[right[by]]


def simhash_candidates(
    keys: np.ndarray, docs: np.ndarray, fps: np.ndarray, stored: dict[int, tuple[np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray]:
    """Edges (stored document, new document) between each new fingerprint and every
    distinct stored fingerprint sharing a block key (one new document per distinct new
    fingerprint: copies are joined among themselves by ``SimHash.link_bucket``).

    ``stored`` maps a key to (fingerprints uint64, earliest position with each), distinct.
    """
    left, right = [], []
    for key, (sfps, sdocs) in stored.items():
        mine = keys == key
        if not mine.any():
            continue
        nfps, first = np.unique(fps[mine], return_index=True)
        ndocs = docs[mine][first]
        left.append(np.tile(sdocs, ndocs.size))
        right.append(np.repeat(ndocs, sdocs.size))
    if not left:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(left).astype(np.int64), np.concatenate(right).astype(np.int64)


def unique_edges(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (left, right) edges, left != right."""
    keep = left != right
    left, right = left[keep], right[keep]
    if left.size == 0:
        return left, right
    # lexsort + run starts: np.unique(axis=0) sorts a void view, several times slower.
    order = np.lexsort((right, left))
    left, right = left[order], right[order]
    first = np.r_[True, (left[1:] != left[:-1]) | (right[1:] != right[:-1])]
    return left[first], right[first]


def link_edges(
    new_docs: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    cluster_of: dict[int, int],
    verify,
    *,
    linked: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    step: int = 8192,
) -> tuple[np.ndarray, dict[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Join clusters through candidate edges, verifying only edges whose sides are not
    joined yet (as ``dedup`` does: only joins matter for clusters).

    Parameters
    ----------
    new_docs : ndarray of int64, shape (n,)
        Positions of the new documents (all above every stored position).
    left, right : ndarray of int64
        Candidate edges between positions (stored or new).
    cluster_of : dict of int -> int
        Cluster of each stored position that appears in an edge.
    verify : callable (left, right) -> (score float32, accept bool)
    linked : (left, right, score) or None
        Edges already verified (identical texts, SimHash's in-batch links, an embedding
        method's search), joined first, in their order.
    step : int
        Edges verified per step; after each step's joins, later edges inside one cluster
        are skipped.

    Returns
    -------
    clusters : ndarray of int64, shape (n,)
        Final cluster of each new document (a new one is its own position).
    relabel : dict of int -> int
        Stored cluster -> the cluster it merged into (only changed ones).
    forest : (left, right, score)
        The verified edges that joined two clusters.
    """
    def node_of(positions: np.ndarray) -> np.ndarray:
        return np.array([cluster_of.get(p, p) for p in positions.tolist()], np.int64)

    pre_l, pre_r, pre_s = linked if linked is not None else (np.empty(0, np.int64),) * 2 + (
        np.empty(0, np.float32),)
    left_nodes, right_nodes = node_of(left), node_of(right)
    # Stored documents stand for their clusters, in verified edges as in candidates.
    pre_ln, pre_rn = node_of(pre_l), node_of(pre_r)
    nodes = np.unique(np.concatenate((left_nodes, right_nodes, new_docs, pre_ln, pre_rn)))
    li, ri = np.searchsorted(nodes, left_nodes), np.searchsorted(nodes, right_nodes)
    uf = UnionFind(nodes.size)
    forest_l, forest_r, forest_s = [], [], []
    if pre_l.size:
        merged = uf.union(np.searchsorted(nodes, pre_ln), np.searchsorted(nodes, pre_rn))
        forest_l.append(pre_l[merged]), forest_r.append(pre_r[merged])
        forest_s.append(np.asarray(pre_s, np.float32)[merged])
    for start in range(0, left.size, step):
        part = np.arange(start, min(start + step, left.size))
        part = part[~uf.connected(li[part], ri[part])]
        if part.size == 0:
            continue
        score, accept = verify(left[part], right[part])
        merged = uf.union(li[part], ri[part], accept)
        forest_l.append(left[part][merged]), forest_r.append(right[part][merged])
        forest_s.append(score[merged])
    roots = nodes[uf.roots()]  # the root of a set is its smallest node: the smallest id
    clusters = roots[np.searchsorted(nodes, new_docs)]
    stored = nodes < new_docs.min() if new_docs.size else np.ones(nodes.size, bool)
    relabel = {int(c): int(r) for c, r in zip(nodes[stored], roots[stored]) if c != r}
    forest = tuple(np.concatenate(x) if x else np.empty(0, d)
                   for x, d in ((forest_l, np.int64), (forest_r, np.int64), (forest_s, np.float32)))
    return clusters, relabel, forest
