"""The method contract: every method declares typed capabilities, and nothing else.

Engines decide what to run from ``Method.capabilities`` only, so a malformed declaration
or a leftover optional hook would go unnoticed by them; these tests catch both."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import neardup.models
from neardup.methods import METHODS, Method, make_method
from neardup.methods.capabilities import (
    Capabilities,
    CorpusStatistics,
    KeyedCandidates,
    OverlapScoring,
    VectorSearch,
    Verification,
)
from neardup.text import NormalizeConfig

#: The optional hooks the specs replaced; no method may define them again.
REMOVED_HOOKS = (
    "candidate_arrays", "bucket_all_pairs_upto", "candidate_sets", "candidate_set_weights",
    "candidate_dates", "candidate_text_chars", "candidate_fixed_width", "costly_verification",
    "candidate_multisets", "query_retrieval", "corpus_statistics", "bucket_star_upto",
    "candidate_keys_per_doc", "bucket_skip_over", "bucket_edges_overlap", "vector_search",
)

#: Parameter variants that change what a method declares.
VARIANTS = [
    (name, {}) for name in METHODS
] + [
    ("minhash", {"verify": "exact"}),
    ("wminhash", {"verify": "exact"}),
    ("ngram", {"similarity": "containment"}),
    ("retsim", {"index": "hnsw"}),
    ("rerank", {"candidates": "retsim"}),
    ("rerank", {"candidates": "static"}),
]


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


@pytest.mark.parametrize(("name", "params"), VARIANTS, ids=lambda v: str(v))
def test_capabilities_are_well_formed(name, params):
    method = make_method(name, **params)
    caps = method.capabilities
    assert isinstance(caps, Capabilities)
    kinds = {"keyed": KeyedCandidates, "vectors": VectorSearch, "statistics": CorpusStatistics,
             "overlap": OverlapScoring, "verification": Verification}
    for field, kind in kinds.items():
        value = getattr(caps, field)
        assert value is None or type(value) is kind, (field, value)
    hash(caps)  # frozen values all the way down: comparable, printable, no arrays or models
    assert caps == method.capabilities  # a declaration, not a state that drifts between reads
    if caps.keyed is not None:
        assert caps.verification is not None
        if caps.verification.fixed_width and not caps.keyed.query_retrieval:
            # Fixed-width rows are verified by score_candidates: it must be the method's own.
            assert type(method).score_candidates is not Method.score_candidates or \
                type(method).score_candidate_rows is not Method.score_candidate_rows
    if caps.keyed is not None and caps.keyed.links_buckets:
        assert type(method).link_bucket is not Method.link_bucket
    if caps.overlap is not None:
        assert type(method).overlap_bound is not Method.overlap_bound
        assert type(method).overlap_scores is not Method.overlap_scores
        if caps.overlap.prefix_filter:
            assert type(method).overlap_min_shared is not Method.overlap_min_shared
    if caps.statistics is not None:
        assert type(method).statistics_partial is not Method.statistics_partial
        assert type(method).with_statistics is not Method.with_statistics
    if caps.vectors is not None:
        assert type(method).vector_rows is not Method.vector_rows
    assert method.normalize is None or isinstance(method.normalize, NormalizeConfig)


def test_declarations_follow_the_parameters():
    assert make_method("minhash", verify="exact").capabilities.reads.sets
    assert make_method("minhash").capabilities.reads.arrays == ("signature",)
    assert not make_method("ngram", similarity="containment").capabilities.overlap.prefix_filter
    assert make_method("retsim", index="hnsw").capabilities == Capabilities()
    assert make_method("simhash").capabilities.keyed.links_buckets
    # A fitted method declares no statistics: its keys need no counting pass.
    wmh = make_method("wminhash")
    assert wmh.capabilities.statistics.tables
    sketch = wmh.sketch(["the cat sat on the mat today", "the dog sat on the mat today"])
    partial = wmh.statistics_partial(sketch)
    from neardup.methods.base import FeatureStatistics
    tables = {name: (np.unique(h), np.ones(np.unique(h).size, np.int64))
              for name, h in partial.features.items()}
    fitted = wmh.with_statistics(FeatureStatistics(partial.totals, tables))
    assert fitted.capabilities.statistics is None and wmh.capabilities.statistics is not None


def test_specs_reject_contradictions():
    with pytest.raises(ValueError, match="verification"):
        Capabilities(keyed=KeyedCandidates())
    with pytest.raises(ValueError, match="keyed"):
        Capabilities(overlap=OverlapScoring())
    with pytest.raises(ValueError, match="sets"):
        Verification(set_weights=True)
    with pytest.raises(ValueError, match="tables"):
        CorpusStatistics(())


def test_no_method_defines_a_removed_hook():
    classes = [Method, *_subclasses(Method)]
    assert len(classes) > len(METHODS)
    offenders = [(cls.__name__, hook) for cls in classes for hook in REMOVED_HOOKS
                 if hook in vars(cls)]
    assert offenders == []
    # No proxies: a wrapper declares what it forwards.
    assert not any("__getattr__" in vars(cls) for cls in classes)


def test_constructors_read_no_model(monkeypatch):
    def no_model(*args, **kwargs):
        raise AssertionError("a model file was read in a constructor")

    monkeypatch.setattr(neardup.models, "_meta", no_model)
    monkeypatch.setattr(neardup.models, "resolve_model", no_model)
    for name in METHODS:
        make_method(name)
    make_method("rerank", scorer="cross-encoder")


def test_rerank_resolves_its_threshold_on_first_use():
    method = make_method("rerank")
    assert method._threshold is None  # nothing looked up yet
    assert 0.0 < method.threshold <= 1.0
    assert make_method("rerank", threshold=0.7).threshold == 0.7


def test_rerank_keeps_its_scores_off_the_sketch():
    method = make_method("rerank", threshold=0.0)
    sketch = method.sketch(["the cat sat on the mat", "the cat sat on the mat!", "a dog"])
    fields = set(vars(sketch))
    first = method.find_pairs(sketch)
    assert set(vars(sketch)) == fields
    np.testing.assert_array_equal(method.find_pairs(sketch).score, first.score)


def test_derived_params_replace_the_banding_side_channel():
    bands, rows = make_method("minhash", threshold=0.5).banding
    assert make_method("minhash", threshold=0.5).derived_params() == {"bands": bands, "rows": rows}
    assert make_method("exact").derived_params() == {}


def test_specs_are_dataclass_values():
    for spec in (Verification(), KeyedCandidates(), OverlapScoring(), VectorSearch(0.5),
                 CorpusStatistics(("t",)), Capabilities()):
        assert dataclasses.is_dataclass(spec)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(spec, dataclasses.fields(spec)[0].name, None)
