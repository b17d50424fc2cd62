"""The statistics stage: wminhash and sanderson on the keyed corpus stage (#14)."""

from __future__ import annotations


import numpy as np
import pytest

import neardup
from neardup.engine import CorpusStageConfig, WorkDirError, run_corpus_stage
from neardup.engine import statistics as statistics_module
from neardup.io.batch import DocumentBatch
from neardup.methods import make_method
from neardup.methods.wminhash import CorpusStatistics
from tests.engine.agreement import assert_exact_verification_matches_memory
from tests.engine.fakes import Killed, die_at_call


def _texts(records):
    return [r["text"] for r in records]


def _batches(texts, size=400):
    for start in range(0, len(texts), size):
        chunk = texts[start:start + size]
        yield DocumentBatch(ids=[str(start + i) for i in range(len(chunk))], texts=chunk,
                            dates=None, source="mem", rows=np.arange(start, start + len(chunk)))


WMINHASH = [{}, {"phrase_length": 3, "threshold": 0.2}, {"weighting": "idf", "phrase_length": 3},
            {"divide_by_phrase_df": True, "rare_fraction": 0.01, "phrase_length": 3, "threshold": 0.2},
            {"weighting": "uniform", "rare_fraction": None, "phrase_length": 3, "threshold": 0.2}]


@pytest.mark.parametrize("params", WMINHASH)
@pytest.mark.slow
def test_wminhash_out_of_core_matches_in_memory(demo, params, tmp_path):
    # 1,200 documents: at a 1 MB budget the statistics stage still writes a run per batch
    # of 300 and merges four runs a table (the whole demo slice: nine, at twice the time).
    texts = _texts(demo)[:1200]
    memory = neardup.dedup(texts, "wminhash", engine="memory", pair_types=False, **params)
    # Tiny budget: the statistics runs spill per batch and are merged in many ranges.
    spilled = neardup.dedup(texts, "wminhash", engine="local", pair_types=False,
                            work_dir=tmp_path / "w", memory_limit="1MB", partitions=64,
                            batch_size=300, **params)
    assert spilled.params["engine"] == "local"
    np.testing.assert_array_equal(spilled.clusters, memory.clusters)
    np.testing.assert_array_equal(spilled.representative, memory.representative)
    assert spilled.clusters.size == len(texts) == len(set(spilled.ids.tolist()))
    assert memory.n_clusters < len(texts)  # something was matched


WMINHASH_EXACT = [{"verify": "exact"}, {"verify": "exact", "phrase_length": 3, "threshold": 0.2},
                  {"verify": "exact", "weighting": "idf", "phrase_length": 3, "threshold": 0.3}]


@pytest.mark.parametrize("params", WMINHASH_EXACT)
@pytest.mark.slow
def test_wminhash_exact_verification_out_of_core_matches_in_memory(demo, params, tmp_path):
    texts = _texts(demo)[:1200]  # as above: runs spilled and merged, sets read back in steps
    assert_exact_verification_matches_memory("wminhash", texts, params, tmp_path / "w")
    # The work directory holds the weighted sets (a float64 weight per stored phrase
    # hash), not the samples.
    arrays = tmp_path / "w" / "sketch" / "arrays"
    values = (arrays / "sets.values.bin").stat().st_size
    assert values > 0 and (arrays / "sets.weights.bin").stat().st_size == values
    assert not (arrays / "samples.bin").exists()


@pytest.mark.slow
def test_wminhash_exact_weighted_sets_are_fetched_as_stored(demo, tmp_path):
    from neardup.engine.stores import ArrayStore
    from neardup.methods.base import SET_WEIGHTS

    texts = _texts(demo)[:600]
    # Fitted on the corpus itself: no statistics stage, and weights that differ by phrase.
    method = make_method("wminhash", verify="exact", phrase_length=3).fit(texts)
    run_corpus_stage(_batches(texts, 250), method,
                     config=CorpusStageConfig(work_dir=str(tmp_path), memory_limit="1MB"))

    class Dir:  # the one WorkDir method the store reads
        def stage_dir(self, name):
            return tmp_path / name

    store = ArrayStore(Dir(), {"arrays": {}, "n_docs": len(texts), "sets": True,
                                "set_weights": True, "texts": False})
    docs = np.array([0, 7, 250, 251, 599])
    rows = store.rows(docs)
    expected = method.keyed_sketch(method.sketch([texts[d] for d in docs]))
    np.testing.assert_array_equal(rows.sets.offsets, expected.sets.offsets)
    np.testing.assert_array_equal(rows.sets.hashes, expected.sets.hashes)
    np.testing.assert_array_equal(rows.set_weights, expected.ragged[SET_WEIGHTS])
    assert np.unique(rows.set_weights).size > 1
    # Scored from the stored rows as find_pairs scores the same documents.
    from neardup.methods.wminhash import generalized_jaccard

    score, accept = method.score_candidate_rows(rows, np.array([0, 2]), np.array([1, 3]))
    for k, (i, j) in enumerate(((0, 1), (2, 3))):
        a = slice(expected.sets.offsets[i], expected.sets.offsets[i + 1])
        b = slice(expected.sets.offsets[j], expected.sets.offsets[j + 1])
        want = generalized_jaccard(expected.sets.hashes[a], rows.set_weights[a],
                                   expected.sets.hashes[b], rows.set_weights[b])
        assert score[k] == np.float32(want) and accept[k] == (want >= method.threshold)


def test_wminhash_samples_from_counted_statistics_equal_in_memory_ones(demo):
    texts = _texts(demo)[:1200]
    method = make_method("wminhash", phrase_length=3)
    stage = run_corpus_stage(_batches(texts, 250), method,
                             config=CorpusStageConfig(memory_limit="1MB", partitions=4))
    assert stage.stats["statistics_word_kept"] > 0
    # Only the phrases common enough to be boilerplate are stored (none here, or few).
    assert stage.stats["statistics_phrase_kept"] <= 50
    sketch = method.sketch(texts)
    full = CorpusStatistics.from_sketch(sketch)
    # The fitted copy from the stage's tables: same samples as the in-memory weights.
    from neardup.engine.statistics import statistics_stage
    from neardup.engine.workdir import WorkDir
    from neardup.progress import StageTimer

    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        wd = WorkDir(tmp, {"t": 1}, resume=False)
        fitted, again, facts = statistics_stage(wd, "k", _batches(texts, 250), method, 1 << 20,
                                                StageTimer(), False, None)
        assert sum(len(b) for b in again) == len(texts)
    assert facts["totals"]["docs"] == full.n_docs
    np.testing.assert_array_equal(fitted.keyed_sketch(sketch).arrays["samples"],
                                  method.samples(sketch, full))
    assert not hasattr(method, "n_docs_")  # the method itself is unchanged


def test_wminhash_fitted_on_a_reference_corpus_skips_the_statistics_stage(demo, tmp_path):
    texts = _texts(demo)
    reference = make_method("wminhash", phrase_length=3, threshold=0.2).fit(texts[1000:])
    assert reference.capabilities.statistics is None
    stage = run_corpus_stage(_batches(texts[:1000]), reference,
                             config=CorpusStageConfig(work_dir=str(tmp_path / "w"),
                                                      memory_limit="1MB", partitions=8))
    assert not (tmp_path / "w" / "statistics").exists()
    assert not any(k.startswith("statistics_") for k in stage.stats)
    memory = neardup.pipeline.run(_batches(texts[:1000]), reference, engine="memory")
    from neardup.graph.cluster import canonical_labels

    np.testing.assert_array_equal(canonical_labels(stage.roots), memory.clusters)


@pytest.mark.parametrize("params", [{}, {"threshold": 0.6, "top_k": 2}, {"ranking": "tfidf"},
                                    {"margin": 1.0, "query_terms": 8}])
@pytest.mark.slow
def test_sanderson_out_of_core_matches_in_memory(demo, params, tmp_path):
    # 1,200 documents at a 1 MB budget still spill the postings in many runs (asserted
    # below); the whole demo slice only made each of the four settings cost more.
    texts = _texts(demo)[:1200]
    memory = neardup.dedup(texts, "sanderson", engine="memory", pair_types=False, **params)
    # Tiny budget: postings spill in many runs and ranges, queries scored in many blocks.
    spilled = neardup.dedup(texts, "sanderson", engine="local", pair_types=False,
                            work_dir=tmp_path / "w", memory_limit="1MB", batch_size=300, **params)
    assert spilled.params["engine"] == "local"
    assert spilled.clusters.size == len(texts) == len(set(spilled.ids.tolist()))
    np.testing.assert_array_equal(spilled.clusters, memory.clusters)
    # The stage's pairs are a spanning forest of the clusters, each an in-memory pair
    # with its in-memory score (the same weights and sums).
    assert len(spilled.pairs) == len(texts) - spilled.n_clusters
    found = dict(zip(zip(memory.pairs.left.tolist(), memory.pairs.right.tolist()),
                     memory.pairs.score.tolist()))
    for pair, score in zip(zip(spilled.pairs.left.tolist(), spilled.pairs.right.tolist()),
                           spilled.pairs.score.tolist()):
        assert found[pair] == score
    assert memory.n_clusters < len(texts)
    stats = spilled.params["corpus_stage"]
    assert stats["postings"] > 0 and stats["retrievals"] > 0
    assert len(list((tmp_path / "w").rglob("*.npy"))) > 1  # spilled, not held in one piece


@pytest.mark.slow
def test_sanderson_time_windows_match_in_memory(demo):
    # Sanderson's retrieval costs most per document: 1,200 documents, as above.
    records = demo[:1200]
    kwargs = dict(date_field="date", pair_types=False, time_window_hours=24)
    memory = neardup.dedup(records, "sanderson", engine="memory", **kwargs)
    local = neardup.dedup(records, "sanderson", engine="local", memory_limit="1MB", **kwargs)
    np.testing.assert_array_equal(local.clusters, memory.clusters)
    assert len(local.outside_window) == len(memory.outside_window) > 0


@pytest.mark.parametrize("name", ["wminhash", "sanderson"])
@pytest.mark.slow
def test_resume_after_kill_in_the_statistics_stage(demo, tmp_path, monkeypatch, name):
    # 1,200 documents fill the 1 MB budget's statistics buffer at least twice before the
    # last flush: the kill at the second flush leaves a run written and the stage unfinished.
    texts = _texts(demo)[:1200]
    method = make_method(name)
    config = CorpusStageConfig(work_dir=str(tmp_path / "clean"), memory_limit="1MB", partitions=8)
    clean = run_corpus_stage(_batches(texts), method, config=config, total=len(texts))

    die_at_call(monkeypatch, statistics_module, "_flush", 2)
    work = tmp_path / "killed"
    config = CorpusStageConfig(work_dir=str(work), memory_limit="1MB", partitions=8)
    with pytest.raises(Killed):
        run_corpus_stage(_batches(texts), method, config=config, total=len(texts))
    monkeypatch.undo()
    assert not (work / "statistics" / "_DONE.json").exists()
    with pytest.raises(WorkDirError, match="resume"):
        run_corpus_stage(_batches(texts), method, config=config, total=len(texts))
    resumed = run_corpus_stage(_batches(texts), method, total=len(texts),
                               config=CorpusStageConfig(work_dir=str(work), memory_limit="1MB",
                                                        partitions=8, resume=True))
    np.testing.assert_array_equal(resumed.roots, clean.roots)
    np.testing.assert_array_equal(resumed.pairs.left, clean.pairs.left)
    np.testing.assert_array_equal(resumed.pairs.score, clean.pairs.score)
    for table in ("term",) if name == "sanderson" else ("word", "phrase"):
        for suffix in ("hashes", "df"):
            path = f"statistics/{table}.{suffix}.npy"
            if (tmp_path / "clean" / path).exists():
                assert (work / path).read_bytes() == (tmp_path / "clean" / path).read_bytes()
    # A finished statistics stage is reused: the input is not read again.
    again = run_corpus_stage(iter(()), method, total=len(texts),
                             config=CorpusStageConfig(work_dir=str(work), memory_limit="1MB",
                                                      partitions=8, resume=True))
    np.testing.assert_array_equal(again.roots, clean.roots)


def test_statistics_merge_is_bounded_and_exact():
    # Many runs, merged by many hash ranges (tiny budget), equal one global count.
    rng = np.random.default_rng(5)
    features = [rng.integers(0, 2**64 - 1, size=3000, dtype=np.uint64) for _ in range(6)]
    features = [np.concatenate([f, f[:500]]) for f in features]  # repeats across runs
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        runs = {"t": []}
        for f in features:
            u, c = np.unique(f, return_counts=True)
            statistics_module._flush({"t": [(u, c.astype(np.int64))]}, runs, Path(tmp))
        hashes, df = statistics_module._merge_runs(runs["t"], 2, 64 << 10)
    u, c = np.unique(np.concatenate(features), return_counts=True)
    np.testing.assert_array_equal(hashes, u[c >= 2])
    np.testing.assert_array_equal(df, c[c >= 2])


def test_a_method_not_fitted_refuses_to_key_a_batch():
    with pytest.raises(ValueError, match="corpus statistics"):
        make_method("wminhash").candidate_keys(make_method("wminhash").sketch(["a b c d e f g h"]))
    with pytest.raises(ValueError, match="term statistics"):
        make_method("sanderson").retrieval_rows(make_method("sanderson").sketch(["a b"]).sets)


@pytest.mark.parametrize("values", [np.arange(5, dtype=np.uint64), np.zeros(0, np.int64),
                                    np.linspace(0, 1, 7), np.arange(70_000, dtype=np.int64)])
def test_mapped_array_reads_what_np_save_wrote(tmp_path, values):
    from neardup.engine.workdir import MappedArray

    np.save(tmp_path / "a.npy", values)
    mapped = MappedArray(tmp_path / "a.npy")
    assert mapped.count == values.size
    for _ in range(2):  # every read maps the file anew
        read = mapped.read()
        assert read.dtype == values.dtype and not read.flags.writeable
        np.testing.assert_array_equal(read, values)
