"""Each document's best low-estimate partners: the selection of the Screen step, which
bounds the low-estimate candidate pairs a costly check sees
(:class:`~neardup.methods.capabilities.Screening`).

Pairs estimated at ``below`` or more are all checked. Of the pairs under it, each
document keeps its ``keep`` highest estimates (ties: the lower partner position), and a
pair is checked when it is among the ``keep`` of either of its documents. The choice
depends only on the set of candidate pairs and their estimates, never on the order the
partitions or batches bring them in, so every executor selects the same pairs.

A :class:`PartnerTable` holds each document's best ``keep`` partners so far (12 bytes a
partner); executors offer it each partition's low-estimate pairs (:func:`low_pairs`),
then link with :meth:`PartnerTable.selected_codes` (pair codes, 8 bytes each, at most
``keep`` a document). :func:`screened_mask` does both for pairs already in memory.
"""

from __future__ import annotations

import numpy as np

from neardup.graph.edges import Pairs, pair_codes

__all__ = ["PartnerTable", "low_pairs", "screened_mask", "selected_pairs"]

#: A free slot's partner: sorts after every real position.
_NO_PARTNER = np.iinfo(np.int64).max


class PartnerTable:
    """Each document's ``keep`` highest low-estimate partners among the pairs offered.

    Parameters
    ----------
    n_docs : int
        Documents (positions ``0..n_docs-1``).
    keep : int
        Partners kept a document (at least 1).
    """

    def __init__(self, n_docs: int, keep: int) -> None:
        if keep < 1:
            raise ValueError(f"PartnerTable: keep must be at least 1; got {keep}.")
        self.keep = int(keep)
        self.estimate = np.full((int(n_docs), self.keep), -np.inf, np.float32)
        self.partner = np.full((int(n_docs), self.keep), _NO_PARTNER, np.int64)

    def offer(self, left: np.ndarray, right: np.ndarray, estimate: np.ndarray) -> None:
        """Offer pairs (any order, repeats allowed: a pair met again takes no second
        slot) to both of their documents."""
        left = np.asarray(left, np.int64)
        if left.size == 0:
            return
        right = np.asarray(right, np.int64)
        estimate = np.asarray(estimate, np.float32)
        doc = np.concatenate((left, right))
        docs = np.unique(doc)
        k = self.keep
        # The offered pairs and the documents' current slots, ranked together per document
        # by (estimate descending, partner ascending); the first k stay.
        doc = np.concatenate((doc, np.repeat(docs, k)))
        partner = np.concatenate((right, left, self.partner[docs].ravel()))
        value = np.concatenate((estimate, estimate, self.estimate[docs].ravel()))
        order = np.lexsort((partner, -value, doc))
        doc, partner, value = doc[order], partner[order], value[order]
        # A pair offered again (or already held) is one candidate: keep its first row.
        fresh = np.ones(doc.size, bool)
        fresh[1:] = (doc[1:] != doc[:-1]) | (partner[1:] != partner[:-1]) | (partner[1:] == _NO_PARTNER)
        doc, partner, value = doc[fresh], partner[fresh], value[fresh]
        starts = np.searchsorted(doc, docs)
        rank = np.arange(doc.size) - np.repeat(starts, np.diff(np.append(starts, doc.size)))
        top = rank < k
        row = np.searchsorted(docs, doc[top])
        # Every document offered had k slots among the rows, so it fills k again.
        self.partner[docs[row], rank[top]] = partner[top]
        self.estimate[docs[row], rank[top]] = value[top]

    def selected_codes(self) -> np.ndarray:
        """The pair codes (:func:`~neardup.engine.overlap.pair_codes`, ascending, each once)
        of the pairs among the ``keep`` of either document."""
        doc = np.repeat(np.arange(self.partner.shape[0], dtype=np.int64), self.keep)
        partner = self.partner.ravel()
        held = partner != _NO_PARTNER
        doc, partner = doc[held], partner[held]
        return np.unique(pair_codes(np.minimum(doc, partner), np.maximum(doc, partner)))

    @property
    def nbytes(self) -> int:
        return int(self.estimate.nbytes + self.partner.nbytes)


def low_pairs(left: np.ndarray, right: np.ndarray, estimate: np.ndarray, passed: np.ndarray,
              below: float) -> Pairs:
    """The pairs that passed the screen with an estimate under ``below``, each once
    (canonical: left < right, ascending), for :meth:`PartnerTable.offer`."""
    low = np.asarray(passed, bool) & (np.asarray(estimate) < below)
    lo = np.minimum(left[low], right[low])
    hi = np.maximum(left[low], right[low])
    _, first = np.unique(pair_codes(lo, hi), return_index=True)
    return Pairs(lo[first], hi[first], np.asarray(estimate, np.float32)[low][first])


def selected_pairs(left: np.ndarray, right: np.ndarray, estimate: np.ndarray, passed: np.ndarray,
             below: float, codes: np.ndarray) -> np.ndarray:
    """Mask of the pairs to check: passed the screen, and estimated at ``below`` or more
    or among ``codes`` (:meth:`PartnerTable.selected_codes`)."""
    keep = np.asarray(passed, bool) & (np.asarray(estimate) >= below)
    low = np.flatnonzero(np.asarray(passed, bool) & ~keep)
    if low.size and codes.size:
        pair = pair_codes(np.minimum(left[low], right[low]), np.maximum(left[low], right[low]))
        at = np.minimum(np.searchsorted(codes, pair), codes.size - 1)
        keep[low] = codes[at] == pair
    return keep


def screened_mask(n_docs: int, pairs: Pairs, below: float, keep: int) -> np.ndarray:
    """Mask of ``pairs`` (each once, all passing the screen, scored by their estimate) to
    check: the Screen step over pairs held in memory."""
    passed = np.ones(len(pairs), bool)
    table = PartnerTable(n_docs, keep)
    low = low_pairs(pairs.left, pairs.right, pairs.score, passed, below)
    table.offer(low.left, low.right, low.score)
    return selected_pairs(pairs.left, pairs.right, pairs.score, passed, below, table.selected_codes())
