"""The out-of-core vector stage: the in-memory search's clusters, shard by shard; resumable.

Most tests use a deterministic stand-in for the model (hashed character trigrams), run
through the real RETSim method classes, so they are fast and exercise the same code; one
test uses the shipped RETSim model.
"""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from neardup.data import demo_corpus_path
from neardup.engine import (
    CorpusStageConfig,
    WorkDirError,
    run_vector_stage,
    supports_vector_stage,
)
from neardup.engine import vectors as vectors_module
from neardup.engine.vectors import shard_rows_for
from neardup.graph.cluster import canonical_labels
from neardup.io.batch import DocumentBatch
from neardup.methods.embedding import RETSimMethod
from neardup.pipeline import ClusterConfig, run

pytest.importorskip("faiss")

from tests.engine.fakes import FakeRETSim, FakeRETSimPartial, Killed, die_at_call  # noqa: E402


@pytest.fixture(scope="module")
def demo():
    with gzip.open(demo_corpus_path(), "rt") as handle:
        records = [json.loads(line) for line in handle][:600]
    # A few documents with nothing to embed (identical to each other): never paired by
    # the method, still output once.
    for i in (5, 77, 301):
        records[i] = dict(records[i], text=" ... ")
    return records


def _batches(records, size=128, dates=False):
    for start in range(0, len(records), size):
        chunk = records[start:start + size]
        yield DocumentBatch(
            ids=[str(start + i) for i in range(len(chunk))], texts=[r["text"] for r in chunk],
            dates=(np.array([r["date"][:19] for r in chunk], dtype="datetime64[s]") if dates else None),
            source="mem", rows=np.arange(start, start + len(chunk)))


def _pair_set(pairs):
    return set(zip(pairs.left.tolist(), pairs.right.tolist()))


@pytest.mark.parametrize("method_class", [FakeRETSim, FakeRETSimPartial])
@pytest.mark.parametrize("k", [None, 3])
@pytest.mark.parametrize("shard_rows", [37, None])
def test_sharded_search_matches_in_memory(demo, tmp_path, method_class, k, shard_rows):
    method = method_class(threshold=0.85, k=k, threads=1)
    memory = run(_batches(demo), method, engine="memory")
    stage = run_vector_stage(_batches(demo), method, total=len(demo), shard_rows=shard_rows,
                             config=CorpusStageConfig(work_dir=str(tmp_path / "w")))
    np.testing.assert_array_equal(canonical_labels(stage.roots), memory.clusters)
    assert memory.n_clusters < len(demo) - 20  # the corpus has duplicates to find
    assert stage.ids.tolist() == [str(i) for i in range(len(demo))]  # every document once
    # The forest: one edge per join, each a pair the in-memory search found (in kNN
    # mode, rows tied within float32 rounding may swap places at the k-th neighbour).
    assert len(stage.pairs) == len(demo) - memory.n_clusters
    if k is None:
        assert _pair_set(stage.pairs) <= _pair_set(memory.pairs)
    assert (stage.pairs.score >= np.float32(0.85)).all()
    if k is None and method_class is FakeRETSim:
        best = dict(zip(zip(memory.pairs.left.tolist(), memory.pairs.right.tolist()),
                        memory.pairs.score.tolist()))
        assert [best[p] for p in zip(stage.pairs.left.tolist(), stage.pairs.right.tolist())] \
            == stage.pairs.score.tolist()  # same scores, bit for bit
    # The three texts with nothing to embed are identical (" ... "): linked to each other
    # by their text identity, and to nothing else.
    labels = canonical_labels(stage.roots)
    for empty in (5, 77, 301):
        assert stage.n_features[empty] == 0
        assert np.flatnonzero(labels == labels[empty]).tolist() == [5, 77, 301]


def test_pipeline_local_engine_uses_vector_stage(demo, tmp_path):
    method = FakeRETSim(threshold=0.85)
    memory = run(_batches(demo), method, engine="memory")
    local = run(_batches(demo), method, engine="local", total=len(demo),
                corpus_stage=CorpusStageConfig(work_dir=str(tmp_path / "w"), memory_limit="1MB"))
    np.testing.assert_array_equal(local.clusters, memory.clusters)
    np.testing.assert_array_equal(local.representative, memory.representative)
    np.testing.assert_array_equal(local.status, memory.status)
    assert (tmp_path / "w" / "embed" / "rows.bin").stat().st_size == 597 * 64 * 4
    assert local.params["corpus_stage"]["shards"] == 1
    # HNSW stays in memory; flat, IVF and auto at any size, with every clustering.
    assert not supports_vector_stage(FakeRETSim(threshold=0.85, index="hnsw"), "components")
    assert all(supports_vector_stage(method, a) for a in ("leiden", "louvain", "hac"))
    assert supports_vector_stage(FakeRETSim(threshold=0.85, index="ivf"), "components")
    assert supports_vector_stage(method, "components", method.exact_limit + 1)
    assert supports_vector_stage(method, "components", None)
    assert supports_vector_stage(FakeRETSim(threshold=0.85, index="flat"), "components", None)


@pytest.mark.slow
@pytest.mark.parametrize("method_class, k, shard_rows", [
    (FakeRETSim, None, 37), (FakeRETSim, 3, 37), (FakeRETSimPartial, None, 37), (FakeRETSim, None, None)])
def test_every_edge_keeps_the_in_memory_pairs(demo, tmp_path, method_class, k, shard_rows):
    # Leiden and HAC read every accepted pair: the stage keeps each one once, with the
    # in-memory score (a pair found from both ends, or by several chunk pairs, once).
    method = method_class(threshold=0.85, k=k, threads=1)
    memory = run(_batches(demo), method, engine="memory", cluster=ClusterConfig(algorithm="leiden"))
    stage = run_vector_stage(_batches(demo), method, total=len(demo), shard_rows=shard_rows,
                             every_edge=True, config=CorpusStageConfig(work_dir=str(tmp_path / "w")))
    assert stage.stats["accepted_edges"] == len(memory.pairs) > len(demo) - memory.n_clusters
    assert _pair_set(stage.pairs) == _pair_set(memory.pairs)
    np.testing.assert_allclose(stage.pairs.score, memory.pairs.score, atol=1e-6)
    np.testing.assert_array_equal(canonical_labels(stage.roots), canonical_labels(
        run(_batches(demo), method, engine="memory").clusters))
    if shard_rows is not None:
        return
    # Through the pipeline, Leiden and HAC cluster those pairs as they cluster the
    # in-memory ones (no fallback).
    for cluster in (ClusterConfig(algorithm="leiden"),
                    ClusterConfig(algorithm="hac", linkage="complete", distance_threshold=0.1)):
        reference = run(_batches(demo), method, engine="memory", cluster=cluster)
        local = run(_batches(demo), method, engine="local", cluster=cluster, total=len(demo),
                    corpus_stage=CorpusStageConfig(work_dir=str(tmp_path / "w"), resume=True))
        assert "engine_fallback" not in local.params
        assert local.params["corpus_stage"]["accepted_edges"] == len(memory.pairs)
        np.testing.assert_array_equal(local.clusters, reference.clusters)
        np.testing.assert_array_equal(local.representative, reference.representative)


@pytest.fixture(scope="module")
def demo_all():
    with gzip.open(demo_corpus_path(), "rt") as handle:
        return [json.loads(line) for line in handle]


@pytest.mark.parametrize("method_class, k, shard_rows", [
    (FakeRETSim, None, 500), (FakeRETSim, 4, None), (FakeRETSimPartial, None, 500),
    (FakeRETSimPartial, 4, 500)])
@pytest.mark.slow
def test_ivf_shards_match_the_in_memory_ivf(demo_all, tmp_path, method_class, k, shard_rows):
    # Every row trains the shared centroids (<= 256 per cell), as in memory: per-shard
    # lists searched with the same probes give the in-memory IVF's neighbours.
    method = method_class(threshold=0.85, index="ivf", k=k, threads=1)
    docs = demo_all[:2500]
    memory = run(_batches(docs, 1000), method, engine="memory")
    stage = run_vector_stage(_batches(docs, 1000), method, shard_rows=shard_rows,
                             config=CorpusStageConfig(work_dir=str(tmp_path / "w")))
    assert stage.stats["index"] == "ivf" and stage.stats["k"] == (k or 100)
    assert stage.stats["shards"] == (1 if shard_rows is None else -(-stage.stats["rows"] // 500))
    np.testing.assert_array_equal(canonical_labels(stage.roots), memory.clusters)
    assert memory.n_clusters < len(docs) - 100
    assert len(stage.pairs) == len(docs) - memory.n_clusters
    assert (stage.pairs.score >= np.float32(0.85)).all()
    assert len(list((tmp_path / "w" / "search").glob("ivf-0*.faiss"))) == stage.stats["shards"]


@pytest.mark.slow
def test_auto_index_switches_to_ivf_above_exact_limit(demo_all, tmp_path):
    docs = demo_all[:2500]
    small = FakeRETSim(threshold=0.85, exact_limit=len(docs))
    large = FakeRETSim(threshold=0.85, exact_limit=1000)
    flat = run(_batches(docs, 1000), small, engine="local", total=len(docs),
               corpus_stage=CorpusStageConfig(memory_limit="4MB"))
    ivf = run(_batches(docs, 1000), large, engine="local", total=len(docs),
              corpus_stage=CorpusStageConfig(memory_limit="4MB"))
    assert flat.params["corpus_stage"]["index"] == "flat"
    assert ivf.params["corpus_stage"]["index"] == "ivf" and ivf.params["corpus_stage"]["shards"] > 1
    np.testing.assert_array_equal(ivf.clusters, run(_batches(docs, 1000), large, engine="memory").clusters)


@pytest.mark.slow
def test_ivf_training_sample_is_seeded_and_bounded(demo_all, tmp_path, monkeypatch):
    # Fewer training rows than rows: a seeded sample trains the centroids; two runs give
    # identical outputs, and the clusters stay close to the in-memory IVF's.
    from sklearn.metrics import adjusted_rand_score

    monkeypatch.setattr(vectors_module, "IVF_TRAIN_PER_CELL", 39)
    docs = demo_all[:2500]
    method = FakeRETSim(threshold=0.85, index="ivf", threads=1)
    runs = [run_vector_stage(_batches(docs, 1000), method, shard_rows=700,
                             config=CorpusStageConfig(work_dir=str(tmp_path / name)))
            for name in ("a", "b")]
    assert runs[0].stats["training_rows"] == 39 * runs[0].stats["nlist"] < runs[0].stats["rows"]
    np.testing.assert_array_equal(runs[0].roots, runs[1].roots)
    np.testing.assert_array_equal(runs[0].pairs.left, runs[1].pairs.left)
    assert (tmp_path / "a" / "search" / "ivf-centroids.faiss").read_bytes() == \
        (tmp_path / "b" / "search" / "ivf-centroids.faiss").read_bytes()
    memory = run(_batches(docs, 1000), method, engine="memory")
    assert adjusted_rand_score(memory.clusters, canonical_labels(runs[0].roots)) > 0.99


def test_time_window_matches_in_memory(demo):
    method = FakeRETSim(threshold=0.8)
    cluster = ClusterConfig(time_window_hours=24)
    memory = run(_batches(demo, dates=True), method, engine="memory", cluster=cluster)
    local = run(_batches(demo, dates=True), method, engine="local", cluster=cluster, total=len(demo),
                corpus_stage=CorpusStageConfig(memory_limit="1MB"))
    np.testing.assert_array_equal(local.clusters, memory.clusters)
    assert len(memory.outside_window) > 0
    assert _pair_set(local.outside_window) <= _pair_set(memory.outside_window)


def test_float16_storage_halves_the_rows_and_keeps_clusters(demo, tmp_path):
    method = FakeRETSim(threshold=0.85)
    full = run_vector_stage(_batches(demo), method, shard_rows=100,
                            config=CorpusStageConfig(work_dir=str(tmp_path / "a")))
    half = run_vector_stage(_batches(demo), method, shard_rows=100, storage="float16",
                            config=CorpusStageConfig(work_dir=str(tmp_path / "b")))
    size = (tmp_path / "a" / "embed" / "rows.bin").stat().st_size
    assert (tmp_path / "b" / "embed" / "rows.bin").stat().st_size * 2 == size
    np.testing.assert_array_equal(half.roots, full.roots)  # no pair sits within 1e-3 of 0.85 here


def test_shard_size_follows_the_memory_limit():
    assert shard_rows_for(64 << 20, 256, None) == (64 << 20) // 4 // (256 * 4 + 8)
    assert shard_rows_for(64 << 20, 256, 100) < shard_rows_for(64 << 20, 256, None)
    assert shard_rows_for(1 << 20, 4096, None) == vectors_module.MIN_SHARD_ROWS


@pytest.fixture(scope="module")
def clean_runs(tmp_path_factory):
    """The uninterrupted run each resume case compares with, once per index (the cases
    killed in the embed and in the search stage share it): ``clean(index, method, records)``
    -> (its work directory, its result)."""
    runs: dict = {}

    def clean(index, method, records):
        if index not in runs:
            work = tmp_path_factory.mktemp("clean")
            runs[index] = work, run_vector_stage(_batches(records), method, shard_rows=60,
                                                 config=CorpusStageConfig(work_dir=str(work)))
        return runs[index]

    return clean


@pytest.mark.parametrize("stage, index", [("embed", "flat"), ("search", "flat"), ("search", "ivf")])
@pytest.mark.slow
def test_resume_after_kill_gives_identical_output(demo, tmp_path, monkeypatch, clean_runs, stage, index):
    method = FakeRETSimPartial(threshold=0.85, threads=1, index=index)
    clean_dir, clean = clean_runs(index, method, demo)
    if stage == "embed":
        die_at_call(monkeypatch, FakeRETSimPartial, "sketch", 3)
    else:
        die_at_call(monkeypatch, vectors_module, "search_shard", 5)
    work = tmp_path / "killed"
    with pytest.raises(Killed):
        run_vector_stage(_batches(demo), method, shard_rows=60,
                         config=CorpusStageConfig(work_dir=str(work)))
    monkeypatch.undo()
    if stage == "search":
        assert len(list((work / "search").glob("q-*.json"))) == 4  # shards done before the kill
    with pytest.raises(WorkDirError, match="resume"):
        run_vector_stage(_batches(demo), method, shard_rows=60,
                         config=CorpusStageConfig(work_dir=str(work)))
    resumed = run_vector_stage(_batches(demo), method, shard_rows=60,
                               config=CorpusStageConfig(work_dir=str(work), resume=True))
    np.testing.assert_array_equal(resumed.roots, clean.roots)
    for a, b in ((resumed.pairs, clean.pairs), (resumed.outside_window, clean.outside_window)):
        np.testing.assert_array_equal(a.left, b.left)
        np.testing.assert_array_equal(a.right, b.right)
        np.testing.assert_array_equal(a.score, b.score)
    for name in ("forest.arrow", "roots.npy"):
        assert (work / "components" / name).read_bytes() == (clean_dir / "components" / name).read_bytes()


def test_resume_with_another_threshold_reuses_the_embeddings(demo, tmp_path, monkeypatch):
    work = str(tmp_path / "w")
    run_vector_stage(_batches(demo), FakeRETSim(threshold=0.85), shard_rows=100,
                     config=CorpusStageConfig(work_dir=work))

    def no_model(self, texts):
        raise AssertionError("embedded again")

    monkeypatch.setattr(FakeRETSim, "sketch", no_model)
    looser = run_vector_stage(_batches(demo), FakeRETSim(threshold=0.7), shard_rows=100,
                              config=CorpusStageConfig(work_dir=work, resume=True))
    monkeypatch.undo()
    memory = run(_batches(demo), FakeRETSim(threshold=0.7), engine="memory")
    np.testing.assert_array_equal(canonical_labels(looser.roots), memory.clusters)


@pytest.mark.neural
def test_shipped_retsim_model_sharded_matches_in_memory(demo, tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("unisim")
    records = demo[:160]
    method = RETSimMethod(threshold=0.9, cache_dir=str(tmp_path / "cache"))
    memory = run(_batches(records, size=40), method, engine="memory")
    stage = run_vector_stage(_batches(records, size=40), method, shard_rows=25,
                             config=CorpusStageConfig(work_dir=str(tmp_path / "w")))
    np.testing.assert_array_equal(canonical_labels(stage.roots), memory.clusters)
    assert memory.n_clusters < len(records)
    assert _pair_set(stage.pairs) <= _pair_set(memory.pairs)


def test_template_copies_shrink_the_query_batches(demo, monkeypatch):
    # 400 copies of one text: each finds all the others, 160,000 results in one batch,
    # more than a 1MB budget's share; later batches must shrink, and clusters not change.
    records = demo[:200] + [demo[10]] * 400 + demo[200:400]
    method = FakeRETSim(threshold=0.85, threads=1)
    seen = []
    real = vectors_module.QueryBatchSize.observe

    def observe(self, found):
        real(self, found)
        seen.append(self.rows)

    monkeypatch.setattr(vectors_module.QueryBatchSize, "observe", observe)
    stage = run_vector_stage(_batches(records), method, config=CorpusStageConfig(memory_limit="1MB"))
    monkeypatch.undo()
    memory = run(_batches(records), method, engine="memory")
    np.testing.assert_array_equal(canonical_labels(stage.roots), memory.clusters)
    assert min(seen) < vectors_module.QUERY_BATCH // 8


@pytest.mark.neural
def test_cli_local_engine_runs_retsim_out_of_core(demo, tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("unisim")
    import pyarrow.parquet as pq
    from click.testing import CliRunner

    from neardup.cli import main

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": r["id"], "text": r["text"]}) + "\n" for r in demo[:48]))
    runs = {}
    for engine in ("local", "memory"):
        out = tmp_path / f"{engine}.parquet"
        extra = (["--work-dir", tmp_path / "work", "--memory-limit", "1MB"] if engine == "local" else [])
        result = CliRunner().invoke(main, ["dedup", str(corpus), "--method", "retsim", "--engine", engine,
                                           "--id-field", "id", "--clusters-out", str(out), "-q",
                                           *map(str, extra)])
        assert result.exit_code == 0, result.output
        runs[engine] = pq.read_table(out).to_pydict()
    assert runs["local"]["cluster"] == runs["memory"]["cluster"]
    assert runs["local"]["id"] == [r["id"] for r in demo[:48]]
    assert (tmp_path / "work" / "embed" / "_DONE.json").exists()
    assert (tmp_path / "work" / "components" / "roots.npy").exists()


# -- rerank over embedding candidates: the vector stage's pairs scored from stored texts --


def _use_trigrams(monkeypatch) -> None:
    from tests.engine.fakes import TrigramEmbedder

    monkeypatch.setattr(RETSimMethod, "_make_embedder", lambda self: TrigramEmbedder())


@pytest.fixture
def trigram_retsim(monkeypatch):
    """rerank's RETSim candidates with the trigram stand-in instead of the model."""
    _use_trigrams(monkeypatch)


def _rerank(verifier, threshold=0.5):
    from neardup.methods.rerank import RerankMethod

    return RerankMethod(scorer="verifier", model=str(verifier), threshold=threshold,
                        candidates="retsim", candidate_params={"threshold": 0.7, "k": 10})


@pytest.mark.slow
def test_rerank_over_retsim_candidates_runs_on_the_vector_stage(demo, tmp_path, tiny_overlap_verifier,
                                                                trigram_retsim, monkeypatch):
    from neardup.engine.vectors import PairScoring
    from neardup.methods.rerank import VerifierScorer

    records = demo[:200]  # the verifier's pair scoring costs most: 200 documents in 7 shards
    method = _rerank(tiny_overlap_verifier)
    assert supports_vector_stage(method, "components")
    reads = method.capabilities.reads
    assert reads.text_chars == method.max_chars and reads.dates
    memory = run(_batches(records, dates=True), method, engine="memory")
    candidates_only = run(_batches(records), method.candidate, engine="memory")
    calls = []
    real = VerifierScorer.decide_profiles  # the stage's path: profiles kept between batches

    def counting(self, profiles, left, right, dates=None, *, threshold):
        calls.append((len(profiles), len(left), dates is not None))
        return real(self, profiles, left, right, dates, threshold=threshold)

    monkeypatch.setattr(VerifierScorer, "decide_profiles", counting)
    work = tmp_path / "w"
    local = run(_batches(records, dates=True), _rerank(tiny_overlap_verifier), engine="local",
                total=len(records),
                corpus_stage=CorpusStageConfig(memory_limit="1MB", work_dir=str(work)))
    assert "engine_fallback" not in local.params
    np.testing.assert_array_equal(local.clusters, memory.clusters)
    assert local.ids.tolist() == [str(i) for i in range(len(records))]
    # Several shards (the smallest memory limit still holds these 200 rows in one).
    calls.clear()
    sharded = run_vector_stage(_batches(records, dates=True), _rerank(tiny_overlap_verifier), shard_rows=30,
                               config=CorpusStageConfig(memory_limit="1MB",
                                                        work_dir=str(tmp_path / "s")))
    stats = sharded.stats
    assert stats["shards"] == 7
    np.testing.assert_array_equal(canonical_labels(sharded.roots), memory.clusters)
    # The scorer decided: some candidate pairs above RETSim's threshold were rejected.
    assert memory.n_clusters > candidates_only.n_clusters
    # Texts live in the work directory; the scorer sees bounded batches, with the dates.
    assert (work / "embed" / "texts.bin").exists()
    assert calls and all(with_dates for *_, with_dates in calls)
    assert max(n for _, n, _ in calls) <= PairScoring.MAX_STEP  # bounded steps of pairs
    assert sum(n for _, n, _ in calls) == stats["verified_pairs"] <= stats["scored_pairs"]
    # A pair the verifier rejected is scored once, though kNN finds it from both ends.
    assert stats["rescoring_skipped"] > 0
    assert (sharded.pairs.score >= 0.5).all()


@pytest.mark.slow
def test_rerank_over_retsim_candidates_keeps_every_accepted_pair(demo, tmp_path, tiny_overlap_verifier,
                                                                 trigram_retsim):
    # Leiden over every accepted pair: each candidate verified once per shard that meets
    # it (accepted pairs remembered as rejected ones are), the in-memory pairs and scores.
    records = demo[:150]
    cluster = ClusterConfig(algorithm="leiden", resolution=1.0, time_window_hours=24)
    memory = run(_batches(records, dates=True), _rerank(tiny_overlap_verifier), engine="memory", cluster=cluster)
    local = run(_batches(records, dates=True), _rerank(tiny_overlap_verifier), engine="local", cluster=cluster,
                total=len(records), corpus_stage=CorpusStageConfig(work_dir=str(tmp_path / "w"),
                                                                   memory_limit="1MB"))
    assert "engine_fallback" not in local.params
    np.testing.assert_array_equal(local.clusters, memory.clusters)
    assert _pair_set(local.pairs) == _pair_set(memory.pairs)
    assert _pair_set(local.outside_window) == _pair_set(memory.outside_window)
    np.testing.assert_allclose(local.pairs.score, memory.pairs.score, rtol=1e-5)
    assert len(memory.pairs) >= len(records) - memory.n_clusters > 0


@pytest.mark.slow
def test_rerank_vector_stage_resumes_after_kill(demo, tmp_path, tiny_overlap_verifier, trigram_retsim,
                                                monkeypatch):
    records = demo[:150]  # five shards of 30 rows: killed at the third's search
    method = _rerank(tiny_overlap_verifier)
    clean = run_vector_stage(_batches(records), method, shard_rows=30,
                             config=CorpusStageConfig(work_dir=str(tmp_path / "clean")))
    die_at_call(monkeypatch, vectors_module, "search_shard", 3)
    work = tmp_path / "killed"
    with pytest.raises(Killed):
        run_vector_stage(_batches(records), method, shard_rows=30,
                         config=CorpusStageConfig(work_dir=str(work)))
    monkeypatch.undo()
    _use_trigrams(monkeypatch)  # undo() removed the stand-in too: the model would run
    resumed = run_vector_stage(_batches(records), method, shard_rows=30,
                               config=CorpusStageConfig(work_dir=str(work), resume=True))
    np.testing.assert_array_equal(resumed.roots, clean.roots)
    np.testing.assert_array_equal(resumed.pairs.score, clean.pairs.score)
    # Another rerank threshold re-runs the search (the scorer decides), not the embedding.
    stricter = run_vector_stage(_batches(records), _rerank(tiny_overlap_verifier, 0.9), shard_rows=30,
                                config=CorpusStageConfig(work_dir=str(work), resume=True))
    memory = run(_batches(records), _rerank(tiny_overlap_verifier, 0.9), engine="memory")
    np.testing.assert_array_equal(canonical_labels(stricter.roots), memory.clusters)


def test_ray_runs_rerank_over_vector_candidates_on_its_vector_stage(tiny_overlap_verifier):
    from neardup.engine.support import placement

    for algorithm in ("components", "leiden", "hac"):
        assert placement(_rerank(tiny_overlap_verifier), algorithm, "ray").stage == "vector"
