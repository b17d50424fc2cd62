"""Test-set leakage: which test documents have near-duplicates in a training corpus.

The report-only, test-side mode of decontamination (:mod:`neardup.decontaminate`): the
matching is :func:`~neardup.decontaminate.find_contamination`'s with its in-memory
matcher of any method; this module words the result per test file.

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

from neardup.decontaminate.memory import digest_keys
from neardup.decontaminate.run import DecontaminationConfig, EvalSets, find_contamination
from neardup.io.batch import DocumentBatch
from neardup.methods.base import Method
from neardup.methods.exact import ExactHash
from neardup.text.normalize import NormalizeConfig

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


def find_leakage(
    train_batches: Iterable[DocumentBatch],
    test_batches: Iterable[DocumentBatch],
    method: Method,
    *,
    progress: bool | None = None,
) -> LeakageReport:
    """Find test documents that have exact or near-duplicates in the training corpus.

    The report-only mode of decontamination (:func:`neardup.decontaminate.
    find_contamination` with the in-memory matcher of any method and no n-gram rule),
    seen from the test side: each test file is an evaluation set.

    Parameters
    ----------
    train_batches, test_batches : iterables of DocumentBatch
        E.g. ``neardup.io.read_corpus(paths, config)`` for each side.
    method : Method
        The near-duplicate method (any of ``neardup.METHODS``).
    progress : bool or None, default None
    """
    from neardup.plan import RunSpec, describe, plan, require

    # Any method runs here: the in-memory executor (the plan says so, and refuses nothing).
    planned = require(plan(RunSpec(method, executor="memory", outputs=("pairs", "report"))),
                      "find_leakage")
    evals = EvalSets.by_source(test_batches)
    config = DecontaminationConfig(ngram=0, near_engine=planned.executor, near_method=method)
    found = find_contamination(train_batches, evals, config, progress=progress)
    exact = ExactHash(normalize=method.normalize or NormalizeConfig())
    key, valid = digest_keys(evals.texts, exact)
    per_file, pairs = _report(found.leaks, evals, key, valid)
    return LeakageReport(per_file=per_file, pairs=pairs, method=method.name,
                         params={"method": method.get_params(), "plan": describe(planned)},
                         timings=found.timings)


def _report(leaks: pa.Table, evals: EvalSets, key: np.ndarray, valid: np.ndarray):
    """Per test file counts, and the flagged pairs: a test document with an exact copy is
    reported once (its first exact copy in training), the others with every near match;
    best match per test document first."""
    item = leaks.column("eval_row").to_numpy()
    train = leaks.column("train_row").to_numpy()
    score = leaks.column("score").to_numpy()
    kind = np.asarray(leaks.column("kind").to_pylist(), object)
    exact_leak = np.zeros(len(evals.ids), bool)
    exact_leak[item[kind == "exact"]] = True
    near_leak = np.zeros(len(evals.ids), bool)
    near_leak[item[kind == "near"]] = True
    near_leak &= ~exact_leak
    # Exact rows: the first training copy of each item; near rows: items not leaked exactly.
    is_exact = kind == "exact"
    order = np.lexsort((train, item))
    first_exact = order[is_exact[order]]
    first_exact = first_exact[np.r_[True, item[first_exact][1:] != item[first_exact][:-1]]] \
        if first_exact.size else first_exact
    chosen = np.concatenate([first_exact, np.flatnonzero(~is_exact & ~exact_leak[item])])
    chosen = chosen[np.lexsort((train[chosen], -score[chosen], item[chosen]))]
    per_file = []
    for number, name in enumerate(evals.names):
        in_file = evals.set_of == number
        docs = int(in_file.sum())
        # Distinct texts: distinct digests, plus one for all empty documents together.
        unique = int(np.unique(key[in_file & valid]).size + (in_file & ~valid).any())
        exact_count, near_count = int((exact_leak & in_file).sum()), int((near_leak & in_file).sum())
        per_file.append({"file": name, "documents": docs, "unique_texts": unique,
                         "exact_leaks": exact_count, "near_leaks": near_count,
                         "leaked": exact_count + near_count,
                         "leaked_fraction": (exact_count + near_count) / docs if docs else 0.0})
    picked = leaks.take(pa.array(chosen, pa.int64()))
    pairs = pa.table({
        "test_id": picked.column("eval_id"),
        "train_id": picked.column("train_id"),
        "score": pa.array(picked.column("score").to_numpy(), pa.float32()),
        "kind": picked.column("kind"),
        "test_file": picked.column("eval_set"),
        "train_file": picked.column("train_file"),
    })
    return per_file, pairs
