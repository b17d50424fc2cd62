"""The Components step on one machine and the stage output it leads to: the partitions'
forests merged by a union-find (:func:`merge_forests`, with identical texts linked
first), and :class:`CorpusStageOutput`, what every executor of the corpus stage (local
keyed, local vector, Ray) hands the pipeline, read back from a work directory by
:func:`read_stage_output`."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from neardup.engine.facts import identity_pairs
from neardup.engine.link import concat_pairs
from neardup.engine.unionfind import UnionFind
from neardup.engine.workdir import WorkDir, read_arrow, stage_key, write_arrow
from neardup.graph.edges import Pairs

__all__ = ["CorpusStageOutput", "merge_forests", "read_stage_output", "string_array"]


def merge_forests(wd: WorkDir, key: str, n_docs: int, edge_files: list[Path], timer,
                  every_edge: bool = False, docs_stage: str | None = None) -> dict[str, Any]:
    """The "components" stage of the out-of-core stages: the global merge of the forests
    in ``edge_files`` (Arrow: left, right, score, outside_window; one per partition or
    shard), a union-find over their edges (nothing left to verify) whose joins form the
    run's forest. Identical texts (the ``identity`` of ``docs_stage``'s documents) are
    linked first, whatever the method found (:func:`~neardup.engine.facts.identity_pairs`).
    Writes forest.arrow, outside.arrow and roots.npy; with ``every_edge``
    (the files hold every accepted pair) also edges.arrow, those pairs once each (20
    bytes a pair in memory while it is written)."""
    key = stage_key("components", key)
    facts = wd.done("components", key)
    if facts is not None:
        return facts
    directory = wd.start("components")
    uf = UnionFind(n_docs)
    forest, outside, every = [], [], []
    with timer.stage("cluster"):
        tables = (read_arrow(path) for path in edge_files)
        if docs_stage is not None:
            identity = pq.read_table(wd.stage_dir(docs_stage) / "docs.parquet",
                                     columns=["identity"]).column("identity").to_numpy()
            same = identity_pairs(identity)
            tables = itertools.chain([pa.table({
                "left": same.left, "right": same.right, "score": same.score,
                "outside_window": np.zeros(len(same), bool)})], tables)
        for table in tables:
            left = table.column("left").to_numpy()
            right = table.column("right").to_numpy()
            score = table.column("score").to_numpy()
            away = table.column("outside_window").to_numpy(zero_copy_only=False)
            outside.append((left[away], right[away], score[away]))
            left, right, score = left[~away], right[~away], score[~away]
            if every_edge:
                every.append((left, right, score))
            merged = uf.union(left, right)
            forest.append((left[merged], right[merged], score[merged]))
        forest_pairs = concat_pairs(forest).canonical()
        outside_pairs = concat_pairs(outside).canonical()
        write_arrow(directory / "forest.arrow", _pairs_table(forest_pairs))
        write_arrow(directory / "outside.arrow", _pairs_table(outside_pairs))
        if every_edge:
            edges = concat_pairs(every).canonical()
            write_arrow(directory / "edges.arrow", _pairs_table(edges))
        np.save(directory / "roots.npy", uf.roots())
    facts = {"forest_edges": len(forest_pairs), "outside_window": len(outside_pairs)}
    if every_edge:
        facts["accepted_edges"] = len(edges)
    wd.finish("components", key, facts)
    return facts


def read_stage_output(wd: WorkDir, docs_stage: str, has_dates: bool,
                      stats: dict[str, Any]) -> CorpusStageOutput:
    """The stage's output from its work directory: documents' facts from
    ``docs_stage``/docs.parquet, components from the "components" stage."""
    columns = ["id", "length", "n_features"] + (["date"] if has_dates else [])
    docs = pq.read_table(wd.stage_dir(docs_stage) / "docs.parquet", columns=columns)
    comp = wd.stage_dir("components")
    return CorpusStageOutput(
        ids=string_array(docs.column("id")),
        lengths=docs.column("length").to_numpy(),
        n_features=docs.column("n_features").to_numpy(),
        dates=docs.column("date").to_numpy().astype("datetime64[s]") if has_dates else None,
        roots=np.load(comp / "roots.npy"),
        # Every accepted pair when the run kept them (community detection), else the forest.
        pairs=_pairs_from(comp / "edges.arrow" if (comp / "edges.arrow").exists()
                          else comp / "forest.arrow"),
        outside_window=_pairs_from(comp / "outside.arrow"),
        stats=stats,
    )


def _pairs_table(pairs: Pairs) -> pa.Table:
    return pa.table({"left": pairs.left, "right": pairs.right, "score": pairs.score})


def _pairs_from(path: Path) -> Pairs:
    table = read_arrow(path)
    return Pairs(table.column("left").to_numpy(), table.column("right").to_numpy(),
                 table.column("score").to_numpy())


@dataclass
class CorpusStageOutput:
    """What the corpus stage hands the pipeline: no raw text, no per-pair state beyond
    the forest.

    Attributes
    ----------
    ids : ndarray of StringDType, shape (n_docs,)
        Compact strings (16 bytes for an id of up to 15 bytes), not Python objects.
    lengths, n_features : ndarray of int64, shape (n_docs,)
    dates : ndarray of datetime64[s], shape (n_docs,), or None
    roots : ndarray of int64, shape (n_docs,)
        Smallest member position of each document's component.
    pairs : Pairs
        The spanning forest of verified edges that joined the components; with
        ``every_edge`` every accepted pair (once each).
    outside_window : Pairs
        Verified edges the time window kept apart.
    stats : dict
        Keys, edges, verified edges per run, for the summary.
    """

    ids: np.ndarray
    lengths: np.ndarray
    n_features: np.ndarray
    dates: np.ndarray | None
    roots: np.ndarray
    pairs: Pairs
    outside_window: Pairs
    stats: dict[str, Any]


def string_array(column: pa.ChunkedArray) -> np.ndarray:
    """A string column as a NumPy ``StringDType`` array, converted a chunk at a time so that
    only one chunk's Python strings exist at once (an object array of ten million ids
    costs ~80 bytes each, this ~16)."""
    parts = [chunk.to_numpy(zero_copy_only=False).astype(np.dtypes.StringDType())
             for chunk in column.chunks]
    return np.concatenate(parts) if parts else np.empty(0, np.dtypes.StringDType())
