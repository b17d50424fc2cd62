"""One run spec and one plan, for every front door.

A :class:`RunSpec` says what to run: the method, the clustering, the executor
("memory", "local", "ray", or "index": the persistent index), the budget (memory limit, partitions, work directory) and
the outputs. :func:`plan` says how: which stage runs the method's corpus-wide work on
that executor, who writes each output, and, when the executor cannot run it, why and
which executors can. The answer comes from :func:`neardup.engine.support.placement`
(what each method declares); :func:`require` turns a refusal into one error, worded for
the interface the user is in.

``neardup dedup`` (every engine), :func:`neardup.dedup`, :func:`neardup.pipeline.run`,
``eval``/``tune``, ``leakage``, the index (``Index.create``, ``neardup index``) and
``decontaminate`` build a RunSpec and ask :func:`plan`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from neardup.engine.support import Placement, index_placement, placement, responsible_parameters
from neardup.errors import ParameterError, check_choice
from neardup.graph.keep import KeepPolicy
from neardup.methods.base import Method
from neardup.params import CLI, ENGINES, PARAM, PYTHON, Wording
from neardup.graph.config import ClusterConfig

__all__ = ["EXECUTORS", "OUTPUTS", "Budget", "Plan", "RunSpec", "Unsupported", "describe", "plan",
           "require"]

#: The executors a RunSpec names: the engines that run ``dedup``, and the persistent
#: index, which holds a method's documents and joins clusters as documents are added.
EXECUTORS = (*ENGINES, "index")

#: The outputs a run can write: its clusters, pairs, de-duplicated records, the JSON
#: report and the HTML report.
OUTPUTS = ("clusters", "pairs", "out", "report", "html")
#: Outputs that the Ray executor's workers write (directories of Parquet files); the
#: driver writes the others, as every other executor does.
_WORKER_OUTPUTS = ("clusters", "pairs", "out")


@dataclass(frozen=True)
class Budget:
    """What a run may use: the out-of-core stages' work directory and memory, the key
    partitions, whether to continue a run kept in the work directory, and where Ray runs."""

    work_dir: str | None = None
    memory_limit: int | None = None
    partitions: int | None = None
    resume: bool = False
    ray_address: str | None = None
    ray_shard_rows: int | None = None

    def corpus_stage(self, expected_docs: int | None = None):
        """The :class:`~neardup.engine.CorpusStageConfig` of this budget."""
        from neardup.engine import CorpusStageConfig

        return CorpusStageConfig(work_dir=self.work_dir, memory_limit=self.memory_limit,
                                 partitions=self.partitions, resume=self.resume,
                                 expected_docs=expected_docs)

    def ray_config(self):
        """The :class:`~neardup.engine.ray.RayConfig` of this budget."""
        from neardup.engine.ray import RayConfig

        shard = {} if self.ray_shard_rows is None else {"shard_rows": self.ray_shard_rows}
        return RayConfig(address=self.ray_address, partitions=self.partitions, **shard)


@dataclass(frozen=True)
class RunSpec:
    """What to run.

    Attributes
    ----------
    method : Method
    cluster : ClusterConfig
        As given ("auto" is resolved by :func:`plan`).
    executor : {"local", "memory", "ray", "index"}
    budget : Budget
    keep : KeepPolicy
    outputs : tuple of str
        Names from :data:`OUTPUTS`, plus "pair_types" when pairs get their types.
    """

    method: Method
    cluster: ClusterConfig = ClusterConfig()
    executor: str = "local"
    budget: Budget = Budget()
    keep: KeepPolicy = field(default_factory=KeepPolicy)
    outputs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_choice("RunSpec", "executor", self.executor, EXECUTORS)
        unknown = sorted(set(self.outputs) - {*OUTPUTS, "pair_types"})
        if unknown:
            raise ParameterError("RunSpec", "outputs", "names from " + ", ".join(
                map(repr, (*OUTPUTS, "pair_types"))), unknown[0])


@dataclass(frozen=True)
class Plan:
    """How a :class:`RunSpec` runs.

    Attributes
    ----------
    spec : RunSpec
    cluster : ClusterConfig
        The clustering, resolved ("auto" replaced by the method's recommendation).
    placement : Placement
        Which stage runs the corpus-wide work on the executor, or why it cannot.
    writers : dict of str -> str
        Each requested output and who writes it: "driver" (this process) or "workers"
        (the Ray executor's tasks).
    """

    spec: RunSpec
    cluster: ClusterConfig
    placement: Placement
    writers: dict[str, str]

    @property
    def supported(self) -> bool:
        return self.placement.supported

    @property
    def executor(self) -> str:
        return self.spec.executor

    @property
    def stage(self) -> str | None:
        """"memory", "keyed" or "vector"; None when the executor cannot run the spec."""
        return self.placement.stage

    @property
    def reason(self) -> str:
        return self.placement.reason

    @property
    def alternatives(self) -> tuple[str, ...]:
        return self.placement.alternatives

    @property
    def fallback(self) -> bool:
        """Whether the out-of-core executor runs the method in memory."""
        return self.placement.fallback

    @property
    def every_edge(self) -> bool:
        """Whether the stage must keep every accepted pair (community detection, HAC)."""
        return self.cluster.needs_every_pair

    def steps(self) -> list[tuple[str, str]]:
        """The run's steps in order, each with where it runs."""
        where = {"memory": "in memory", "keyed": "keyed, out of core",
                 "vector": "vector search, out of core"}.get(self.stage or "", "-")
        if self.executor == "ray":
            where = f"Ray tasks ({self.stage})"
        if self.executor == "index":
            where = f"index ({self.stage}), each add against the stored documents"
        steps = [("read and sketch", "Ray tasks" if self.executor == "ray" else "batches"),
                 ("link", where), ("cluster " + self.cluster.algorithm,
                                   "Ray tasks" if self.executor == "ray" else "this process")]
        return steps + [(f"write {name}", who) for name, who in self.writers.items()]


def plan(spec: RunSpec) -> Plan:
    """The :class:`Plan` of ``spec``; never raises for an unsupported combination
    (``Plan.supported`` is False, with the reason and the alternatives): see
    :func:`require`."""
    if spec.executor == "index":
        cluster, placed = _index_plan(spec)
    else:
        cluster = spec.cluster.resolved(spec.method)
        placed = placement(spec.method, cluster.algorithm, spec.executor)
    writers = {name: ("workers" if spec.executor == "ray" and name in _WORKER_OUTPUTS
                      else "driver")
               for name in spec.outputs if name in OUTPUTS}
    return Plan(spec, cluster, placed, writers)


def _index_plan(spec: RunSpec) -> tuple[ClusterConfig, Placement]:
    """The index's clustering and placement: it joins each add's verified edges by
    union-find, so its clusters are connected components whatever the method recommends."""
    algorithm = spec.cluster.algorithm
    cluster = replace(spec.cluster, algorithm="components") if algorithm == "auto" else spec.cluster
    if cluster.algorithm != "components":
        return cluster, Placement("index", cluster.algorithm, None,
                                  "the index joins clusters by connected components as documents "
                                  "are added", alternatives=("memory", "local"))
    return cluster, index_placement(spec.method)


class Unsupported(ParameterError):
    """The executor cannot run the spec: the reason, the executors that can, and the
    given parameters behind the refusal. ``str()`` is Python's wording;
    :meth:`render` gives the command line's when its subject is a flag."""

    def __init__(self, caller: str, planned: Plan) -> None:
        method = planned.spec.method
        culprits, fixable = responsible_parameters(method, planned.cluster.algorithm,
                                                   planned.executor)
        self.plan = planned
        self.culprits = culprits
        self.fixable = fixable
        self.caller = caller
        self.parameter = "engine"
        self.accepted = "one of " + ", ".join(repr(e) for e in planned.alternatives)
        self.value = planned.executor
        self.hint = None
        Exception.__init__(self, f"{caller}: {self.message(PYTHON)}")

    def render(self, subject: str) -> str:
        return self.message(CLI if subject.startswith("-") else PYTHON)

    def message(self, w: Wording) -> str:
        planned = self.plan
        name = planned.spec.method.name
        if w.cli:
            given = " ".join(f"{PARAM[k].flag} {v}" if k in PARAM and PARAM[k].cli
                             else f"--param {k}={v}" for k, v in self.culprits.items())
            what = f"{w.set('method', name)}{' ' + given if given else ''}"
            how = f"with {w.set('cluster', planned.cluster.algorithm)}"
        else:
            given = ", ".join(f"{k}={v!r}" for k, v in self.culprits.items())
            what = f"method {name!r}{' with ' + given if given else ''}"
            how = f"clustered by {planned.cluster.algorithm!r}"
        others = [w.set("engine", e) + (" (out of core)" if e == "local" else "")
                  for e in planned.alternatives]
        instead = " or ".join(others)
        fix = f", or leave out {given}" if self.fixable and given else ""
        return (f"{w.set('engine', planned.executor)} cannot run {what} {how}: "
                f"{planned.reason}. Use {instead}{'' if w.cli else ' for it'}{fix}.")


def require(planned: Plan, caller: str = "run") -> Plan:
    """``planned`` if its executor can run it, else :class:`Unsupported`."""
    if not planned.supported:
        raise Unsupported(caller, planned)
    return planned


def describe(planned: Plan) -> dict[str, Any]:
    """The plan as a JSON-able record (for reports)."""
    return {"executor": planned.executor, "stage": planned.stage,
            "cluster": planned.cluster.algorithm, "fallback": planned.reason if planned.fallback
            else None, "writers": dict(planned.writers)}
