"""The index as a placement of neardup.plan: Index.create, neardup index and
decontaminate's near_engine='index' are refused by the plan, each in its own words."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from neardup.cli import main as cli
from neardup.decontaminate import DecontaminationConfig
from neardup.engine.support import index_placement
from neardup.errors import ParameterError
from neardup.graph.config import ClusterConfig
from neardup.index import Index
from neardup.index._methods import index_plan
from neardup.methods import make_method
from neardup.plan import RunSpec, plan


@pytest.mark.parametrize(("name", "params"), [("minhash", {}), ("exact", {}), ("simhash", {}),
                                              ("minhash", {"verify": "exact"}), ("ngram", {})])
def test_index_plan_is_the_index_placement(name, params):
    method = make_method(name, **params)
    planned = index_plan(method)
    assert planned.executor == "index" and planned.cluster.algorithm == "components"
    assert planned.placement == index_placement(method)
    # "auto" resolves to the index's own clustering.
    assert plan(RunSpec(method, ClusterConfig(), executor="index")).placement == planned.placement


def test_index_plan_refuses_other_clusterings_and_lists_its_steps():
    planned = plan(RunSpec(make_method("minhash"), ClusterConfig(algorithm="leiden"), executor="index"))
    assert not planned.supported and "connected components" in planned.reason
    assert planned.alternatives == ("memory", "local")
    steps = plan(RunSpec(make_method("minhash"), executor="index", outputs=("clusters",))).steps()
    assert steps[1] == ("link", "index (keyed), each add against the stored documents")


def test_refusals_come_from_the_plan_in_each_interface(tmp_path):
    refused = index_plan(make_method("minhash", verify="exact"))
    assert not refused.supported
    with pytest.raises(ValueError) as python:
        Index.create(tmp_path / "py", "minhash", verify="exact")
    assert refused.reason in str(python.value) and "verify 'exact'" in str(python.value)
    result = CliRunner().invoke(cli, ["index", "create", str(tmp_path / "cli"), "--method", "ngram"])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert index_plan(make_method("ngram")).reason in " ".join(result.output.split())
    # decontaminate: a method the index holds, with parameters it cannot hold.
    with pytest.raises(ParameterError, match="near_params") as decontaminate:
        DecontaminationConfig(near_params={"verify": "exact", "threshold": 0.5})
    assert refused.reason in str(decontaminate.value)
    assert DecontaminationConfig(near_engine="memory",
                                 near_params={"verify": "exact"}).near_plan().supported
