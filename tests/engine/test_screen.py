"""The Screen step (rerank's ``low_partners``): every executor selects the same
low-estimate pairs, so the out-of-core run gives the in-memory clusters and pairs, and
the cap changes what is scored."""

from __future__ import annotations

import numpy as np
import pytest

import neardup
from tests.engine_contract import canonical, contract_corpus, skip_unavailable

#: A cap that binds on the 300-document contract corpus: every pair estimated below 0.95
#: is low, and each document keeps one.
CAPPED = {"low_partners": 1, "low_estimate": 0.95}


@pytest.fixture(scope="module")
def corpus():
    skip_unavailable("rerank")
    return contract_corpus(300)


@pytest.fixture(scope="module")
def in_memory(corpus):
    return {lp: neardup.dedup(corpus, "rerank", id_field="id", cluster="leiden", pair_types=False,
                              progress=False, **dict(CAPPED, low_partners=lp))
            for lp in (1, None)}


def test_the_cap_changes_what_is_scored(in_memory):
    capped, every = in_memory[1], in_memory[None]
    assert len(capped.pairs) < len(every.pairs)
    kept = set(zip(capped.pairs.left.tolist(), capped.pairs.right.tolist()))
    assert kept <= set(zip(every.pairs.left.tolist(), every.pairs.right.tolist()))


@pytest.mark.parametrize("algorithm", ["leiden", "components"])
def test_out_of_core_selects_the_in_memory_pairs(corpus, in_memory, algorithm, tmp_path):
    memory = in_memory[1] if algorithm == "leiden" else neardup.dedup(
        corpus, "rerank", id_field="id", cluster=algorithm, pair_types=False, progress=False, **CAPPED)
    # Many partitions and a small budget: the screen's table gathers every partition's
    # pairs before the first is linked.
    local = neardup.dedup(corpus, "rerank", id_field="id", engine="local", cluster=algorithm,
                          pair_types=False, progress=False, partitions=16, memory_limit="1MB",
                          work_dir=str(tmp_path / "work"), **CAPPED)
    np.testing.assert_array_equal(canonical(local.clusters), canonical(memory.clusters))
    if algorithm == "leiden":  # every accepted pair, the same ones
        assert sorted(zip(local.pairs.left.tolist(), local.pairs.right.tolist())) == \
            sorted(zip(memory.pairs.left.tolist(), memory.pairs.right.tolist()))


def test_each_selected_pair_is_scored_once_out_of_core(corpus, in_memory, tmp_path, monkeypatch):
    # A pair shares several LSH bands, whose keys fall in different partitions: the link
    # step remembers the costly check's verdicts (and only those), so no pair reaches the
    # scorer twice, and the scorer sees exactly the pairs the screen selected.
    from neardup.methods.rerank import RerankMethod

    scored = []
    real = RerankMethod.verify_screened_rows

    def logging(self, rows, left, right):
        scored.append(rows.docs[left] * len(corpus) + rows.docs[right])
        return real(self, rows, left, right)

    monkeypatch.setattr(RerankMethod, "verify_screened_rows", logging)
    local = neardup.dedup(corpus, "rerank", id_field="id", engine="local", cluster="leiden",
                          pair_types=False, progress=False, partitions=16, memory_limit="1MB",
                          work_dir=str(tmp_path / "work"), **CAPPED)
    pairs = np.concatenate(scored)
    assert np.unique(pairs).size == pairs.size
    assert len(local.pairs) == len(in_memory[1].pairs) < pairs.size


def test_a_resumed_run_reads_the_screen_back(corpus, in_memory, tmp_path):
    # The Screen step is a stage of its own: a run resumed after it links with the
    # selection it wrote, and gives the same pairs.
    import shutil

    options = dict(id_field="id", engine="local", cluster="leiden", pair_types=False, progress=False,
                   partitions=4, work_dir=str(tmp_path / "work"), resume=True, **CAPPED)
    first = neardup.dedup(corpus, "rerank", **options)
    work = tmp_path / "work"
    assert (work / "screen" / "selected.npy").exists()
    for later in ("link", "components"):
        shutil.rmtree(work / later, ignore_errors=True)
    again = neardup.dedup(corpus, "rerank", **options)
    assert sorted(zip(again.pairs.left.tolist(), again.pairs.right.tolist())) == \
        sorted(zip(first.pairs.left.tolist(), first.pairs.right.tolist()))
    assert len(first.pairs) == len(in_memory[1].pairs)


def test_near_identical_pairs_skip_the_scorer_on_every_executor(corpus, tmp_path, monkeypatch):
    # accept_estimate: pairs estimated at it or more are accepted with probability 1
    # without the scorer, in memory and out of core alike.
    from neardup.methods.rerank import VerifierScorer

    calls = []
    real = VerifierScorer.decide_profiles

    def counting(self, profiles, left, right, *args, **kwargs):
        calls.append(len(left))
        return real(self, profiles, left, right, *args, **kwargs)

    monkeypatch.setattr(VerifierScorer, "decide_profiles", counting)
    options = dict(id_field="id", cluster="leiden", pair_types=False, progress=False)
    every = neardup.dedup(corpus, "rerank", engine="local", partitions=4,
                          work_dir=str(tmp_path / "every"), **options)
    scored_every, calls[:] = sum(calls), []
    sure = neardup.dedup(corpus, "rerank", engine="local", partitions=4, accept_estimate=0.7,
                         work_dir=str(tmp_path / "sure"), **options)
    assert sum(calls) < scored_every
    memory = neardup.dedup(corpus, "rerank", accept_estimate=0.7, **options)
    np.testing.assert_array_equal(canonical(sure.clusters), canonical(memory.clusters))
    by_pair = dict(zip(zip(memory.pairs.left.tolist(), memory.pairs.right.tolist()),
                       memory.pairs.score.tolist()))
    assert dict(zip(zip(sure.pairs.left.tolist(), sure.pairs.right.tolist()),
                    sure.pairs.score.tolist())) == by_pair
    assert (sure.pairs.score == 1).sum() > (every.pairs.score == 1).sum()


def test_the_template_guard_still_rejects_a_near_identical_notice():
    from neardup.methods.rerank import RerankMethod

    texts = ["Qtly div 25 cts vs 25 cts prior Pay July 10 Record June 15",
             "Qtly div 26 cts vs 26 cts prior Pay July 10 Record June 15",
             "Qtly div 25 cts vs 25 cts prior Pay July 10 Record June 15."]
    method = RerankMethod(accept_estimate=0.3)
    sketch = method.sketch(texts)
    estimate = method.candidate.find_pairs(method.candidate.sketch(texts))
    assert (estimate.score >= 0.3).all() and len(estimate) == 3  # every pair is near-identical
    pairs = method.find_pairs(sketch)
    # The copy (a full stop added) is accepted without the scorer; the other company's
    # figures keep both of its pairs apart.
    assert list(zip(pairs.left.tolist(), pairs.right.tolist(), pairs.score.tolist())) == [(0, 2, 1.0)]
