"""Clustering agreement metrics for near-duplicate evaluation.

Silcock et al. (2022), "Noise-Robust De-Duplication at Scale", score de-duplication by the
Adjusted Rand Index (Hubert & Arabie 1985) between predicted and gold duplicate clusters;
neardup reports it together with pairwise precision/recall/F1 and the Matthews correlation
over document pairs, and homogeneity/completeness/V-measure (Rosenberg & Hirschberg 2007).

The ARI is scikit-learn's ``adjusted_rand_score`` and the pair counts come from
scikit-learn's ``pair_confusion_matrix`` (the sparse contingency table of the two
labelings: no document pair is ever enumerated, so millions of documents cost a sort):

* ``tp``: pairs together in both labelings,
* ``fp``: together only in the prediction,
* ``fn``: together only in the truth,
* ``tn``: apart in both.

Counts here are unordered pairs (scikit-learn counts ordered pairs, twice these).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sklearn.metrics import adjusted_rand_score
from sklearn.metrics.cluster import pair_confusion_matrix

from neardup.graph.cluster import canonical_labels

__all__ = ["adjusted_rand_index", "cluster_metrics", "metrics_by_group", "pairwise_scores"]


def adjusted_rand_index(true_labels: Any, pred_labels: Any) -> float:
    """Adjusted Rand Index between two clusterings of the same documents.

    Parameters
    ----------
    true_labels, pred_labels : array-like, shape (n_docs,)
        Cluster label of each document; any hashable values (ints, strings). Label
        values and numbering do not matter, only which documents share a label.

    Returns
    -------
    float
        1.0 for identical partitions, about 0.0 for random ones, negative when worse than
        chance. Same value and conventions as ``sklearn.metrics.adjusted_rand_score``:
        1.0 whenever no pair is in disagreement (``fp == fn == 0``), which covers empty
        input, one document, all singletons in both, and one cluster in both.
    """
    return float(adjusted_rand_score(*_encode("adjusted_rand_index", true_labels, pred_labels)))


def pairwise_scores(true_labels: Any, pred_labels: Any) -> dict[str, Any]:
    """Precision, recall and F1 over document pairs placed in the same cluster.

    A pair of documents is *predicted* a duplicate when both share a predicted cluster,
    and *truly* one when both share a true cluster.

    Parameters
    ----------
    true_labels, pred_labels : array-like, shape (n_docs,)
        Cluster label of each document; any hashable values.

    Returns
    -------
    dict
        ``"precision"``, ``"recall"``, ``"f1"`` (float) and ``"tp"``, ``"fp"``, ``"fn"``
        (int, unordered pair counts). Conventions for empty denominators: precision is
        1.0 when no pair is predicted (nothing claimed, nothing wrong), recall is 1.0
        when there is no true pair (nothing to find), and F1 is their harmonic mean (0.0
        if both are 0). So predicting no duplicates when there are some gives
        precision 1, recall 0, F1 0; predicting some when there are none gives
        precision 0, recall 1, F1 0; and all-singletons in both gives 1, 1, 1.
    """
    tp, fp, fn, _ = _pair_counts(*_encode("pairwise_scores", true_labels, pred_labels))
    return _pairwise(tp, fp, fn)


def cluster_metrics(true_labels: Any, pred_labels: Any) -> dict[str, Any]:
    """All clustering metrics in one pass over the contingency table.

    Parameters
    ----------
    true_labels, pred_labels : array-like, shape (n_docs,)
        Cluster label of each document; any hashable values.

    Returns
    -------
    dict
        ``"ari"``: see :func:`adjusted_rand_index` (the primary metric).
        ``"precision"``, ``"recall"``, ``"f1"``: pairwise, see :func:`pairwise_scores`.
        ``"mcc"``: Matthews correlation of the pair confusion counts; 1.0 when
        ``fp == fn == 0`` (as ARI), else 0.0 when a marginal is empty.
        ``"homogeneity"``, ``"completeness"``, ``"v_measure"``: as in
        ``sklearn.metrics.homogeneity_completeness_v_measure``.
        ``"tp"``, ``"fp"``, ``"fn"``, ``"tn"``: unordered pair counts (int).
        ``"n_docs"``, ``"n_true_clusters"``, ``"n_pred_clusters"``: int, singletons
        counted as clusters.
    """
    from sklearn.metrics import homogeneity_completeness_v_measure

    true_codes, pred_codes = _encode("cluster_metrics", true_labels, pred_labels)
    tp, fp, fn, tn = _pair_counts(true_codes, pred_codes)
    if true_codes.size:
        homogeneity, completeness, v_measure = homogeneity_completeness_v_measure(
            true_codes, pred_codes
        )
    else:
        homogeneity = completeness = v_measure = 1.0  # sklearn's convention, no warning
    pairwise = _pairwise(tp, fp, fn)
    return {
        "ari": float(adjusted_rand_score(true_codes, pred_codes)),
        "precision": pairwise["precision"],
        "recall": pairwise["recall"],
        "f1": pairwise["f1"],
        "mcc": _mcc(tp, fp, fn, tn),
        "homogeneity": float(homogeneity),
        "completeness": float(completeness),
        "v_measure": float(v_measure),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "n_docs": int(true_codes.size),
        "n_true_clusters": _n_clusters(true_codes),
        "n_pred_clusters": _n_clusters(pred_codes),
    }


# --------------------------------------------------------------------------- internals


def metrics_by_group(true_labels: Any, pred_labels: Any, groups: Any) -> dict[str, dict[str, Any]]:
    """:func:`cluster_metrics` of each group's documents on their own (e.g. per language).

    Each group keeps the clusters predicted over the whole corpus, restricted to its
    documents: a false merge with another group's document does not count against either
    group (it shows in the overall figures only).

    Parameters
    ----------
    true_labels, pred_labels : array-like, shape (n_docs,)
    groups : array-like, shape (n_docs,)
        Group of each document; any values, reported by their ``str``.

    Returns
    -------
    dict of str -> dict
        Group name -> its metrics, groups sorted by name.
    """
    true_codes, pred_codes = _encode("metrics_by_group", true_labels, pred_labels)
    group_array = np.asarray(groups, dtype=object)
    if group_array.shape != true_codes.shape:
        raise ValueError(
            f"metrics_by_group: parameter 'groups' must have one group per document "
            f"({true_codes.size}); got shape {group_array.shape}."
        )
    names = group_array.astype(str)
    return {name: cluster_metrics(true_codes[names == name], pred_codes[names == name])
            for name in sorted(set(names.tolist()))}


def _encode(caller: str, true_labels: Any, pred_labels: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validate both labelings; return them as int64 codes ``0..C-1``, shape (n,)."""
    codes = []
    for name, labels in (("true_labels", true_labels), ("pred_labels", pred_labels)):
        arr = np.asarray(labels)
        if arr.ndim != 1:
            raise ValueError(
                f"{caller}: parameter '{name}' must be a 1-D array of cluster labels; "
                f"got shape {arr.shape}."
            )
        codes.append(canonical_labels(arr))
    if codes[0].size != codes[1].size:
        raise ValueError(
            f"{caller}: parameter 'pred_labels' must have one label per document, like "
            f"'true_labels' ({codes[0].size}); got {codes[1].size} labels."
        )
    return codes[0], codes[1]


def _n_clusters(codes: np.ndarray) -> int:
    return int(codes.max()) + 1 if codes.size else 0


def _pair_counts(true_codes: np.ndarray, pred_codes: np.ndarray) -> tuple[int, int, int, int]:
    """Unordered pair confusion counts ``(tp, fp, fn, tn)`` (scikit-learn's, halved)."""
    if true_codes.size == 0:
        return 0, 0, 0, 0
    (tn, fp), (fn, tp) = pair_confusion_matrix(true_codes, pred_codes) // 2
    return int(tp), int(fp), int(fn), int(tn)


def _pairwise(tp: int, fp: int, fn: int) -> dict[str, Any]:
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": fp, "fn": fn}


def _mcc(tp: int, fp: int, fn: int, tn: int) -> float:
    if fp == 0 and fn == 0:
        return 1.0  # perfect agreement, including the degenerate all-singletons case
    denominator = math.sqrt(float(tp + fp) * float(tp + fn) * float(tn + fp) * float(tn + fn))
    if denominator == 0.0:
        return 0.0
    return float(tp * tn - fp * fn) / denominator
