"""An index of the scale corpus (Zipf cluster sizes, one giant cluster: big key groups)
holds the partition that one-shot de-duplication finds, whether it was built in batches of
``add`` or by one ``bulk_add``, and whether the one-shot run is ``neardup.dedup`` or the
``neardup dedup`` command over the Parquet shards. The same checks at 100k and 1M documents
are the suite's ``index_equivalence`` and ``index_scale_equivalence`` benchmarks."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

import neardup
from neardup.datasets import make_scale_corpus
from neardup.index import Index
from neardup.io.reuters import find_reuters_dir
from tests.in_process import invoke
from tests.index.corpora import partition_equal

pytestmark = pytest.mark.slow

DOCS = 6000


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    if find_reuters_dir() is None:
        pytest.skip("Reuters-21578 is not here: the scale corpus is built from it")
    shards = make_scale_corpus(DOCS, tmp_path_factory.mktemp("scale"), workers=1)
    table = pq.read_table(shards[0], columns=["id", "text"])
    return shards, table.column("id").to_pylist(), table.column("text").to_pylist()


@pytest.fixture(scope="module")
def one_shot(corpus):
    _, _, texts = corpus
    return neardup.dedup(texts, "minhash", pair_types=False).clusters


def _index_labels(index: Index, ids: list[str]) -> np.ndarray:
    table = index.clusters()
    position = {doc_id: k for k, doc_id in enumerate(ids)}
    labels = np.empty(len(ids), np.int64)
    labels[[position[i] for i in table.column("id").to_pylist()]] = table.column("cluster").to_numpy()
    return labels


def test_index_built_in_batches_holds_the_one_shot_partition(corpus, one_shot, tmp_path):
    _, ids, texts = corpus
    bounds = np.linspace(0, len(texts), 11).astype(int)
    with Index.create(tmp_path / "idx", "minhash") as index:
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            index.add(texts[lo:hi], ids=ids[lo:hi])
        labels = _index_labels(index, ids)
    assert np.unique(one_shot).size < 0.8 * len(texts)  # 70% singletons, the rest copies
    assert partition_equal(labels, one_shot)


def test_bulk_built_index_holds_the_cli_partition(corpus, one_shot, tmp_path):
    shards, ids, texts = corpus
    with Index.create(tmp_path / "idx", "minhash") as index:
        index.bulk_add((texts[a:a + 1000], ids[a:a + 1000]) for a in range(0, len(texts), 1000))
        labels = _index_labels(index, ids)
    out = tmp_path / "clusters.parquet"
    # The command in this process (tests/in_process.py): its partition, not its process, is checked.
    done = invoke("dedup", *shards, "--method", "minhash", "--id-field", "id", "--text-field", "text",
                  "--clusters-out", out, "--quiet")
    assert done.exit_code == 0, done.output
    cli = pq.read_table(out, columns=["id", "cluster"])
    position = {doc_id: k for k, doc_id in enumerate(cli.column("id").to_pylist())}
    cli_labels = cli.column("cluster").to_numpy()[[position[i] for i in ids]]
    assert partition_equal(labels, one_shot)
    assert partition_equal(cli_labels, one_shot)
