"""The Ray engine on a two-node local cluster: the local engine's clusters, a worker killed
mid-run, bad input on one shard. Skipped when Ray is not installed (``neardup[ray]``)."""

from __future__ import annotations

import gzip
import json
import os
import sys
import types
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import neardup
from neardup.cli import main
from neardup.data import demo_corpus_path
from neardup.engine.support import placement
from neardup.errors import InputError
from neardup.graph.cluster import canonical_labels
from neardup.graph.edges import Pairs
from neardup.io import ReaderConfig, read_corpus
from neardup.methods import make_method
from neardup.methods.rerank import RerankMethod
from neardup.pipeline import ClusterConfig, run

ray = pytest.importorskip("ray", reason="the Ray engine needs pip install 'neardup[ray]'")

from neardup.engine.ray import (  # noqa: E402
    RayConfig,
    RayInputs,
    RayRun,
    import_ray,
    plan_shards,
    write_outputs,
)
from tests.engine.agreement import CHAINED_NGRAM_PARAMS, contained_behind_capped_keys  # noqa: E402
from tests.engine.fakes import FakeBiEncoder, FakeRETSim, FakeRETSimPartial  # noqa: E402

pytestmark = pytest.mark.ray


@pytest.fixture
def cluster(ray_cluster):
    """The session's two Ray nodes (tests/conftest.py): workers import this checkout and
    load the fault-injection plugin, so they can be told to kill themselves once
    (RAY_FAULT_ENV, :func:`neardup.faults.kill_once`)."""
    return ray_cluster


#: Documents of the demo corpus in the shards fixture, and where its three files cut them:
#: a third of the corpus, cut as the whole corpus was (row groups of _ROW_GROUP, read tasks
#: of up to _SHARD_ROWS rows: seven row shards, three in the first file), so every wave,
#: exchange and component round of the full corpus still runs, on a third of the work.
_SHARD_DOCS = 1640
_CUTS = (0, 567, 1100, _SHARD_DOCS)
_ROW_GROUP = 167
_SHARD_ROWS = 267


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """The demo corpus's first 1,640 documents as three shards: two Parquet files, one JSONL."""
    with gzip.open(demo_corpus_path(), "rt") as handle:
        records = [json.loads(line) for _, line in zip(range(_SHARD_DOCS), handle)]
    for r in records:
        r.pop("noise", None)
    directory = tmp_path_factory.mktemp("shards")
    paths = []
    for i, (a, b) in enumerate(zip(_CUTS, _CUTS[1:])):
        if i < 2:
            path = directory / f"part-{i}.parquet"
            pq.write_table(pa.Table.from_pylist(records[a:b]), path, row_group_size=_ROW_GROUP)
        else:
            path = directory / f"part-{i}.jsonl"
            path.write_text("".join(json.dumps(r) + "\n" for r in records[a:b]))
        paths.append(str(path))
    return paths


#: The local engine's results the Ray runs are held to, by their inputs: several tests
#: compare with the same local run (MinHash on the shards, in components), computed once.
_LOCAL_RUNS: dict = {}


def _local(paths, method: str, params: dict, reader: ReaderConfig, cluster: ClusterConfig | None = None):
    """The local engine's result of ``make_method(method, **params)`` on ``paths``, computed
    once per module (a result is only read by the tests)."""
    cluster = cluster or ClusterConfig()
    key = (tuple(paths), method, json.dumps(params, sort_keys=True), repr(reader), repr(cluster))
    if key not in _LOCAL_RUNS:
        _LOCAL_RUNS[key] = run(read_corpus(paths, reader), make_method(method, **params), cluster=cluster)
    return _LOCAL_RUNS[key]


def _local_and_ray(paths, method, params, reader, window=None, ray_config=None):
    method_obj = make_method(method, **params)
    cluster = ClusterConfig(time_window_hours=window)
    local = _local(paths, method, params, reader, cluster)
    distributed = run(RayInputs(tuple(paths), reader), method_obj, cluster=cluster, engine="ray",
                      ray=ray_config or RayConfig(shard_rows=_SHARD_ROWS, partitions=8))
    return local, distributed


# MinHash's default on the shards is held to the local engine, with every check below, by
# test_worker_killed_while_linking_is_retried (the same run, a linking task killed once).
@pytest.mark.parametrize(
    "method, params",
    [("exact", {}), ("minhash", {"threshold": 0.3}), ("simhash", {"threshold": 5})],
)
def test_same_clusters_as_local_engine(cluster, shards, method, params):
    local, distributed = _local_and_ray(shards, method, params, ReaderConfig(id_field="id"))
    assert distributed.params["engine"] == "ray"
    assert distributed.ids.tolist() == local.ids.tolist()
    np.testing.assert_array_equal(distributed.clusters, local.clusters)
    np.testing.assert_array_equal(distributed.representative, local.representative)
    np.testing.assert_array_equal(distributed.status, local.status)
    assert local.n_clusters < local.n_docs  # the corpus has duplicates to find
    # The merged forest joins exactly the clusters.
    assert len(distributed.pairs) == distributed.n_docs - distributed.n_clusters


def test_second_wave_skips_what_the_first_joined(cluster, shards):
    reader, method = ReaderConfig(id_field="id"), make_method("minhash")
    one, two = (run(RayInputs(tuple(shards), reader), method, engine="ray",
                    ray=RayConfig(shard_rows=_SHARD_ROWS, partitions=8, first_wave=first)) for first in (8, 2))
    np.testing.assert_array_equal(one.clusters, two.clusters)
    np.testing.assert_array_equal(one.representative, two.representative)
    one, two = one.params["corpus_stage"], two.params["corpus_stage"]
    assert [len(one["waves"]), len(two["waves"])] == [1, 3]  # 8; then 2, 2, 4 (each wave doubles)
    assert [w["partitions"] for w in two["waves"]] == [2, 2, 4]
    assert one["candidate_edges"] == two["candidate_edges"]
    assert two["waves"][1]["edges_after_seed"] < two["waves"][1]["candidate_edges"]
    assert two["verified_edges"] < one["verified_edges"]
    # Key rows ship as uint64 key + uint32 shard row; the link tasks got signatures of
    # 128 uint32 (no date: no time window) for each document they linked.
    assert one["exchanged_bytes"]["key_rows"] == 12 * one["candidate_keys"] > 0
    assert one["exchanged_bytes"]["gathered_rows"] == 512 * sum(w["linked_documents"] for w in one["waves"])
    assert two["exchanged_bytes"]["edges"] < one["exchanged_bytes"]["edges"]


def test_time_window_position_ids_and_written_rejects(cluster, shards, tmp_path):
    # One Ray run read twice: the stage output collected to the driver (the Python API's
    # ids, clusters and rejects) and the outputs written per range and per shard (the
    # CLI's), which name the time window's rejects by their documents' ids.
    reader = ReaderConfig(date_field="date")  # ids numbered by global position
    method = make_method("minhash", threshold=0.3)
    local = _local(shards, "minhash", {"threshold": 0.3}, reader, ClusterConfig(time_window_hours=24))
    run_ = RayRun(RayInputs(tuple(shards), reader), method, time_window_hours=24,
                  config=RayConfig(shard_rows=_SHARD_ROWS, partitions=8, components_memory=1 << 14))
    run_.execute()
    summary = write_outputs(run_, clusters_out=tmp_path / "c", pairs_out=tmp_path / "p")
    stage = run_.stage_output()
    assert stage.ids.tolist() == local.ids.tolist() == [str(i) for i in range(local.n_docs)]
    np.testing.assert_array_equal(canonical_labels(stage.roots), local.clusters)
    assert len(stage.outside_window) > 0
    got = _clusters_table(tmp_path / "c").loc[local.ids]
    assert _same_membership(got["cluster"], local.clusters)
    pairs = pq.read_table(tmp_path / "p").to_pandas()
    outside = pairs[pairs["outside_window"]]
    assert len(outside) == summary["pairs_outside_time_window"] > 0
    assert len(pairs) - len(outside) == summary["pairs"] == local.n_docs - local.n_clusters
    # The rejects named by the ids of their documents (partitions may reject one pair
    # each: the written table repeats it, as the summary counts it).
    ids = local.ids
    want = {(ids[a], ids[b]) for a, b in zip(run_.outside.left, run_.outside.right)}
    assert set(zip(outside["id_a"], outside["id_b"])) == want


def test_dedup_api_ships_batches(cluster):
    texts = ["the cat sat on the mat today", "the cat sat on the mat today!", "a dog", "", "a dog"]
    local = neardup.dedup(texts, "exact", pair_types=False)
    distributed = neardup.dedup(texts, "exact", engine="ray", batch_size=2)
    np.testing.assert_array_equal(distributed.clusters, local.clusters)
    assert distributed.status.tolist() == local.status.tolist()


def test_empty_and_single_document_corpora(cluster):
    assert neardup.dedup([], "minhash", engine="ray").n_docs == 0
    one = neardup.dedup(["just one document here"], "minhash", engine="ray")
    assert one.clusters.tolist() == [0] and one.representative.tolist() == [True]


def test_each_keep_policy_keeps_the_documented_record(cluster, tmp_path):
    """The workers' assign tasks use the local rule (neardup.graph.keep): each policy keeps
    tests/test_keep_policies.py's expected record, through the CLI's distributed writers
    and through the Python API; --annotate writes every record once."""
    from tests.test_keep_policies import EXPECTED, _corpus

    rows = _corpus()
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["dedup", str(source), "--method", "minhash", "--threshold", "0.5", "--id-field", "id",
            "--date-field", "date", "--engine", "ray", "--ray-address", cluster["address"], "--quiet"]
    for policy, kept in EXPECTED.items():
        keep = ["--keep-by", "score"] if policy == "by-score" else ["--keep", policy]
        out = tmp_path / f"clusters-{policy}"
        result = CliRunner().invoke(main, [*args, *keep, "--clusters-out", str(out)])
        assert result.exit_code == 0, result.output
        table = pq.read_table(out).to_pandas()
        chosen = set(table["id"][table["representative"] & (table["cluster_size"] > 1)])
        assert chosen == kept, policy
    api = neardup.dedup(rows, "minhash", id_field="id", date_field="date", threshold=0.5,
                        engine="ray", keep="most-complete")
    assert {api.ids[i] for i in api.representatives if api.cluster_size[i] > 1} == EXPECTED["most-complete"]
    marked = tmp_path / "marked"
    result = CliRunner().invoke(main, [*args, "--keep", "latest", "--annotate", "--out", str(marked)])
    assert result.exit_code == 0, result.output
    records = pq.read_table(marked).to_pylist()
    assert sorted(r["id"] for r in records) == sorted(r["id"] for r in rows)
    kept = {r["cluster"]: r["id"] for r in records if r["is_representative"]}
    assert {kept[r["cluster"]] for r in records if r["cluster_size"] > 1} == EXPECTED["latest"]
    assert all(r["duplicate_of"] == (None if r["is_representative"] else kept[r["cluster"]])
               for r in records)


def test_worker_killed_while_linking_is_retried(cluster, shards):
    marker = cluster["marker"]
    marker.unlink(missing_ok=True)
    armed = marker.with_name(marker.name + ".armed")
    armed.touch()
    try:
        local, distributed = _local_and_ray(shards, "minhash", {}, ReaderConfig(id_field="id"))
    finally:
        armed.unlink()
    assert marker.exists(), "no linking task killed its worker: the drill did not run"
    assert sorted(distributed.ids.tolist()) == sorted(set(local.ids.tolist()))  # each once
    assert distributed.params["engine"] == "ray"
    assert distributed.ids.tolist() == local.ids.tolist()
    np.testing.assert_array_equal(distributed.clusters, local.clusters)
    np.testing.assert_array_equal(distributed.representative, local.representative)
    np.testing.assert_array_equal(distributed.status, local.status)
    assert local.n_clusters < local.n_docs  # the corpus has duplicates to find
    assert len(distributed.pairs) == distributed.n_docs - distributed.n_clusters  # a forest


def test_bad_record_names_file_and_line_and_writes_nothing(cluster, shards, tmp_path):
    bad = tmp_path / "bad.jsonl"
    lines = [json.dumps({"id": f"b{i}", "text": f"document number {i}"}) for i in range(10)]
    lines[6] = '{"id": "b6", "text": "cut off'
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"bad\.jsonl, line 7"):
        run(RayInputs((shards[0], str(bad)), ReaderConfig(id_field="id")), make_method("exact"),
            engine="ray")
    out = tmp_path / "clusters"
    result = CliRunner().invoke(main, ["dedup", shards[0], str(bad), "--id-field", "id", "--engine",
                                       "ray", "--ray-address", cluster["address"], "--clusters-out",
                                       str(out), "--quiet"])
    assert result.exit_code != 0
    assert "bad.jsonl, line 7" in result.output
    assert not out.exists() and not list(tmp_path.glob(".clusters*"))


def test_cli_writes_parquet_partitions_like_local(cluster, shards, tmp_path):
    args = ["dedup", *shards, "--method", "minhash", "--id-field", "id", "--quiet"]
    local = tmp_path / "local.parquet"
    assert CliRunner().invoke(main, [*args, "--clusters-out", str(local)]).exit_code == 0
    outs = {name: tmp_path / name for name in ("clusters", "pairs", "kept")}
    result = CliRunner().invoke(main, [*args, "--engine", "ray", "--ray-address", cluster["address"],
                                       "--clusters-out", str(outs["clusters"]), "--pairs-out",
                                       str(outs["pairs"]), "--out", str(outs["kept"]),
                                       "--report", str(tmp_path / "report.json")])
    assert result.exit_code == 0, result.output
    expected = pq.read_table(local).to_pandas().set_index("id")
    got = pq.read_table(outs["clusters"]).to_pandas().set_index("id")
    assert sorted(got.index) == sorted(expected.index)  # every document exactly once
    got = got.loc[expected.index]
    # Same membership (cluster ids renumbered): the label maps are one-to-one.
    pairs = set(zip(expected["cluster"], got["cluster"]))
    assert len(pairs) == expected["cluster"].nunique() == got["cluster"].nunique()
    assert (got["representative"] == expected["representative"]).all()
    kept = pq.read_table(outs["kept"]).column("id").to_pylist()
    assert sorted(kept) == sorted(expected.index[expected["representative"]])
    edges = pq.read_table(outs["pairs"])
    assert edges.num_rows == len(expected) - expected["representative"].sum()
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["summary"]["clusters"] == int(expected["representative"].sum())


def _recording_bars(monkeypatch) -> dict:
    """Replace the engine's progress bars by records of what each was told."""
    from contextlib import contextmanager

    import neardup.engine.ray.run as engine

    bars: dict[str, dict] = {}

    @contextmanager
    def recording(description, *, total=None, unit="docs", enabled=None):
        bar = bars[description] = {"total": total, "unit": unit, "enabled": enabled, "done": 0,
                                   "status": []}

        def advance(n, status=None):
            bar["done"] += n
            if status is not None:
                bar["status"].append(status)
        yield advance

    monkeypatch.setattr(engine, "progress_bar", recording)
    return bars


@pytest.mark.parametrize("method", ["minhash", "ngram"])
def test_cli_progress_bars_follow_each_stage(cluster, shards, tmp_path, monkeypatch, method):
    bars = _recording_bars(monkeypatch)
    # --profile clean: the bars, not the profile the demo's noise would choose (character
    # 5-grams, several times the work).
    args = ["dedup", *shards, "--method", method, "--profile", "clean", "--id-field", "id", "--engine", "ray",
            "--ray-address", cluster["address"], "--ray-shard-rows", str(_SHARD_ROWS), "--partitions", "4",
            "--clusters-out", str(tmp_path / "c"), "--out", str(tmp_path / "o")]
    result = CliRunner().invoke(main, [*args, "--progress"])
    assert result.exit_code == 0, result.output
    assert list(bars) == ["sketching", "linking", "writing"]
    planned = plan_shards(RayInputs(tuple(shards), ReaderConfig(id_field="id")), _SHARD_ROWS)
    assert bars["sketching"]["total"] == len(planned) > 3  # row ranges of the Parquet files
    # ngram's pair-count exchange reduces one range per partition after the waves.
    assert bars["linking"]["total"] == 4 * (2 if method == "ngram" else 1)
    for bar in bars.values():
        assert bar["enabled"] is True and bar["done"] == bar["total"]
    assert "components: round 1" in bars["linking"]["status"]
    if method == "ngram":
        return  # --quiet turns every bar off whatever the method: one run of it suffices
    bars.clear()
    result = CliRunner().invoke(main, [*args, "--quiet"])
    assert result.exit_code == 0, result.output
    assert bars and all(bar["enabled"] is False for bar in bars.values())


def test_vector_stage_progress_bars(cluster, shards, tmp_path, monkeypatch):
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    bars = _recording_bars(monkeypatch)
    run_ = RayRun(RayInputs(tuple(shards), ReaderConfig(id_field="id")),
                  FakeRETSim(threads=1, threshold=0.85), config=RayConfig(shard_rows=_SHARD_ROWS), progress=True)
    run_.execute()
    write_outputs(run_, clusters_out=tmp_path / "c")
    assert list(bars) == ["embedding", "searching", "components", "writing"]
    for name in ("embedding", "searching", "writing"):
        assert bars[name]["done"] == bars[name]["total"] > 0, name
    assert bars["components"]["status"][0] == "components: round 1"


def test_outputs_written_without_the_forest_on_the_driver(cluster, shards, tmp_path):
    reader = ReaderConfig(id_field="id")
    method = make_method("minhash")
    local = _local(shards, "minhash", {}, reader)
    run_ = RayRun(RayInputs(tuple(shards), reader), method,
                  config=RayConfig(shard_rows=_SHARD_ROWS, partitions=8))
    run_.execute()
    summary = write_outputs(run_, clusters_out=tmp_path / "c", pairs_out=tmp_path / "p")
    assert run_._fetched is None  # nodes, roots and forest stayed in the cluster
    expected = local.summary()
    for key in ("documents", "clusters", "duplicates_removed", "documents_in_duplicate_clusters",
                "duplicate_clusters", "largest_cluster", "pairs"):
        assert summary[key] == expected[key], key
    assert pq.read_table(tmp_path / "p").num_rows == summary["pairs"]


@pytest.mark.parametrize("method_class, params, window", [
    (FakeRETSim, {"threshold": 0.85}, None),
    (FakeRETSim, {"threshold": 0.85, "index": "ivf"}, None),
    (FakeRETSimPartial, {"threshold": 0.85, "exact_limit": 1000, "k": 5}, None),  # auto -> IVF
    (FakeRETSim, {"threshold": 0.8}, 24),
])
def test_embedding_methods_same_clusters_as_local_engine(cluster, shards, method_class, params, window):
    # The workers unpickle the stand-in classes by value (this module is not importable there).
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    method = method_class(threads=1, **params)
    reader = ReaderConfig(id_field="id", date_field="date" if window else None)
    config = ClusterConfig(time_window_hours=window)
    local = run(read_corpus(shards, reader), method, cluster=config)
    distributed = run(RayInputs(tuple(shards), reader), method, cluster=config, engine="ray",
                      ray=RayConfig(shard_rows=_SHARD_ROWS))
    stats = distributed.params["corpus_stage"]
    assert stats["index"] == ("flat" if params.get("index", "auto") == "auto" and "exact_limit" not in params
                              else "ivf")
    assert stats["row_shards"] == 7 and local.params["corpus_stage"]["shards"] == 1
    assert distributed.ids.tolist() == local.ids.tolist()
    np.testing.assert_array_equal(distributed.clusters, local.clusters)
    np.testing.assert_array_equal(distributed.representative, local.representative)
    assert local.n_clusters < local.n_docs - 100  # the corpus has duplicates to find
    assert len(distributed.pairs) == local.n_docs - local.n_clusters  # a spanning forest
    if window:
        assert len(distributed.outside_window) > 0


@pytest.mark.parametrize("algorithm", ["leiden", "hac"])
def test_embedding_methods_keep_every_pair_for_leiden_and_hac(cluster, shards, tmp_path, algorithm):
    # Row shards searched by separate tasks (kNN finds a pair from both ends, maybe
    # in two tasks): every accepted pair once, and the local engine's clusters, on the
    # driver (the Python API) and from the workers' outputs (clustered per component).
    # One Ray run read both ways: the API's result is its stage output, collected and
    # clustered on the driver as run(engine="ray") does (pipeline.result_from_stage).
    from neardup.graph.keep import KeepPolicy
    from neardup.pipeline import result_from_stage
    from neardup.progress import StageTimer

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    reader = ReaderConfig(id_field="id")
    method = FakeRETSim(threshold=0.85, k=5, threads=1)
    config = ClusterConfig(algorithm=algorithm, resolution=1.0)
    local = run(read_corpus(shards[:1], reader), method, cluster=config)
    assert "engine_fallback" not in local.params
    run_ = RayRun(RayInputs(tuple(shards[:1]), reader), method, config=RayConfig(shard_rows=_SHARD_ROWS),
                  every_edge=True)
    run_.execute()
    summary = write_outputs(run_, clusters_out=tmp_path / "c", pairs_out=tmp_path / "p",
                            algorithm=algorithm, resolution=1.0)
    distributed = result_from_stage(run_.stage_output(), method, config.resolved(method), KeepPolicy(rule="longest"),
                                    StageTimer(), engine="ray")
    assert distributed.params["corpus_stage"]["row_shards"] > 1
    np.testing.assert_array_equal(distributed.clusters, local.clusters)
    np.testing.assert_array_equal(distributed.representative, local.representative)
    _assert_same_pairs(distributed.pairs, local.pairs)
    assert len(local.pairs) > local.n_docs - local.n_clusters  # every pair, not a forest
    got = _clusters_table(tmp_path / "c").loc[local.ids]
    assert _same_membership(got["cluster"], local.clusters)
    assert (got["representative"].to_numpy() == local.representative).all()
    assert pq.read_table(tmp_path / "p").num_rows == summary["pairs"] == len(local.pairs)


def test_embedding_method_on_batches_with_empty_and_identical_documents(cluster):
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    from neardup.io.batch import DocumentBatch

    texts = ["The same story about the harbour.", " ... ", "The same story about the harbour.",
             "Something else entirely, of another kind."]
    batches = [DocumentBatch(ids=[str(i)], texts=[t], dates=None, source="mem", rows=np.array([i]))
               for i, t in enumerate(texts)]
    result = run(iter(batches), FakeRETSim(threshold=0.9, threads=1), engine="ray")
    assert result.clusters.tolist() == [0, 1, 0, 2]
    assert result.status.tolist() == ["ok", "empty", "ok", "ok"]
    nothing = run(iter([]), FakeRETSim(threshold=0.9), engine="ray")
    assert nothing.n_docs == 0


# Each method's default is the contract's (tests/test_engine_contract_ray.py); here the
# settings that take the exchange, shipped sets and texts through the sharded corpus.
@pytest.mark.parametrize("method, params, date_field", [
    ("ngram", {"threshold": 0.3}, None),
    # Shingles over max_df are not compared all-to-all: documents holding them have unseen
    # keys, which the exchange's reduce must bound (a pair it cannot score from counts is
    # verified: test_exchange_does_not_score_from_counts_a_pair_sharing_capped_keys).
    ("ngram", {"threshold": 0.3, "max_df": 3}, None),
    ("spotsigs", {}, None),
    ("minhash", {"verify": "exact", "threshold": 0.3}, None),  # band keys, verified on shipped shingle sets
    ("rerank", {}, "date"),  # a verifier reading texts (and dates)
])
def test_set_and_text_methods_same_clusters_as_local_engine(cluster, shards, method, params, date_field,
                                                           request):
    config = RayConfig(shard_rows=_SHARD_ROWS, partitions=8)
    if method == "rerank":
        # A small verifier (logistic regression on shingle overlaps: tests/conftest.py's
        # tiny_overlap_verifier); the first file's 567 documents in three Ray shards.
        params = {"scorer": "verifier", "model": str(request.getfixturevalue("tiny_overlap_verifier"))}
        shards = shards[:1]
    local, distributed = _local_and_ray(shards, method, params, ReaderConfig(id_field="id", date_field=date_field),
                                        ray_config=config)
    assert distributed.ids.tolist() == local.ids.tolist()
    np.testing.assert_array_equal(distributed.clusters, local.clusters)
    np.testing.assert_array_equal(distributed.representative, local.representative)
    assert local.n_clusters < local.n_docs - 10  # the corpus has duplicates to find
    assert len(distributed.pairs) == local.n_docs - local.n_clusters
    stats = distributed.params["corpus_stage"]
    assert [w["partitions"] for w in stats["waves"]] == [1, 1, 2, 4] and stats["verified_edges"] > 0
    assert stats["shards"] == (3 if method == "rerank" else 7)
    if method == "ngram":  # the method's pruning summary, summed over partitions as locally
        assert distributed.summary()["max_df_shingles"] == local.summary()["max_df_shingles"]
    if method in ("ngram", "spotsigs"):  # through the pair-count exchange
        exchange = stats["exchange"]
        assert exchange["ranges"] == 8 and exchange["scored_from_counts"] > 0


@pytest.mark.parametrize("params", CHAINED_NGRAM_PARAMS)
def test_ngram_chains_groups_over_max_df_as_in_memory(cluster, params):
    # Issue 36 (tests/engine/test_corpus_stage.py has the local engine's): groups over
    # max_df are chained by the one key-group rule, and the exchange's reduce knows which
    # documents hold keys of such groups.
    with gzip.open(demo_corpus_path(), "rt") as handle:
        texts = [json.loads(line)["text"] for _, line in zip(range(300), handle)]
    memory = neardup.dedup(texts, "ngram", engine="memory", pair_types=False, **params)
    distributed = neardup.dedup(texts, "ngram", engine="ray", pair_types=False,
                                ray_address=cluster["address"], partitions=8, batch_size=100,
                                **params)
    assert distributed.params["engine"] == "ray"
    assert memory.summary()["max_df_shingles"] > 1000  # many groups linked by chains
    np.testing.assert_array_equal(distributed.clusters, memory.clusters)
    assert len(distributed.pairs) == len(texts) - distributed.n_clusters


def test_exchange_does_not_score_from_counts_a_pair_sharing_capped_keys(cluster):
    texts, params = contained_behind_capped_keys()
    memory = neardup.dedup(texts, "ngram", engine="memory", pair_types=False, **params)
    distributed = neardup.dedup(texts, "ngram", engine="ray", pair_types=False,
                                ray_address=cluster["address"], partitions=4, **params)
    assert memory.clusters[-1] == memory.clusters[-2] and memory.n_clusters == len(texts) - 1
    np.testing.assert_array_equal(distributed.clusters, memory.clusters)
    assert distributed.params["corpus_stage"]["exchange"]["verified_edges"] > 0


def _assert_same_pairs(got, expected) -> None:
    got, expected = got.canonical(), expected.canonical()
    np.testing.assert_array_equal(got.left, expected.left)
    np.testing.assert_array_equal(got.right, expected.right)
    # A verifier's score of one pair may differ in the last float32 bits with the batch
    # it was scored in (a partition's, not the whole corpus's).
    np.testing.assert_allclose(got.score, expected.score, rtol=1e-5)


# Each method's default under Leiden is the contract's (tests/test_engine_contract_ray.py);
# here a resolution other than 1 and a method without a verifier, on the sharded corpus.
@pytest.mark.parametrize("method, params, resolution", [
    ("minhash", {"threshold": 0.3}, 0.6), ("simhash", {"threshold": 5}, 1.0),
])
def test_community_detection_same_clusters_as_local_engine(cluster, shards, method, params, resolution):
    # Leiden needs every accepted pair, not a spanning forest: one wave, nothing skipped,
    # the pairs merged once each; same communities as the local out-of-core engine.
    reader, method_obj = ReaderConfig(id_field="id"), make_method(method, **params)
    leiden = ClusterConfig(algorithm="leiden", resolution=resolution)
    local = _local(shards, method, params, reader, leiden)
    distributed = run(RayInputs(tuple(shards), reader), method_obj, cluster=leiden, engine="ray",
                      ray=RayConfig(shard_rows=_SHARD_ROWS, partitions=8))
    assert local.params["engine"] == "local" and distributed.params["engine"] == "ray"
    np.testing.assert_array_equal(distributed.clusters, local.clusters)
    np.testing.assert_array_equal(distributed.representative, local.representative)
    _assert_same_pairs(distributed.pairs, local.pairs)  # every accepted pair
    assert len(distributed.params["corpus_stage"]["waves"]) == 1
    if method == "minhash":  # Leiden cut components here: the test can tell the two apart
        components = _local(shards, method, params, reader)
        assert distributed.n_clusters > components.n_clusters
        assert len(distributed.pairs) > distributed.n_docs - components.n_clusters


def test_rerank_leiden_on_ray_as_locally(cluster, shards, tiny_overlap_verifier, tmp_path):
    # The verifier's recommended clustering (Leiden), through the CLI's distributed
    # outputs: the local engine's clusters and pairs.
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    reader = ReaderConfig(id_field="id", date_field="date")
    method = make_method("rerank", scorer="verifier", model=str(tiny_overlap_verifier))
    # Resolution 1: on these documents Leiden cuts components (at 0.4 it would not).
    local = run(read_corpus(shards[:1], reader), method,
                cluster=ClusterConfig(algorithm="leiden", resolution=1.0))
    args = ["dedup", shards[0], "--method", "rerank", "--param", "scorer=verifier", "--param",
            f"model={tiny_overlap_verifier}", "--id-field", "id", "--date-field", "date", "--cluster", "leiden",
            "--resolution", "1.0", "--quiet"]
    result = CliRunner().invoke(main, [*args, "--engine", "ray", "--ray-address", cluster["address"],
                                       "--ray-shard-rows", str(_SHARD_ROWS), "--partitions", "8",
                                       "--clusters-out", str(tmp_path / "c"), "--pairs-out",
                                       str(tmp_path / "p"), "--report", str(tmp_path / "r.json")])
    assert result.exit_code == 0, result.output
    got = _clusters_table(tmp_path / "c").loc[local.ids]
    assert _same_membership(got["cluster"], local.clusters)
    assert (got["representative"].to_numpy() == local.representative).all()
    assert (got["cluster_size"].to_numpy() == local.cluster_size).all()
    # Leiden's pairs are every accepted edge; their components are not its clusters.
    n = local.n_docs
    edges = coo_matrix((np.ones(len(local.pairs)), (local.pairs.left, local.pairs.right)), shape=(n, n))
    assert not _same_membership(got["cluster"], connected_components(edges, directed=False)[1])
    written = pq.read_table(tmp_path / "p").to_pandas()
    assert len(written) == len(local.pairs) == json.loads((tmp_path / "r.json").read_text())["summary"]["pairs"]
    position = {doc_id: i for i, doc_id in enumerate(local.ids)}
    a, b = written["id_a"].map(position).to_numpy(), written["id_b"].map(position).to_numpy()
    _assert_same_pairs(Pairs(a, b, written["score"].to_numpy()), local.pairs)


def test_hac_on_ray_as_locally(cluster, shards, tmp_path):
    # The CLI's distributed outputs cluster each component by HAC, with the linkage and
    # distance asked for, from every accepted pair.
    reader = ReaderConfig(id_field="id")
    method = make_method("minhash", threshold=0.3)
    hac = ClusterConfig(algorithm="hac", linkage="complete", distance_threshold=0.6)
    local = run(read_corpus(shards[:1], reader), method, cluster=hac)
    components = run(read_corpus(shards[:1], reader), method)
    assert local.params["engine"] == "local" and local.n_clusters > components.n_clusters
    args = ["dedup", shards[0], "--method", "minhash", "--profile", "clean", "--threshold", "0.3",
            "--id-field", "id", "--cluster", "hac",
            "--linkage", "complete", "--hac-distance", "0.6", "--quiet", "--engine", "ray",
            "--ray-address", cluster["address"], "--ray-shard-rows", str(_SHARD_ROWS),
            "--partitions", "4", "--clusters-out", str(tmp_path / "c"), "--pairs-out", str(tmp_path / "p")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    got = _clusters_table(tmp_path / "c").loc[local.ids]
    assert _same_membership(got["cluster"], local.clusters)
    assert (got["representative"].to_numpy() == local.representative).all()
    written = pq.read_table(tmp_path / "p").to_pandas()
    position = {doc_id: i for i, doc_id in enumerate(local.ids)}
    a, b = written["id_a"].map(position).to_numpy(), written["id_b"].map(position).to_numpy()
    _assert_same_pairs(Pairs(a, b, written["score"].to_numpy()), local.pairs)  # every accepted pair


def test_write_outputs_refuses_a_clustering_the_run_did_not_keep_pairs_for(cluster, shards, tmp_path):
    run_ = RayRun(RayInputs(tuple(shards[:1]), ReaderConfig(id_field="id")), make_method("exact"),
                  config=RayConfig(shard_rows=_SHARD_ROWS, partitions=2))
    run_.execute()
    with pytest.raises(ValueError, match="algorithm='leiden' needs a run made with every_edge=True"):
        write_outputs(run_, clusters_out=tmp_path / "c", algorithm="leiden")
    assert not (tmp_path / "c").exists()


def _ray_gives_the_local_clusters(method, paths: list[str]) -> None:
    """``method`` run on Ray over ``paths`` (read by the workers) gives the clusters and
    representatives the local engine gives, on a corpus with duplicates to find."""
    reader = ReaderConfig(id_field="id")
    local = run(read_corpus(paths, reader), method)
    distributed = run(RayInputs(tuple(paths), reader), method, engine="ray",
                      ray=RayConfig(shard_rows=_SHARD_ROWS, partitions=4))
    assert local.params["engine"] == "local" and distributed.params["engine"] == "ray"
    np.testing.assert_array_equal(distributed.clusters, local.clusters)
    np.testing.assert_array_equal(distributed.representative, local.representative)
    assert local.n_clusters < local.n_docs - 10  # the corpus has duplicates to find


def test_wminhash_fitted_in_advance_runs_on_ray(cluster, shards):
    # Fitted with fit(): no statistics pass is needed, so Ray takes it; its shards must
    # key and store the samples of the keyed sketch (the plain sketch has none).
    texts = [t for batch in read_corpus(shards[:1], ReaderConfig(id_field="id")) for t in batch.texts]
    fitted = make_method("wminhash", phrase_length=3).fit(texts)
    assert fitted.capabilities.statistics is None and placement(fitted, "components", "ray").supported
    _ray_gives_the_local_clusters(fitted, shards[:1])


def test_unsupported_method_is_refused(cluster):
    # An HNSW index is searched in memory only: no out-of-core stage keeps every accepted
    # pair for Leiden, refused before any Ray work.
    with pytest.raises(ValueError, match="engine='ray' cannot run method"):
        run(iter([]), FakeRETSim(index="hnsw"), cluster=ClusterConfig(algorithm="leiden"),
            engine="ray")


@pytest.mark.parametrize("verify", ["estimate", "exact"])
def test_wminhash_counts_its_statistics_on_ray(cluster, shards, verify):
    # Unfitted: the statistics stage runs as tasks (shards count by hash range, a task per
    # range sums them) and the fitted method keys the sketch stage, as the local engine does.
    # verify="exact" reads weighted phrase sets: the shards ship each set's weights beside
    # its elements, and a link task verifies the exact weighted Jaccard from them as the
    # local store's files give it.
    method = make_method("wminhash", verify=verify, phrase_length=3)
    assert method.capabilities.statistics is not None and placement(method, "components", "ray").supported
    assert method.capabilities.reads.set_weights == (verify == "exact")
    _ray_gives_the_local_clusters(method, shards[:2])


def test_rerank_over_embedding_candidates_runs(cluster, tiny_verifier, tmp_path):
    # RETSim candidates (the real model, in the workers), scored by a verifier from the
    # texts the embed tasks ship: the local engine's summary, through the CLI.
    path = tmp_path / "in.jsonl"
    texts = ["the cat sat on the mat near the door", "the cat sat on the mat near the door!",
             "stocks fell sharply in early trading on monday", "the cat sat on a mat by the door"]
    path.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts)))
    args = ["dedup", str(path), "--method", "rerank", "--param", "candidates=retsim", "--param",
            "scorer=verifier", "--param", f"model={tiny_verifier}", "--quiet"]
    reports = {}
    for engine in ("local", "ray"):
        extra = ["--ray-address", cluster["address"]] if engine == "ray" else []
        report = tmp_path / f"{engine}.json"
        result = CliRunner().invoke(main, [*args, "--engine", engine, *extra, "--report", str(report)])
        assert result.exit_code == 0, result.output
        reports[engine] = json.loads(report.read_text())["summary"]
    for key in ("documents", "clusters", "duplicates_removed", "documents_in_duplicate_clusters",
                "duplicate_clusters", "largest_cluster", "pairs"):
        assert reports["ray"][key] == reports["local"][key], key
    assert reports["ray"]["duplicate_clusters"] >= 1


@pytest.fixture(scope="module")
def chain_and_bucket(tmp_path_factory):
    """2,800 documents in shuffled order: 2,000 identical copies (one bucket per band, its
    star plus chain of edges), a 400-document chain of overlapping windows of one word
    stream (each near its neighbours only: a component of large diameter), 400 others."""
    rng = np.random.default_rng(7)
    vocabulary = np.array([f"w{i}" for i in range(50_000)])
    stream = vocabulary[rng.integers(0, vocabulary.size, 400 * 4 + 100)]
    chain = [" ".join(stream[4 * i:4 * i + 100]) for i in range(400)]
    copy = " ".join(vocabulary[rng.integers(0, vocabulary.size, 80)])
    others = [" ".join(vocabulary[rng.integers(0, vocabulary.size, 60)]) for _ in range(400)]
    texts = np.array(chain + [copy] * 2000 + others, dtype=object)[rng.permutation(2800)]
    path = tmp_path_factory.mktemp("chain") / "corpus.parquet"
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(texts.size)], "text": texts.tolist()}), path,
                   row_group_size=400)
    return str(path)


def _clusters_table(directory) -> "pd.DataFrame":  # noqa: F821
    return pq.read_table(directory).to_pandas().set_index("id")


def _same_membership(a, b) -> bool:
    """Two labelings of the same documents define the same clusters (ids may differ)."""
    pairs = set(zip(np.asarray(a).tolist(), np.asarray(b).tolist()))
    return len(pairs) == len(set(np.asarray(a).tolist())) == len(set(np.asarray(b).tolist()))


def test_distributed_components_long_chain_and_big_bucket(cluster, chain_and_bucket, tmp_path):
    reader, method = ReaderConfig(id_field="id"), make_method("minhash", threshold=0.7)
    local = run(read_corpus([chain_and_bucket], reader), method)
    assert local.summary()["largest_cluster"] >= 2000
    # The chain is one component of ~400 documents whose positions are shuffled. One run:
    # the CLI's path first (outputs written per range and per shard, nothing fetched),
    # then the Python API's (the stage output collected to the driver) from the same run;
    # representatives through the API on Ray: the tests above.
    config = RayConfig(shard_rows=400, partitions=8, components_memory=1 << 16)
    run_ = RayRun(RayInputs((chain_and_bucket,), reader), method, config=config)
    run_.execute()
    summary = write_outputs(run_, clusters_out=tmp_path / "c", pairs_out=tmp_path / "p", out=tmp_path / "o",
                            max_cluster_size=1600)
    assert run_._fetched is None
    stage = run_.stage_output()
    assert stage.ids.tolist() == local.ids.tolist()
    np.testing.assert_array_equal(canonical_labels(stage.roots), local.clusters)
    assert len(stage.pairs) == local.n_docs - local.n_clusters
    components = stage.stats["components"]
    # After each wave (1, 1, 2, 4 partitions), then with the identity links.
    assert len(components) == 5
    assert components[-2]["ranges"] >= 8 and components[0]["rounds"] >= 3
    got, expected = _clusters_table(tmp_path / "c"), local.clusters_table().to_pandas().set_index("id")
    assert sorted(got.index) == sorted(expected.index)
    got = got.loc[expected.index]
    assert _same_membership(got["cluster"], local.clusters)
    # Cluster ids are root positions: the smallest position of each component.
    positions = {d: i for i, d in enumerate(local.ids.tolist())}
    smallest = got.assign(pos=[positions[d] for d in got.index]).groupby("cluster")["pos"].min()
    assert (smallest.index.to_numpy() == smallest.to_numpy()).all()
    assert (got["representative"] == expected["representative"]).all()
    assert int(got["template"].sum()) == summary["template_documents"] == local.summary()["largest_cluster"]
    assert pq.read_table(tmp_path / "p").num_rows == summary["pairs"] == local.n_docs - local.n_clusters
    kept = pq.read_table(tmp_path / "o").column("id").to_pylist()
    assert sorted(kept) == sorted(expected.index[expected["representative"]])


def test_worker_killed_while_joining_components_is_retried(cluster, shards, tmp_path):
    marker = cluster["marker"]
    marker.unlink(missing_ok=True)
    armed = marker.with_name(marker.name + ".armed")
    armed.write_text("ray-components")
    reader, method = ReaderConfig(id_field="id"), make_method("minhash")
    try:
        run_ = RayRun(RayInputs(tuple(shards), reader), method,
                      config=RayConfig(shard_rows=_SHARD_ROWS, partitions=8, components_memory=1 << 14))
        run_.execute()
        write_outputs(run_, clusters_out=tmp_path / "c")
    finally:
        armed.unlink()
    assert marker.exists(), "no components task killed its worker: the drill did not run"
    local = _local(shards, "minhash", {}, reader)
    got = _clusters_table(tmp_path / "c")
    assert sorted(got.index) == sorted(local.ids.tolist())  # every document exactly once
    got = got.loc[local.ids]
    assert _same_membership(got["cluster"], local.clusters)
    assert (got["representative"].to_numpy() == local.representative).all()


def test_connect_passes_worker_settings_by_environment_or_runtime_env(monkeypatch):
    """A local cluster gets the workers' settings in its daemons' environment (no
    runtime_env; the driver's environment is restored); an existing cluster gets them as
    the job's runtime_env, or nothing with NEARDUP_RAY_RUNTIME_ENV=0."""
    from neardup.engine.ray import connection as ray_engine

    calls = []

    def fake_init(**options):
        calls.append((options, {k: ray_engine.os.environ.get(k) for k in ("NUMBA_NUM_THREADS", "NEARDUP_X")}))

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", fake_init)
    # No cluster answers at host:6379, and no token question: tests/engine/test_ray_connect.py.
    monkeypatch.setattr("socket.create_connection", lambda *a, **k: types.SimpleNamespace(close=lambda: None))
    monkeypatch.setattr(ray_engine, "ray_token_available", lambda: False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("NEARDUP_X", raising=False)
    monkeypatch.setenv("NUMBA_NUM_THREADS", "7")
    monkeypatch.delenv(ray_engine.RUNTIME_ENV_ENV, raising=False)
    ray_engine.connect(None, env={"NEARDUP_X": "1"}, num_cpus=2)
    options, seen = calls[-1]
    assert options["address"] == "local" and options["num_cpus"] == 2 and "runtime_env" not in options
    assert seen == {"NUMBA_NUM_THREADS": "1", "NEARDUP_X": "1"}
    assert ray_engine.os.environ["NUMBA_NUM_THREADS"] == "7" and "NEARDUP_X" not in ray_engine.os.environ
    ray_engine.connect("host:6379", env={"NEARDUP_X": "1"})
    options, seen = calls[-1]
    assert options["address"] == "host:6379" and seen["NEARDUP_X"] is None
    assert options["runtime_env"]["env_vars"]["NUMBA_NUM_THREADS"] == "1"
    assert options["runtime_env"]["env_vars"]["NEARDUP_X"] == "1"
    assert options["runtime_env"]["env_vars"]["PYTHONPATH"].split(ray_engine.os.pathsep)[0] == str(
        ray_engine.Path(neardup.__file__).resolve().parents[1])
    monkeypatch.setenv(ray_engine.RUNTIME_ENV_ENV, "0")
    ray_engine.connect("host:6379")
    assert "runtime_env" not in calls[-1][0]


def test_local_cluster_workers_inherit_the_settings(tmp_path):
    """A cluster started by connect() (in a fresh process): its workers import this checkout
    and run one numba thread, without a runtime_env."""
    import subprocess

    script = (
        "import os, json, ray\n"
        "from neardup.engine.ray import connect\n"
        "connect(None, num_cpus=1, object_store_memory=100 << 20)\n"
        "@ray.remote\n"
        "def probe():\n"
        "    import neardup\n"
        "    return os.environ.get('NUMBA_NUM_THREADS'), neardup.__file__\n"
        "print(json.dumps([*ray.get(probe.remote()), ray.get_runtime_context().runtime_env]))\n"
        "ray.shutdown()\n"
    )
    # Without the runner's NUMBA_NUM_THREADS (tests/conftest.py sets 1 under xdist): the
    # workers' 1 must come from connect().
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "PYTHONPATH", "NUMBA_NUM_THREADS")}
    env["PYTHONPATH"] = str(Path(neardup.__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    threads, path, runtime_env = json.loads(done.stdout.strip().splitlines()[-1])
    assert threads == "1"
    assert path == neardup.__file__
    assert not runtime_env


def test_missing_ray_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"pip install 'neardup\[ray\]'"):
        import_ray()


def test_shared_key_rows_are_the_sorted_rows_of_keys_held_twice():
    from neardup.engine.ray.keyed import sorted_key_rows as _sorted_key_rows
    from neardup.engine.ray.positions import unique_positions as _unique_positions

    rng = np.random.default_rng(3)
    offsets = np.array([0, 1000, 2500], np.int64)
    parts = [{"key": rng.integers(0, 400, n).astype(np.uint64), "row": rng.integers(0, 1000, n)}
             for n in (900, 700, 800)]
    every = _sorted_key_rows(offsets, parts)
    shared = _sorted_key_rows(offsets, parts, shared_only=True)
    keys, counts = np.unique(every["key"], return_counts=True)
    held_twice = np.isin(every["key"], keys[counts > 1])
    np.testing.assert_array_equal(shared["key"], every["key"][held_twice])
    np.testing.assert_array_equal(shared["doc"], every["doc"][held_twice])
    values = rng.integers(0, 50, 300)
    np.testing.assert_array_equal(_unique_positions(values), np.unique(values))


def test_key_rows_of_uint32_shard_rows_give_int64_positions_past_2_to_32():
    from neardup.engine.ray.keyed import sorted_key_rows as _sorted_key_rows

    offsets = np.array([0, 5_000_000_000], np.int64)
    parts = [{"key": np.array([7, 9], np.uint64), "row": np.array([4_000_000_000, 1], np.uint32)},
             {"key": np.array([7, 9], np.uint64), "row": np.array([3, 4_000_000_000], np.uint32)}]
    rows = _sorted_key_rows(offsets, parts)
    assert rows["doc"].dtype == np.int64
    assert rows["key"].tolist() == [7, 7, 9, 9]
    assert rows["doc"].tolist() == [4_000_000_000, 5_000_000_003, 1, 9_000_000_000]


def test_waves_grow_and_cover_every_partition_once():
    from neardup.engine.ray.exchange import pair_bounds as _pair_bounds
    from neardup.engine.ray.keyed import wave_plan as _waves

    for partitions, first in [(16, None), (8, 2), (8, 8), (1, None), (5, 1), (16384, None)]:
        waves = _waves(partitions, first)
        assert sum(waves, []) == list(range(partitions))
        assert all(len(w) <= sum(map(len, waves[:i])) for i, w in enumerate(waves) if i)
    assert [len(w) for w in _waves(16, None)] == [1, 1, 2, 4, 8]
    bounds = _pair_bounds(1000, 8)
    assert bounds[0] == 0 and bounds[-1] == 1000 and np.all(np.diff(bounds) > 0)
    assert np.diff(bounds)[0] < np.diff(bounds)[-1]  # early ranges are narrower: more pairs start there


@pytest.mark.parametrize("method, params", [("minhash", {"threshold": 0.5}), ("simhash", {}),
                                            ("ngram", {"threshold": 0.5})])
def test_only_identical_texts_pass_the_time_window(cluster, tmp_path, method, params):
    # Stories re-sent nine days later: half with one word of 600 changed (near-identical:
    # MinHash often estimates Jaccard 1.0), half unchanged. Only the unchanged pass a
    # 48-hour window, on Ray as in the local engine.
    rng = np.random.default_rng(1)
    records = []
    for p in range(20):
        words = [f"w{i}" for i in rng.integers(0, 5000, 600)]
        again = list(words)
        if p % 2:
            again[300] = "changed"
        records += [{"id": f"{p}a", "text": " ".join(words), "date": "1987-03-01T10:00:00"},
                    {"id": f"{p}b", "text": " ".join(again), "date": "1987-03-10T10:00:00"}]
    path = tmp_path / "resent.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    reader = ReaderConfig(id_field="id", date_field="date")
    local, distributed = _local_and_ray([str(path)], method, params, reader, window=48,
                                        ray_config=RayConfig(shard_rows=10, partitions=4))
    np.testing.assert_array_equal(distributed.clusters, local.clusters)
    merged = {p for p in range(20) if local.clusters[2 * p] == local.clusters[2 * p + 1]}
    assert merged == set(range(0, 20, 2))


@pytest.mark.parametrize("method, params", [("minhash", {}), ("ngram", {}), ("simhash", {}),
                                            ("retsim", {})])
def test_identical_texts_are_linked_as_in_the_local_engine(cluster, tmp_path, method, params):
    # Symbol-only texts have no shingles, and a copy of a short text may share no key
    # with it: identity links join them on Ray as in the local engine.
    texts = ["😀😀 🎉", "!!! ???", "😀😀 🎉", "!!!  ???", "Fine.", "FINE", "", "", "😀😀 🎊",
             "the quick brown fox jumps over the lazy dog"] * 3
    path = tmp_path / "symbols.jsonl"
    path.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts)))
    reader = ReaderConfig(id_field="id")
    method_obj = FakeRETSim(threshold=0.99) if method == "retsim" else make_method(method, **params)
    local = run(read_corpus([str(path)], reader), method_obj)
    distributed = run(RayInputs((str(path),), reader), method_obj, engine="ray",
                      ray=RayConfig(shard_rows=7, partitions=4))
    np.testing.assert_array_equal(distributed.clusters, local.clusters)
    c = local.clusters
    groups = [[0, 2, 10, 12, 20, 22], [1, 3, 11, 13, 21, 23], [4, 5, 14, 15, 24, 25], [8, 18, 28],
              [9, 19, 29]]
    assert all(len({c[i] for i in g}) == 1 for g in groups)
    assert len({c[g[0]] for g in groups} | {c[6], c[7]}) == len(groups) + 2


def test_traced_tasks_report_their_peak_only_when_asked():
    from neardup.engine.ray.tasks import traced as _traced

    task = _traced(lambda n: ({"n": n}, np.ones(n)))
    assert task(False, 1000)[0]["peak_bytes"] == 0
    assert task(True, 1000)[0]["peak_bytes"] >= 8000  # the traced array
    with pytest.raises(ValueError, match="RayConfig: parameter 'trace_memory' must be True or False"):
        RayConfig(trace_memory="yes")


# -- rerank over vector candidates: the search tasks' pairs verified by link tasks ----------

#: Documents of the demo corpus the rerank-over-vectors tests use (noisy near-duplicates, dated).
_RERANK_DOCS = 400


@pytest.fixture(scope="module")
def rerank_corpus(tmp_path_factory):
    """The demo corpus's first documents in one Parquet file of four row groups (four
    Ray shards)."""
    with gzip.open(demo_corpus_path(), "rt") as handle:
        records = [json.loads(line) for _, line in zip(range(_RERANK_DOCS), handle)]
    table = pa.table({"id": [str(r["id"]) for r in records], "text": [r["text"] for r in records],
                      "date": [r["date"] for r in records]})
    path = tmp_path_factory.mktemp("rerank") / "corpus.parquet"
    pq.write_table(table, path, row_group_size=_RERANK_DOCS // 4)
    return str(path)


def _rerank_over(verifier, candidate) -> RerankMethod:
    """The tiny verifier over a stand-in embedding method's candidates (no model)."""
    method = RerankMethod(scorer="verifier", model=str(verifier), threshold=0.5, candidates="retsim",
                          candidate_params={"threshold": 0.7, "k": 10})
    method._candidate = candidate  # the stand-in, as rerank builds its candidate method
    return method


@pytest.mark.parametrize("candidate, window", [
    (FakeRETSim(threshold=0.7, k=10, threads=1), None),
    (FakeRETSim(threshold=0.7, k=10, threads=1), 24),
    (FakeRETSimPartial(threshold=0.7, k=10, threads=1), None),  # several rows a document
    (FakeBiEncoder(threshold=0.95, threads=1), None),  # range search (no k)
], ids=["retsim", "retsim-window", "retsim-partial", "biencoder"])
def test_rerank_over_vector_candidates_same_clusters_as_local_engine(cluster, rerank_corpus, tiny_overlap_verifier,
                                                                     candidate, window):
    method = _rerank_over(tiny_overlap_verifier, candidate)
    assert placement(method, "components", "ray").stage == "vector"
    reader = ReaderConfig(id_field="id", date_field="date")
    config = ClusterConfig(time_window_hours=window)
    local = run(read_corpus([rerank_corpus], reader), method, cluster=config)
    memory = run(read_corpus([rerank_corpus], reader), method, cluster=config, engine="memory")
    # The smallest memory limit: the candidate pairs verified in several partitions.
    distributed = run(RayInputs((rerank_corpus,), reader), method, cluster=config, engine="ray",
                      ray=RayConfig(shard_rows=_RERANK_DOCS // 4, memory_limit=1 << 20))
    assert local.params["engine"] == "local" and distributed.params["engine"] == "ray"
    assert distributed.ids.tolist() == local.ids.tolist()
    np.testing.assert_array_equal(distributed.clusters, local.clusters)
    np.testing.assert_array_equal(distributed.representative, local.representative)
    np.testing.assert_array_equal(distributed.clusters, memory.clusters)
    assert local.n_clusters < local.n_docs - 10  # the corpus has duplicates to find
    # The scorer decided: candidates alone join more.
    assert run(read_corpus([rerank_corpus], reader), candidate, cluster=config, engine="memory").n_clusters \
        < local.n_clusters
    # A spanning forest of accepted pairs, each with the scorer's in-memory score.
    assert len(distributed.pairs) == local.n_docs - local.n_clusters
    scores = dict(zip(zip(memory.pairs.left.tolist(), memory.pairs.right.tolist()), memory.pairs.score))
    for left, right, score in zip(distributed.pairs.left.tolist(), distributed.pairs.right.tolist(),
                                  distributed.pairs.score):
        assert scores[(left, right)] == pytest.approx(score, abs=1e-5)
    stats = distributed.params["corpus_stage"]
    assert stats["shards"] == 4 and stats["verify_partitions"] > 1
    assert 0 < stats["verified_pairs"] <= stats["scored_pairs"]
    if window:
        assert len(distributed.outside_window) > 0


def test_rerank_over_vector_candidates_keeps_every_accepted_pair_for_leiden(cluster, rerank_corpus,
                                                                            tiny_overlap_verifier, tmp_path):
    # Every accepted pair, verified once (kNN finds a pair from both ends) in Ray's verify
    # partitions: the in-memory pairs and communities (the local vector stage's:
    # tests/engine/test_vector_stage.py).
    method = _rerank_over(tiny_overlap_verifier, FakeRETSim(threshold=0.7, k=10, threads=1))
    reader = ReaderConfig(id_field="id", date_field="date")
    config = ClusterConfig(algorithm="leiden", resolution=1.0, time_window_hours=24)
    corpus = str(tmp_path / "corpus.parquet")  # the first half: the verifier costs most
    pq.write_table(pq.read_table(rerank_corpus).slice(0, _RERANK_DOCS // 2), corpus,
                   row_group_size=_RERANK_DOCS // 8)
    memory = run(read_corpus([corpus], reader), method, cluster=config, engine="memory")
    distributed = run(RayInputs((corpus,), reader), method, cluster=config, engine="ray",
                      ray=RayConfig(shard_rows=_RERANK_DOCS // 8, memory_limit=1 << 20))
    np.testing.assert_array_equal(distributed.clusters, memory.clusters)
    np.testing.assert_array_equal(distributed.representative, memory.representative)
    _assert_same_pairs(distributed.pairs, memory.pairs)
    _assert_same_pairs(distributed.outside_window, memory.outside_window)
    assert len(memory.pairs) >= memory.n_docs - memory.n_clusters > 0


def test_rerank_over_vector_candidates_without_candidate_pairs(cluster, tiny_verifier):
    # Nothing above the vector threshold: no verify partition, every document alone.
    from neardup.io.batch import DocumentBatch

    texts = ["The harbour closed early today.", "Wheat prices rose in Chicago.", "A new mayor was chosen."]
    batches = [DocumentBatch(ids=[str(i)], texts=[t], dates=None, source="mem", rows=np.array([i]))
               for i, t in enumerate(texts)]
    result = run(iter(batches), _rerank_over(tiny_verifier, FakeRETSim(threshold=0.99, threads=1)), engine="ray")
    assert result.clusters.tolist() == [0, 1, 2]
    assert result.params["corpus_stage"]["verify_partitions"] == 0
