"""IdSet finds exactly the first repeated id, as a Python set would."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.io.idset import IdSet


def _first_repeat(batches):
    seen = {}
    code = 0
    for b, batch in enumerate(batches):
        for i, doc_id in enumerate(batch):
            if doc_id in seen:
                return b, i, seen[doc_id]
            seen[doc_id] = code
            code += 1
    return None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.text(max_size=6), max_size=30), max_size=6))
def test_first_repeat_matches_a_python_set(batches):
    ids = IdSet()
    code = 0
    found = None
    for b, batch in enumerate(batches):
        codes = np.arange(code, code + len(batch), dtype=np.int64)
        repeat = ids.add(batch, codes)
        code += len(batch)
        if repeat is not None:
            found = (b, repeat[0], repeat[1])
            break
    assert found == _first_repeat(batches)


def test_grows_past_its_initial_tables_without_losing_ids():
    ids = IdSet()
    n = 50_000  # several doublings of the table, offsets and byte buffer
    for start in range(0, n, 7_000):
        batch = [f"document-{i}-ünïcode" for i in range(start, min(start + 7_000, n))]
        assert ids.add(batch, np.arange(start, start + len(batch))) is None
    assert len(ids) == n
    assert ids.add(["x", "document-31337-ünïcode"], np.array([-5, -6])) == (1, 31337)


def test_empty_and_one_byte_ids_are_distinct():
    ids = IdSet()
    assert ids.add(["", "a", "b"], np.array([0, 1, 2])) is None
    assert ids.add([""], np.array([3])) == (0, 0)
