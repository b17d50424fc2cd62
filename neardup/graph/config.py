"""How scored pairs become clusters: :class:`ClusterConfig`, shared by the pipeline, the
run plan (:mod:`neardup.plan`) and every front door."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Protocol

from neardup.errors import check_choice, check_float, check_int
from neardup.graph.edges import check_time_window


__all__ = ["CLUSTER_ALGORITHMS", "ClusterConfig"]

#: ``ClusterConfig.algorithm`` values ("auto" is resolved per method before a run), which
#: the run schema (:mod:`neardup.params`) offers as ``cluster``.
CLUSTER_ALGORITHMS = ("auto", "components", "leiden", "louvain", "hac")


class RecommendsClustering(Protocol):
    """What :meth:`ClusterConfig.resolved` reads of a method (graph stays below methods)."""

    def recommended_cluster(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class ClusterConfig:
    """How scored pairs become clusters.

    Parameters
    ----------
    algorithm : {"auto", "components", "leiden", "louvain", "hac"}, default "auto"
        Connected components (single linkage over the pairs), community detection, which
        cuts weak bridges between otherwise separate groups (Silcock et al. 2022 found it
        helps n-gram methods most), or agglomerative clustering per component. "auto":
        the clustering the method's model was measured best with on held-out sets
        (:meth:`~neardup.methods.Method.recommended_cluster`, resolution included:
        rerank with its shipped verifier gets Leiden at resolution 0.4,
        docs/transfer.md), else connected components (every other method today); see
        :meth:`resolved`.
    max_cluster_size : int or None, default None
        Clusters larger than this are flagged as templates/boilerplate.
    oversized : {"flag", "split"}, default "flag"
        "flag" keeps oversized clusters and marks their members; "split" also leaves
        their members unmerged (singletons).
    resolution : float, default 1.0
        Community-detection resolution (higher gives smaller communities).
    seed : int, default 0
    linkage : {"average", "single", "complete"}, default "average"
        Linkage for ``algorithm="hac"``.
    distance_threshold : float, default 0.2
        For ``algorithm="hac"``: merge while linkage distance (1 - score) <= this.
    time_window_hours : float > 0 or None, default None
        Pairs whose documents are dated more than this many hours apart are not merged
        but reported in ``Result.outside_window`` (Sanderson 1997's window, for any
        method): news copies appear within a day or two of the story, while recurring
        reports (daily market figures, weekly notices) reuse its wording days apart.
        Needs document dates; a pair with an unknown date on either side stays in, and
        so does a pair whose texts are identical after normalization
        (:func:`neardup.text.identity.text_identity`, whatever the method's score),
        since a story re-sent unchanged is the same story.
    """

    algorithm: str = "auto"
    max_cluster_size: int | None = None
    oversized: str = "flag"
    resolution: float = 1.0
    seed: int = 0
    linkage: str = "average"
    distance_threshold: float = 0.2
    time_window_hours: float | None = None

    def __post_init__(self) -> None:
        check_choice("ClusterConfig", "algorithm", self.algorithm, CLUSTER_ALGORITHMS)
        check_choice("ClusterConfig", "linkage", self.linkage, ("average", "single", "complete"))
        check_float("ClusterConfig", "distance_threshold", self.distance_threshold, low=0.0, high=2.0)
        if self.max_cluster_size is not None:
            check_int("ClusterConfig", "max_cluster_size", self.max_cluster_size, low=2)
        check_choice("ClusterConfig", "oversized", self.oversized, ("flag", "split"))
        check_float("ClusterConfig", "resolution", self.resolution, low=0.0)
        check_int("ClusterConfig", "seed", self.seed, low=0)
        check_time_window("ClusterConfig", self.time_window_hours)

    def get_params(self) -> dict:
        return asdict(self)

    @property
    def needs_every_pair(self) -> bool:
        """Whether the clustering reads every accepted pair, not only the components (a
        spanning forest): the corpus stages' ``every_edge`` mode."""
        return self.algorithm != "components"

    def resolved(self, method: RecommendsClustering) -> ClusterConfig:
        """This configuration with ``algorithm="auto"`` replaced by ``method``'s
        recommended clustering (its algorithm and, when it names one, its resolution),
        or by connected components when it recommends none; other algorithms unchanged."""
        if self.algorithm != "auto":
            return self
        return replace(self, **{"algorithm": "components", **method.recommended_cluster()})
