"""neardup.Index: add, query, delete, compact, stats; same clusters as dedup; errors."""

from __future__ import annotations

import json
import sqlite3
import threading

import numpy as np
import pytest

import neardup
from neardup.errors import InputError
from neardup.index import DuplicateIdError, Index, IndexFormatError, IndexMismatchError
from tests.index.corpora import partition_equal, synthetic_texts


def _labels(index: Index, n: int) -> np.ndarray:
    table = index.clusters()
    ids = np.array(table.column("id").to_pylist(), int)
    labels = np.full(n, -1, np.int64)
    labels[ids] = table.column("cluster").to_numpy()
    return labels


@pytest.mark.parametrize(
    "method, params",
    [("exact", {}), ("minhash", {}), ("simhash", {}), ("minhash", {"max_bucket_pairs": 2}),
     ("simhash", {"threshold": 6})],
)
@pytest.mark.parametrize("k", [1, 4])
@pytest.mark.slow
def test_batches_give_dedup_clusters_on_demo_corpus(demo_texts, tmp_path, method, params, k):
    texts = demo_texts
    expected = neardup.dedup(texts, method, pair_types=False, profile="clean", **params).clusters
    with Index.create(tmp_path / "idx", method, **params) as index:
        bounds = np.linspace(0, len(texts), k + 1).astype(int)
        for a, b in zip(bounds[:-1], bounds[1:]):
            index.add(texts[a:b], ids=[str(i) for i in range(a, b)])
        labels = _labels(index, len(texts))
    assert (labels >= 0).all()
    assert partition_equal(labels, expected)


def test_a_bridging_document_merges_clusters(tmp_path):
    words = [f"t{i}" for i in range(200)]
    a, c = " ".join(words[0:100]), " ".join(words[24:124])  # Jaccard about 0.61
    b = " ".join(words[12:112])  # about 0.78 with each
    # 512 permutations: each estimate is > 4 standard deviations from the threshold, so the
    # outcome does not hang on one draw of the permutations.
    with Index.create(tmp_path / "idx", "minhash", threshold=0.7, num_perm=512) as index:
        first = index.add([a, c], ids=["a", "c"])
        assert first.clusters[0] != first.clusters[1]
        second = index.add([b], ids=["b"])
        assert second.merged_clusters == 1
        assert second.status == ["joined"]
        clusters = dict(zip(*(index.clusters().column(n).to_pylist() for n in ("id", "cluster"))))
    assert clusters["a"] == clusters["b"] == clusters["c"] == min(first.clusters)


def test_new_documents_join_each_other_and_statuses(tmp_path):
    with Index.create(tmp_path / "idx", "exact") as index:
        r = index.add(["Same text.", "same TEXT", "", "other"], ids=["a", "b", "e", "o"])
        assert r.status == ["new", "joined", "empty", "new"]
        assert r.clusters[0] == r.clusters[1] and len(set(r.clusters.tolist())) == 3
        assert r.duplicate_of[1] == "a"
        with pytest.raises(DuplicateIdError, match="already in the index"):
            index.add(["x"], ids=["a"])
        r = index.add(["x", "same text!"], ids=["a", "z"], skip_existing=True)
        assert r.status == ["skipped", "joined"] and r.clusters[1] == 0
        with pytest.raises(neardup.InputError, match="appears twice"):
            index.add(["p", "q"], ids=["n", "n"])
        assert len(index) == 5


def test_query_is_read_only_and_typed(tmp_path, demo_texts):
    with Index.create(tmp_path / "idx", "minhash", store_text=True) as index:
        index.add(demo_texts[:500], ids=[f"d{i}" for i in range(500)])
        before = index.stats()
        result = index.query([demo_texts[3], demo_texts[3] + " And one more sentence here.",
                              "nothing like it at all"], ids=["q0", "q1", "q2"], top_k=3)
        assert index.stats()["documents"] == before["documents"]
    records = result.records()
    assert records[0]["matches"][0] == {"id": "d3", "score": 1.0, "type": "exact",
                                        "cluster": records[0]["matches"][0]["cluster"]}
    assert records[1]["matches"] and records[1]["matches"][0]["type"] in ("expanded", "corrected")
    assert records[2]["matches"] == []
    assert all(len(r["matches"]) <= 3 for r in records)
    scores = [m["score"] for m in records[0]["matches"]]
    assert scores == sorted(scores, reverse=True)


def test_query_without_stored_text_types_exact_or_near(tmp_path):
    with Index.create(tmp_path / "idx", "simhash") as index:
        text = " ".join(f"word{i % 97} token{i % 13}" for i in range(400))
        index.add([text], ids=["t"])
        result = index.query([text.upper(), text + " one more"])
    assert result.type == ["exact", "near"]


def test_delete_and_compact(tmp_path):
    texts = synthetic_texts(400, seed=1)
    with Index.create(tmp_path / "idx", "minhash") as index:
        index.add(texts, ids=[str(i) for i in range(400)])
        postings = index.stats()["postings"]
        gone = [str(i) for i in range(0, 400, 2)]
        outcome = index.delete(gone + ["nope"])
        assert outcome["deleted"] == 200 and outcome["missing"] == ["nope"]
        stats = index.stats()
        assert stats["documents"] == 200 and stats["postings"] < postings
        assert index.query([texts[0]]).match_ids == [] or "0" not in index.query([texts[0]]).match_ids
        compacted = index.compact()
        assert compacted["bytes_after"] <= compacted["bytes_before"]
        assert index.query([texts[1]]).match_ids[0] == "1"
        assert index.stats(check=True)["documents"] == 200


def test_delete_updates_big_groups(tmp_path):
    texts = ["the same template text for all of them"] * 6
    with Index.create(tmp_path / "idx", "minhash", max_bucket_pairs=2) as index:
        index.add(texts, ids=list("abcdef"))
        assert index.stats()["big_key_groups"] > 0
        index.delete(list("abcd"))
        assert index.stats()["big_key_groups"] == 0
        r = index.add(texts[:1], ids=["g"])
        assert r.duplicate_of == ["e"] or r.duplicate_of == ["f"]


@pytest.mark.parametrize("method, params, hint", [
    ("retsim-partial", {}, "several vectors per document"),
    ("rerank", {}, "minhash index verified by the pair classifier"),
    ("minhash", {"verify": "exact"}, "with verify 'exact': its verification reads shingle sets.*Leave out verify"),
    ("ngram", {}, "Methods it holds: 'exact', 'minhash', 'simhash'"),
])
def test_unsupported_methods_are_refused(tmp_path, method, params, hint):
    with pytest.raises(ValueError, match=hint):
        Index.create(tmp_path / "idx", neardup.methods.make_method(method, **params))
    assert not (tmp_path / "idx").exists()


def test_mismatched_method_is_refused(tmp_path):
    Index.create(tmp_path / "idx", "minhash", threshold=0.5).close()
    with Index(tmp_path / "idx", method="minhash", threshold=0.5) as index:
        index.check_method("minhash", threshold=0.5)
        with pytest.raises(IndexMismatchError, match="differs in threshold"):
            index.check_method("minhash", threshold=0.6)
        with pytest.raises(IndexMismatchError, match="built with method 'minhash'"):
            index.check_method("simhash")
    with pytest.raises(IndexMismatchError):
        Index(tmp_path / "idx", method="minhash", num_perm=64)


@pytest.mark.slow
def test_minhash_index_recorded_before_signature_schemes_keeps_working(tmp_path):
    """An index written before minhash recorded ``signature_scheme`` holds "perm64"
    signatures: it reopens with that scheme, matches new documents against the old ones,
    and refuses the current default scheme with a clear error."""
    texts = [f"story {i} about the market where prices of grain rose sharply on strong "
             f"demand from buyers in region {i} said traders" for i in range(6)]
    Index.create(tmp_path / "idx", "minhash", signature_scheme="perm64").close()
    con = sqlite3.connect(tmp_path / "idx" / "index.sqlite")
    params = json.loads(con.execute("SELECT value FROM meta WHERE name = 'params'").fetchone()[0])
    del params["signature_scheme"]  # as neardup wrote it before the field existed
    con.execute("UPDATE meta SET value = ? WHERE name = 'params'", (json.dumps(params),))
    con.commit()
    con.close()
    with Index(tmp_path / "idx") as index:
        assert index.method.get_params()["signature_scheme"] == "perm64"
        index.add(texts, ids=[f"d{i}" for i in range(6)])
        matches = index.query([texts[3] + " today"]).records()[0]["matches"]
        assert matches[0]["id"] == "d3" and matches[0]["score"] > max(m["score"] for m in matches[1:])
    with pytest.raises(IndexMismatchError, match="differs in signature_scheme"):
        Index(tmp_path / "idx", method="minhash")


def test_foreign_or_corrupted_directories_give_clear_errors(tmp_path):
    with pytest.raises(IndexFormatError, match="not a directory"):
        Index(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(IndexFormatError, match="not a neardup index"):
        Index(tmp_path / "empty")
    (tmp_path / "garbage").mkdir()
    (tmp_path / "garbage" / "index.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(IndexFormatError, match="damaged or the file is foreign"):
        Index(tmp_path / "garbage")
    (tmp_path / "foreign").mkdir()
    con = sqlite3.connect(tmp_path / "foreign" / "index.sqlite")
    con.execute("CREATE TABLE things (x)")
    con.commit()
    con.close()
    with pytest.raises(IndexFormatError, match="not a neardup index"):
        Index(tmp_path / "foreign")
    Index.create(tmp_path / "old", "exact").close()
    con = sqlite3.connect(tmp_path / "old" / "index.sqlite")
    con.execute("UPDATE meta SET value = '99' WHERE name = 'version'")
    con.commit()
    con.close()
    with pytest.raises(IndexFormatError, match="version 99 is not supported"):
        Index(tmp_path / "old")
    Index.create(tmp_path / "damaged", "exact").close()
    path = tmp_path / "damaged" / "index.sqlite"
    data = bytearray(path.read_bytes())
    data[:16] = b"\0" * 16  # the header names the file format
    path.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError):
        Index(tmp_path / "damaged")
    with pytest.raises(IndexFormatError, match="not empty"):
        Index.create(tmp_path / "old", "exact")


@pytest.mark.slow
def test_concurrent_queries_during_an_add_see_whole_batches(tmp_path):
    texts = synthetic_texts(6000, seed=2)
    batch = 500
    with Index.create(tmp_path / "idx", "minhash") as index:
        index.add(texts[:batch], ids=[str(i) for i in range(batch)])
        errors: list[BaseException] = []
        seen: list[int] = []
        done = threading.Event()

        def reader(offset: int) -> None:
            try:
                while not done.is_set():
                    r = index.query([texts[offset]])
                    assert r.match_ids and r.match_ids[0] == str(offset)
                    n = index.stats()["documents"]
                    assert n % batch == 0  # never a partial batch
                    seen.append(n)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=reader, args=(i,)) for i in (0, 7, 99)]
        for t in threads:
            t.start()
        for start in range(batch, len(texts), batch):
            index.add(texts[start:start + batch], ids=[str(i) for i in range(start, start + batch)])
        done.set()
        for t in threads:
            t.join()
        assert not errors, errors[0]
        assert seen and len(index) == len(texts)


def test_delete_splits_the_clusters_a_document_bridged(tmp_path):
    words = [f"t{i}" for i in range(200)]
    a, c = " ".join(words[0:100]), " ".join(words[24:124])  # Jaccard about 0.61: apart
    b = " ".join(words[12:112])  # about 0.78 with each: the bridge
    # 512 permutations: estimates > 4 standard deviations from the threshold.
    with Index.create(tmp_path / "idx", "minhash", threshold=0.7, num_perm=512) as index:
        index.add([a, b, c, a + " again"], ids=["a", "b", "c", "a2"])
        clusters = dict(zip(*(index.clusters().column(n).to_pylist() for n in ("id", "cluster"))))
        assert len(set(clusters.values())) == 1
        outcome = index.delete(["a2"])  # not a bridge: nothing splits
        assert outcome["split_clusters"] == 1 and outcome["new_clusters"] == 0
        outcome = index.delete(["b"])
        assert outcome["new_clusters"] == 1
        clusters = dict(zip(*(index.clusters().column(n).to_pylist() for n in ("id", "cluster"))))
        assert clusters == {"a": 0, "c": 2}  # each labelled by its earliest member
        r = index.add([b], ids=["b2"])  # the bridge comes back: one cluster again
        assert r.merged_clusters == 1


def test_delete_without_split_keeps_clusters(tmp_path):
    words = [f"t{i}" for i in range(200)]
    a, b, c = (" ".join(words[s:s + 100]) for s in (0, 12, 24))
    # 512 permutations: estimates > 4 standard deviations from the threshold.
    with Index.create(tmp_path / "idx", "minhash", threshold=0.7, num_perm=512) as index:
        index.add([a, b, c], ids=["a", "b", "c"])
        assert index.delete(["b"], split=False)["split_clusters"] == 0
        assert set(index.clusters().column("cluster").to_pylist()) == {0}


@pytest.mark.parametrize("method", ["minhash", "simhash", "exact"])
def test_clusters_after_deletes_are_dedup_of_the_rest(demo_texts, tmp_path, method):
    texts = demo_texts
    rng = np.random.default_rng(0)
    gone = set(rng.choice(len(texts), 600, replace=False).tolist())
    with Index.create(tmp_path / "idx", method) as index:
        index.add(texts, ids=[str(i) for i in range(len(texts))])
        index.delete([str(i) for i in sorted(gone)])
        table = index.clusters()
    rest = [i for i in range(len(texts)) if i not in gone]
    assert table.column("id").to_pylist() == [str(i) for i in rest]
    expected = neardup.dedup([texts[i] for i in rest], method, pair_types=False,
                             profile="clean").clusters
    assert partition_equal(table.column("cluster").to_numpy(), expected)


# -- ids (issue #40) ------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [None, 1.5, b"a", True, "a\ud800"])
def test_ids_that_are_not_text_are_refused(tmp_path, bad):
    with Index.create(tmp_path / "idx", "exact") as index:
        with pytest.raises(InputError, match="id 1 "):
            index.add(["x", "y"], ["a", bad])
        with pytest.raises(InputError, match="id 0 "):
            index.query(["x"], [bad])
        with pytest.raises(InputError, match="id 0 "):
            index.delete([bad])
        assert len(index) == 0
        assert index.add(["x", "y"], ["a", 7]).ids == ["a", "7"]  # integers are ids


def test_positions_never_collide_with_given_ids(tmp_path):
    with Index.create(tmp_path / "idx", "exact") as index:
        index.add(["x", "y"], ["1", "2"])
        with pytest.raises(InputError, match="named by the ids given"):
            index.add(["z", "x"])
        with pytest.raises(InputError, match="none would be skipped"):
            index.add(["z", "x"], skip_existing=True)
        assert index.clusters().column("id").to_pylist() == ["1", "2"]
    with Index.create(tmp_path / "pos", "exact") as index:
        index.add(["x", "y"])
        assert index.add(["z"]).ids == ["2"]  # positions continue
        with pytest.raises(InputError, match="named by their index positions"):
            index.add(["w"], ["5"])
        assert index.clusters().column("id").to_pylist() == ["0", "1", "2"]


def test_bulk_add_records_how_documents_are_named(tmp_path):
    with Index.create(tmp_path / "idx", "minhash") as index:
        index.bulk_add([(["some text here", "other words"], None)])
        with pytest.raises(InputError, match="named by their index positions"):
            index.add(["w"], ["x"])
        assert index.add(["more words"]).ids == ["2"]
    with Index.create(tmp_path / "mixed", "minhash") as index:
        with pytest.raises(InputError, match="some batches come with ids and others without"):
            index.bulk_add([(["a b c"], ["a"]), (["d e f"], None)])
        with pytest.raises(InputError, match="id 0 is None"):
            index.bulk_add([(["a b c"], [None])])
        assert len(index) == 0
