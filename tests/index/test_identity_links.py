"""The index links identical texts whatever its method finds, as every engine of
``dedup`` does: in a bulk load, and through verified edges to stored documents (an
embedding method's adds: tests/index/test_identity_links_neural.py)."""

from __future__ import annotations

import numpy as np

from neardup.index import Index
from neardup.index._link import link_edges
from neardup.methods import make_method

# Texts equal after normalization (case, spacing) but not byte for byte.
STORY = "The central bank raised its key interest rate by half a point on Tuesday, citing inflation."
COPY = "  the CENTRAL bank   raised its key interest rate by half a point on tuesday, citing inflation.\n"
OTHER = "Wheat futures fell sharply in Chicago as rain improved the outlook for the winter crop."


def test_a_bulk_load_links_identical_texts_first(tmp_path):
    # MinHash finds these copies too; the bulk load must give the clusters of add().
    texts = [STORY, OTHER, COPY, OTHER.upper()]
    with Index.create(tmp_path / "bulk", make_method("minhash")) as index:
        index.bulk_add([(texts, ["a", "b", "c", "d"])])
        bulk = index.clusters().column("cluster").to_pylist()
    with Index.create(tmp_path / "add", make_method("minhash")) as index:
        index.add(texts, ids=["a", "b", "c", "d"])
        added = index.clusters().column("cluster").to_pylist()
    assert bulk == added and bulk[0] == bulk[2] and bulk[1] == bulk[3] and bulk[0] != bulk[1]


def test_a_verified_edge_to_a_stored_document_joins_its_cluster():
    # Stored document 5 belongs to cluster 1 (not its own position): a new document linked
    # to it by a verified edge joins cluster 1, and no stored cluster is relabelled.
    clusters, relabel, forest = link_edges(
        np.array([10], np.int64), np.empty(0, np.int64), np.empty(0, np.int64), {5: 1}, None,
        linked=(np.array([5]), np.array([10]), np.array([0.9], np.float32)))
    assert clusters.tolist() == [1] and relabel == {}
    assert forest[0].tolist() == [5] and forest[1].tolist() == [10]
