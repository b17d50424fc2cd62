"""Score a method against a labeled corpus: clustering metrics and retrieval Recall@k.

:func:`evaluate` runs the same pipeline as :func:`neardup.dedup` (sketch -> pairs ->
clusters) over the texts of a :class:`~neardup.eval.labeled.LabeledCorpus` and compares
the predicted clusters with the ground truth: Adjusted Rand Index, the primary metric of
Silcock et al. (2022, section 5), plus pairwise precision/recall/F1, MCC and
homogeneity/completeness/V-measure (see :func:`neardup.eval.cluster_metrics`).

:func:`recall_at_k` is the retrieval view used by the W4NT3D benchmark (Zhang et al. 2023,
"RETSim", section 4.2): every document with a true duplicate is a query, its candidates
are ranked by score, and Recall@k is the share of queries with a true duplicate among
the top k. It takes any scored candidate :class:`~neardup.graph.Pairs`, so a lexical
method's pairs, an embedding method's nearest neighbours or any other score function
over candidate pairs plug in alike.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from neardup.errors import check_int
from neardup.eval.labeled import LabeledCorpus
from neardup.eval.metrics import cluster_metrics, metrics_by_group
from neardup.graph import Pairs, canonical_labels
from neardup.io.batch import DocumentBatch
from neardup.methods import Method, make_method
from neardup.pipeline import ClusterConfig, run, run_on_sketch, sketch_corpus

__all__ = ["build_method", "cluster_config", "evaluate", "recall_at_k"]

_BATCH = 10_000


def build_method(method: str, params: Mapping[str, Any] | None = None) -> Method:
    """Build ``method`` from ``params``, accepting nested configs in their dict form.

    ``params`` may come from JSON (a tuning file, ``Method.get_params()``): a dict given
    for a parameter whose default is a config object (``shingle``, ``normalize``) is
    turned back into that config class.

    Raises
    ------
    ValueError
        For an unknown method or parameter, or an invalid value.
    """
    return make_method(method, **dict(params or {}))


def cluster_config(cluster: ClusterConfig | Mapping[str, Any] | None) -> ClusterConfig:
    """A :class:`ClusterConfig` from itself, a dict of its fields, or None (defaults)."""
    if cluster is None:
        return ClusterConfig()
    if isinstance(cluster, ClusterConfig):
        return cluster
    if isinstance(cluster, Mapping):
        try:
            return ClusterConfig(**cluster)
        except TypeError as exc:
            raise ValueError(
                f"evaluate: parameter 'cluster' must be a ClusterConfig or a dict of its "
                f"fields; got {dict(cluster)!r} ({exc})."
            ) from None
    raise ValueError(
        f"evaluate: parameter 'cluster' must be a ClusterConfig or a dict; got {cluster!r}."
    )


def _batches(corpus: LabeledCorpus) -> Iterator[DocumentBatch]:
    for start in range(0, len(corpus), _BATCH):
        stop = min(start + _BATCH, len(corpus))
        yield DocumentBatch(
            ids=corpus.ids[start:stop].tolist(),
            texts=corpus.texts[start:stop],
            dates=None if corpus.dates is None else corpus.dates[start:stop],
            source="<labeled>",
            rows=np.arange(start, stop, dtype=np.int64),
        )


def evaluate(
    corpus: LabeledCorpus,
    method: str,
    *,
    params: Mapping[str, Any] | None = None,
    cluster: ClusterConfig | Mapping[str, Any] | None = None,
    ks: Iterable[int] | None = None,
    progress: bool | None = False,
    sketch_cache: dict[str, Any] | None = None,
    groups: Any = None,
) -> dict[str, Any]:
    """Run ``method`` on the corpus texts and score its clusters against the ground truth.

    Parameters
    ----------
    corpus : LabeledCorpus
        The documents to de-duplicate, with their true clusters. Select the split first
        (``corpus.select_split("test")``): every text given here is processed.
    method : str
        A name in ``neardup.METHODS``.
    params : dict or None, default None
        Method parameters (e.g. ``{"threshold": 0.4}``); nested configs may be dicts (see
        :func:`build_method`). None uses the method's defaults.
    cluster : ClusterConfig, dict or None, default None
        How pairs become clusters; None is ``ClusterConfig()`` ("auto": the method's
        recommended clustering, else connected components).
    ks : iterable of int or None, default None
        Also report retrieval Recall@k over the method's scored pairs for these k (see
        :func:`recall_at_k`), under ``"retrieval"``. None skips it.
    progress : bool or None, default False
        Progress bar while sketching.
    sketch_cache : dict or None, default None
        Corpus sketches by :meth:`~neardup.methods.Method.sketch_key`; pass the same dict
        to repeated calls on the same corpus (as :func:`~neardup.eval.tune` does) so
        points that differ only in pair-stage parameters such as the threshold sketch the
        corpus once.
    groups : array-like of shape (n_docs,) or None, default None
        A group per document (e.g. its language): also score each group's documents
        on their own, under ``"groups"`` (see :func:`~neardup.eval.metrics.metrics_by_group`).

    Returns
    -------
    dict
        Every key of :func:`neardup.eval.cluster_metrics` (``ari``, ``precision``,
        ``recall``, ``f1``, ``mcc``, ``homogeneity``, ``completeness``, ``v_measure``,
        pair counts, ``n_docs``, ``n_true_clusters``, ``n_pred_clusters``), plus
        ``method``, ``params`` (all method parameters, JSON-ready), ``cluster`` (the
        clustering parameters, "auto" resolved), ``seconds`` (wall time of the run),
        ``timings`` (seconds per stage), ``n_pairs`` and, when ``ks`` is given, ``retrieval``;
        when ``groups`` is given, ``groups`` (group name -> its metrics).

    Examples
    --------
    >>> from neardup.eval.evaluate import LabeledCorpus, evaluate
    >>> corpus = LabeledCorpus(ids=["a", "b", "c"], clusters=["x", "x", "y"],
    ...     texts=["the cat sat on the mat", "The cat sat on the mat!", "a dog barked"])
    >>> round(evaluate(corpus, "exact")["ari"], 3)
    1.0
    """
    if not isinstance(corpus, LabeledCorpus):
        raise ValueError(
            f"evaluate: parameter 'corpus' must be a LabeledCorpus; got {type(corpus).__name__}."
        )
    if groups is not None and np.shape(groups) != (len(corpus),):
        raise ValueError(f"evaluate: parameter 'groups' must hold one group per document "
                         f"({len(corpus)}); got shape {np.shape(groups)}.")
    from neardup.plan import RunSpec, plan

    method_obj = build_method(method, params)
    # Recall@k ranks every scored pair; the out-of-core stage keeps only the spanning
    # forest, so retrieval runs in memory (labeled sets are small). A cached sketch is
    # matched in memory too.
    executor = "memory" if ks is not None or sketch_cache is not None else "local"
    planned = plan(RunSpec(method_obj, cluster_config(cluster), executor,
                           outputs=("clusters", "pairs")))
    config = planned.cluster
    start = time.perf_counter()
    if sketch_cache is None:
        result = run(_batches(corpus), method_obj, cluster=config, progress=progress,
                     total=len(corpus), engine=planned.executor)
    else:
        key = method_obj.sketch_key()
        if key not in sketch_cache:
            sketch_cache[key] = sketch_corpus(_batches(corpus), method_obj, progress=progress,
                                              total=len(corpus))
        result = run_on_sketch(sketch_cache[key], method_obj, cluster=config)
    seconds = time.perf_counter() - start
    out: dict[str, Any] = {
        "method": method,
        "params": method_obj.get_params(),
        "cluster": config.get_params(),
        **cluster_metrics(corpus.clusters, result.clusters),
        "n_pairs": len(result.pairs),
        "seconds": seconds,
        "timings": dict(result.timings),
    }
    if ks is not None:
        out["retrieval"] = recall_at_k(result.pairs, corpus.clusters, ks)
    if groups is not None:
        out["groups"] = metrics_by_group(corpus.clusters, result.clusters, groups)
    return out


def recall_at_k(pairs: Pairs, true_labels: Any, ks: Iterable[int] = (1, 5, 10)) -> dict[str, Any]:
    """Retrieval Recall@k of finding each document's true duplicate among its candidates.

    Every document whose true cluster has another member is a *query*. Its candidates
    are the documents it is paired with (in either direction), ranked by score, highest
    first; equal scores are ranked by document position, lowest first. A query is a hit
    at k when a true duplicate is among its first k candidates. A query without
    candidates is a miss at every k. A pair given twice counts once, with its highest
    score.

    Parameters
    ----------
    pairs : Pairs
        Scored candidate pairs over document positions ``0..n_docs-1``: a method's
        pairs, or any score function applied to candidate pairs, e.g.
        ``Pairs(left, right, score_fn(left, right))``. For a thresholded method, only
        the candidates above its threshold are ranked; lower the threshold for a pure
        retrieval measurement.
    true_labels : array-like, shape (n_docs,)
        Ground-truth cluster label of each document (any hashable values).
    ks : iterable of int, default (1, 5, 10)
        Cut-offs, each >= 1.

    Returns
    -------
    dict
        ``"recall@k"`` (float in [0, 1]) for each k, ascending; ``"mrr"``, the mean
        reciprocal rank of the first true duplicate (0 for a miss); ``"n_queries"``;
        ``"n_queries_without_candidates"``. With no query at all (no true duplicates),
        every recall and the MRR are 1.0 (nothing to find), as pairwise recall in
        :func:`neardup.eval.pairwise_scores`.

    Examples
    --------
    >>> import numpy as np
    >>> from neardup.graph import Pairs
    >>> pairs = Pairs(np.array([0, 0]), np.array([1, 2]), np.array([0.9, 0.5]))
    >>> recall_at_k(pairs, ["a", "b", "a"], ks=(1, 2))["recall@1"]  # doc 0 ranks 1 first
    0.5
    """
    if not isinstance(pairs, Pairs):
        raise ValueError(f"recall_at_k: parameter 'pairs' must be a Pairs; got {pairs!r:.60}.")
    labels = np.asarray(true_labels)
    if labels.ndim != 1:
        raise ValueError(
            "recall_at_k: parameter 'true_labels' must be a 1-D array of cluster labels; "
            f"got shape {labels.shape}."
        )
    codes = canonical_labels(labels)
    n = codes.size
    cutoffs = _check_ks("recall_at_k", ks)
    if len(pairs) and (min(pairs.left.min(), pairs.right.min()) < 0
                       or max(pairs.left.max(), pairs.right.max()) >= n):
        raise ValueError(
            f"recall_at_k: parameter 'pairs' must hold document positions in [0, {n}) "
            f"(one per true label); got positions from "
            f"{min(pairs.left.min(), pairs.right.min())} to "
            f"{max(pairs.left.max(), pairs.right.max())}."
        )
    is_query = np.bincount(codes, minlength=1)[codes] > 1 if n else np.zeros(0, bool)
    queries = np.flatnonzero(is_query)
    p = pairs.canonical()
    query = np.concatenate([p.left, p.right])
    cand = np.concatenate([p.right, p.left])
    score = np.concatenate([p.score, p.score])
    keep = is_query[query]
    query, cand, score = query[keep], cand[keep], score[keep]
    # Group by query; within it, by descending score, then ascending candidate position.
    order = np.lexsort((cand, -score.astype(np.float64), query))
    query, cand = query[order], cand[order]
    index = np.arange(query.size)
    group_start = np.zeros(query.size, dtype=np.int64)
    if query.size:
        boundary = np.ones(query.size, dtype=bool)
        boundary[1:] = query[1:] != query[:-1]
        group_start = np.maximum.accumulate(np.where(boundary, index, 0))
    rank = index - group_start  # 0 = best candidate
    hit = codes[query] == codes[cand]
    never = np.iinfo(np.int64).max
    first_hit = np.full(n, never, dtype=np.int64)
    np.minimum.at(first_hit, query[hit], rank[hit])
    has_candidates = np.zeros(n, dtype=bool)
    has_candidates[query] = True
    best = first_hit[queries]
    n_queries = int(queries.size)
    out: dict[str, Any] = {}
    for k in cutoffs:
        out[f"recall@{k}"] = float((best < k).sum() / n_queries) if n_queries else 1.0
    found = best != never
    reciprocal = np.zeros(n_queries)
    reciprocal[found] = 1.0 / (best[found] + 1)
    out["mrr"] = float(reciprocal.mean()) if n_queries else 1.0
    out["n_queries"] = n_queries
    out["n_queries_without_candidates"] = int((~has_candidates[queries]).sum())
    return out


def _check_ks(caller: str, ks: Iterable[int]) -> list[int]:
    if isinstance(ks, int) and not isinstance(ks, bool):
        ks = [ks]
    try:
        values = list(ks)
    except TypeError:
        raise ValueError(
            f"{caller}: parameter 'ks' must be a list of integers >= 1; got {ks!r}."
        ) from None
    if not values:
        raise ValueError(f"{caller}: parameter 'ks' must name at least one k; got [].")
    values = [int(k) if isinstance(k, np.integer) else k for k in values]
    return sorted({check_int(caller, "ks", k, low=1) for k in values})
