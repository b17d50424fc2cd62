"""The shape every de-duplication method shares.

A method is an estimator-like object (scikit-learn style): the constructor stores
keyword-only parameters under their own names and does no work; :meth:`get_params` returns
them (neardup writes them into output metadata). Work happens in two stages, so that the
first can run on any executor (local, a process pool, Ray ``map_batches``) without change:

1. :meth:`Method.sketch` — a pure function over one *batch* of raw texts returning a
   :class:`Sketch` (signatures, fingerprints, shingle sets or embeddings), row-aligned with
   the batch;
2. :meth:`Method.find_pairs` — over the concatenated sketch of the whole corpus, returns
   scored candidate :class:`~neardup.graph.Pairs` (document positions).

Documents with ``n_features == 0`` (empty after normalization) are never paired.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from neardup._params import ParamsMixin
from neardup.graph.edges import Pairs
from neardup.text.shingle import ShingleSets

__all__ = ["Method", "Sketch"]


@dataclass
class Sketch:
    """Per-document summaries of a batch or a corpus, row-aligned with its documents.

    Attributes
    ----------
    n_features : ndarray of int64, shape (n_docs,)
        How many features (shingles, tokens, chunks) each document had; 0 marks a document
        that cannot be compared (empty after normalization).
    arrays : dict of str -> ndarray, each with first dimension n_docs
        Fixed-width summaries, e.g. ``"signature"`` (n_docs, num_perm) uint64.
    sets : ShingleSets or None
        Ragged per-document shingle hashes, when the method keeps them.
    ragged : dict of str -> ndarray
        Arrays that are not one row per document (e.g. one row per chunk), in document
        order; a row-aligned count in ``arrays`` says how many rows each document owns.
        ``concat`` stacks them in order.
    dates : ndarray of datetime64[s], shape (n_docs,), or None
        Document dates (NaT where unknown). Methods never set it: the pipeline attaches
        the corpus's dates before ``find_pairs`` so date-aware methods (time windows) can
        read them; None when the input has no dates.
    """

    n_features: np.ndarray
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    sets: ShingleSets | None = None
    dates: np.ndarray | None = None
    ragged: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.n_features.shape[0])

    def require_sets(self, caller: str, what: str, built_by: str) -> ShingleSets:
        """The sketch's sets as contiguous arrays, checked to be sorted, duplicate-free sets;
        ValueError naming ``built_by`` when the sketch has none."""
        if self.sets is None:
            raise ValueError(
                f"{caller}: parameter 'sketch' must carry {what} sets; got a Sketch without "
                f"sets. Build it with {built_by}."
            )
        sets = ShingleSets(
            np.ascontiguousarray(self.sets.hashes, dtype=np.uint64),
            np.ascontiguousarray(self.sets.offsets, dtype=np.int64),
        )
        sets.require_sets(caller, "sketch")
        return sets

    @staticmethod
    def concat(parts: Sequence[Sketch]) -> Sketch:
        """Stack batch sketches in order into one corpus sketch."""
        if not parts:
            return Sketch(np.zeros(0, np.int64))
        if len(parts) == 1:
            return parts[0]
        arrays = {k: np.concatenate([p.arrays[k] for p in parts]) for k in parts[0].arrays}
        sets = None
        if parts[0].sets is not None:
            sets = ShingleSets.concat([p.sets for p in parts])
        ragged = {k: np.concatenate([p.ragged[k] for p in parts]) for k in parts[0].ragged}
        return Sketch(np.concatenate([p.n_features for p in parts]), arrays, sets, ragged=ragged)


class Method(ParamsMixin, ABC):
    """Base class of lexical and neural de-duplication methods.

    Subclasses set ``name``, accept only keyword arguments in ``__init__`` and store each
    under its own name, validate them in ``__init__`` (the public boundary), and implement
    :meth:`sketch` and :meth:`find_pairs`.
    """

    name: ClassVar[str]
    #: Parameters that only :meth:`find_pairs` reads. Sweeping them (e.g. a threshold)
    #: can reuse one corpus sketch; see :meth:`sketch_key`.
    pair_params: ClassVar[frozenset[str]] = frozenset()

    def sketch_key(self) -> str:
        """A string equal for two instances exactly when their sketches are equal: the
        parameters except :attr:`pair_params`, as sorted JSON."""
        import json

        params = {k: v for k, v in self.get_params().items() if k not in self.pair_params}
        return json.dumps([self.name, params], sort_keys=True, default=str)

    @abstractmethod
    def sketch(self, texts: Sequence[str]) -> Sketch:
        """Summaries of one batch of raw texts (a pure function of the batch)."""

    @abstractmethod
    def find_pairs(self, sketch: Sketch) -> Pairs:
        """Scored candidate pairs over a whole corpus sketch, canonical (left < right)."""
