"""A run against ground-truth labels: which clusters merge different stories, which stories
the run split.

From the contingency table of (predicted cluster, true label) — one ``np.unique`` over the
paired codes, no per-document loop — every predicted cluster holding more than one label is
a *false merge*, costing ``C(n, 2) - sum C(n_label, 2)`` wrongly linked pairs, and every
label spread over more than one predicted cluster is a *miss*, costing
``C(n, 2) - sum C(n_cluster, 2)`` unlinked true pairs. The worst of each are listed with
their composition.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from neardup.errors import InputError, setting

__all__ = ["label_errors", "read_labels"]

# Groups (labels of a false merge, clusters of a miss) listed per item; the count covers all.
_GROUPS = 20


def _pairs(n: np.ndarray) -> np.ndarray:
    n = n.astype(np.int64)
    return n * (n - 1) // 2


def read_labels(paths: Sequence[str | os.PathLike], config: Any, label_field: str,
                n_docs: int) -> np.ndarray:
    """The ``label_field`` of every record (object array of str, shape (n_docs,)), read in
    :func:`neardup.io.read_corpus` order. A missing or null label is the record's own
    singleton (labelled by its position)."""
    from neardup.io import iter_records

    labels = np.empty(n_docs, dtype=object)
    count = 0
    seen = False  # some record has the field: a name no record has is a misspelling
    first_fields: list[str] | None = None
    for position, record in enumerate(iter_records(list(paths), config)):
        if position >= n_docs:
            count = position + 1
            break
        if first_fields is None:
            first_fields = [str(k) for k in record]
        seen = seen or label_field in record
        value = record.get(label_field)
        if value is None or (isinstance(value, str) and not value.strip()):
            value = f"\x00singleton {position}"
        elif isinstance(value, bool) or not isinstance(value, (str, int)):
            raise InputError(
                f"report: record {position} (0-based): label field {label_field!r} must be a "
                f"string or an integer; got {type(value).__name__} {value!r:.60}."
            )
        labels[position] = str(value)
        count = position + 1
    if count and not seen:
        shown = ", ".join(repr(k) for k in (first_fields or [])[:20]) or "no fields"
        raise InputError(
            f"label field {label_field!r}: none of the {min(count, n_docs):,} records has it, "
            f"so every document would be its own label and the scores would be wrong (the "
            f"first record has {shown}). Set "
            f"{setting('label_field', 'label_field=...')} to the field that holds the "
            "ground-truth label, or leave it out."
        )
    if count != n_docs:
        raise InputError(
            f"report: the input has {count}{'+' if count > n_docs else ''} records but the "
            f"run has {n_docs} documents; pass the input the run read (same files, same order)."
        )
    return labels


def label_errors(
    ids: np.ndarray, clusters: np.ndarray, labels: np.ndarray, limit: int = 200, examples: int = 8
) -> dict[str, Any]:
    """False merges and misses of ``clusters`` against ``labels``.

    Parameters
    ----------
    ids : ndarray of object (str), shape (n_docs,)
    clusters : ndarray of int64, shape (n_docs,)
        Predicted cluster of each document.
    labels : ndarray of object (str), shape (n_docs,)
        True label of each document.
    limit : int, default 200
        False merges and misses listed (the costliest first); the counts cover all.
    examples : int, default 8
        Member ids shown per group in each listed false merge or miss.

    Returns
    -------
    dict
        ``metrics`` (:func:`neardup.eval.metrics.cluster_metrics`: ari, precision,
        recall, ...), ``false_merges`` / ``misses`` (counts) and ``false_merge_list`` /
        ``miss_list``: dicts with ``cluster`` or ``label``, ``size``, ``parts`` (number
        of labels or clusters), ``pairs`` (wrong or missed pairs) and ``groups``
        (``[label or cluster, count, [example ids]]``, largest first).
    """
    from neardup.eval.metrics import cluster_metrics

    metrics = cluster_metrics(labels, clusters)
    _, true_codes = np.unique(labels.astype(str), return_inverse=True)
    true_codes = true_codes.reshape(-1).astype(np.int64)
    pred = clusters.astype(np.int64)
    # Contingency cells: one per (predicted, true) combination present.
    width = int(true_codes.max(initial=0)) + 1
    cells, cell_of_doc, cell_n = np.unique(pred * width + true_codes, return_inverse=True,
                                           return_counts=True)
    cell_of_doc = cell_of_doc.reshape(-1)
    cell_pred, cell_true = cells // width, cells % width
    pred_size = np.bincount(pred)
    true_size = np.bincount(true_codes)
    pred_parts = np.bincount(cell_pred, minlength=pred_size.size)
    true_parts = np.bincount(cell_true, minlength=true_size.size)
    cell_pairs = _pairs(cell_n).astype(np.float64)  # bincount weights are float
    pred_wrong = _pairs(pred_size) - np.rint(
        np.bincount(cell_pred, cell_pairs, pred_size.size)).astype(np.int64)
    true_missed = _pairs(true_size) - np.rint(
        np.bincount(cell_true, cell_pairs, true_size.size)).astype(np.int64)
    first_label = np.empty(true_size.size, dtype=object)
    first_label[true_codes] = labels  # any member's label names the code

    merged = np.flatnonzero(pred_parts > 1)
    merged = merged[np.lexsort((merged, -pred_wrong[merged]))][:limit]
    missed = np.flatnonzero(true_parts > 1)
    missed = missed[np.lexsort((missed, -true_missed[missed]))][:limit]
    # Example ids per cell, only for the cells of listed groups.
    wanted = np.isin(cell_pred, merged) | np.isin(cell_true, missed)
    docs = np.flatnonzero(wanted[cell_of_doc])
    docs = docs[np.argsort(cell_of_doc[docs], kind="stable")]
    doc_cells = cell_of_doc[docs]
    run_start = np.flatnonzero(np.r_[True, doc_cells[1:] != doc_cells[:-1]])
    rank = np.arange(docs.size) - np.repeat(run_start, np.diff(np.r_[run_start, docs.size]))
    docs = docs[rank < examples]
    members: dict[int, list[str]] = {}
    for cell, doc_id in zip(cell_of_doc[docs].tolist(), ids[docs].tolist()):
        members.setdefault(cell, []).append(doc_id)

    def groups(cell_index: np.ndarray, name_of) -> list[list[Any]]:
        order = cell_index[np.lexsort((cell_index, -cell_n[cell_index]))][:_GROUPS]
        return [[name_of(c), int(cell_n[c]), members.get(int(c), [])] for c in order.tolist()]

    # Cells are sorted by predicted cluster (the major key); a second order groups them
    # by label, so each listed group's cells are one slice.
    by_true = np.argsort(cell_true, kind="stable")
    sorted_true = cell_true[by_true]

    def pred_cells(p: int) -> np.ndarray:
        return np.arange(np.searchsorted(cell_pred, p), np.searchsorted(cell_pred, p, "right"))

    def true_cells(t: int) -> np.ndarray:
        return by_true[np.searchsorted(sorted_true, t) : np.searchsorted(sorted_true, t, "right")]

    false_merge_list = [
        {"cluster": int(p), "size": int(pred_size[p]), "parts": int(pred_parts[p]),
         "pairs": int(pred_wrong[p]),
         "groups": groups(pred_cells(p), lambda c: _shown(first_label[cell_true[c]]))}
        for p in merged.tolist()
    ]  # fmt: skip
    miss_list = [
        {"label": _shown(first_label[t]), "size": int(true_size[t]), "parts": int(true_parts[t]),
         "pairs": int(true_missed[t]),
         "groups": groups(true_cells(t), lambda c: int(cell_pred[c]))}
        for t in missed.tolist()
    ]  # fmt: skip
    return {
        "metrics": {k: (round(v, 4) if isinstance(v, float) else v) for k, v in metrics.items()},
        "false_merges": int((pred_parts > 1).sum()),
        "misses": int((true_parts > 1).sum()),
        "false_merge_list": false_merge_list,
        "miss_list": miss_list,
    }


def _shown(label: str) -> str:
    return "(no label)" if label.startswith("\x00") else label
