"""The out-of-core corpus stage: same clusters as the in-memory stage, resumable, linear."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neardup
from neardup.engine import CorpusStageConfig, UnionFind, WorkDirError, run_corpus_stage
from neardup.engine import components as components_module
from neardup.engine import local as local_module
from neardup.engine.stores import KeySpill
from neardup.engine.buckets import group_runs
from neardup.graph.buckets import bucket_edges, key_groups
from neardup.io.batch import DocumentBatch
from neardup.methods import make_method
from neardup.text import ShingleConfig
from tests.engine.agreement import (
    CHAINED_NGRAM_PARAMS,
    assert_exact_verification_matches_memory,
    contained_behind_capped_keys,
)
from tests.engine.fakes import Killed, die_at_call


def _texts(records):
    return [r["text"] for r in records]


@pytest.mark.parametrize(
    "method, params",
    [("exact", {}), ("minhash", {}), ("minhash", {"threshold": 0.3}), ("simhash", {"threshold": 5})],
)
@pytest.mark.slow
def test_out_of_core_matches_in_memory(demo, method, params, tmp_path):
    texts = _texts(demo)
    # profile="clean": the methods' own defaults, as make_method gives them (the default
    # profile "auto" would choose character shingles on the noisy demo corpus).
    memory = neardup.dedup(texts, method, engine="memory", pair_types=False, profile="clean",
                           **params)
    # Tiny budget and many partitions: keys spill many times, buckets verified in chunks.
    spilled = neardup.dedup(texts, method, engine="local", pair_types=False, work_dir=tmp_path / "w",
                            memory_limit="1MB", partitions=64, batch_size=300, profile="clean",
                            **params)
    roomy = neardup.dedup(texts, method, engine="local", pair_types=False, profile="clean", **params)
    np.testing.assert_array_equal(spilled.clusters, memory.clusters)
    np.testing.assert_array_equal(roomy.clusters, memory.clusters)
    np.testing.assert_array_equal(spilled.representative, memory.representative)
    assert len(set(spilled.ids.tolist())) == len(texts) == spilled.clusters.size
    # The forest's pairs join exactly the clusters: one edge per non-representative join.
    assert len(spilled.pairs) == len(texts) - spilled.n_clusters
    assert (spilled.pairs.left < spilled.pairs.right).all()


MINHASH_EXACT = [{"verify": "exact"}, {"verify": "exact", "threshold": 0.3},
                 {"verify": "exact", "threshold": 0.4, "shingle": ShingleConfig(unit="char", n=5)}]


@pytest.mark.parametrize("params", MINHASH_EXACT)
@pytest.mark.slow
def test_minhash_exact_verification_out_of_core_matches_in_memory(demo, params, tmp_path):
    texts = _texts(demo)
    # profile="clean": the shingling make_method gives below (auto would choose characters
    # on the noisy demo corpus).
    assert_exact_verification_matches_memory("minhash", texts, {**params, "profile": "clean"},
                                             tmp_path / "w")
    # The work directory holds the shingle sets (8 bytes per distinct shingle, 8 per
    # document), not the signatures.
    arrays = tmp_path / "w" / "sketch" / "arrays"
    sets = make_method("minhash", **params).sketch(texts).sets
    assert (arrays / "sets.values.bin").stat().st_size == 8 * sets.hashes.size
    assert (arrays / "sets.sizes.bin").stat().st_size == 8 * len(texts)
    assert sorted(p.name for p in arrays.iterdir()) == ["sets.sizes.bin", "sets.values.bin"]


def test_minhash_exact_verdicts_are_find_pairs_verdicts(demo):
    # score_candidate_rows on the stored sets gives find_pairs' scores and cut-off for
    # every band collision, including scores at the threshold.
    from neardup.methods.base import CandidateRows
    from neardup.methods.lsh import banded_candidates

    # Pairs at exactly Jaccard 1/2: 20 word 3-grams and the first 10 of them.
    ties = []
    for k in range(8):
        words = [f"w{k}x{i}" for i in range(22)]
        ties += [" ".join(words), " ".join(words[:12])]
    texts = _texts(demo)[:1500] + ties
    for threshold in (0.5, 0.3):
        method = make_method("minhash", verify="exact", threshold=threshold)
        sketch = method.sketch(texts)
        valid = np.flatnonzero(sketch.n_features > 0)
        candidates, _ = banded_candidates(sketch.arrays["signature"], valid, *method.banding,
                                          method.max_bucket_pairs)
        rows = CandidateRows(docs=np.arange(len(texts)), arrays={}, sets=sketch.sets)
        score, accept = method.score_candidate_rows(rows, candidates.left, candidates.right)
        kept = method.find_pairs(sketch)
        assert score.dtype == np.float32 and accept.sum() == len(kept) > 0
        np.testing.assert_array_equal(candidates.left[accept], kept.left)
        np.testing.assert_array_equal(candidates.right[accept], kept.right)
        np.testing.assert_array_equal(score[accept], kept.score)
        # Colliding pairs at exactly Jaccard 1/2 are kept at threshold 0.5.
        tie = np.flatnonzero((candidates.left >= 1500) & (candidates.left % 2 == 0)
                             & (candidates.right == candidates.left + 1))
        assert tie.size > 0 and (score[tie] == 0.5).all() and accept[tie].all()


def test_time_window_matches_in_memory(demo):
    # verify="none": no pair counts as identical, so the window applies to every pair
    # (identical pairs bypass it, and the demo's day-apart matches are identical).
    kwargs = dict(date_field="date", time_window_hours=24, pair_types=False, threshold=0.3,
                  verify="none")
    memory = neardup.dedup(demo, "minhash", engine="memory", **kwargs)
    local = neardup.dedup(demo, "minhash", engine="local", memory_limit="1MB", partitions=16, **kwargs)
    np.testing.assert_array_equal(local.clusters, memory.clusters)
    assert len(local.outside_window) > 0
    assert set(zip(local.outside_window.left.tolist(), local.outside_window.right.tolist())) <= set(
        zip(memory.outside_window.left.tolist(), memory.outside_window.right.tolist()))


def _batches(texts, size=400):
    for start in range(0, len(texts), size):
        chunk = texts[start:start + size]
        yield DocumentBatch(ids=[str(start + i) for i in range(len(chunk))], texts=chunk, dates=None,
                            source="mem", rows=np.arange(start, start + len(chunk)))


@pytest.fixture(scope="module")
def clean_runs(tmp_path_factory):
    """The uninterrupted run each resume case compares with, once per method and not once
    per stage killed: ``clean(name, params, method, texts)`` -> (its work directory, its
    result). Runs with the resume cases' exchange ranges (EXCHANGE_BYTES_PER_RECORD
    patched by the caller) and the same config as the killed run."""
    runs: dict = {}

    def clean(name, params, method, texts):
        key = (name, json.dumps(params, sort_keys=True))
        if key not in runs:
            work = tmp_path_factory.mktemp("clean")
            config = CorpusStageConfig(work_dir=str(work), memory_limit="1MB", partitions=8)
            runs[key] = work, run_corpus_stage(_batches(texts), method, config=config, total=len(texts))
        return runs[key]

    return clean


@pytest.mark.parametrize("stage", ["sketch", "prefix", "link", "exchange", "components"])
@pytest.mark.parametrize(("name", "params"),
                         [("minhash", {"threshold": 0.4}), ("ngram", {}), ("spotsigs", {}),
                          ("wminhash", {"verify": "exact", "phrase_length": 3, "threshold": 0.2}),
                          ("minhash", {"verify": "exact", "threshold": 0.4})])
@pytest.mark.slow
def test_resume_after_kill_gives_identical_output(demo, tmp_path, monkeypatch, clean_runs, stage, name,
                                                params):
    method = make_method(name, **params)
    if stage in ("prefix", "exchange") and not local_module.exchanges_pair_counts(method):
        pytest.skip(f"{name} has no pair-count exchange")
    texts = _texts(demo)
    # Small exchange ranges (about a thousand records each): the exchange has several.
    monkeypatch.setattr(local_module, "EXCHANGE_BYTES_PER_RECORD", 1024)
    clean_dir, clean = clean_runs(name, params, method, texts)

    # Die half-way through a stage, leaving its partial files behind.
    calls = None
    if stage == "sketch":
        calls = die_at_call(monkeypatch, KeySpill, "flush", 2)
    elif stage == "prefix":  # its third key partition
        calls = die_at_call(monkeypatch, local_module, "add_key_classes", 3)
    elif stage == "link":
        calls = die_at_call(monkeypatch, local_module, "link_partition", 4)
    elif stage == "exchange":
        calls = die_at_call(monkeypatch, local_module, "reduce_pair_range", 2)
    else:
        monkeypatch.setattr(components_module, "write_arrow", _die_on("roots", components_module.write_arrow))
        monkeypatch.setattr(np, "save", _die_on("roots", np.save))
    work = tmp_path / "killed"
    config = CorpusStageConfig(work_dir=str(work), memory_limit="1MB", partitions=8)
    with pytest.raises(Killed):
        run_corpus_stage(_batches(texts), method, config=config, total=len(texts))
    monkeypatch.undo()
    monkeypatch.setattr(local_module, "EXCHANGE_BYTES_PER_RECORD", 1024)
    with pytest.raises(WorkDirError, match="resume"):
        run_corpus_stage(_batches(texts), method, config=config, total=len(texts))
    resumed = run_corpus_stage(_batches(texts), method, total=len(texts),
                               config=CorpusStageConfig(work_dir=str(work), memory_limit="1MB",
                                                        partitions=8, resume=True))
    np.testing.assert_array_equal(resumed.roots, clean.roots)
    if stage == "exchange":  # killed at its second range: there were several
        assert clean.stats["exchange_ranges"] >= 2
        assert calls["n"] == 2
    for a, b in ((resumed.pairs, clean.pairs), (resumed.outside_window, clean.outside_window)):
        np.testing.assert_array_equal(a.left, b.left)
        np.testing.assert_array_equal(a.right, b.right)
        np.testing.assert_array_equal(a.score, b.score)
    for name in ("forest.arrow", "roots.npy"):
        assert (work / "components" / name).read_bytes() == (clean_dir / "components" / name).read_bytes()


def _die_on(word, function):
    def dying(path, *args, **kwargs):
        if word in str(path):
            raise Killed
        return function(path, *args, **kwargs)

    return dying


def test_resume_refuses_another_input_and_foreign_directories(tmp_path):
    method = make_method("exact")
    texts = ["a b c", "a b c", "d e f"]
    config = CorpusStageConfig(work_dir=str(tmp_path / "w"))
    run_corpus_stage(_batches(texts), method, config=config, input_identity={"files": ["x"]})
    with pytest.raises(WorkDirError, match="another input"):
        run_corpus_stage(_batches(texts), method, input_identity={"files": ["y"]},
                         config=CorpusStageConfig(work_dir=str(tmp_path / "w"), resume=True))
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("precious")
    with pytest.raises(WorkDirError, match="not a neardup work directory"):
        run_corpus_stage(_batches(texts), method, config=CorpusStageConfig(work_dir=str(foreign)))
    assert (foreign / "thesis.tex").read_text() == "precious"
    manifest = tmp_path / "w" / "manifest.json"
    saved = json.loads(manifest.read_text())
    saved["version"] = 1  # written by an older neardup: its files are laid out otherwise
    manifest.write_text(json.dumps(saved))
    with pytest.raises(WorkDirError, match="another version of neardup"):
        run_corpus_stage(_batches(texts), method, input_identity={"files": ["x"]},
                         config=CorpusStageConfig(work_dir=str(tmp_path / "w"), resume=True))


def test_giant_bucket_stays_linear():
    n = 10_000
    texts = ["the same wire story printed again and again by every paper"] * n
    result = neardup.dedup(texts, "minhash", pair_types=False, memory_limit="1MB")
    bands, _ = make_method("minhash").banding
    stats = result.params["corpus_stage"]
    assert result.n_clusters == 1
    assert stats["candidate_edges"] <= 2 * bands * n
    # Once joined, copies are not verified again: about one check per document.
    assert stats["verified_edges"] <= 2 * n
    assert len(result.pairs) == n - 1


def test_bucket_edges_all_pairs_small_star_chain_large():
    docs = np.array([1, 4, 7, 2, 3, 5, 6, 8, 9], np.int64)
    starts, sizes = group_runs(np.array([0, 0, 0, 1, 1, 1, 1, 1, 1]))
    left, right = bucket_edges(docs, starts, sizes, all_pairs_upto=3)
    edges = set(zip(left.tolist(), right.tolist()))
    assert {(1, 4), (1, 7), (4, 7)} <= edges  # small bucket: every pair
    star = {(2, d) for d in (3, 5, 6, 8, 9)}
    chain = {(3, 5), (5, 6), (6, 8), (8, 9)}
    assert edges == {(1, 4), (1, 7), (4, 7)} | star | chain
    assert len(left) == 3 + 2 * 6 - 3


def test_key_groups_order_members_by_payload_then_position():
    keys = np.array([9, 2, 9, 2, 9, 9], np.uint64)
    docs = np.array([0, 1, 2, 3, 4, 5], np.int64)
    payload = np.array([7, 5, 3, 5, 7, 1], np.uint64)
    order, starts, sizes = key_groups(keys, docs, payload)
    assert starts.tolist() == [0, 2] and sizes.tolist() == [2, 4]
    # Key 2: equal payloads, positions ascending; key 9: payload, ties by position.
    assert docs[order].tolist() == [1, 3, 5, 2, 0, 4]
    # Chained in that order (the chain alone, as for a group over max_df).
    left, right = bucket_edges(docs[order], starts, sizes, all_pairs_upto=0, star_upto=0)
    assert list(zip(left.tolist(), right.tolist())) == [(1, 3), (5, 2), (2, 0), (0, 4)]
    order, _, _ = key_groups(keys, docs)  # no payload: positions ascending
    assert docs[order].tolist() == [1, 3, 0, 2, 4, 5]


def test_union_find_roots_are_smallest_members():
    uf = UnionFind(6)
    merged = uf.union(np.array([5, 3, 4]), np.array([3, 1, 5]))
    assert merged.tolist() == [True, True, True]
    assert uf.roots().tolist() == [0, 1, 2, 1, 1, 1]
    assert uf.union(np.array([4]), np.array([1])).tolist() == [False]
    assert uf.connected(np.array([5, 0]), np.array([1, 2])).tolist() == [True, False]


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.sampled_from(["alpha beta gamma delta", "alpha beta gamma delta!", "one two three four",
                              "one two three five", "", "zz yy xx ww vv", "  "]), min_size=1, max_size=40),
    st.randoms(use_true_random=False),
)
@pytest.mark.slow
def test_every_document_once_and_order_independent(texts, rng):
    result = neardup.dedup(texts, "minhash", pair_types=False, threshold=0.4, memory_limit="1MB",
                           partitions=4, batch_size=7)
    assert result.clusters.shape == (len(texts),)
    assert sorted(set(result.clusters.tolist())) == list(range(result.n_clusters))
    assert result.representative.sum() == result.n_clusters
    order = list(range(len(texts)))
    rng.shuffle(order)
    shuffled = neardup.dedup([texts[i] for i in order], "minhash", pair_types=False, threshold=0.4,
                             batch_size=5)
    # The same partition of documents, whatever the input order.
    back = np.empty(len(texts), np.int64)
    back[order] = shuffled.clusters
    pairs_a = result.clusters[:, None] == result.clusters[None, :]
    pairs_b = back[:, None] == back[None, :]
    np.testing.assert_array_equal(pairs_a, pairs_b)


def test_work_directories_of_killed_runs_are_removed(tmp_path, monkeypatch):
    import subprocess
    import sys
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"neardup-work-{dead.pid}-abc"
    live = tmp_path / f"neardup-work-{os.getpid()}-abc"
    other = tmp_path / "neardup-work-notapid"
    for path in (stale, live, other):
        (path / "sketch").mkdir(parents=True)
    neardup.dedup(["a b c d", "a b c d"], "minhash", pair_types=False)
    assert not stale.exists() and live.exists() and other.exists()
    # The run's own temporary work directory is gone too.
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name])


# -- methods whose verification reads ragged sets or texts (ngram, rerank) --------------


@pytest.mark.parametrize(
    "params",
    [{}, {"threshold": 0.3}, {"similarity": "containment", "threshold": 0.8},
     {"shingle": "char5", "threshold": 0.5}],
)
@pytest.mark.slow
def test_ngram_out_of_core_matches_in_memory(demo, params, tmp_path):
    from neardup.text import ShingleConfig

    params = dict(params)
    if params.get("shingle") == "char5":
        params["shingle"] = ShingleConfig(unit="char", n=5)
    # Character sets are ~5x larger: a smaller corpus keeps the test short.
    texts = _texts(demo[:800] if "shingle" in params else demo)
    memory = neardup.dedup(texts, "ngram", engine="memory", pair_types=False, profile="clean",
                           **params)
    # Tiny budget, many partitions: sets fetched in steps of a few dozen edges.
    spilled = neardup.dedup(texts, "ngram", engine="local", pair_types=False,
                            work_dir=tmp_path / "w", memory_limit="1MB", partitions=16,
                            batch_size=300, profile="clean", **params)
    # Identical clusters (not merely ARI >= 0.99) on the demo corpus.
    np.testing.assert_array_equal(spilled.clusters, memory.clusters)
    assert spilled.clusters.size == len(texts) == len(set(spilled.ids.tolist()))
    assert len(spilled.pairs) == len(texts) - spilled.n_clusters
    assert (tmp_path / "w" / "sketch" / "arrays" / "sets.values.bin").exists()


@pytest.mark.parametrize("algorithm", ["components", "leiden"])
@pytest.mark.parametrize("params", CHAINED_NGRAM_PARAMS)
@pytest.mark.slow
def test_ngram_chains_groups_over_max_df_as_in_memory(demo, params, algorithm, tmp_path):
    # Issue 36: key groups over max_df are linked by a chain alone; the in-memory search
    # chained them in orders of its own, and with containment (a text of a few characters
    # is inside many others) its clusters differed from the out-of-core stage's on this
    # slice. Both now follow one rule (neardup.graph.buckets), so with every accepted pair
    # kept (leiden) the pairs are the same too.
    texts = _texts(demo[:300])
    memory = neardup.dedup(texts, "ngram", engine="memory", pair_types=False, cluster=algorithm,
                           **params)
    spilled = neardup.dedup(texts, "ngram", engine="local", pair_types=False, cluster=algorithm,
                            work_dir=tmp_path / "w", memory_limit="1MB", partitions=16,
                            batch_size=100, **params)
    assert memory.summary()["max_df_shingles"] > 1000  # many groups linked by chains
    assert spilled.summary()["max_df_shingles"] == memory.summary()["max_df_shingles"]
    np.testing.assert_array_equal(spilled.clusters, memory.clusters)
    assert memory.n_clusters < len(texts) - 10  # duplicates found
    if algorithm == "leiden":
        assert spilled.pairs.canonical().left.tolist() == memory.pairs.canonical().left.tolist()
        assert spilled.pairs.canonical().right.tolist() == memory.pairs.canonical().right.tolist()


def test_exchange_does_not_score_from_counts_a_pair_sharing_capped_keys(tmp_path):
    texts, params = contained_behind_capped_keys()
    memory = neardup.dedup(texts, "ngram", engine="memory", pair_types=False, **params)
    spilled = neardup.dedup(texts, "ngram", engine="local", pair_types=False,
                            work_dir=tmp_path / "w", memory_limit="1MB", partitions=4, **params)
    assert memory.clusters[-1] == memory.clusters[-2] and memory.n_clusters == len(texts) - 1
    np.testing.assert_array_equal(spilled.clusters, memory.clusters)
    assert spilled.params["corpus_stage"]["verified_edges"] > 0


@pytest.mark.parametrize("max_df", [50, 100_000])
@pytest.mark.slow
def test_ngram_giant_bucket_of_copies_stays_linear(max_df):
    # 3,000 copies: all pairs would be 4.5M checks, the bounds below allow 6,006.
    n = 3_000
    story = "the same wire story printed again and again by every paper in the land"
    texts = [story] * n + ["an unrelated note about the weather"] * 3
    result = neardup.dedup(texts, "ngram", pair_types=False, memory_limit="1MB", max_df=max_df)
    stats = result.params["corpus_stage"]
    keys_per_copy = stats["candidate_keys"] // n
    assert result.clusters.tolist() == [0] * n + [1] * 3
    # Star plus chain (chain alone over max_df) per key group: at most 2 edges per row.
    assert stats["candidate_edges"] <= 2 * stats["candidate_keys"]
    # Once joined, copies are not verified again: about one check per document.
    assert stats["verified_edges"] <= 2 * (n + 3)
    assert keys_per_copy < 20
    if max_df == 50:
        assert result.summary()["max_df_shingles"] > 0  # the copies' keys are over max_df


#: Documents of the demo corpus the rerank cases run on: its verifier scores every
#: candidate pair, at far more CPU per pair than the set methods, and 400 documents hold
#: enough near-duplicates (328 clusters) for every branch the cases check.
_RERANK_DOCS = 400


@pytest.mark.slow
def test_rerank_out_of_core_matches_in_memory_and_scores_in_batches(demo, tmp_path, monkeypatch):
    pytest.importorskip("rapidfuzz")
    from neardup.methods.rerank import VerifierScorer

    records = demo[:_RERANK_DOCS]
    # Connected components (rerank's default is Leiden: tested below with the others).
    memory = neardup.dedup(records, "rerank", engine="memory", pair_types=False, date_field="date",
                           cluster="components")
    calls = []
    real = VerifierScorer.decide_profiles  # the stage's path: profiles kept between batches

    def counting(self, profiles, left, right, dates=None, *, threshold):
        calls.append((len(profiles), len(left)))
        return real(self, profiles, left, right, dates, threshold=threshold)

    monkeypatch.setattr(VerifierScorer, "decide_profiles", counting)
    from neardup.methods.rerank import RerankMethod

    monkeypatch.setattr(RerankMethod, "SCORE_BATCH", 7)
    local = neardup.dedup(records, "rerank", engine="local", pair_types=False, date_field="date",
                          work_dir=tmp_path / "w", memory_limit="4MB", partitions=8, batch_size=250,
                          cluster="components")
    np.testing.assert_array_equal(local.clusters, memory.clusters)
    assert local.clusters.size == len(records) == len(set(local.ids.tolist()))
    # Texts live in the work directory (raw bytes read by document), not in the sketch;
    # the scorer sees bounded batches: at most SCORE_BATCH pairs of one step of edges.
    assert (tmp_path / "w" / "sketch" / "texts.bin").exists()
    assert calls and max(n_pairs for _, n_pairs in calls) <= 7
    # Only edges that passed MinHash's permissive check reach the scorer.
    assert sum(n for _, n in calls) <= local.params["corpus_stage"]["verified_edges"]


@pytest.mark.parametrize("method, params", [("minhash", {}), ("minhash", {"threshold": 0.3}),
                                            ("exact", {}), ("wminhash", {}), ("rerank", {})])
@pytest.mark.slow
def test_community_detection_out_of_core_matches_in_memory(demo, method, params, tmp_path):
    if method == "rerank":
        pytest.importorskip("rapidfuzz")
    records = demo[:_RERANK_DOCS if method == "rerank" else 1200]
    cluster = {"cluster": "leiden", "resolution": 0.4}
    memory = neardup.dedup(records, method, engine="memory", pair_types=False,
                           date_field="date", **cluster, **params)
    local = neardup.dedup(records, method, engine="local", pair_types=False, date_field="date",
                          work_dir=tmp_path / "w", memory_limit="4MB", partitions=8,
                          batch_size=250, **cluster, **params)
    assert local.params["engine"] == "local" and "engine_fallback" not in local.summary()
    np.testing.assert_array_equal(local.clusters, memory.clusters)
    np.testing.assert_array_equal(local.representative, memory.representative)
    # Every accepted pair (community detection needs them all), not a spanning forest.
    assert local.params["corpus_stage"]["accepted_edges"] == len(local.pairs)
    assert len(local.pairs) >= len(records) - local.n_clusters
    if method != "exact":  # exact links copies by a chain, which is a forest already
        assert len(local.pairs) > local.params["corpus_stage"]["forest_edges"]
    # The components run does not keep them, and a work directory keyed for one mode
    # is not reused by the other.
    components = neardup.dedup(records, method, engine="local", pair_types=False, cluster="components",
                               date_field="date", work_dir=tmp_path / "w", resume=True, **params)
    assert "accepted_edges" not in components.params["corpus_stage"]
    assert len(components.pairs) == len(records) - components.n_clusters


@pytest.mark.parametrize("name", ["ngram", "spotsigs", "sanderson"])
def test_every_edge_keeps_what_the_in_memory_search_finds(demo, name):
    # The methods that skip pairs already joined (pair-count exchange, its early checks
    # of likely copies included; mutual retrieval) skip none with every_edge: every
    # accepted pair once, with its in-memory score, over many partitions.
    from tests.engine_contract import contract_corpus

    texts = _texts(contract_corpus(200))  # noisy near-duplicates and re-sent copies
    method = make_method(name)
    stage = run_corpus_stage(_batches(texts), method, every_edge=True,
                             config=CorpusStageConfig(memory_limit="1MB", partitions=32))
    memory = neardup.dedup(texts, name, engine="memory", cluster="leiden", pair_types=False,
                           profile="clean")  # make_method's defaults, as the stage above
    assert len(memory.pairs) > 30  # more than the re-sent copies
    found = dict(zip(zip(stage.pairs.left.tolist(), stage.pairs.right.tolist()), stage.pairs.score.tolist()))
    expected = dict(zip(zip(memory.pairs.left.tolist(), memory.pairs.right.tolist()),
                        memory.pairs.score.tolist()))
    assert found.keys() == expected.keys()
    assert all(found[pair] == pytest.approx(score, abs=1e-6) for pair, score in expected.items())


@pytest.mark.slow
def test_rerank_scores_a_rejected_pair_once(demo, tmp_path, monkeypatch):
    # Two documents share many LSH bands (keys in different partitions); a pair the
    # verifier rejected is remembered, not scored again, and the clusters stay the same.
    pytest.importorskip("rapidfuzz")
    from neardup.methods.rerank import RerankMethod

    records = demo[:_RERANK_DOCS]
    scored = []
    real = RerankMethod.score_candidate_rows

    def logging(self, rows, left, right):
        score, accept = real(self, rows, left, right)
        a, b = rows.docs[left], rows.docs[right]
        scored.append((np.minimum(a, b), np.maximum(a, b), accept))
        return score, accept

    monkeypatch.setattr(RerankMethod, "score_candidate_rows", logging)
    # Every candidate scored (no Screen step, tests/engine/test_screen.py): each edge the
    # linker verifies goes through score_candidate_rows.
    local = neardup.dedup(records, "rerank", engine="local", pair_types=False, cluster="components",
                          work_dir=tmp_path / "w", memory_limit="4MB", partitions=8,
                          low_partners=None)
    left, right, accept = (np.concatenate(column) for column in zip(*scored))
    costly = RerankMethod.capabilities
    monkeypatch.setattr(RerankMethod, "capabilities", property(lambda self: replace(
        costly.fget(self), verification=replace(costly.fget(self).verification, costly=False))))
    again = neardup.dedup(records, "rerank", engine="local", pair_types=False, cluster="components",
                          work_dir=tmp_path / "again", memory_limit="4MB", partitions=8,
                          low_partners=None)
    np.testing.assert_array_equal(local.clusters, again.clusters)
    stats, plain = local.params["corpus_stage"], again.params["corpus_stage"]
    assert stats["rescoring_skipped"] > 0 and "rescoring_skipped" not in plain
    assert stats["verified_edges"] + stats["rescoring_skipped"] == plain["verified_edges"]
    assert left.size == stats["verified_edges"]
    rejected = left[~accept] * len(records) + right[~accept]
    assert np.unique(rejected).size == rejected.size


def test_ragged_and_text_rows_are_fetched_as_stored(tmp_path):
    from neardup.engine.stores import ArrayStore

    texts = ["alpha beta gamma delta epsilon", "", "one two three four five six", "x y z w"] * 5
    method = make_method("ngram")
    run_corpus_stage(_batches(texts, size=3), method,
                     config=CorpusStageConfig(work_dir=str(tmp_path), memory_limit="1MB"))

    class Dir:  # the one WorkDir method the store reads
        def stage_dir(self, name):
            return tmp_path / name

    store = ArrayStore(Dir(), {"arrays": {}, "n_docs": len(texts), "sets": True, "texts": False})
    docs = np.array([0, 1, 6, 19])
    rows = store.rows(docs)
    expected = method.sketch([texts[d] for d in docs]).sets
    np.testing.assert_array_equal(rows.sets.offsets, expected.offsets)
    np.testing.assert_array_equal(rows.sets.hashes, expected.hashes)


def test_texts_are_read_back_by_document_without_mapping_the_file(tmp_path):
    from neardup.engine.stores import TextReader, TextWriter
    from neardup.engine.rows import LazyTexts

    texts = [f"story {i} " + "wörd " * (i % 50) + "\ud800" * (i % 7 == 0) for i in range(3000)]
    texts[10] = texts[11] = ""
    writer = TextWriter(tmp_path / "texts.bin", chars=200)
    for start in range(0, len(texts), 97):
        writer.write(texts[start:start + 97])
    writer.write([])
    writer.close()
    docs = np.arange(5, 3000, 3)
    rows = LazyTexts(TextReader(tmp_path / "texts.bin", len(texts)), docs)
    positions = np.random.default_rng(0).integers(0, len(rows), 500)  # any order, repeats
    assert rows.take(positions) == [texts[docs[p]][:200] for p in positions]
    assert rows.take([]) == []
    assert rows.take([2]) == [""]  # document 11
    # Read with pread: a memory map would keep every page read resident (the 1M run's
    # texts took 1.2 GB of its RSS).
    assert "texts.bin" not in Path("/proc/self/maps").read_text()


def test_ngram_all_pairs_groups_check_each_copy_about_once():
    # 900 copies: every key group is compared all-to-all (<= 1000 members), 404,550 pairs
    # per group; after the first document's edges join them, the rest are skipped.
    n = 900
    texts = ["a story that was sent again and again over the wire today"] * n + ["unrelated"]
    result = neardup.dedup(texts, "ngram", pair_types=False, memory_limit="1MB")
    stats = result.params["corpus_stage"]
    assert result.clusters.tolist() == [0] * n + [1]
    assert stats["verified_edges"] <= 2 * n


def test_local_engine_records_a_fallback_to_memory(caplog):
    texts = ["the cat sat on the mat today", "the cat sat on the mat today", "dogs bark"]
    # rerank keys and pre-checks with its candidate method only when that verifies from
    # fixed-width rows: over exact-verified MinHash candidates (shingle sets) it still
    # runs in memory.
    with caplog.at_level("WARNING", logger="neardup"):
        result = neardup.dedup(texts, "rerank", candidate_params={"verify": "exact"},
                               pair_types=False)
    assert result.params["engine"] == "memory"
    assert "no out-of-core stage" in result.summary()["engine_fallback"]
    assert any("engine 'local'" in r.getMessage() for r in caplog.records)
    for name, params in (("ngram", {}), ("wminhash", {}), ("wminhash", {"verify": "exact"}),
                         ("minhash", {"verify": "exact"}), ("sanderson", {})):
        keyed = neardup.dedup(texts, name, pair_types=False, **params)
        assert "engine_fallback" not in keyed.summary() and keyed.params["engine"] == "local"
    # Every clustering of a keyed method runs out of core (the pair-count exchange and
    # mutual retrieval included); a method without an out-of-core stage says so for each.
    for name, cluster in (("minhash", "leiden"), ("ngram", "leiden"), ("minhash", "hac"),
                          ("sanderson", "hac")):
        keyed = neardup.dedup(texts, name, cluster=cluster, pair_types=False)
        assert keyed.params["engine"] == "local" and "engine_fallback" not in keyed.summary()
    fallback = neardup.dedup(texts, "rerank", candidate_params={"verify": "exact"}, cluster="hac",
                             pair_types=False)
    assert fallback.params["engine"] == "memory"
    assert "no out-of-core stage" in fallback.summary()["engine_fallback"]


def test_overlap_pairs_counts_each_pair_once_with_its_shared_buckets():
    from collections import Counter

    from neardup.engine.buckets import overlap_pairs

    rng = np.random.default_rng(3)
    buckets = [np.sort(rng.choice(40, size=int(rng.integers(2, 12)), replace=False)) for _ in range(60)]
    docs = np.concatenate(buckets).astype(np.int64) * 7  # positions need not be dense
    sizes = np.array([b.size for b in buckets], np.int64)
    starts = np.cumsum(sizes) - sizes
    blocks = list(overlap_pairs(docs, starts, sizes, block_emits=37))
    assert len(blocks) > 3  # several blocks of documents: each pair still once
    left, right, shared = (np.concatenate([b[i] for b in blocks]) for i in range(3))
    known_docs, known = blocks[0][3], blocks[0][4]
    expected = Counter((int(a) * 7, int(b) * 7) for bucket in buckets
                       for i, a in enumerate(bucket) for b in bucket[i + 1:])
    got = dict(zip(zip(left.tolist(), right.tolist()), shared.tolist()))
    assert len(got) == left.size and got == dict(expected)
    assert np.all(left[:-1] <= left[1:])
    members = Counter(docs.tolist())
    assert dict(zip(known_docs.tolist(), known.tolist())) == dict(members)


@pytest.mark.parametrize("params", [{}, {"threshold": 0.3}, {"max_df": 5}])
def test_spotsigs_out_of_core_matches_in_memory(demo, params, tmp_path):
    texts = _texts(demo)
    memory = neardup.dedup(texts, "spotsigs", engine="memory", pair_types=False, **params)
    spilled = neardup.dedup(texts, "spotsigs", engine="local", pair_types=False,
                            work_dir=tmp_path / "w", memory_limit="1MB", partitions=16,
                            batch_size=300, **params)
    assert spilled.params["engine"] == "local"
    np.testing.assert_array_equal(spilled.clusters, memory.clusters)
    assert spilled.clusters.size == len(texts) == len(set(spilled.ids.tolist()))


@pytest.mark.parametrize(("name", "params"),
                         [("ngram", {}), ("ngram", {"similarity": "containment", "threshold": 0.8}),
                          ("spotsigs", {"threshold": 0.3})])
@pytest.mark.slow
def test_pair_count_exchange_does_not_depend_on_partitions(demo, name, params):
    texts = _texts(demo)
    params = {**params, "profile": "clean"}  # word shingles: no key group over max_df here
    memory = neardup.dedup(texts, name, engine="memory", pair_types=False, **params)
    verified = []
    for partitions in (1, 4, 32):
        local = neardup.dedup(texts, name, engine="local", pair_types=False, memory_limit="1MB",
                              partitions=partitions, batch_size=500, **params)
        np.testing.assert_array_equal(local.clusters, memory.clusters)
        assert local.clusters.size == len(texts) == len(set(local.ids.tolist()))
        stats = local.params["corpus_stage"]
        assert stats["capped_keys"] == 0
        if params.get("similarity") == "containment":
            # No prefix filter (a partner of one element needs to share one) and no key
            # group over max_df here: every exchanged pair's intersection is its count.
            assert stats["prefix_keys"] == stats["prefix_compared_keys"]
            assert stats["scored_from_counts"] == stats["exchange_pairs"] > 0
        else:
            # Jaccard: the prefixes hold part of the keys, and a pair sharing keys only
            # outside them is never exchanged.
            assert 0 < stats["prefix_keys"] < stats["prefix_compared_keys"]
            assert stats["scored_from_counts"] <= stats["exchange_pairs"]
        verified.append(stats["verified_edges"])
    # Sets are merged only for the likely matches a partition verifies at once (so copies
    # are joined early: counts of at least 3 keys, or neighbours in a group's MinHash
    # order with equal values, each such pair once per run), a few per document, not once
    # per partition a pair shares keys in (measured for 2,500 documents at 1 / 4 / 32
    # partitions: 2,815 / 2,860 / 3,715 merges with the word 3-gram default, 2,732 /
    # 3,270 / 9,857 with containment 0.8, whose rejected likely matches are merged again
    # in later partitions).
    assert max(verified) <= 4 * len(texts)


def test_exchange_totals_are_the_shared_rare_keys():
    from collections import Counter

    from neardup.engine.buckets import group_runs, overlap_pairs
    from neardup.engine.overlap import pair_ranges, sum_pair_counts
    from neardup.graph.edges import code_pairs, pair_codes

    rng = np.random.default_rng(7)
    n_docs, upto = 60, 6
    sets = [np.unique(rng.integers(0, 90, size=int(rng.integers(0, 25)))) for _ in range(n_docs)]
    docs = np.repeat(np.arange(n_docs), [s.size for s in sets])
    keys = np.concatenate(sets).astype(np.uint64)
    df = Counter(keys.tolist())
    expected = Counter()
    for a in range(n_docs):
        for b in range(a + 1, n_docs):
            shared = sum(1 for k in np.intersect1d(sets[a], sets[b]).tolist() if df[k] <= upto)
            if shared:
                expected[(a, b)] = shared
    files_codes, files_shared = [], []
    for p in range(5):  # key partitions
        mine = keys % np.uint64(5) == p
        order = np.lexsort((docs[mine], keys[mine]))
        pk, pd = keys[mine][order], docs[mine][order]
        starts, sizes = group_runs(pk)
        small = (sizes <= upto) & (sizes > 1)
        blocks = list(overlap_pairs(pd, starts[small], sizes[small], block_emits=50))
        left, right, shared = (np.concatenate([b[i] for b in blocks]) if blocks
                               else np.zeros(0, np.int64) for i in range(3))
        files_codes.append(pair_codes(left, right))
        files_shared.append(shared.astype(np.uint32))
    ranges = pair_ranges(files_codes, n_docs, max_records=40)
    assert len(ranges) > 3 and ranges[0][0] == 0 and ranges[-1][1] == n_docs
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    got = {}
    bound = np.uint64(32)
    for lo, hi in ranges:
        parts = [(c[(c >> bound >= lo) & (c >> bound < hi)], s[(c >> bound >= lo) & (c >> bound < hi)])
                 for c, s in zip(files_codes, files_shared)]
        if sum(c.size for c, _ in parts) > 40:  # only a single left document may exceed it
            assert hi == lo + 1
        codes, total = sum_pair_counts(np.concatenate([c for c, _ in parts]),
                                       np.concatenate([s for _, s in parts]))
        left, right = code_pairs(codes)
        assert np.all(np.diff(codes.astype(np.float64)) > 0)
        got.update(zip(zip(left.tolist(), right.tolist()), total.tolist()))
    assert got == dict(expected)


def test_decide_pairs_scores_exact_counts_and_bounds_the_rest():
    from neardup.engine.overlap import decide_pairs

    method = make_method("ngram", threshold=0.5)
    total = np.array([8, 4, 4, 1])
    size_left = np.array([10, 10, 10, 10])
    size_right = np.array([10, 10, 10, 10])
    unseen_left = np.array([0, 0, 3, 4])
    unseen_right = np.array([5, 5, 3, 4])
    exact, score, accept, verify = decide_pairs(total, size_left, size_right, unseen_left,
                                                unseen_right, method.overlap_scores,
                                                method.overlap_bound)
    assert exact.tolist() == [True, True, False, False]
    assert score[0] == np.float32(8 / 12) and accept.tolist() == [True, False, False, False]
    # 4 shared + at most 3 unseen common = 7 of 13: may pass; 1 + 4 = 5 of 15 cannot.
    assert verify.tolist() == [False, False, True, False]


@pytest.mark.parametrize("name", ["ngram", "spotsigs"])
def test_time_window_through_the_exchange_matches_in_memory(demo, name):
    # Pairs scored from counts in the exchange pass the same window check as verified ones.
    # profile="clean": word shingles, which this was written for (the demo's noise would
    # choose character 5-grams, 15x the exchange's work here).
    kwargs = dict(date_field="date", time_window_hours=24, pair_types=False, threshold=0.3, profile="clean")
    memory = neardup.dedup(demo, name, engine="memory", **kwargs)
    local = neardup.dedup(demo, name, engine="local", memory_limit="1MB", partitions=16, **kwargs)
    np.testing.assert_array_equal(local.clusters, memory.clusters)
    assert local.params["corpus_stage"]["exchange_pairs"] > 0
    assert len(local.outside_window) > 0
    assert set(zip(local.outside_window.left.tolist(), local.outside_window.right.tolist())) <= set(
        zip(memory.outside_window.left.tolist(), memory.outside_window.right.tolist()))


def test_an_input_of_one_batch_and_unknown_length_is_sized_by_its_documents(tmp_path):
    """A stream whose length nobody gave (a JSONL file) is sized at 256 partitions unless
    it ends within its first batch: then its documents are counted, and a two-story
    input no longer writes hundreds of spill files. Same clusters either way."""
    rng = np.random.default_rng(0)
    stories = [" ".join(rng.choice([f"w{i}" for i in range(500)], 30)) for _ in range(15)]
    texts = [stories[i // 2] for i in range(30)]  # each story twice
    method = make_method("minhash")
    results, files = {}, {}
    for size in (len(texts), 10):  # one batch; three batches
        work = tmp_path / str(size)
        results[size] = run_corpus_stage(_batches(texts, size), method,
                                         config=CorpusStageConfig(work_dir=str(work)))
        files[size] = sum(1 for p in work.rglob("*") if p.is_file())
    one, three = results[len(texts)], results[10]
    assert one.ids.size == three.ids.size == len(texts)
    np.testing.assert_array_equal(one.roots, three.roots)
    assert len(set(one.roots.tolist())) == 15  # the pairs were found
    assert files[len(texts)] < 40 < 256 < files[10]
