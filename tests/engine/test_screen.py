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
