"""Gather what the HTML report shows from a run's outputs and its input corpus.

Everything corpus-wide is computed with array operations over the run's tables (cluster
sizes, the score histogram, the threshold sweep, template clusters, label errors). Texts
are read for a bounded set of documents only: the members of the ``max_clusters`` largest
clusters (at most ``max_members`` each, the representative first) and the documents of
the pairs listed as kept apart by the time window. The input is streamed once, in the
order the run read it, and reading stops as soon as those documents are found; each text
is cut to ``max_chars`` characters. So the report of a run of any size holds a few
thousand texts at most (see :class:`ReportLimits`), plus counts for the rest.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from neardup.errors import InputError, check_int
from neardup.report.align import align_words
from neardup.report.inputs import check_corpus
from neardup.report.labels import label_errors, read_labels
from neardup.report.run import RunOutputs
from neardup.report.sweep import score_histogram, score_threshold, threshold_sweep

__all__ = ["ReportLimits", "collect_report"]

# Segment codes in the embedded data (short keys keep the file small).
_OP_CODE = {"equal": 0, "delete": 1, "insert": 2, "replace": 3}
_SIZE_BINS = ((1, 1), (2, 2), (3, 5), (6, 10), (11, 50), (51, 100), (101, 1000), (1001, None))


@dataclass(frozen=True)
class ReportLimits:
    """How much of a run the report embeds.

    Parameters
    ----------
    max_clusters : int, default 500
        Clusters shown with their texts: the largest first (ties: lowest cluster id),
        singletons only when there are fewer duplicate clusters. The counts (summary,
        size distribution, sweep) always cover every cluster.
    max_members : int, default 50
        Members shown per cluster, the representative first, then in input order.
    max_chars : int, default 2000
        Characters kept of each text (alignments cover the kept part).
    max_listed : int, default 200
        Rows of the other lists: template clusters, pairs outside the time window
        (highest scores first), false merges and misses.

    The embedded text is at most about ``max_clusters * max_members * max_chars``
    characters (50 MB with the defaults, reached only when 500 clusters of 50+ members
    all have 2,000-character texts; a typical news run gives a few MB).
    """

    max_clusters: int = 500
    max_members: int = 50
    max_chars: int = 2000
    max_listed: int = 200

    def __post_init__(self) -> None:
        for name in ("max_clusters", "max_members", "max_chars", "max_listed"):
            check_int("ReportLimits", name, getattr(self, name), low=1)


def _ranked_clusters(clusters: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """(cluster ids of the ``limit`` largest clusters, all cluster sizes)."""
    sizes = np.bincount(clusters) if clusters.size else np.zeros(0, np.int64)
    present = np.flatnonzero(sizes)
    order = present[np.lexsort((present, -sizes[present]))]
    return order[:limit], sizes


def _members(outputs: RunOutputs, chosen: np.ndarray, max_members: int) -> np.ndarray:
    """Positions of the shown members, grouped by ``chosen`` order: representative first,
    then input order, at most ``max_members`` per cluster."""
    rank = np.full(int(outputs.clusters.max(initial=-1)) + 1, -1, dtype=np.int64)
    rank[chosen] = np.arange(chosen.size)
    docs = np.flatnonzero(rank[outputs.clusters] >= 0) if outputs.n_docs else np.zeros(0, np.int64)
    docs = docs[np.lexsort((docs, ~outputs.representative[docs], rank[outputs.clusters[docs]]))]
    group = rank[outputs.clusters[docs]]
    start = np.flatnonzero(np.r_[True, group[1:] != group[:-1]]) if docs.size else docs
    within = np.arange(docs.size) - np.repeat(start, np.diff(np.r_[start, docs.size]))
    return docs[within < max_members]


def _read_texts(
    inputs: Sequence[str | os.PathLike], config: Any, outputs: RunOutputs, needed: np.ndarray
) -> tuple[dict[int, str], dict[int, str]]:
    """Raw texts and ISO dates of the ``needed`` positions, streaming the input once and
    stopping when all are found; checks each found document's id against the run."""
    from neardup.io import read_corpus

    texts: dict[int, str] = {}
    dates: dict[int, str] = {}
    if needed.size == 0:
        return texts, dates
    mask = np.zeros(outputs.n_docs, dtype=bool)
    mask[needed] = True
    remaining = int(mask.sum())
    start = 0
    batches = read_corpus(list(inputs), config)
    for batch in batches:
        n = len(batch)
        local = np.flatnonzero(mask[start : start + n]) if start < outputs.n_docs else []
        for i in np.asarray(local).tolist():
            position = start + i
            if batch.ids[i] != outputs.ids[position]:
                raise InputError(
                    f"report: document {position} (0-based) of the input has id "
                    f"{batch.ids[i]!r}, but the run's document {position} is "
                    f"{outputs.ids[position]!r}. Pass the input the run read, with the same "
                    "--id-field, --text-field and --limit."
                )
            texts[position] = batch.texts[i]
            if batch.dates is not None and not np.isnat(batch.dates[i]):
                dates[position] = str(batch.dates[i].astype("datetime64[s]"))
        remaining -= len(local)
        start += n
        if remaining == 0:
            break
    if remaining == 0 and config.date_field is not None and not dates:
        # None of the documents read has a date: read on, so that the reader can tell a
        # --date-field no record has (an error) from documents without dates.
        for _ in batches:
            pass
    if remaining:
        raise InputError(
            f"report: the input has {start} documents but the run has {outputs.n_docs}; "
            "pass the input the run read (same files, same order, same --limit)."
        )
    return texts, dates


def _best_edges(outputs: RunOutputs, shown: np.ndarray, rep_of: np.ndarray) -> dict[int, tuple]:
    """For each shown non-representative member: its edge to the representative when
    there is one, else its strongest edge; ``(partner, score, type, direct)``."""
    inside = np.zeros(outputs.n_docs, dtype=bool)
    inside[shown] = True
    keep = ~outputs.pair_outside & inside[outputs.pair_left] & inside[outputs.pair_right]
    left, right = outputs.pair_left[keep], outputs.pair_right[keep]
    score = outputs.pair_score[keep].astype(np.float64)
    ptype = outputs.pair_type[keep]
    # Both directions: (doc, partner).
    doc = np.concatenate([left, right])
    partner = np.concatenate([right, left])
    score2 = np.concatenate([score, score])
    type2 = np.concatenate([ptype, ptype])
    direct = partner == rep_of[doc]
    order = np.lexsort((-np.nan_to_num(score2, nan=-1.0), ~direct, doc))
    doc, partner, score2, type2, direct = (a[order] for a in (doc, partner, score2, type2, direct))
    first = np.r_[True, doc[1:] != doc[:-1]] if doc.size else np.zeros(0, bool)
    return {
        int(d): (int(p), None if np.isnan(s) else round(float(s), 4), str(t), bool(k))
        for d, p, s, t, k in zip(doc[first].tolist(), partner[first].tolist(),
                                 score2[first].tolist(), type2[first].tolist(),
                                 direct[first].tolist())
    }  # fmt: skip


def _fill_pair_types(outputs: RunOutputs, raw: dict[int, str], dates: dict[int, str]) -> None:
    """Type the shown pairs when the run did not (dedup without --pairs-out), from the
    texts just read: the same rules as the run's pair types (:mod:`neardup.methods.pair_types`)."""
    from neardup.graph.edges import Pairs
    from neardup.methods.pair_types import classify_pairs
    from neardup.text import NormalizeConfig, normalize_batch

    untyped = outputs.pair_type == ""
    have = np.zeros(outputs.n_docs, dtype=bool)
    have[list(raw)] = True
    select = untyped & have[outputs.pair_left] & have[outputs.pair_right]
    if not select.any():
        return
    method_params = outputs.params.get("method") or {}
    normalize = method_params.get("normalize")
    try:
        config = NormalizeConfig(**normalize) if isinstance(normalize, dict) else NormalizeConfig()
    except (TypeError, ValueError):
        config = NormalizeConfig()
    positions = sorted(raw)
    normalized = dict(zip(positions, normalize_batch([raw[p] for p in positions], config)))
    window = ((outputs.params.get("cluster") or {}).get("time_window_hours")
              or method_params.get("time_window_hours"))  # fmt: skip
    date_array = np.full(outputs.n_docs, np.datetime64("NaT"), "datetime64[s]")
    for position, iso in dates.items():
        date_array[position] = np.datetime64(iso)
    pairs = Pairs(outputs.pair_left[select], outputs.pair_right[select], outputs.pair_score[select])
    sizes = np.bincount(outputs.clusters)[outputs.clusters]
    types = classify_pairs(pairs, normalized, dates=date_array, cluster_sizes=sizes,
                           **({"time_window_hours": window} if window else {}))
    outputs.pair_type = outputs.pair_type.copy()
    outputs.pair_type[select] = types.astype(object)


def _segments(rep: str, text: str) -> list[list[Any]]:
    out: list[list[Any]] = []
    for op, a, b in align_words(rep, text):
        code = _OP_CODE[op]
        out.append([code, b] if code in (0, 2) else [code, a] if code == 1 else [code, a, b])
    return out


def _size_distribution(sizes: np.ndarray) -> list[dict[str, Any]]:
    sizes = sizes[sizes > 0]
    rows = []
    for lo, hi in _SIZE_BINS:
        inside = (sizes >= lo) & (sizes <= hi if hi is not None else True)
        label = str(lo) if lo == hi else (f"{lo}-{hi}" if hi is not None else f"> {lo - 1}")
        rows.append({"size": label, "clusters": int(inside.sum()),
                     "documents": int(sizes[inside].sum())})
    return rows


def _template_clusters(outputs: RunOutputs, sizes: np.ndarray, limit: int) -> list[dict]:
    if outputs.template_clusters is not None:
        return outputs.template_clusters[:limit]
    members = np.flatnonzero(outputs.template)
    if members.size == 0:
        return []
    groups = outputs.clusters[members]
    found = np.unique(groups)
    order = np.lexsort((found, -sizes[found]))[:limit]
    return [{"cluster": int(found[k]), "size": int(sizes[found[k]]),
             "examples": outputs.ids[members[groups == found[k]][:3]].tolist()}
            for k in order.tolist()]  # fmt: skip


def collect_report(
    outputs: RunOutputs,
    inputs: Sequence[str | os.PathLike],
    reader: Any = None,
    *,
    label_field: str | None = None,
    limits: ReportLimits = ReportLimits(),
) -> dict[str, Any]:
    """Everything the HTML report embeds, as JSON-ready data.

    Parameters
    ----------
    outputs : RunOutputs
        From :func:`neardup.report.load_run` or :func:`neardup.report.outputs_from_result`.
    inputs : sequence of paths
        The corpus the run read, in the same order; texts are read from it.
    reader : ReaderConfig or None, default None
        How the run read it (text, id and date fields, ``limit``); None: the defaults.
    label_field : str or None, default None
        Field holding a ground-truth cluster label on each input record; when given, the
        report lists the run's false merges and misses (one more pass over the input).
    limits : ReportLimits

    Returns
    -------
    dict
        The report data (see :mod:`neardup.report.html` for how it is shown).
    """
    from neardup._version import __version__
    from neardup.io import ReaderConfig

    reader = reader or ReaderConfig()
    if not inputs:
        raise InputError(
            "report: no input corpus: give --input (the files the run read), or a --report "
            "JSON that records them."
        )
    check_corpus(outputs, inputs, reader)
    chosen, sizes = _ranked_clusters(outputs.clusters, limits.max_clusters)
    shown = _members(outputs, chosen, limits.max_members)
    rep_position = np.full(sizes.size, -1, dtype=np.int64)
    reps = np.flatnonzero(outputs.representative)
    rep_position[outputs.clusters[reps]] = reps
    rep_of = rep_position[outputs.clusters] if outputs.n_docs else np.zeros(0, np.int64)

    outside = np.flatnonzero(outputs.pair_outside)
    outside = outside[np.argsort(-outputs.pair_score[outside], kind="stable")][: limits.max_listed]
    needed = np.unique(np.concatenate([shown, outputs.pair_left[outside],
                                       outputs.pair_right[outside]]))  # fmt: skip
    raw, dates = _read_texts(inputs, reader, outputs, needed)
    if (outputs.pair_type == "").any():
        _fill_pair_types(outputs, raw, dates)
    texts = {p: t[: limits.max_chars] for p, t in raw.items()}
    del raw
    best = _best_edges(outputs, shown, rep_of)

    labels = None
    errors = None
    if label_field is not None:
        labels = read_labels(inputs, reader, label_field, outputs.n_docs)
        errors = label_errors(outputs.ids, outputs.clusters, labels, limit=limits.max_listed)

    clusters = []
    group_of_shown = outputs.clusters[shown]
    # Run boundaries of the shown clusters; none at all for an empty run.
    bounds = (np.flatnonzero(np.r_[True, group_of_shown[1:] != group_of_shown[:-1], True])
              if shown.size else np.zeros(1, np.int64))
    for b0, b1 in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        positions = shown[b0:b1].tolist()
        cid = int(outputs.clusters[positions[0]])
        rep = int(rep_position[cid])
        rep_text = texts.get(rep, "")
        members = []
        for p in positions:
            member: dict[str, Any] = {"id": outputs.ids[p]}
            if p == rep:
                member["text"] = texts.get(p, "")
            else:
                member["seg"] = _segments(rep_text, texts.get(p, ""))
                edge = best.get(p)
                if edge is not None:
                    partner, score, ptype, direct = edge
                    member.update(score=score, type=ptype)
                    if not direct:
                        member["via"] = outputs.ids[partner]
            if outputs.status[p] != "ok":
                member["status"] = outputs.status[p]
            if p in dates:
                member["date"] = dates[p]
            if labels is not None:
                member["label"] = labels[p] if not labels[p].startswith("\x00") else ""
            members.append(member)
        clusters.append({
            "cluster": cid, "size": int(sizes[cid]), "template": bool(outputs.template[rep]),
            "members": members,
        })  # fmt: skip

    edges = ~outputs.pair_outside
    threshold = score_threshold(outputs.method, outputs.params)
    types, type_counts = np.unique(outputs.pair_type[edges].astype(str), return_counts=True)
    window_pairs = [
        {"a": outputs.ids[outputs.pair_left[k]], "b": outputs.ids[outputs.pair_right[k]],
         "score": round(float(outputs.pair_score[k]), 4), "type": str(outputs.pair_type[k]),
         "date_a": dates.get(int(outputs.pair_left[k]), ""),
         "date_b": dates.get(int(outputs.pair_right[k]), ""),
         "text_a": texts.get(int(outputs.pair_left[k]), "")[:300],
         "text_b": texts.get(int(outputs.pair_right[k]), "")[:300]}
        for k in outside.tolist()
    ]  # fmt: skip
    n_clusters = int((sizes > 0).sum())
    return {
        "meta": {
            "generated": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "version": __version__,
            "method": outputs.method,
            "params": outputs.params,
            "inputs": [str(p) for p in inputs],
            "limits": asdict(limits),
            "clusters_total": n_clusters,
            "clusters_shown": len(clusters),
            "label_field": label_field,
        },
        "summary": outputs.summary,
        "timings": {k: round(float(v), 3) for k, v in outputs.timings.items()},
        "histogram": score_histogram(outputs.pair_score[edges], threshold),
        "outside_histogram": score_histogram(outputs.pair_score[outputs.pair_outside], threshold),
        "sweep": threshold_sweep(outputs.pair_left[edges], outputs.pair_right[edges],
                                 outputs.pair_score[edges], outputs.n_docs, threshold,
                                 clustering=outputs.params.get("cluster")),
        "pair_types": {t or "(untyped)": int(n) for t, n in zip(types.tolist(), type_counts.tolist())},
        "sizes": _size_distribution(sizes),
        "clusters": clusters,
        "templates": _template_clusters(outputs, sizes, limits.max_listed),
        "outside_window": window_pairs,
        "outside_total": int(outputs.pair_outside.sum()),
        "labels": errors,
    }
