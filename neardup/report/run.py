"""The outputs of a ``neardup dedup`` run, as the report reads them.

A run leaves up to three files: the clusters table (``--clusters-out``: one row per input
document, in input order), the pairs table (``--pairs-out``: one row per scored edge, then
the pairs kept apart by the time window) and the summary JSON (``--report``). Each can be
Parquet, JSON Lines (optionally gzipped) or CSV/TSV. :func:`load_run` reads them into a
:class:`RunOutputs`; :func:`outputs_from_result` builds the same object from an in-memory
:class:`~neardup.pipeline.Result`, so ``neardup dedup --html`` and ``neardup report``
render one thing.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.errors import InputError

__all__ = ["RunOutputs", "load_run", "load_table", "outputs_from_result", "parquet_parts"]

CLUSTER_COLUMNS = ("id", "cluster")
PAIR_COLUMNS = ("id_a", "id_b", "score")
_STRING_COLUMNS = ("id", "id_a", "id_b", "status", "type", "method")


@dataclass
class RunOutputs:
    """What the report shows of a run.

    Attributes
    ----------
    ids : ndarray of object (str), shape (n_docs,)
        Document ids, in input order.
    clusters : ndarray of int64, shape (n_docs,)
    representative : ndarray of bool, shape (n_docs,)
        One true per cluster (the first member when the table has no such column).
    template : ndarray of bool, shape (n_docs,)
    status : ndarray of object (str), shape (n_docs,)
    pair_left, pair_right : ndarray of int64, shape (n_pairs,)
        Positions of the paired documents.
    pair_score : ndarray of float32, shape (n_pairs,)
    pair_type : ndarray of object (str), shape (n_pairs,)
        "" where the run did not type its pairs.
    pair_outside : ndarray of bool, shape (n_pairs,)
        True for pairs kept apart by the time window (not merged).
    method : str
    params : dict
        ``{"method": {...}, "cluster": {...}, "keep": ...}`` as the run recorded them.
    summary : dict
        The run's counts (``Result.summary()``); recomputed from the tables when absent.
    timings : dict of str -> float
    inputs : list of str
    template_clusters : list of dict or None
        From the summary JSON (oversized clusters as found, also under ``oversized="split"``).
    input_identity : str or None
        From the summary JSON: the SHA-256 of the input files as the run found them
        (resolved paths, sizes, modification times) and the reader's options
        (:func:`~neardup.io.identity.reading_digest`).
    input_texts : list of dict
        From the summary JSON: what the run's first read found in each input, in reading
        order (``source``, ``documents``, ``digest`` of :class:`~neardup.io.identity.TextsDigest`);
        empty when the run did not record it (on Ray, in a resumed run, in memory).
    """

    ids: np.ndarray
    clusters: np.ndarray
    representative: np.ndarray
    template: np.ndarray
    status: np.ndarray
    pair_left: np.ndarray
    pair_right: np.ndarray
    pair_score: np.ndarray
    pair_type: np.ndarray
    pair_outside: np.ndarray
    method: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)
    template_clusters: list[dict[str, Any]] | None = None
    input_identity: str | None = None
    input_texts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def n_docs(self) -> int:
        return int(self.ids.shape[0])

    def cluster_sizes(self) -> np.ndarray:
        """Size of each cluster id (int64, shape (max cluster id + 1,))."""
        return np.bincount(self.clusters) if self.n_docs else np.zeros(0, np.int64)


def parquet_parts(path: Path) -> list[Path]:
    """The Parquet files of a directory a run wrote (``--engine ray``'s tables, one part
    per shard), in the order of their numbers (``part-00002`` before ``part-00010``, and
    before ``part-100000``)."""
    files = [p for p in path.iterdir() if p.name.lower().endswith(".parquet") and p.is_file()]
    return sorted(files, key=lambda p: (len(p.name), p.name))


def _kind(path: Path) -> str:
    if path.is_dir():
        return "parquet"
    name = path.name.lower()
    for suffix, kind in ((".parquet", "parquet"), (".jsonl.gz", "jsonl"), (".jsonl", "jsonl"),
                         (".json", "jsonl"), (".csv", "csv"), (".tsv", "tsv")):  # fmt: skip
        if name.endswith(suffix):
            return kind
    raise InputError(
        f"report: cannot read {str(path)!r}: name a .parquet, .jsonl, .jsonl.gz, .csv or .tsv "
        "file written by neardup dedup (--clusters-out, --pairs-out)."
    )


def load_table(path: str | os.PathLike) -> pa.Table:
    """Read a table neardup wrote (Parquet, JSON Lines optionally gzipped, CSV or TSV; or
    a directory of Parquet parts, as ``--engine ray`` writes them), with id, type and
    status columns as strings."""
    path = Path(path)
    kind = _kind(path)
    if not path.exists():
        raise InputError(f"report: no such file: {str(path)!r}.")
    try:
        if kind == "parquet" and path.is_dir():
            import pyarrow.parquet as pq

            parts = parquet_parts(path)
            if not parts:
                raise InputError(f"report: {str(path)!r} holds no .parquet file; pass the "
                                 "directory neardup dedup --engine ray wrote.")
            table = pa.concat_tables([pq.read_table(p) for p in parts])
        elif kind == "parquet":
            import pyarrow.parquet as pq

            table = pq.read_table(path)
        elif kind == "jsonl":
            import pyarrow.json as pj

            with pa.input_stream(str(path), compression="detect") as stream:
                table = pj.read_json(stream)
        else:
            import pyarrow.csv as pcsv

            types = {name: pa.string() for name in _STRING_COLUMNS}
            table = pcsv.read_csv(
                path,
                parse_options=pcsv.ParseOptions(delimiter="," if kind == "csv" else "\t"),
                convert_options=pcsv.ConvertOptions(column_types=types),
            )
        names = table.column_names  # decoded here: a header that is not UTF-8 fails now
    except UnicodeDecodeError as exc:
        raise InputError(f"report: cannot read {str(path)!r}: byte {exc.start} of a column "
                         "name is not UTF-8.") from None
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(f"report: cannot read {str(path)!r}: {exc}") from None
    del names
    for name in _STRING_COLUMNS:
        if name in table.column_names and not pa.types.is_string(table.schema.field(name).type):
            index = table.column_names.index(name)
            try:
                column = table.column(name).cast(pa.string())
            except (pa.ArrowException, ValueError, TypeError):
                raise InputError(
                    f"report: {str(path)!r}: column {name!r} must hold text or whole numbers "
                    f"(it is {table.schema.field(name).type}); pass the file neardup dedup "
                    "wrote."
                ) from None
            table = table.set_column(index, name, column)
    return table


def _require(table: pa.Table, columns: tuple[str, ...], path: Any, flag: str) -> None:
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise InputError(
            f"report: {str(path)!r} has no column {missing[0]!r} (its columns: "
            f"{table.column_names}); pass the file neardup dedup wrote with {flag}."
        )


_ARROW_TYPE = {np.int64: pa.int64(), bool: pa.bool_(), np.float32: pa.float32(),
               object: pa.string()}
_KIND_NAME = {np.int64: "whole numbers", bool: "true/false values", np.float32: "numbers",
              object: "text"}


def _column(table: pa.Table, name: str, default: Any, dtype: Any, path: Any = None) -> np.ndarray:
    """Column ``name`` as a NumPy array of ``dtype`` (nulls: ``default``); an InputError
    naming the file and the column when its values are not of that kind."""
    if name not in table.column_names:
        return np.full(table.num_rows, default, dtype=dtype)
    column = table.column(name)
    try:
        target = _ARROW_TYPE[dtype]
        if column.type != target:
            column = column.cast(target)
        return column.fill_null(default).to_numpy(zero_copy_only=False).astype(dtype)
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        raise InputError(
            f"report: {str(path)!r}: column {name!r} must hold {_KIND_NAME[dtype]} (it is "
            f"{column.type}); pass the file neardup dedup wrote."
        ) from None


def _first_members(clusters: np.ndarray) -> np.ndarray:
    first = np.zeros(clusters.shape[0], dtype=bool)
    if clusters.size:
        _, index = np.unique(clusters, return_index=True)
        first[index] = True
    return first


def _summary(outputs: RunOutputs) -> dict[str, Any]:
    sizes = outputs.cluster_sizes()
    sizes = sizes[sizes > 0]
    n_clusters = int(sizes.size)
    edges = ~outputs.pair_outside
    summary = {
        "documents": outputs.n_docs,
        "clusters": n_clusters,
        "duplicates_removed": outputs.n_docs - n_clusters,
        "documents_in_duplicate_clusters": int(sizes[sizes > 1].sum()),
        "duplicate_clusters": int((sizes > 1).sum()),
        "largest_cluster": int(sizes.max()) if sizes.size else 0,
        "template_documents": int(outputs.template.sum()),
        "pairs": int(edges.sum()),
    }
    if outputs.pair_outside.any():
        summary["pairs_outside_time_window"] = int(outputs.pair_outside.sum())
    return summary


def _table_metadata(table: pa.Table) -> dict[str, Any]:
    meta = (table.schema.metadata or {}).get(b"neardup")
    if not meta:
        return {}
    try:
        data = json.loads(meta)
    except (ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def load_run(
    clusters: str | os.PathLike,
    pairs: str | os.PathLike | None = None,
    summary: str | os.PathLike | None = None,
) -> RunOutputs:
    """Read the outputs of a ``neardup dedup`` run.

    Parameters
    ----------
    clusters : path
        The ``--clusters-out`` table (columns id, cluster; cluster_size, representative,
        status and template when present).
    pairs : path or None, default None
        The ``--pairs-out`` table (id_a, id_b, score; type and outside_window when
        present). None: the report has no score histogram, alignment scores or pair types.
    summary : path or None, default None
        The ``--report`` JSON (summary, method, parameters, timings, template clusters).
        None: counts are recomputed from the tables, parameters read from the Parquet
        metadata when there is some.

    Returns
    -------
    RunOutputs

    Raises
    ------
    InputError
        For a missing file, a missing column, or a pair naming an id that is not in the
        clusters table.
    """
    table = load_table(clusters)
    _require(table, CLUSTER_COLUMNS, clusters, "--clusters-out")
    ids = np.asarray(table.column("id").to_pylist(), dtype=object)
    labels = _column(table, "cluster", -1, np.int64, clusters)
    if labels.size and labels.min() < 0:
        raise InputError(f"report: {str(clusters)!r} has a null or negative cluster id.")
    if labels.size and labels.max() > 4 * labels.size + 1024:  # bincount would not fit
        raise InputError(
            f"report: {str(clusters)!r}: cluster ids go up to {int(labels.max()):,} for "
            f"{labels.size:,} documents; neardup dedup numbers clusters below the number of "
            "documents. Pass the clusters table it wrote."
        )
    if "representative" in table.column_names:
        representative = _column(table, "representative", False, bool, clusters)
    else:
        representative = _first_members(labels)
    meta = _table_metadata(table)
    if pairs is not None:
        pair_table = load_table(pairs)
        _require(pair_table, PAIR_COLUMNS, pairs, "--pairs-out")
        meta = meta or _table_metadata(pair_table)
        left, right = _positions(table.column("id"), pair_table, pairs)
        score = _column(pair_table, "score", np.nan, np.float32, pairs)
        ptype = _column(pair_table, "type", "", object, pairs)
        outside = _column(pair_table, "outside_window", False, bool, pairs)
    else:
        left = right = np.zeros(0, np.int64)
        score, ptype, outside = np.zeros(0, np.float32), np.zeros(0, object), np.zeros(0, bool)
    outputs = RunOutputs(
        ids=ids, clusters=labels, representative=representative,
        template=_column(table, "template", False, bool, clusters),
        status=_column(table, "status", "ok", object, clusters),
        pair_left=left, pair_right=right, pair_score=score, pair_type=ptype, pair_outside=outside,
        method=str(meta.get("method", "")), params=meta.get("params", {}) or {},
    )  # fmt: skip
    if summary is not None:
        _apply_summary(outputs, summary)
    if not outputs.summary:
        outputs.summary = _summary(outputs)
    return outputs


def _positions(id_column: pa.ChunkedArray, pair_table: pa.Table, path: Any) -> tuple[np.ndarray, ...]:
    """Positions of id_a and id_b in the clusters table (one hash join, no Python loop)."""
    import pyarrow.compute as pc

    out = []
    for name in ("id_a", "id_b"):
        index = pc.index_in(pair_table.column(name), value_set=id_column.combine_chunks())
        if index.null_count:
            first = pc.filter(pair_table.column(name), pc.is_null(index))[0].as_py()
            raise InputError(
                f"report: pair file {str(path)!r} names id {first!r}, which is not in the "
                "clusters table; pass the clusters and pairs of the same run."
            )
        out.append(index.to_numpy(zero_copy_only=False).astype(np.int64))
    return out[0], out[1]


def _apply_summary(outputs: RunOutputs, path: str | os.PathLike) -> None:
    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"report: no such file: {str(path)!r}.") from None
    except (ValueError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else exc
        raise InputError(f"report: {str(path)!r} is not JSON ({why}); pass the file "
                         "neardup dedup wrote with --report.") from None
    if not isinstance(report, dict) or "summary" not in report:
        raise InputError(f"report: {str(path)!r} has no 'summary'; pass the file neardup "
                         "dedup wrote with --report.")
    kinds = {"summary": (dict,), "params": (dict, type(None)),
             "timings_seconds": (dict, type(None)), "inputs": (list, type(None)),
             "template_clusters": (list, type(None)), "method": (str, type(None)),
             "input_identity": (str, type(None)), "input_texts": (list, type(None))}
    for key, accepted in kinds.items():
        if not isinstance(report.get(key), accepted):
            raise InputError(f"report: {str(path)!r}: {key!r} is a "
                             f"{type(report.get(key)).__name__}, not what neardup dedup "
                             "writes; pass the file it wrote with --report.")
    outputs.summary = dict(report["summary"])
    outputs.method = str(report.get("method") or outputs.method)
    outputs.params = report.get("params") or outputs.params
    outputs.timings = dict(report.get("timings_seconds") or {})
    outputs.inputs = [str(p) for p in report.get("inputs") or []]
    outputs.template_clusters = report.get("template_clusters")
    outputs.input_identity = report.get("input_identity")
    texts = report.get("input_texts") or []
    if not all(isinstance(t, dict) and isinstance(t.get("documents"), int)
               and isinstance(t.get("digest"), str) for t in texts):
        raise InputError(f"report: {str(path)!r}: 'input_texts' is not what neardup dedup "
                         "writes; pass the file it wrote with --report.")
    outputs.input_texts = texts


def outputs_from_result(result: Any, inputs: list[str] | None = None) -> RunOutputs:
    """The :class:`RunOutputs` of an in-memory :class:`~neardup.pipeline.Result`."""
    from neardup.graph.edges import Pairs

    pairs = Pairs.concat([result.pairs, result.outside_window])
    n_edges = len(result.pairs)
    outside = np.zeros(len(pairs), dtype=bool)
    outside[n_edges:] = True
    types = (np.asarray(result.pair_types, dtype=object) if result.pair_types is not None
             else np.full(len(pairs), "", dtype=object))  # fmt: skip
    return RunOutputs(
        ids=np.asarray(result.ids, dtype=object), clusters=np.asarray(result.clusters, np.int64),
        representative=np.asarray(result.representative, bool),
        template=np.asarray(result.template, bool), status=np.asarray(result.status, object),
        pair_left=pairs.left, pair_right=pairs.right, pair_score=pairs.score,
        pair_type=types, pair_outside=outside, method=result.method, params=result.params,
        summary=result.summary(), timings=dict(result.timings), inputs=list(inputs or []),
        template_clusters=result.template_clusters(),
    )  # fmt: skip
