"""Issue #36: one parameter schema and one plan for every front door.

* every option of ``neardup dedup --help`` comes from :data:`neardup.params.PARAMS`
  (flag, type, default), and every parameter the schema gives the command line is there;
* every rule of :data:`neardup.params.RULES` that both interfaces have raises the same
  error from :func:`neardup.dedup` and from the command line, worded for each;
* :func:`neardup.plan.plan` refuses exactly what :func:`neardup.engine.support.placement`
  refuses, with its reason and alternatives.
"""

from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner

import neardup
from neardup.cli import main
from neardup.cli.dedup import dedup_command
from neardup.engine.support import placement
from neardup.methods import make_method
from neardup.params import (
    CLI,
    PARAM,
    PARAMS,
    PYTHON,
    RULES,
    RuleError,
    check_rules,
    check_value,
    choices_of,
)
from neardup.pipeline import ClusterConfig
from neardup.plan import Budget, RunSpec, Unsupported, plan, require

TEXTS = ["the cat sat on the mat today", "the cat sat on the mat today!", "a dog barked"]


def test_every_dedup_option_comes_from_the_schema():
    options = [p for p in dedup_command.params if isinstance(p, click.Option)]
    assert {p.name for p in options} == {p.name for p in PARAMS if p.cli}
    for option in options:
        param = PARAM[option.name]
        assert param.flag in option.opts, option.name
        if param.short is not None:
            assert param.short in option.opts
        if param.kind == "choice":
            assert tuple(option.type.choices) == choices_of(param)
        if param.kind not in ("flag", "key_value", "name_value"):
            assert option.default == param.default, option.name
        assert option.help == param.help


def test_help_lists_each_flag_once():
    text = CliRunner().invoke(main, ["dedup", "--help"], terminal_width=400).output
    for param in PARAMS:
        if param.cli:
            assert text.count(f"{param.flag} ") + text.count(f"{param.flag},") + text.count(
                f"{param.flag}/") >= 1, param.flag


def test_schema_values_are_checked_as_declared():
    assert check_value("t", "partitions", 4) == 4
    with pytest.raises(ValueError, match=r"t: parameter 'partitions' must be an integer in \[1, 65536\]"):
        check_value("t", "partitions", 0)
    with pytest.raises(ValueError, match="parameter 'cluster' must be one of"):
        neardup.dedup(TEXTS, cluster="kmeans")
    with pytest.raises(ValueError, match="parameter 'time_window_hours' must be a number > 0"):
        check_value("t", "time_window_hours", 0.0)


#: For each rule both interfaces have: the Python keywords and the command-line
#: arguments that break it (the same settings).
BROKEN = {
    "threshold": ({"method": "exact", "threshold": 0.5}, ["--method", "exact", "--threshold", "0.5"]),
    "profile": ({"method": "exact", "profile": "noisy"}, ["--method", "exact", "--profile", "noisy"]),
    "num_perm": ({"method": "ngram", "num_perm": 64}, ["--method", "ngram", "--num-perm", "64"]),
    "bands": ({"method": "exact", "bands": 4}, ["--method", "exact", "--bands", "4"]),
    "rows": ({"method": "exact", "rows": 4}, ["--method", "exact", "--rows", "4"]),
    "verify": ({"method": "exact", "verify": "exact"}, ["--method", "exact", "--verify", "exact"]),
    "max_bucket_pairs": ({"method": "exact", "max_bucket_pairs": 9},
                         ["--method", "exact", "--max-bucket-pairs", "9"]),
    "similarity": ({"method": "exact", "similarity": "containment"},
                   ["--method", "exact", "--similarity", "containment"]),
    "max_df": ({"method": "exact", "max_df": 9}, ["--method", "exact", "--max-df", "9"]),
    "weighting": ({"method": "exact", "weighting": "tf"}, ["--method", "exact", "--weighting", "tf"]),
    "model": ({"method": "exact", "model": "m"}, ["--method", "exact", "--model", "m"]),
    "linkage": ({"linkage": "single"}, ["--linkage", "single"]),
    "distance_threshold": ({"distance_threshold": 0.3}, ["--hac-distance", "0.3"]),
    "resolution": ({"cluster": "components", "resolution": 0.5},
                   ["--cluster", "components", "--resolution", "0.5"]),
    "oversized": ({"oversized": "split"}, ["--oversized", "split"]),
    "ray_address": ({"ray_address": "auto"}, ["--ray-address", "auto"]),
    "work_dir": ({"engine": "memory", "work_dir": "{tmp}/w"},
                 ["--engine", "memory", "--work-dir", "{tmp}/w"]),
    "memory_limit": ({"method": "retsim", "index": "hnsw", "memory_limit": "64MB"},
                     ["--method", "retsim", "--param", 'index="hnsw"', "--memory-limit", "64MB"]),
    "partitions": ({"engine": "memory", "partitions": 4}, ["--engine", "memory", "--partitions", "4"]),
    "resume": ({"resume": True}, ["--resume"]),
    "time_window_hours": ({"time_window_hours": 24.0}, ["--time-window", "24"]),
}


def test_every_shared_rule_has_a_case():
    shared = {r.name for r in RULES if PARAM[r.name].python and PARAM[r.name].cli
              and "python" in r.interfaces}
    # --progress is ignored only next to -q/--quiet, which Python does not have.
    assert shared - {"progress"} == set(BROKEN)


def test_python_takes_one_seed_for_every_method():
    """Generic code passes a seed to every method (the determinism contract): Python
    accepts it where the command line refuses a typed --seed that nothing reads."""
    values = {"method": "retsim", "seed": 7, "cluster": "auto"}
    check_rules("dedup", values, {"seed"}, algorithm="components")  # Python: accepted
    with pytest.raises(RuleError) as raised:
        check_rules("dedup", values, {"seed"}, algorithm="components", interface="cli")
    assert raised.value.render("--").startswith("--seed applies to --method exact")


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_rule_gives_the_same_error_in_python_and_on_the_command_line(name, tmp_path):
    kwargs, args = BROKEN[name]
    kwargs = {k: (v.format(tmp=tmp_path) if isinstance(v, str) else v) for k, v in kwargs.items()}
    with pytest.raises(RuleError) as raised:
        neardup.dedup(TEXTS, **kwargs)
    error = raised.value
    assert error.rule.name == name
    assert str(error) == f"dedup: {error.rule.message(error.situation, PYTHON)}"
    assert f"parameter {name!r} applies to" in str(error)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS))
    result = CliRunner().invoke(main, ["dedup", str(corpus), *[a.format(tmp=tmp_path)
                                                               for a in args]])
    assert result.exit_code == 2, result.output
    expected = error.rule.message(error.situation, CLI)
    assert expected in " ".join(result.output.split()), result.output
    assert not (tmp_path / "w").exists()


def test_old_spellings_name_the_new_one():
    with pytest.raises(ValueError, match=r"pass cluster='hac'"):
        neardup.dedup(TEXTS, cluster_algorithm="hac")
    with pytest.raises(ValueError, match=r"pass resolution=0\.5"):
        neardup.dedup(TEXTS, **{"cluster.resolution": 0.5})


LEXICAL = [("exact", {}), ("minhash", {}), ("minhash", {"verify": "exact"}), ("ngram", {}),
           ("simhash", {}), ("sanderson", {}), ("spotsigs", {}), ("wminhash", {}),
           ("wminhash", {"verify": "exact"})]


@pytest.mark.parametrize(("name", "params"), LEXICAL)
@pytest.mark.parametrize("executor", ["memory", "local", "ray"])
@pytest.mark.parametrize("algorithm", ["components", "leiden", "hac"])
def test_plan_refuses_what_placement_refuses(name, params, executor, algorithm):
    method = make_method(name, **params)
    planned = plan(RunSpec(method, ClusterConfig(algorithm=algorithm), executor, Budget(),
                           outputs=("clusters", "report")))
    placed = placement(method, algorithm, executor)
    assert planned.placement == placed
    assert (planned.supported, planned.stage, planned.reason, planned.alternatives) == (
        placed.supported, placed.stage, placed.reason, placed.alternatives)
    assert planned.writers == {"clusters": "workers" if executor == "ray" else "driver",
                               "report": "driver"}
    if placed.supported:
        assert require(planned) is planned
        return
    with pytest.raises(Unsupported) as raised:
        require(planned, "dedup")
    cli = raised.value.render("--")
    assert cli.startswith(f"--engine {executor} cannot run --method {name}")
    assert placed.reason in cli and placed.reason in str(raised.value)
    for other in placed.alternatives:
        assert f"--engine {other}" in cli and f"engine={other!r}" in str(raised.value)


def test_plan_resolves_auto_and_lists_its_steps():
    planned = plan(RunSpec(make_method("minhash"), ClusterConfig(), "local",
                           outputs=("clusters", "pairs", "pair_types")))
    assert planned.cluster.algorithm == "components" and planned.stage == "keyed"
    assert [step for step, _ in planned.steps()] == [
        "read and sketch", "link", "cluster components", "write clusters", "write pairs"]
    with pytest.raises(ValueError, match="parameter 'outputs'"):
        RunSpec(make_method("exact"), outputs=("clusterz",))
