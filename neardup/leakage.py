"""Test-set leakage: which test documents have near-duplicates in a training corpus.

Following Silcock et al. (2022, sec. 7, Table 5): exact duplicates inside the test set are
collapsed first (each distinct normalized text counts once), test documents with an exact
copy in training are reported apart, and a near-duplicate method then links the remaining
test documents to training documents. Only pairs that cross from test to train count.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.graph.edges import Pairs
from neardup.io.batch import DocumentBatch
from neardup.methods.base import Method
from neardup.methods.exact import ExactHash
from neardup.pipeline import sketch_corpus
from neardup.progress import StageTimer

__all__ = ["LeakageReport", "find_leakage"]


@dataclass
class LeakageReport:
    """Leakage found between a test and a training corpus.

    Attributes
    ----------
    per_file : list of dict
        One entry per test file: ``file``, ``documents``, ``unique_texts`` (after collapsing
        exact duplicates inside the test set), ``exact_leaks`` (test documents with an
        exact copy in training), ``near_leaks`` (further test documents with a
        near-duplicate in training), ``leaked`` (either) and ``leaked_fraction``.
    pairs : pyarrow.Table
        Flagged (test, train) pairs: ``test_id``, ``train_id``, ``score``, ``kind``
        ("exact" or "near"), ``test_file``, ``train_file``; best match per test document
        first.
    method : str
    params : dict
    timings : dict of str -> float
    """

    per_file: list[dict[str, Any]]
    pairs: pa.Table
    method: str
    params: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        documents = sum(f["documents"] for f in self.per_file)
        leaked = sum(f["leaked"] for f in self.per_file)
        return {
            "test_documents": documents,
            "exact_leaks": sum(f["exact_leaks"] for f in self.per_file),
            "near_leaks": sum(f["near_leaks"] for f in self.per_file),
            "leaked": leaked,
            "leaked_fraction": leaked / documents if documents else 0.0,
        }


def _tagged(batches: Iterable[DocumentBatch], is_test: bool, flags: list[np.ndarray]):
    for batch in batches:
        flags.append(np.full(len(batch), is_test))
        yield batch


def find_leakage(
    train_batches: Iterable[DocumentBatch],
    test_batches: Iterable[DocumentBatch],
    method: Method,
    *,
    progress: bool | None = None,
) -> LeakageReport:
    """Find test documents that have exact or near-duplicates in the training corpus.

    Parameters
    ----------
    train_batches, test_batches : iterables of DocumentBatch
        E.g. ``neardup.io.read_corpus(paths, config)`` for each side.
    method : Method
        The near-duplicate method (any of ``neardup.METHODS``).
    progress : bool or None, default None
    """
    timer = StageTimer()
    flags: list[np.ndarray] = []

    def both() -> Iterable[DocumentBatch]:
        yield from _tagged(train_batches, False, flags)
        yield from _tagged(test_batches, True, flags)

    # One read of the inputs feeds both sketches: the exact digests and the method's.
    exact = ExactHash(normalize=getattr(method, "normalize", ExactHash().normalize))
    combined = _CombinedSketcher(exact, method)
    corpus = sketch_corpus(both(), combined, timer=timer, progress=progress)
    if corpus.n_docs == 0:  # both corpora empty: nothing leaks
        return LeakageReport(per_file=[], pairs=_empty_pairs(), method=method.name,
                             params={"method": method.get_params()}, timings=timer.seconds)
    is_test = np.concatenate(flags) if flags else np.zeros(0, bool)
    exact_sketch, method_sketch = combined.split(corpus.sketch)
    with timer.stage("pairs"):
        near_pairs = (method.match(method_sketch, dates=corpus.dates).pairs if corpus.n_docs
                      else Pairs.empty())
    with timer.stage("report"):
        digest = exact_sketch.arrays["digest"]
        report = _report(corpus, is_test, digest, exact_sketch.n_features, near_pairs)
    return LeakageReport(
        per_file=report[0],
        pairs=report[1],
        method=method.name,
        params={"method": method.get_params()},
        timings=timer.seconds,
    )


def _empty_pairs() -> pa.Table:
    """The flagged-pairs table with no row."""
    strings = ("test_id", "train_id")
    return pa.table({
        **{name: pa.array([], pa.string()) for name in strings},
        "score": pa.array([], pa.float32()),
        **{name: pa.array([], pa.string()) for name in ("kind", "test_file", "train_file")},
    })


class _CombinedSketcher(Method):
    """Sketch a batch with two methods at once (the exact digests and the method's)."""

    name = "combined"

    def __init__(self, first: Method, second: Method) -> None:
        self._first, self._second = first, second

    def get_params(self) -> dict[str, Any]:
        return {}

    def sketch(self, texts):
        from neardup.methods.base import Sketch

        a, b = self._first.sketch(texts), self._second.sketch(texts)
        arrays = {"a:" + k: v for k, v in a.arrays.items()} | {"b:" + k: v for k, v in b.arrays.items()}
        arrays["a:n_features"] = a.n_features
        return Sketch(b.n_features, arrays, b.sets, ragged=b.ragged)

    def split(self, sketch):
        from neardup.methods.base import Sketch

        arrays = sketch.arrays
        first = Sketch(
            arrays["a:n_features"],
            {k[2:]: v for k, v in arrays.items() if k.startswith("a:") and k != "a:n_features"},
        )
        second = Sketch(
            sketch.n_features,
            {k[2:]: v for k, v in arrays.items() if k.startswith("b:")},
            sketch.sets,
            ragged=sketch.ragged,
        )
        return first, second

    def find_pairs(self, sketch):  # pragma: no cover - never called
        raise NotImplementedError


def _cross(pairs: Pairs, is_test: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(test, train, score) for pairs joining a test and a training document."""
    left_test, right_test = is_test[pairs.left], is_test[pairs.right]
    cross = left_test != right_test
    test = np.where(left_test, pairs.left, pairs.right)[cross]
    train = np.where(left_test, pairs.right, pairs.left)[cross]
    return test, train, pairs.score[cross]


def _exact_matches(key, valid, is_test):
    """For each test document, a training document with the same digest key, or -1."""
    train_pos = np.flatnonzero(~is_test & valid)
    order = np.argsort(key[train_pos], kind="stable")
    sorted_keys, sorted_pos = key[train_pos][order], train_pos[order]
    match = np.full(key.shape[0], -1, dtype=np.int64)
    test_pos = np.flatnonzero(is_test & valid)
    if sorted_keys.size and test_pos.size:
        at = np.minimum(np.searchsorted(sorted_keys, key[test_pos]), sorted_keys.size - 1)
        hit = sorted_keys[at] == key[test_pos]
        match[test_pos[hit]] = sorted_pos[at[hit]]
    return match


def _report(corpus, is_test, digest, n_features, near_pairs):
    n = corpus.n_docs
    valid = n_features > 0
    # One 64-bit key per 128-bit digest: collisions stay negligible at corpus scale.
    key = digest[:, 0] ^ (digest[:, 1] * np.uint64(0x9E3779B97F4A7C15)) if n else np.zeros(0, np.uint64)
    exact_match = _exact_matches(key, valid, is_test)
    exact_leak = exact_match >= 0
    n_test, n_train, n_score = _cross(near_pairs, is_test)
    near_leak = np.zeros(n, dtype=bool)
    near_leak[n_test] = True
    near_leak &= ~exact_leak

    per_file = []
    for source in np.unique(corpus.sources[is_test]).tolist():
        in_file = is_test & (corpus.sources == source)
        docs = int(in_file.sum())
        # Distinct texts: distinct digests, plus one for all empty documents together.
        unique = int(np.unique(key[in_file & valid]).size + (in_file & ~valid).any())
        exact_count = int((exact_leak & in_file).sum())
        near_count = int((near_leak & in_file).sum())
        per_file.append(
            {
                "file": corpus.source_names[source],
                "documents": docs,
                "unique_texts": unique,
                "exact_leaks": exact_count,
                "near_leaks": near_count,
                "leaked": exact_count + near_count,
                "leaked_fraction": (exact_count + near_count) / docs if docs else 0.0,
            }
        )

    e_test = np.flatnonzero(exact_leak)
    e_train = exact_match[e_test]
    keep_near = ~exact_leak[n_test]  # a test document leaked exactly is reported once
    n_test, n_train, n_score = n_test[keep_near], n_train[keep_near], n_score[keep_near]
    test = np.concatenate([e_test, n_test])
    train = np.concatenate([e_train, n_train])
    score = np.concatenate([np.ones(e_test.size, np.float32), n_score]).astype(np.float32)
    kind = np.array(["exact"] * e_test.size + ["near"] * n_test.size, dtype=object)
    order = np.lexsort((train, -score, test))
    test, train, score, kind = test[order], train[order], score[order], kind[order]
    names = np.array(corpus.source_names, dtype=object)
    table = pa.table(
        {
            "test_id": pa.array(corpus.ids[test].tolist(), pa.string()),
            "train_id": pa.array(corpus.ids[train].tolist(), pa.string()),
            "score": pa.array(score, pa.float32()),
            "kind": pa.array(kind.tolist(), pa.string()),
            "test_file": pa.array(names[corpus.sources[test]].tolist(), pa.string()),
            "train_file": pa.array(names[corpus.sources[train]].tolist(), pa.string()),
        }
    )
    return per_file, table
