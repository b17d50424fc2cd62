"""The Link step: one key partition's candidate-key rows -> verified edges, as functions
of the partition's rows, a :class:`~neardup.engine.rows.RowSource` and a union-find, so
that every executor runs the same code (the local executor partition after partition,
Ray one task per partition, the index's bulk load over its own spill).

Rows grouped by key become a star plus a chain per bucket
(:func:`~neardup.graph.buckets.bucket_edges`), or all pairs of the set-overlap groups
(bounded, or counted for the pair-count exchange, :mod:`neardup.engine.overlap`), or the
method's own in-bucket verification; :class:`PartitionLinker` verifies the candidates
in bounded steps, skipping those already joined. :func:`reduce_pair_range` is the
exchange's reduce side: one range of left documents' summed counts, scored or verified."""

from __future__ import annotations


import numpy as np
import pyarrow as pa

from neardup.engine.buckets import concat_ranges, overlap_pairs
from neardup.engine.overlap import (
    decide_pairs,
    df_classes,
    likely_pairs,
    records_below,
    sum_pair_counts,
    uncounted_keys,
)
from neardup.engine.pairmemory import PairMemory
from neardup.engine.rows import RowSource
from neardup.engine.stores import PairSpill
from neardup.engine.unionfind import UnionFind
from neardup.graph.buckets import bucket_edge_counts, bucket_edges, key_groups
from neardup.graph.edges import Pairs, TimeWindow, code_pairs, pair_codes
from neardup.graph.partners import PartnerTable, low_pairs, selected_pairs
from neardup.methods.base import Method

__all__ = ["LIKELY_MIN_SHARED", "NoJoins", "PartitionLinker", "PartitionScreener", "chunk_edges",
           "concat_pairs",
           "exchanges_pair_counts", "link_key_rows", "link_partition", "reduce_pair_range",
           "screen_partition", "selected_codes", "verify_step"]


def verify_step(budget: int, row_bytes: int) -> int:
    """Edges verified at once: the rows fetched for one step (two documents of
    ``row_bytes`` each) must fit in a quarter of ``budget`` (texts and long sets make a
    row large); every executor's linker steps by it."""
    return int(min(max(budget // 4 // (2 * row_bytes + 64), 64), PartitionLinker.step))


def chunk_edges(budget: int) -> int:
    """Candidate edges built at once from whole key groups: their edges (16 bytes each,
    plus masks) must fit in a quarter of ``budget``; every executor's Screen and Link
    steps chunk by it."""
    return int(max(budget // 4 // 64, 1 << 14))


def exchanges_pair_counts(method: Method) -> bool:
    """Whether the method's all-pairs key groups go through the pair-count exchange
    (:mod:`neardup.engine.overlap`): set-overlap keys, scored from counts."""
    return method.capabilities.overlap is not None


class NoJoins:
    """Stands in for the link stage's union-find when every accepted pair is wanted
    (``every_edge``): nothing counts as joined, so no candidate is skipped, and every
    accepted pair is reported as a join (and so written to the partition's edges)."""

    def connected(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        return np.zeros(np.shape(left)[0], dtype=bool)

    def union(self, left: np.ndarray, right: np.ndarray, accept: np.ndarray | None = None) -> np.ndarray:
        if accept is None:
            return np.ones(np.shape(left)[0], dtype=bool)
        return np.asarray(accept, dtype=bool).copy()


class PartitionLinker:
    """Joins one partition's documents, skipping candidates already joined (by this
    partition or, on one machine, by the partitions before it: ``uf`` is then the run's
    union-find; none with ``every_edge`` and no ``uf``: every accepted pair is kept) and
    verifying the rest against ``store.rows(docs)`` (the work directory's memory-mapped
    arrays, or any :class:`~neardup.engine.rows.RowSource`), read only for the edges still to check. An executor
    that links partitions in parallel gives each its own union-find over the partition's
    documents; the global merge of the forests gives the same components either way. ``window``
    (:class:`~neardup.graph.edges.TimeWindow`) is indexed like the union-find: by global position, or with ``uf=None`` aligned with the
    partition's sorted unique documents. Results accumulate in ``forest`` and ``outside``
    (lists of (left, right, score) arrays) and ``counts``."""

    def __init__(self, method: Method, docs: np.ndarray, store: RowSource, window: TimeWindow | None,
                 uf: UnionFind | NoJoins | None = None,
                 rejected: PairMemory | None = None, every_edge: bool = False,
                 selected: np.ndarray | None = None) -> None:
        self.method, self.store = method, store
        # A screening method's pairs to check below its estimate floor (the Screen step's
        # pair codes, global positions); None: every candidate is checked.
        self.screening = method.capabilities.screening if selected is not None else None
        self.selected = selected
        # Pairs the method rejected (only for a costly check): met again under another
        # key, they are not scored again.
        self.rejected = rejected if method.capabilities.reads.costly else None
        if uf is None:
            self.local_docs = np.unique(docs)
            self.uf = NoJoins() if every_edge else UnionFind(self.local_docs.size)
        else:
            self.local_docs = None
            self.uf = uf
        # Every accepted pair is kept (``NoJoins``): an accepted pair met again is done
        # too, so the memory of decided pairs holds both verdicts.
        self.remember_accepted = self.keeps_every_pair = isinstance(self.uf, NoJoins)
        self.window = window
        self.forest: list[tuple[np.ndarray, ...]] = []
        self.outside: list[tuple[np.ndarray, ...]] = []
        self.counts = {"candidate_edges": 0, "verified_edges": 0}
        if self.rejected is not None:
            self.counts["rescoring_skipped"] = 0
        if self.screening is not None:
            self.counts["screened_out_edges"] = 0

    #: Edges checked per step: after each step's joins, later edges between documents
    #: already joined are skipped, so a bucket of m copies costs about m checks, not the
    #: number of edges (2m per band) that reach it.
    step = 8192

    def consider(self, left, right, score=None) -> None:
        """Candidate edges (global positions). ``score`` given: already verified;
        otherwise verified against the store's rows of their documents."""
        self.counts["candidate_edges"] += int(left.size)
        for start in range(0, left.size, self.step):
            part = slice(start, start + self.step)
            self._consider(left[part], right[part], None if score is None else score[part])

    def _consider(self, left, right, score) -> None:
        if self.local_docs is None:
            ll, rl = left, right
        else:
            ll = np.searchsorted(self.local_docs, left)
            rl = np.searchsorted(self.local_docs, right)
        todo = ~self.uf.connected(ll, rl)
        left, right, ll, rl = left[todo], right[todo], ll[todo], rl[todo]
        if left.size == 0:
            return
        if score is None and self.rejected is not None:
            # Each pair once per step (the first time it comes), and not if rejected before.
            codes = pair_codes(np.minimum(left, right), np.maximum(left, right))
            _, first = np.unique(codes, return_index=True)
            fresh = np.zeros(codes.size, bool)
            fresh[first] = True
            fresh &= ~self.rejected.contains(codes)
            self.counts["rescoring_skipped"] += int(codes.size - np.count_nonzero(fresh))
            left, right, ll, rl, codes = left[fresh], right[fresh], ll[fresh], rl[fresh], codes[fresh]
            if left.size == 0:
                return
        if score is None:
            # Rows are read only for edges still to check: most candidates join documents
            # already joined, and reading every candidate's row made the reads (random
            # pages of a file larger than the page cache share) grow faster than the corpus.
            need = np.unique(np.concatenate((left, right)))
            rows = self.store.rows(need)
            score, accept, costly = self._verify(rows, left, right, np.searchsorted(need, left),
                                                 np.searchsorted(need, right))
            self.counts["verified_edges"] += int(left.size)
            if self.rejected is not None:
                # Only the verdicts of the costly check: a pair the screen left out is
                # cheap to screen again and would take the memory's room.
                remembered = costly if self.remember_accepted else costly & ~accept
                self.rejected.add(codes[remembered])
        else:
            score, accept = score[todo], np.ones(left.size, dtype=bool)
        if self.window is not None:
            far = self.window.apart(ll, rl)
            if far.any():
                gone = accept & far
                self.outside.append((left[gone], right[gone], score[gone]))
                accept = accept & ~far
        merged = self.uf.union(ll, rl, accept)
        self.forest.append((left[merged], right[merged], score[merged]))

    def _verify(self, rows, left, right, left_rows, right_rows) -> tuple[np.ndarray, ...]:
        """Scores and acceptance of edges (global positions, and their rows' positions),
        and which of them the method's check decided: the method's check, or for a
        screening method its estimate, then its costly check on the edges the Screen
        step selected (the others score 0, rejected, undecided)."""
        if self.screening is None:
            score, accept = self.method.score_candidate_rows(rows, left_rows, right_rows)
            return (np.asarray(score, np.float32), np.asarray(accept, bool),
                    np.ones(left.size, bool))
        estimate, passed = self.method.screen_candidate_rows(rows, left_rows, right_rows)
        check = np.flatnonzero(selected_pairs(left, right, estimate, passed,
                                              self.screening.below, self.selected))
        self.counts["screened_out_edges"] += int(np.count_nonzero(passed)) - int(check.size)
        score = np.zeros(left.size, np.float32)
        accept = np.zeros(left.size, bool)
        decided = np.zeros(left.size, bool)
        if check.size:
            checked, accepted = self.method.verify_screened_rows(rows, left_rows[check],
                                                                  right_rows[check])
            score[check], accept[check], decided[check] = checked, accepted, True
        return score, accept, decided

    def forest_pairs(self) -> Pairs:
        """The joins so far (in the order they were made)."""
        return concat_pairs(self.forest)

    def outside_pairs(self) -> Pairs:
        """The accepted pairs the time window kept apart so far."""
        return concat_pairs(self.outside)



class PartitionScreener(PartitionLinker):
    """The Screen step's stand-in for the linker (:mod:`neardup.graph.partners`): every
    candidate edge of the partition gets the method's cheap estimate, whatever is joined,
    so that the selection does not depend on the order partitions come in; the
    low-estimate pairs that pass are collected (:meth:`low_pairs`) and nothing is
    joined or checked."""

    def __init__(self, method: Method, store: RowSource) -> None:
        # No union-find: nothing is joined, so the partition's documents are not needed.
        super().__init__(method, np.zeros(0, np.int64), store, None, every_edge=True)
        self.screening = method.capabilities.screening
        self.low: list[Pairs] = []
        self.counts = {"candidate_edges": 0, "screened_edges": 0}

    def _consider(self, left, right, score) -> None:
        if score is not None:
            raise ValueError(f"{self.method.name}: a screening method links its own key groups")
        _, first = np.unique(pair_codes(np.minimum(left, right), np.maximum(left, right)),
                             return_index=True)
        left, right = left[first], right[first]
        need = np.unique(np.concatenate((left, right)))
        estimate, passed = self.method.screen_candidate_rows(
            self.store.rows(need), np.searchsorted(need, left), np.searchsorted(need, right))
        self.counts["screened_edges"] += int(left.size)
        self.low.append(low_pairs(left, right, estimate, passed, self.screening.below))

    def low_pairs(self) -> Pairs:
        """The partition's low-estimate pairs that passed the screen, each once."""
        pairs = Pairs.concat(self.low)
        _, first = np.unique(pair_codes(pairs.left, pairs.right), return_index=True)
        return pairs.select(first)


def _link_overlap_groups(method: Method, linker: PartitionLinker, store, docs: np.ndarray,
                         starts: np.ndarray, sizes: np.ndarray, block_edges: int,
                         known_docs: np.ndarray, known: np.ndarray,
                         exchange: PairSpill | None = None,
                         prefix_cut: np.ndarray | None = None) -> None:
    """A partition's all-pairs key groups, for keys that documents share many of
    (shingles): each pair once (:func:`~neardup.engine.buckets.overlap_pairs`, in blocks
    of documents, ordered by their first document, so a group of copies is joined by its
    first document's edges), dropped when even sharing every key not seen could not
    reach the method's threshold (:meth:`Method.overlap_bound`: ``shared`` keys of the
    pair in these groups, ``known`` being a document's keys in groups of at most
    ``all_pairs_upto`` documents, singletons included).

    With ``prefix_cut`` (the exchange's prefix filter: each document's last df class in
    its prefix, :mod:`neardup.engine.overlap`), a group keeps only the members whose
    prefix holds its key, so a pair is counted over the keys in both its prefixes; the
    partition's bound does not apply to those counts and is not used."""
    # Inside an all-pairs group, documents ascending (the payload order is for chains).
    rows = concat_ranges(starts, sizes)
    group = np.repeat(np.arange(starts.size), sizes)
    order = np.lexsort((docs[rows], group))
    member = docs[rows][order]
    del rows
    if prefix_cut is not None:
        group = group[order]
        inside = prefix_cut[member] >= df_classes(sizes)[group]
        sizes = np.bincount(group[inside], minlength=sizes.size)
        member = member[inside]
        pairs = sizes > 1
        member = member[np.repeat(pairs, sizes)]
        sizes = sizes[pairs]
        if member.size > 1:
            # A group whose members are all joined already (copies of one cluster, once
            # joined) has no pair to exchange: skip it before its pairs are listed.
            joined = linker.uf.connected(member[:-1], member[1:])
            within = np.ones(member.size - 1, bool)
            within[np.cumsum(sizes)[:-1] - 1] = False  # the last member of each group
            open_ = np.bincount(np.repeat(np.arange(sizes.size), sizes)[:-1][within & ~joined],
                                minlength=sizes.size) > 0
            member = member[np.repeat(open_, sizes)]
            sizes = sizes[open_]
    del group, order
    bounded = store.holds_sets and prefix_cut is None
    aligned = None
    for left, right, shared, group_docs, _, left_local, right_local in overlap_pairs(
            member, np.cumsum(sizes) - sizes, sizes, block_edges):
        if prefix_cut is not None:
            if exchange is not None and left.size:
                if aligned is None:
                    aligned = known[np.searchsorted(known_docs, group_docs)]
                _exchange_block(method, linker, exchange, left, right, shared,
                                aligned[left_local], aligned[right_local])
            continue
        if bounded and left.size:
            if aligned is None:  # the groups' documents' facts, looked up once
                aligned = (known[np.searchsorted(known_docs, group_docs)],
                           store.set_sizes(group_docs))
            known_left, known_right = aligned[0][left_local], aligned[0][right_local]
            # The bound with this partition's counts holds for the whole pair (a common
            # key not counted here is one of both sides' keys not seen here), so a pair
            # it drops is below the threshold: safe to leave out of the exchange too.
            keep = method.overlap_bound(shared, known_left, known_right,
                                        aligned[1][left_local], aligned[1][right_local])
            linker.counts["pruned_edges"] += int(keep.size - np.count_nonzero(keep))
            left, right, shared = left[keep], right[keep], shared[keep]
            known_left, known_right = known_left[keep], known_right[keep]
            if exchange is not None:
                _exchange_block(method, linker, exchange, left, right, shared, known_left,
                                known_right)
                continue
        linker.consider(left, right)


#: Shared keys (in one partition) a pair needs before its sets are merged at once.
LIKELY_MIN_SHARED = 3


def _exchange_block(method: Method, linker: PartitionLinker, exchange: PairSpill,
                    left: np.ndarray, right: np.ndarray, shared: np.ndarray,
                    known_left: np.ndarray, known_right: np.ndarray) -> None:
    """A block of a partition's counted pairs, on the map side of the exchange: pairs whose
    documents are already joined are left out; likely matches
    (:func:`~neardup.engine.overlap.likely_pairs`) are verified now, so groups of copies
    are joined in the first partitions and their pairs left out of the later ones; the
    rest are spilled with their shared counts. A verified pair is left out whatever the
    verdict (joined, rejected by its exact similarity, or kept apart by the window and
    recorded as such). When the linker keeps every accepted pair, every record is
    spilled: the reduce then sums each pair's full count and scores it once, exactly."""
    if linker.keeps_every_pair:
        # Verifying early saves nothing when nothing is skipped for being joined.
        exchange.add(left, right, shared)
        return
    open_ = ~linker.uf.connected(left, right)
    left, right, shared = left[open_], right[open_], shared[open_]
    known_left, known_right = known_left[open_], known_right[open_]
    likely = likely_pairs(shared, known_left, known_right, method.overlap_scores,
                          LIKELY_MIN_SHARED)
    if likely.any():
        linker.consider(left[likely], right[likely])
        rest = ~likely
        left, right, shared = left[rest], right[rest], shared[rest]
        open_ = ~linker.uf.connected(left, right)
        left, right, shared = left[open_], right[open_], shared[open_]
    exchange.add(left, right, shared)



def link_partition(method: Method, tables: list[pa.Table], store: RowSource,
                    window: TimeWindow | None, chunk_edges: int, uf: UnionFind | None = None, step: int | None = None,
                    exchange: PairSpill | None = None, prefix_cut: np.ndarray | None = None,
                    checked: PairMemory | None = None, rejected: PairMemory | None = None,
                    selected: np.ndarray | None = None, linker: PartitionLinker | None = None,
                    ) -> tuple[Pairs, Pairs, dict[str, int], np.ndarray]:
    """One key partition's forest, outside-window pairs, counts (``capped_keys``: key
    groups over the bucket rule's ``star_upto``, linked by their chain alone, or over
    its ``skip_over``, not linked) and the documents of those groups' rows (one
    entry per capped key a document holds). With ``exchange`` (and ``uf``, the run's
    union-find), the all-pairs groups' counted pairs go to the pair-count exchange
    instead of being verified here (:func:`_exchange_block`), after the larger groups
    are linked; ``prefix_cut`` (the prefix stage's) restricts them to prefix members, and
    ``checked`` (the stage's) holds the neighbour pairs verified in earlier partitions;
    ``rejected`` (the stage's, or one for this partition) the pairs a costly check
    rejected (``Verification.costly``). ``selected``: a screening method's low-estimate
    pairs to check (the Screen step's, :func:`screen_partition`). ``linker``: one to use
    instead of a new :class:`PartitionLinker` (the Screen step's screener)."""
    capped_docs = np.zeros(0, np.int64)
    if not tables:
        return Pairs.empty(), Pairs.empty(), {"candidate_edges": 0, "verified_edges": 0,
                                              "capped_keys": 0}, capped_docs
    table = pa.concat_tables(tables)
    keys = table.column("key").to_numpy()
    docs = table.column("doc").to_numpy()
    payload = table.column("payload").to_numpy() if "payload" in table.column_names else None
    del table
    if linker is None:
        if rejected is None:  # used only for a costly check (PartitionLinker decides)
            rejected = PairMemory(2 * chunk_edges)  # the bytes of one chunk's edges
        linker = PartitionLinker(method, docs, store, window, uf, rejected, selected=selected)
    linker.counts["capped_keys"] = 0
    if step is not None:
        linker.step = step
    caps = method.capabilities
    if caps.keyed.links_buckets:
        linked = method.link_bucket(keys, docs, payload)
        linker.consider(linked.left, linked.right, linked.score)
    else:
        # Inside a key group, the chain order every path follows (key_groups: by the
        # payload when there is one, documents with close payloads being likely matches).
        order, starts, sizes = key_groups(keys, docs, payload)
        keys, docs = keys[order], docs[order]
        # The exchange keeps the payload for its adjacent matches (below).
        payload = payload[order] if payload is not None and exchange is not None else None
        del order
        star_upto = caps.keyed.star_upto
        upto = caps.keyed.all_pairs_upto
        if star_upto is not None:
            capped = (sizes > star_upto) & (sizes > upto)
            linker.counts["capped_keys"] = int(np.count_nonzero(capped))
            capped_docs = docs[np.repeat(capped, sizes)]
        if caps.overlap is not None:
            # A document's keys in groups compared all-to-all, singletons included (a key
            # no other document has is seen not to be shared).
            seen = np.repeat(sizes <= upto, sizes)
            if prefix_cut is not None:  # keys in the document's prefix only
                seen &= prefix_cut[docs] >= np.repeat(df_classes(sizes), sizes)
            known_docs, known = np.unique(docs[seen], return_counts=True)
            del seen
        skip = caps.keyed.skip_over
        if skip is not None:
            over = sizes > skip
            linker.counts["capped_keys"] = int(np.count_nonzero(over))
            capped_docs = docs[np.repeat(over, sizes)]
            if over.any():  # not linked; their rows count as unseen keys for the bound
                starts, sizes = starts[~over], sizes[~over]
        starts, sizes = starts[sizes > 1], sizes[sizes > 1]
        if caps.overlap is not None:
            small = sizes <= upto
            linker.counts["pruned_edges"] = 0
            if exchange is not None:
                # Larger groups first: the copies they join are then left out of the
                # exchange.
                _link_chained_groups(linker, docs, starts[~small], sizes[~small], upto,
                                     star_upto, chunk_edges)
                if payload is not None and not linker.keeps_every_pair:
                    _link_adjacent_matches(linker, docs, payload, starts[small], sizes[small],
                                           checked)
                del payload
            _link_overlap_groups(method, linker, store, docs, starts[small], sizes[small],
                                 chunk_edges, known_docs, known, exchange, prefix_cut)
            starts, sizes = starts[~small], sizes[~small]
        if exchange is None:
            _link_chained_groups(linker, docs, starts, sizes, upto, star_upto, chunk_edges)
    return linker.forest_pairs(), linker.outside_pairs().canonical(), linker.counts, capped_docs


def screen_partition(method: Method, tables: list[pa.Table], store: RowSource,
                     chunk_edges: int) -> tuple[Pairs, dict[str, int]]:
    """The Screen step over one key partition (a method declaring
    :class:`~neardup.methods.capabilities.Screening`): the candidate edges the Link step
    would build from its key rows, each pair's estimate, and the low-estimate pairs that
    passed (each once) for the run's :class:`~neardup.graph.partners.PartnerTable`; and
    the step's counts."""
    screener = PartitionScreener(method, store)
    if tables:
        link_partition(method, tables, store, None, chunk_edges, linker=screener)
    return screener.low_pairs(), dict(screener.counts)


def _link_adjacent_matches(linker: PartitionLinker, docs: np.ndarray, payload: np.ndarray,
                           starts: np.ndarray, sizes: np.ndarray,
                           checked: PairMemory | None = None) -> None:
    """Verify, before the exchange counts them, the members of all-pairs groups that sit
    next to each other in the payload order with the same high 32 bits (ngram: the same
    MinHash value, equal with probability their Jaccard): likely copies, joined here so
    that their pairs are left out of the exchange. With many partitions a partition holds
    about one key of each pair, too few to tell copies from its counts
    (:func:`~neardup.engine.overlap.likely_pairs`), and a cluster of c copies would be
    c²/2 records in each. For speed only: every verdict is the exact check's."""
    if starts.size == 0:
        return
    rows = concat_ranges(starts, sizes)
    # A row and the next one in the same group: not the last row of its group.
    last = np.cumsum(sizes) - 1
    follows = np.ones(rows.size, bool)
    follows[last] = False
    follows = np.flatnonzero(follows[:-1])
    here, after = rows[follows], rows[follows + 1]
    high = np.uint64(0xFFFFFFFF00000000)
    same = (payload[here] & high) == (payload[after] & high)
    left, right = docs[here[same]], docs[after[same]]
    # Each pair once (it may sit next to its partner in several groups), in pair order,
    # and not again once verified in an earlier partition.
    codes = np.unique(pair_codes(np.minimum(left, right), np.maximum(left, right)))
    if checked is not None:
        codes = codes[~checked.contains(codes)]
        left, right = code_pairs(codes)
        codes = codes[~linker.uf.connected(left, right)]
        checked.add(codes)
    left, right = code_pairs(codes)
    linker.consider(left, right)


def _link_chained_groups(linker: PartitionLinker, docs: np.ndarray, starts: np.ndarray,
                         sizes: np.ndarray, upto: int, star_upto: int | None,
                         chunk_edges: int) -> None:
    """Key groups linked by :func:`~neardup.graph.buckets.bucket_edges` (all pairs, or
    star plus chain, or chain alone), in chunks of whole groups whose edges fit
    ``chunk_edges`` (at least one group)."""
    ends = np.cumsum(bucket_edge_counts(sizes, upto, star_upto))
    first = 0
    while first < starts.size:
        done = int(ends[first - 1]) if first else 0
        last = int(np.searchsorted(ends, done + chunk_edges, "right"))
        last = max(last, first + 1)
        left, right = bucket_edges(docs, starts[first:last], sizes[first:last], upto,
                                   star_upto)
        linker.consider(left, right)
        first = last


def link_key_rows(method: Method, keys: np.ndarray, docs: np.ndarray,
                  payload: np.ndarray | None, store: RowSource, uf: UnionFind, *,
                  chunk_rows: int = 1 << 20) -> Pairs:
    """Link one key partition's rows as the corpus stage does, for a caller that keeps
    its own spill (the index's bulk build): every row of a key must be in this call.

    Parameters
    ----------
    method : Method
    keys, docs, payload : ndarray
        Candidate-key rows (``method.candidate_keys`` output, docs as global positions).
    store : RowSource
        Reads the candidate rows of sorted, unique global positions.
    uf : UnionFind
        The run's union-find over global positions; updated in place.
    chunk_rows : int
        Candidate edges built at once (whole buckets; arrays are read per step of edges
        still to verify).

    Returns
    -------
    Pairs
        The verified edges that joined two sets (a spanning forest of this partition).
    """
    columns = {"key": keys, "doc": docs}
    if payload is not None:
        columns["payload"] = payload
    tables, chunk_edges = [pa.table(columns)], max(int(chunk_rows), 1024)
    selected = None
    if method.capabilities.screening is not None:
        # The Screen step over these rows alone (they hold every row of their keys).
        low, _ = screen_partition(method, tables, store, chunk_edges)
        selected = selected_codes(low, method.capabilities.screening.keep)
    forest, _, _, _ = link_partition(method, tables, store, None, chunk_edges, uf,
                                     selected=selected)
    return forest


def selected_codes(low: Pairs, keep: int) -> np.ndarray:
    """The Screen step's selection among low-estimate pairs all in hand (global
    positions): a :class:`~neardup.graph.partners.PartnerTable` over their documents
    alone, its pair codes in global positions."""
    local = np.unique(np.concatenate((low.left, low.right)))
    table = PartnerTable(local.size, keep)
    table.offer(np.searchsorted(local, low.left), np.searchsorted(local, low.right), low.score)
    left, right = code_pairs(table.selected_codes())
    return pair_codes(local[left], local[right])  # renumbering keeps the order


def reduce_pair_range(method: Method, code_files: list[np.ndarray], shared_files: list[np.ndarray],
                       lo: int, hi: int, sizes: np.ndarray, prefix: tuple[np.ndarray, ...],
                       store: RowSource, window: TimeWindow | None, uf: UnionFind | NoJoins,
                       step: int) -> tuple[Pairs, Pairs, dict[str, int]]:
    """One range of left documents of the exchange: its forest, outside-window pairs and
    counts. ``code_files``, ``shared_files``: each partition's sorted pair codes and shared
    counts (memory-mapped once for all ranges: only the range's records are read).
    ``prefix``: each document's prefix cut, suffix and unseen keys (the prefix stage's),
    which bound the keys a pair shares outside its count."""
    codes, shared = [], []
    starts, stops = records_below(code_files, lo), records_below(code_files, hi)
    for file_codes, file_shared, start, stop in zip(code_files, shared_files, starts, stops):
        if stop > start:
            codes.append(np.array(file_codes[start:stop]))
            shared.append(np.array(file_shared[start:stop]))
    records = sum(c.size for c in codes)
    codes, total = sum_pair_counts(np.concatenate(codes) if codes else np.zeros(0, np.uint64),
                                   np.concatenate(shared) if shared else np.zeros(0, np.uint32))
    del shared
    left, right = code_pairs(codes)
    del codes
    cut, suffix, unseen = prefix
    uncounted = uncounted_keys(cut[left], cut[right], suffix[left], suffix[right], unseen[left],
                               unseen[right]).astype(np.int64)
    # Both sides get the pair's uncounted keys as unseen: the bound adds their smaller.
    exact, score, accept, verify = decide_pairs(
        total, sizes[left], sizes[right], uncounted, uncounted, method.overlap_scores,
        method.overlap_bound)
    linker = PartitionLinker(method, np.zeros(0, np.int64), store, window, uf)
    linker.step = step
    # Pairs scored from counts first (no reads), then those to verify, each in pair order.
    linker.consider(left[accept], right[accept], score[accept])
    linker.consider(left[verify], right[verify])
    counts = dict(linker.counts)
    counts.update(exchange_records=int(records), exchange_pairs=int(left.size),
                  scored_from_counts=int(np.count_nonzero(exact)),
                  pruned_edges=int(np.count_nonzero(~exact & ~verify)))
    return linker.forest_pairs(), linker.outside_pairs().canonical(), counts


def concat_pairs(parts: list[tuple[np.ndarray, ...]]) -> Pairs:
    if not parts:
        return Pairs.empty()
    return Pairs(*(np.concatenate([p[i] for p in parts]) for i in range(3)))
