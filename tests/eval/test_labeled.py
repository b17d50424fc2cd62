"""Labeled corpora (neardup/eval/labeled.py): formats, pairs -> clusters, splits, errors."""

from __future__ import annotations

import csv
import json
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neardup.errors import InputError
from neardup.eval.labeled import LabeledCorpus, load_labeled

ROWS = [
    {"id": "a1", "text": "the cat sat on the mat", "cluster": 1, "split": "validation"},
    {"id": "a2", "text": "the cat sat on the mat!", "cluster": 1, "split": "validation"},
    {"id": "b1", "text": "wheat prices fell", "cluster": "b", "split": "validation"},
    {"id": "c1", "text": "the bank raised rates", "cluster": "c", "split": "test"},
    {"id": "c2", "text": "The bank raised rates.", "cluster": "c", "split": "test"},
    {"id": "d1", "text": "a lonely story", "cluster": "d", "split": "test"},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def write_csv(path, rows, fields=None):
    fields = fields or list(rows[0])
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.fixture
def labeled(tmp_path):
    return write_jsonl(tmp_path / "labeled.jsonl", ROWS)


def test_jsonl_with_cluster_and_split(labeled):
    corpus = load_labeled(labeled)
    assert len(corpus) == 6
    assert corpus.ids.tolist() == ["a1", "a2", "b1", "c1", "c2", "d1"]
    assert corpus.texts[1] == "the cat sat on the mat!"
    assert corpus.clusters.tolist() == ["1", "1", "b", "c", "c", "d"]  # ints become str
    assert corpus.splits.tolist() == ["validation"] * 3 + ["test"] * 3
    assert corpus.split_names == ["test", "validation"]
    assert corpus.dates is None
    assert corpus.summary() == {
        "documents": 6,
        "clusters": 4,
        "duplicate_clusters": 2,
        "documents_in_duplicate_clusters": 4,
        "splits": {"test": 3, "validation": 3},
    }
    assert "documents=6" in repr(corpus)


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_parquet_and_csv_read_alike(tmp_path, labeled, kind):
    rows = [{**r, "cluster": str(r["cluster"])} for r in ROWS]
    if kind == "parquet":
        path = tmp_path / "labeled.parquet"
        pq.write_table(pa.Table.from_pylist(rows), path)
    else:
        path = write_csv(tmp_path / "labeled.csv", rows)
    got, want = load_labeled(path), load_labeled(labeled)
    assert got.ids.tolist() == want.ids.tolist()
    assert got.texts == want.texts
    assert got.clusters.tolist() == want.clusters.tolist()
    assert got.splits.tolist() == want.splits.tolist()
    assert got.content_hash() == want.content_hash()


def test_custom_field_names_and_several_files(tmp_path):
    rows = [{"doc": r["id"], "body": r["text"], "gold": r["cluster"], "part": r["split"]}
            for r in ROWS]
    first = write_jsonl(tmp_path / "one.jsonl", rows[:3])
    second = write_jsonl(tmp_path / "two.jsonl", rows[3:])
    corpus = load_labeled([first, second], text_field="body", id_field="doc",
                          cluster_field="gold", split_field="part")
    assert corpus.ids.tolist() == ["a1", "a2", "b1", "c1", "c2", "d1"]
    assert corpus.split_names == ["test", "validation"]


def test_no_split_field_means_no_splits(tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl", [{k: v for k, v in r.items() if k != "split"}
                                               for r in ROWS])
    corpus = load_labeled(path)
    assert corpus.splits is None and corpus.split_names == []
    with pytest.raises(ValueError, match="no split field"):
        corpus.select_split("validation")


def test_select_split_keeps_order_and_fields(labeled):
    test = load_labeled(labeled).select_split("test")
    assert test.ids.tolist() == ["c1", "c2", "d1"]
    assert test.texts == ["the bank raised rates", "The bank raised rates.", "a lonely story"]
    assert test.clusters.tolist() == ["c", "c", "d"]
    assert set(test.splits.tolist()) == {"test"}


def test_unknown_split_lists_the_available_ones(labeled):
    with pytest.raises(ValueError, match="one of 'test', 'validation'; got 'train'"):
        load_labeled(labeled).select_split("train")


def test_pairs_csv_union_is_transitive_and_leaves_singletons(tmp_path, labeled):
    pairs = write_csv(tmp_path / "pairs.csv",
                      [{"id_a": "a1", "id_b": "a2"}, {"id_a": "a2", "id_b": "b1"},
                       {"id_a": "c2", "id_b": "c1"}])
    corpus = load_labeled(labeled, pairs_path=pairs)
    # a1-a2-b1 chain into one cluster; d1 is in no pair: a singleton named after itself.
    assert corpus.clusters.tolist() == ["a1", "a1", "a1", "c1", "c1", "d1"]
    assert corpus.splits is not None  # splits still come from the records


@pytest.mark.parametrize("kind", ["json-array", "json-objects", "jsonl", "parquet", "tsv"])
def test_pairs_file_formats(tmp_path, labeled, kind):
    edges = [("a1", "a2"), ("c1", "c2")]
    if kind == "json-array":  # NEWS-COPY's ground-truth edge lists
        path = tmp_path / "gt_edges.json"
        path.write_text(json.dumps([list(e) for e in edges]))
    elif kind == "json-objects":
        path = tmp_path / "gt_edges.json"
        path.write_text(json.dumps([{"id_a": a, "id_b": b} for a, b in edges]))
    elif kind == "jsonl":
        path = write_jsonl(tmp_path / "pairs.jsonl", [{"id_a": a, "id_b": b} for a, b in edges])
    elif kind == "parquet":
        path = tmp_path / "pairs.parquet"
        pq.write_table(pa.table({"id_a": [a for a, _ in edges], "id_b": [b for _, b in edges]}),
                       path)
    else:
        path = tmp_path / "pairs.tsv"
        path.write_text("id_a\tid_b\n" + "".join(f"{a}\t{b}\n" for a, b in edges))
    corpus = load_labeled(labeled, pairs_path=path)
    assert corpus.clusters.tolist() == ["a1", "a1", "b1", "c1", "c1", "d1"]


def test_pairs_with_integer_ids_and_no_cluster_field(tmp_path):
    rows = [{"id": i, "text": t} for i, t in enumerate(["x y z", "x y z!", "q r s"])]
    path = write_jsonl(tmp_path / "c.jsonl", rows)
    pairs = tmp_path / "p.json"
    pairs.write_text("[[0, 1]]")
    corpus = load_labeled(path, pairs_path=pairs)
    assert corpus.clusters.tolist() == ["0", "0", "2"]


def test_unknown_ids_in_pairs_file(tmp_path, labeled):
    pairs = write_csv(tmp_path / "pairs.csv",
                      [{"id_a": "a1", "id_b": "zz9"}, {"id_a": "qq", "id_b": "a2"}])
    with pytest.raises(InputError, match=r"2 pair\(s\) name ids that are not in the corpus.*'zz9'"):
        load_labeled(labeled, pairs_path=pairs)


def test_pairs_file_without_id_columns(tmp_path, labeled):
    pairs = write_csv(tmp_path / "pairs.csv", [{"left": "a1", "right": "a2"}])
    with pytest.raises(InputError, match="'id_a' and 'id_b'"):
        load_labeled(labeled, pairs_path=pairs)


def test_malformed_json_pairs(tmp_path, labeled):
    pairs = tmp_path / "p.json"
    pairs.write_text('[["a1", "a2", "b1"]]')
    with pytest.raises(InputError, match=r"expected \[id_a, id_b\]"):
        load_labeled(labeled, pairs_path=pairs)


def test_missing_cluster_field_is_a_clear_error(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [{"id": "a", "text": "t", "label": 1}])
    with pytest.raises(InputError, match=r"c\.jsonl, record 0.*no ground-truth cluster field "
                                         r"'cluster'.*'label'.*--pairs"):
        load_labeled(path)


def test_empty_cluster_label_is_an_error(tmp_path):
    path = write_csv(tmp_path / "c.csv", [{"id": "a", "text": "t", "cluster": "x"},
                                          {"id": "b", "text": "u", "cluster": ""}])
    with pytest.raises(InputError, match=r"record 1 \(0-based\): the record has an empty"):
        load_labeled(path)


def test_cluster_label_of_wrong_type(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [{"id": "a", "text": "t", "cluster": [1]}])
    with pytest.raises(InputError, match="must be a string or an integer; got list"):
        load_labeled(path)


def test_split_on_some_records_only(tmp_path):
    rows = [dict(ROWS[0]), {k: v for k, v in ROWS[1].items() if k != "split"}]
    path = write_jsonl(tmp_path / "c.jsonl", rows)
    with pytest.raises(InputError, match=r"record 1 \(0-based\): the record has no split"):
        load_labeled(path)


def test_missing_text_and_duplicate_ids_come_from_the_reader(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [{"id": "a", "cluster": 1}])
    with pytest.raises(InputError, match="no text field"):
        load_labeled(path)
    path = write_jsonl(tmp_path / "d.jsonl", [ROWS[0], ROWS[0]])
    with pytest.raises(InputError, match="duplicate id 'a1'"):
        load_labeled(path)


def test_dates_are_parsed_and_bad_dates_rejected(tmp_path):
    rows = [{**ROWS[0], "date": "1955-03-01"}, dict(ROWS[1])]
    corpus = load_labeled(write_jsonl(tmp_path / "c.jsonl", rows))
    assert corpus.dates[0] == np.datetime64("1955-03-01T00:00:00")
    assert np.isnat(corpus.dates[1])
    rows[1]["date"] = "not a date"
    with pytest.raises(InputError, match="date field 'date'"):
        load_labeled(write_jsonl(tmp_path / "d.jsonl", rows))


def test_cluster_spanning_splits_warns(tmp_path):
    rows = [dict(ROWS[0]), {**ROWS[3], "cluster": 1}]
    path = write_jsonl(tmp_path / "c.jsonl", rows)
    with pytest.warns(UserWarning, match="span more than one split"):
        load_labeled(path)


def test_no_warning_when_clusters_stay_in_their_split(labeled):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_labeled(labeled)


def test_content_hash_tracks_ids_texts_and_labels(labeled):
    corpus = load_labeled(labeled)
    same = LabeledCorpus(corpus.ids, list(corpus.texts), corpus.clusters, corpus.splits)
    assert same.content_hash() == corpus.content_hash()
    texts = list(corpus.texts)
    texts[0] += " "
    assert LabeledCorpus(corpus.ids, texts, corpus.clusters).content_hash() != corpus.content_hash()
    labels = corpus.clusters.copy()
    labels[2] = "1"
    assert LabeledCorpus(corpus.ids, corpus.texts, labels).content_hash() != corpus.content_hash()


def test_labeled_corpus_checks_lengths():
    with pytest.raises(ValueError, match="'clusters' must have one entry per text"):
        LabeledCorpus(ids=["a", "b"], texts=["x", "y"], clusters=["1"])
