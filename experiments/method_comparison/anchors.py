"""Peer implementations the papers compare against, wrapped in neardup's Method shape.

They live in experiments/, not in the package: they exist to be measured against, run with the
peers' own code (datasketch), one Python object per document as those libraries require.
Register them with :func:`register` so ``neardup.eval`` tuning and evaluation can use them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from neardup.errors import check_float, check_int
from neardup.graph.edges import Pairs
from neardup.methods import METHODS
from neardup.methods.base import Method, Sketch
from neardup.text import NormalizeConfig, normalize_batch


class DatasketchMinHashLSH(Method):
    """datasketch's MinHash + MinHashLSH, as Silcock et al. (2022) ran it: 10 permutations,
    word 3-grams of punctuation-free text, the LSH threshold tuned on validation. Every
    band collision is an edge (no verification), as in the paper.

    Parameters
    ----------
    threshold : float, default 0.5
        MinHashLSH's Jaccard threshold (it picks bands and rows from it).
    num_perm : int, default 10
    n : int, default 3
        Word n-gram length.
    """

    name = "datasketch-lsh"
    pair_params = frozenset({"threshold"})

    def __init__(self, *, threshold: float = 0.5, num_perm: int = 10, n: int = 3) -> None:
        self.threshold = check_float("DatasketchMinHashLSH", "threshold", threshold, low=0.0, high=1.0)
        self.num_perm = check_int("DatasketchMinHashLSH", "num_perm", num_perm, low=2)
        self.n = check_int("DatasketchMinHashLSH", "n", n, low=1)

    def sketch(self, texts: Sequence[str]) -> Sketch:
        from datasketch import MinHash

        normalized = normalize_batch(texts, NormalizeConfig())
        hashvalues = np.empty((len(texts), self.num_perm), dtype=np.uint64)
        counts = np.zeros(len(texts), dtype=np.int64)
        for i, text in enumerate(normalized):
            words = text.split()
            grams = {" ".join(words[k : k + self.n]) for k in range(max(len(words) - self.n + 1, 0))}
            if not grams and words:
                grams = {" ".join(words)}
            m = MinHash(num_perm=self.num_perm, seed=1)
            m.update_batch([g.encode("utf-8") for g in grams])
            hashvalues[i] = m.hashvalues
            counts[i] = len(grams)
        return Sketch(counts, {"hashvalues": hashvalues})

    def find_pairs(self, sketch: Sketch) -> Pairs:
        from datasketch import LeanMinHash, MinHash, MinHashLSH

        probe = MinHash(num_perm=self.num_perm, seed=1)  # the scheme the sketch was made with
        scheme, dtype = probe.scheme, probe.hashvalues.dtype

        threshold = min(max(self.threshold, 0.01), 0.99)
        lsh = MinHashLSH(threshold=threshold, num_perm=self.num_perm)
        valid = np.flatnonzero(sketch.n_features > 0)
        hv = sketch.arrays["hashvalues"]
        lefts, rights = [], []
        for i in valid.tolist():
            m = LeanMinHash(seed=1, hashvalues=hv[i].astype(dtype), scheme=scheme)
            for j in lsh.query(m):
                lefts.append(j)
                rights.append(i)
            lsh.insert(i, m)
        left, right = np.asarray(lefts, np.int64), np.asarray(rights, np.int64)
        score = (hv[left] == hv[right]).mean(axis=1) if left.size else np.zeros(0)
        return Pairs(left, right, score.astype(np.float32)).canonical()


def register() -> None:
    """Make the anchors available under their ``name`` to ``neardup.methods.make_method``."""
    METHODS.setdefault(DatasketchMinHashLSH.name, DatasketchMinHashLSH)
