"""An embedding index links identical texts its method misses, in one add and across
adds, as every engine of ``dedup`` does; blank texts are never linked."""

from __future__ import annotations

import pytest

from neardup.index import Index
from neardup.methods import make_method

pytestmark = pytest.mark.neural

pytest.importorskip("onnxruntime", reason="RETSim needs pip install 'neardup[neural]'")

STORY = "The central bank raised its key interest rate by half a point on Tuesday, citing inflation."
COPY = "  the CENTRAL bank   raised its key interest rate by half a point on tuesday, citing inflation.\n"
OTHER = "Wheat futures fell sharply in Chicago as rain improved the outlook for the winter crop."


def _strict_retsim():
    # A threshold so strict that RETSim alone links no two texts that differ by a byte.
    return make_method("retsim", threshold=0.9999)


def test_a_vector_index_links_identical_texts_its_method_misses(tmp_path):
    method = _strict_retsim()
    rows = method.sketch([STORY, COPY]).arrays["embedding"]
    assert rows.shape[0] == 2
    assert float(rows[0] @ rows[1]) < 0.9999  # the method alone would not link them
    with Index.create(tmp_path / "one", method) as index:
        result = index.add([STORY, OTHER, COPY], ids=["a", "b", "c"])
        clusters = index.clusters().column("cluster").to_pylist()
    assert clusters[0] == clusters[2] != clusters[1]
    assert result.duplicate_of[2] == "a"
    with Index.create(tmp_path / "two", method) as index:
        index.add([STORY, OTHER], ids=["a", "b"])
        result = index.add([COPY], ids=["c"])  # across adds: the stored text is found
        clusters = index.clusters().column("cluster").to_pylist()
    assert clusters[0] == clusters[2] != clusters[1]
    assert result.duplicate_of == ["a"]


def test_blank_texts_are_never_linked_by_identity(tmp_path):
    with Index.create(tmp_path / "idx", _strict_retsim()) as index:
        index.add(["", "   ", STORY], ids=["a", "b", "c"])
        clusters = index.clusters().column("cluster").to_pylist()
    assert len(set(clusters)) == 3


