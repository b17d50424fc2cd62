"""Where a method runs: one rule, read from what the method declares.

Every front door (``neardup dedup`` on each engine, :func:`neardup.dedup`, the pipeline,
the index) asks :func:`placement` (or :func:`index_placement`) which stage runs a method
with a clustering on an executor, and words its error from the answer. No list of method
names says what runs where: a method added later is placed by its declarations (its keyed,
vector and statistics contracts), and the support matrix in the docs is generated from the
same rule (:func:`support_matrix`).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from neardup.engine.local import supports_corpus_stage
from neardup.engine.vectors import supports_vector_stage
from neardup.methods.base import Method

__all__ = ["EXECUTORS", "STAGES", "Placement", "index_placement", "placement",
           "responsible_parameters", "support_matrix", "support_matrix_markdown"]

#: The executors a run can use: in process, out of core on this machine, a Ray cluster.
EXECUTORS = ("memory", "local", "ray")
#: The stages that can run a method's corpus-wide work: "memory" (the method's own
#: ``find_pairs`` over the whole sketch), "keyed" (the out-of-core key stage), "vector"
#: (the out-of-core vector search).
STAGES = ("memory", "keyed", "vector")


@dataclass(frozen=True)
class Placement:
    """Which stage runs a method, clustered by an algorithm, on an executor.

    Attributes
    ----------
    executor : {"memory", "local", "ray"}
    algorithm : str
        The clustering (resolved: never "auto").
    stage : {"memory", "keyed", "vector"} or None
        The stage that runs it; None when the executor cannot run it.
    reason : str
        Why the stage is not the executor's own (``local`` running in memory), or why the
        executor cannot run it; empty otherwise. Worded without an interface's spelling,
        so that each front door can quote it.
    alternatives : tuple of str
        The executors that do run it, when this one cannot.
    """

    executor: str
    algorithm: str
    stage: str | None
    reason: str = ""
    alternatives: tuple[str, ...] = ()

    @property
    def supported(self) -> bool:
        return self.stage is not None

    @property
    def fallback(self) -> bool:
        """Whether the out-of-core executor runs the method in memory."""
        return self.executor == "local" and self.stage == "memory"


def _local_stage(method: Method, algorithm: str) -> str | None:
    if supports_corpus_stage(method, algorithm):
        return "keyed"
    if supports_vector_stage(method, algorithm):
        return "vector"
    return None


def _memory_reason(method: Method, algorithm: str) -> str:
    """Why the out-of-core executor runs ``method`` in memory."""
    return (f"method {method.name!r} with these parameters has no out-of-core stage "
            "(no keyed or vector contract), so the in-memory stage ran")


def _ray_refusal(method: Method, algorithm: str) -> str | None:
    """Why the Ray executor cannot run ``method`` clustered by ``algorithm``, or None.

    Ray runs the local executor's statistics, keyed, retrieval and vector stages as tasks
    (its shards ship whatever the verification reads, weighted sets included), so it
    refuses only what the local executor would run in memory."""
    if _local_stage(method, algorithm) is None:
        if algorithm == "components":
            return "it has no keyed or vector stage, and the Ray executor runs nothing in memory"
        return (f"cluster algorithm {algorithm!r} needs every accepted pair, which its "
                "out-of-core stage does not keep")
    return None


def placement(method: Method, algorithm: str, executor: str) -> Placement:
    """The stage that runs ``method`` clustered by ``algorithm`` (resolved, not "auto")
    on ``executor`` (one of :data:`EXECUTORS`, or "index": :func:`index_placement`)."""
    if executor == "memory":
        return Placement(executor, algorithm, "memory")
    if executor == "local":
        stage = _local_stage(method, algorithm)
        if stage is None:
            return Placement(executor, algorithm, "memory", _memory_reason(method, algorithm))
        return Placement(executor, algorithm, stage)
    if executor == "index":
        return index_placement(method)
    if executor == "ray":
        refusal = _ray_refusal(method, algorithm)
        if refusal is not None:
            return Placement(executor, algorithm, None, refusal, alternatives=("local", "memory"))
        return Placement(executor, algorithm, _local_stage(method, algorithm))
    raise ValueError(f"placement: parameter 'executor' must be one of "
                     f"{', '.join(map(repr, (*EXECUTORS, 'index')))}; got {executor!r}.")


def responsible_parameters(method: Method, algorithm: str, executor: str
                           ) -> tuple[dict[str, Any], bool]:
    """The parameters of ``method`` (given, not default) behind ``executor``'s refusal:
    each one that, set back to its default alone, lets the executor run the method or
    changes its reason. Empty when the refusal does not come from a parameter, or the
    method is supported. And whether setting all of them back to their defaults lets the
    executor run the method. For error messages: "with verify='exact'" says more than "with
    these parameters", and "leave it out" is a fix only when it is one."""
    refused = placement(method, algorithm, executor)
    if refused.supported:
        return {}, False
    # The constructor's own values (get_params gives configs as dicts, for metadata).
    signature = inspect.signature(type(method).__init__).parameters
    params = {k: getattr(method, k) for k in signature if k != "self" and hasattr(method, k)}
    defaults = {k: p.default for k, p in signature.items() if p.default is not inspect.Parameter.empty}
    found = {}
    for name, value in params.items():
        if name not in defaults or value == defaults[name]:
            continue
        try:
            relaxed = type(method)(**{**params, name: defaults[name]})
        except (TypeError, ValueError):
            continue
        if placement(relaxed, algorithm, executor).reason != refused.reason:
            found[name] = value
    if not found:
        return found, False
    try:
        relaxed = type(method)(**{**params, **{k: defaults[k] for k in found}})
    except (TypeError, ValueError):
        return found, False
    return found, placement(relaxed, algorithm, executor).supported


def index_placement(method: Method) -> Placement:
    """Whether the persistent index can hold ``method``'s documents: fixed-width
    verification rows under candidate keys, or one vector per document. ``stage`` is
    "keyed" or "vector", or None with the reason."""
    caps = method.capabilities
    search = caps.vectors
    if search is not None and caps.reads.text_chars is None:
        if search.one_row_per_document:
            return Placement("index", "components", "vector")
        return Placement("index", "components", None,
                         "it compares several vectors per document, and the index keeps one")
    if caps.fixed_width:
        return Placement("index", "components", "keyed")
    if caps.reads.text_chars is not None:
        why = "its verification reads texts, which the index keeps only for its rerank option"
    elif caps.statistics is not None:
        why = "its keys need corpus-wide statistics, which the index does not keep"
    elif caps.keyed is not None:
        why = "its verification reads shingle sets or dates, which the index does not store"
    else:
        why = "it has no keyed or vector stage"
    return Placement("index", "components", None, why)


def support_matrix(methods: Iterable[tuple[str, Method]],
                   algorithms: Iterable[str] = ("components", "leiden")) -> list[dict[str, str]]:
    """One row per ``(label, method)``: for each executor and clustering, the stage that
    runs it ("keyed", "vector", "memory", or "-"), and whether the index holds it. Methods
    are placed with the parameters they are given."""
    rows = []
    algorithms = tuple(algorithms)
    for label, method in methods:
        row = {"method": label}
        for executor in EXECUTORS:
            for algorithm in algorithms:
                found = placement(method, algorithm, executor)
                row[f"{executor}/{algorithm}"] = found.stage or "-"
        found = index_placement(method)
        row["index"] = found.stage or "-"
        rows.append(row)
    return rows


#: How the matrix names each executor and stage.
_EXECUTOR_TITLES = {"memory": "in memory", "local": "local, out of core", "ray": "Ray"}
_STAGE_TITLES = {"memory": "in memory", "keyed": "keyed", "vector": "vector"}


def support_matrix_markdown(methods: Iterable[tuple[str, Method]],
                            algorithms: Iterable[str] = ("components", "leiden")) -> str:
    """:func:`support_matrix` as a Markdown table: per executor, which stage runs each
    clustering ("keyed: components, leiden"), "-" where the executor refuses them all."""
    algorithms = tuple(algorithms)
    rows = support_matrix(methods, algorithms)
    header = ["method", *(_EXECUTOR_TITLES[e] for e in EXECUTORS), "index"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [row["method"]]
        for executor in EXECUTORS:
            by_stage: dict[str, list[str]] = {}
            for algorithm in algorithms:
                stage = row[f"{executor}/{algorithm}"]
                if stage != "-":
                    by_stage.setdefault(_STAGE_TITLES[stage], []).append(algorithm)
            cells.append("; ".join(f"{stage}: {', '.join(algs)}" for stage, algs in by_stage.items())
                         or "-")
        cells.append("-" if row["index"] == "-" else f"{_STAGE_TITLES[row['index']]}: components")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
