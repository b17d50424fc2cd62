import numpy as np

from neardup.engine.pairmemory import PairMemory


def test_pair_memory_holds_what_was_added_up_to_its_capacity(monkeypatch):
    monkeypatch.setattr(PairMemory, "merge_floor", 8)  # exercise the merges
    rng = np.random.default_rng(0)
    memory, held = PairMemory(300), set()
    for _ in range(40):
        codes = rng.integers(0, 1000, 25).astype(np.uint64)
        memory.add(codes)
        for code in np.unique(codes).tolist():
            if len(held) < 300:
                held.add(code)
        probe = rng.integers(0, 1000, 200).astype(np.uint64)
        np.testing.assert_array_equal(memory.contains(probe), [c in held for c in probe.tolist()])
    assert len(memory) == len(held) == 300


def test_empty_pair_memory_holds_nothing():
    memory = PairMemory(0)
    memory.add(np.arange(5, dtype=np.uint64))
    assert len(memory) == 0 and not memory.contains(np.arange(5, dtype=np.uint64)).any()
