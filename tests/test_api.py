import re

import numpy as np
import pytest

import neardup
from neardup.methods import NEURAL_METHODS
from neardup import InputError


def test_records_with_ids_and_representatives():
    records = [
        {"id": "a", "text": "short version of the story about grain exports"},
        {"id": "b", "text": "Short version of the story -- about GRAIN exports!!!"},
        {"id": "c", "text": "something different entirely"},
    ]
    r = neardup.dedup(records, method="exact", id_field="id")
    assert r.ids.tolist() == ["a", "b", "c"]
    assert r.clusters.tolist() == [0, 0, 1]
    assert r.representatives.tolist() == [1, 2]  # longest text kept
    first = neardup.dedup(records, method="exact", id_field="id", keep="first")
    assert first.representatives.tolist() == [0, 2]


def test_pairs_table_uses_ids():
    r = neardup.dedup(["x y z w", "x y z w", "q"], method="exact")
    table = r.pairs_table().to_pylist()
    assert table == [{"id_a": "0", "id_b": "1", "score": 1.0, "method": "exact", "type": "exact",
                      "outside_window": False}]


@pytest.mark.parametrize(
    "items,match",
    [
        ([{"body": "x"}], "no text field 'text'"),
        ([{"text": 5}], "must be a string; got int"),
        ([None], "must be a str or a mapping"),
    ],
)
def test_bad_records(items, match):
    with pytest.raises(InputError, match=match):
        neardup.dedup(items)


def test_duplicate_ids_rejected():
    with pytest.raises(InputError, match="duplicate id 'a'"):
        neardup.dedup([{"id": "a", "text": "x"}, {"id": "a", "text": "y"}], id_field="id")


def test_single_string_rejected():
    with pytest.raises(InputError, match="not a single string"):
        neardup.dedup("just a string")


@pytest.mark.slow
@pytest.mark.parametrize("method", sorted(set(neardup.METHODS) - NEURAL_METHODS))
def test_five_megabyte_document(method):
    # The neural embedders' 5 MB case is in tests/embed (it costs a model run there).
    rng = np.random.default_rng(0)
    words = np.array([f"w{i}" for i in range(20000)])
    big = " ".join(rng.choice(words, 800_000))  # ~5 MB
    assert len(big) > 5_000_000
    r = neardup.dedup([big, big[:1000], "tiny"], method=method)
    assert r.n_docs == 3


def test_community_detection_and_oversized_through_api():
    texts = ["alpha beta gamma delta epsilon"] * 5 + ["zeta eta theta iota kappa"] * 2
    r = neardup.dedup(texts, method="exact", cluster="leiden", max_cluster_size=3, oversized="split")
    assert r.template.tolist() == [True] * 5 + [False] * 2
    assert r.cluster_size.tolist() == [1] * 5 + [2] * 2


def test_pair_types_for_every_method_output():
    story = ("The company said first quarter profit rose to 12 mln dlrs from eight mln dlrs a "
             "year ago on higher sales of its industrial products in Europe and Asia.")
    texts = [story, story.upper(), story + " The company also said it would expand its plant "
             "in Ohio next year, creating jobs.", "Unrelated words about the weather today."]
    r = neardup.dedup(texts, method="ngram", threshold=0.5, similarity="containment")
    types = dict(zip(zip(r.pairs.left.tolist(), r.pairs.right.tolist()), r.pair_types.tolist()))
    assert types[(0, 1)] == "exact"
    # The corpus stage reports a spanning forest: document 2 joins through 0 or through 1
    # (its upper-case copy), and either way it is the expanded side.
    assert [types[pair] for pair in types if 2 in pair] == ["expanded"]
    assert "type" in r.pairs_table().column_names
    assert r.summary()["pairs_exact"] >= 1
    off = neardup.dedup(texts, method="ngram", pair_types=False)
    assert off.pair_types is None and "type" not in off.pairs_table().column_names


def test_template_clusters_reported_separately():
    texts = ["alpha beta gamma delta epsilon"] * 5 + ["zeta eta theta iota kappa"] * 2 + ["solo"]
    r = neardup.dedup(texts, method="exact", max_cluster_size=3, oversized="split")
    assert r.template_clusters() == [{"cluster": 0, "size": 5, "examples": ["0", "1", "2"]}]
    assert r.summary()["template_documents"] == 5
    flagged = neardup.dedup(texts, method="exact", max_cluster_size=3)
    assert flagged.template_clusters()[0]["size"] == 5 and flagged.cluster_size[0] == 5


def test_hac_clustering_through_api():
    texts = ["alpha beta gamma delta epsilon zeta eta"] * 3 + ["theta iota kappa lambda mu nu xi"] * 2
    r = neardup.dedup(texts, method="minhash", cluster="hac", linkage="average", distance_threshold=0.2)
    assert r.clusters.tolist() == [0, 0, 0, 1, 1]
    assert r.params["cluster"]["algorithm"] == "hac"


def test_time_window_keeps_days_apart_copies_unmerged():
    report = "The Treasury's operating cash balance totaled 10.6 billion dlrs on the day."
    records = [
        {"id": "mon", "text": report, "date": "1987-03-11T10:00:00"},
        {"id": "mon-copy", "text": report + " (AP)", "date": "1987-03-11T15:00:00"},
        {"id": "tue", "text": report + " Figures are provisional.", "date": "1987-03-12T10:00:00"},
    ]
    plain = neardup.dedup(records, method="ngram", id_field="id", date_field="date")
    assert len(set(plain.clusters.tolist())) == 1
    r = neardup.dedup(records, method="ngram", id_field="id", date_field="date",
                      time_window_hours=12)
    # Monday's two copies stay together; Tuesday's report is 24 hours from both.
    assert r.clusters.tolist() == [0, 0, 1]
    table = r.pairs_table().to_pylist()
    outside = {(row["id_a"], row["id_b"]) for row in table if row["outside_window"]}
    assert outside == {("mon", "tue"), ("mon-copy", "tue")}
    assert r.summary()["pairs_outside_time_window"] == 2
    # A pair a window keeps apart is typed by that window, not by the default 48 hours:
    # "template" (same wording, another day) unless the texts are identical.
    types = {(row["id_a"], row["id_b"]): row["type"] for row in table if row["outside_window"]}
    assert types == {("mon", "tue"): "template", ("mon-copy", "tue"): "template"}
    assert r.params["cluster"]["time_window_hours"] == 12


@pytest.mark.parametrize("method, params", [("exact", {}), ("ngram", {}), ("minhash", {}),
                                            ("minhash", {"verify": "exact"})])
@pytest.mark.parametrize("engine", ["memory", "local"])
def test_identical_pairs_bypass_the_time_window(method, params, engine, tmp_path):
    story = ("The central bank raised its key interest rate by half a point on Tuesday, "
             "citing stubborn inflation and strong wage growth across the whole economy.")
    records = [
        {"id": "mon", "text": story, "date": "1987-03-11T10:00:00"},
        {"id": "resend", "text": story.upper() + "  ", "date": "1987-03-16T10:00:00"},
        {"id": "edited", "text": story.replace("Tuesday", "Monday"), "date": "1987-03-16T11:00:00"},
    ]
    extra = {"work_dir": tmp_path / "w"} if engine == "local" else {}
    r = neardup.dedup(records, method=method, id_field="id", date_field="date",
                      time_window_hours=48, engine=engine, pair_types=False,
                      **{"threshold": 0.3, **params} if method != "exact" else {}, **extra)
    # Identical after normalization: merged five days apart. The edited copy is not
    # identical to Monday's story and stays out (it is within the window of the re-send).
    assert r.clusters[0] == r.clusters[1]
    if method != "exact":
        outside = set(zip(r.outside_window.left.tolist(), r.outside_window.right.tolist()))
        assert (0, 1) not in outside and (1, 0) not in outside


def _one_word_apart(n_pairs: int = 30, words: int = 600, seed: int = 0) -> list[dict]:
    """``n_pairs`` stories of ``words`` words, each re-sent nine days later with one word
    changed: near-identical (MinHash often estimates Jaccard 1.0, SimHash distance 0),
    never identical."""
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(5000)]
    records = []
    for p in range(n_pairs):
        text = [vocab[i] for i in rng.integers(0, len(vocab), words)]
        edited = list(text)
        edited[words // 2] = "changed"
        records.append({"id": f"{p}a", "text": " ".join(text), "date": "1987-03-01T10:00:00"})
        records.append({"id": f"{p}b", "text": " ".join(edited), "date": "1987-03-10T10:00:00"})
    return records


@pytest.mark.parametrize("method, params", [("minhash", {"threshold": 0.5}),
                                            ("minhash", {"threshold": 0.5, "verify": "exact"}),
                                            ("simhash", {}), ("ngram", {"threshold": 0.5}),
                                            ("ngram", {"similarity": "containment", "threshold": 0.5})])
@pytest.mark.parametrize("engine", ["memory", "local"])
def test_only_identical_texts_pass_the_time_window(method, params, engine, tmp_path):
    records = _one_word_apart()
    extra = {"work_dir": tmp_path / "w"} if engine == "local" else {}
    r = neardup.dedup(records, method=method, id_field="id", date_field="date",
                      time_window_hours=48, engine=engine, pair_types=False, **params, **extra)
    # The pairs are found (the window keeps them apart, it does not hide them) ...
    found = {tuple(sorted(p)) for p in zip(r.outside_window.left.tolist(), r.outside_window.right.tolist())}
    assert found <= {(2 * p, 2 * p + 1) for p in range(30)} and len(found) >= 15
    if method in ("minhash", "simhash") and params.get("verify") != "exact":
        # ... including some the method scores as identical (the case this guards).
        assert (r.outside_window.score >= (1.0 if method == "minhash" else 0.999)).any()
    # ... and none is merged, whatever score the method gives it.
    assert len(set(r.clusters.tolist())) == len(records)
    # The same texts re-sent unchanged are merged nine days apart.
    same = [dict(rec, text=records[i - 1]["text"]) if i % 2 else rec for i, rec in enumerate(records)]
    r = neardup.dedup(same, method=method, id_field="id", date_field="date",
                      time_window_hours=48, engine=engine, pair_types=False, **params,
                      **({"work_dir": tmp_path / "w2"} if engine == "local" else {}))
    assert len(set(r.clusters.tolist())) == 30


def test_time_window_needs_dates_and_valid_hours():
    with pytest.raises(ValueError, match="applies to documents with dates"):
        neardup.dedup(["a b c d", "a b c d"], method="exact", time_window_hours=24)
    with pytest.raises(ValueError, match="time_window_hours"):
        neardup.dedup([{"text": "a", "d": None}], method="exact", date_field="d", time_window_hours=0)
    with pytest.raises(InputError, match="record 1: date field 'd' holds 'soon'"):
        neardup.dedup([{"text": "a", "d": None}, {"text": "b", "d": "soon"}], date_field="d")
    with pytest.raises(InputError, match="must be a mapping"):
        neardup.dedup(["plain text"], date_field="d")


def test_sanderson_takes_time_window_as_its_own_parameter():
    r = neardup.dedup([{"text": "a b c", "d": "1987-03-11"}], method="sanderson", date_field="d",
                      time_window_hours=12)
    assert r.params["method"]["time_window_hours"] == 12
    assert r.params["cluster"]["time_window_hours"] is None


# --- tables (issue #18.5) and date fields (issue #18.4) ------------------------------

TABLE = {
    "body": ["the cat sat on the mat today", "the cat sat on the mat today", "a dog barked"],
    "doc": ["a", "b", "c"],
}


def _table_inputs():
    import pyarrow as pa

    yield "pyarrow.Table", pa.table(TABLE)
    yield "pyarrow.RecordBatch", pa.RecordBatch.from_pydict(TABLE)
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is in the test extra
        pass
    else:
        yield "pandas.DataFrame", pd.DataFrame(TABLE)
    try:
        import polars as pl
    except ImportError:
        pass
    else:
        yield "polars.DataFrame", pl.DataFrame(TABLE)


@pytest.mark.parametrize(("kind", "table"), list(_table_inputs()), ids=lambda v: v if isinstance(v, str) else "")
def test_tables_are_read_by_column_name(kind, table):
    r = neardup.dedup(table, method="exact", text_field="body", id_field="doc")
    assert r.n_docs == 3, kind  # not one document named "text"
    assert r.ids.tolist() == ["a", "b", "c"]
    assert r.clusters.tolist() == [0, 0, 1]
    default_ids = neardup.dedup(table, method="exact", text_field="body")
    assert default_ids.ids.tolist() == ["0", "1", "2"]


def test_pandas_dataframe_errors_are_clear():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(TABLE)
    with pytest.raises(InputError, match="no text column 'text'; its columns are 'body', 'doc'"):
        neardup.dedup(df)
    with pytest.raises(InputError, match="text column 'n' must hold strings; it holds int64"):
        neardup.dedup(pd.DataFrame({"n": [1, 2]}), text_field="n")
    with pytest.raises(InputError, match="text column 'body' is null in row 1"):
        neardup.dedup(pd.DataFrame({"body": ["x", None]}), text_field="body")
    with pytest.raises(InputError, match="duplicate id 'a'"):
        neardup.dedup(pd.DataFrame({"body": ["x", "y"], "doc": ["a", "a"]}), text_field="body",
                      id_field="doc")
    with pytest.raises(InputError, match="a single dict"):
        neardup.dedup({"text": "one record"})


def test_table_dates_by_column_and_missing_ones_counted():
    pd = pytest.importorskip("pandas")
    # Near (not identical: identical texts bypass the window) copies dated days apart.
    df = pd.DataFrame({
        "text": ["the cat sat on the mat today and", "the cat sat on the mat today or",
                 "the cat sat on the mat today but", "a dog barked"],
        "when": pd.to_datetime(["2020-01-01", "2020-01-20", None, "2020-01-01"]),
    })
    r = neardup.dedup(df, method="minhash", date_field="when", time_window_hours=48)
    assert len(r.outside_window) == 1  # days 1 and 20 are not merged
    assert r.summary()["documents_without_date"] == 1
    as_strings = df.assign(when=["2020-01-01", "2020-01-20", None, "2020-01-01"])
    r2 = neardup.dedup(as_strings, method="minhash", date_field="when", time_window_hours=48)
    assert r2.clusters.tolist() == r.clusters.tolist()


def test_date_field_absent_from_every_record_is_an_error():
    records = [{"text": "a b c d", "date": "2020-01-01"}, {"text": "a b c d", "date": "2020-03-01"}]
    with pytest.raises(InputError, match="no record has the date field 'dat'"):
        neardup.dedup(records, method="exact", date_field="dat", time_window_hours=24)
    partly = [{"text": "a b c d", "date": "2020-01-01"}, {"text": "a b c d"}]
    r = neardup.dedup(partly, method="exact", date_field="date", time_window_hours=24)
    assert r.summary()["documents_without_date"] == 1


def test_pairs_unpack_as_documented():
    r = neardup.dedup(["x y z w", "x y z w", "q"], method="exact")
    left, right, score = r.pairs
    assert left.tolist() == [0] and right.tolist() == [1] and score.tolist() == [1.0]
    assert left.dtype == np.int64 and score.dtype == np.float32


@pytest.mark.parametrize("method", ["exact", "minhash", "simhash", "ngram", "spotsigs", "wminhash",
                                    "sanderson"])
@pytest.mark.parametrize("engine", ["memory", "local"])
def test_identical_texts_are_linked_by_every_method(method, engine, tmp_path):
    # Texts with nothing left after normalization (emoji, symbols) and texts too short
    # for the method's shingles are still identical to their copies.
    texts = ["😀😀 🎉", "😀😀 🎉", "!!! ???", "!!!  ???", "—", "Fine.", "FINE", "", "",
             "the quick brown fox jumps over the lazy dog", "😀😀 🎊"]
    extra = {"work_dir": tmp_path / "w"} if engine == "local" else {}
    r = neardup.dedup(texts, method=method, engine=engine, pair_types=False, **extra)
    c = r.clusters.tolist()
    assert c[0] == c[1] and c[2] == c[3] and c[5] == c[6]
    # Blank texts are identical to nothing; different symbols stay apart.
    assert len({c[0], c[2], c[4], c[5], c[7], c[8], c[9], c[10]}) == 8
    # One representative per cluster.
    assert sorted(r.clusters[r.representatives].tolist()) == sorted(set(c))


@pytest.mark.parametrize(("kwargs", "phrase"), [
    ({"engine": "memory", "work_dir": "w"}, "parameter 'work_dir' applies to the out-of-core stages of engine='local' only; with engine='memory' it would be ignored"),
    ({"engine": "memory", "memory_limit": "1GB"}, "parameter 'memory_limit'"),
    ({"engine": "memory", "partitions": 4}, "parameter 'partitions'"),
    ({"engine": "memory", "resume": True, "work_dir": "w"}, "parameter 'work_dir'"),
    ({"resume": True}, "parameter 'resume' applies to a run kept in work_dir only"),
    ({"ray_address": "auto"}, "parameter 'ray_address'"),
    ({"method": "retsim", "index": "hnsw", "work_dir": "w"}, "which engine='local' runs in memory"),
    ({"time_window_hours": 24}, "applies to documents with dates (date_field=...) only"),
    ({"linkage": "single"}, "parameter 'linkage' applies to cluster='hac' only"),
    ({"cluster_algorithm": "hac"}, "pass cluster='hac'"),
])
def test_parameter_that_would_be_ignored_is_an_error(tmp_path, kwargs, phrase):
    """Issue #40: the command line's rule in the Python API, before any work."""
    if "work_dir" in kwargs:
        kwargs = {**kwargs, "work_dir": tmp_path / "w"}
    with pytest.raises(ValueError, match=re.escape(phrase)):
        neardup.dedup(["a b c d", "a b c d"], **{"method": "minhash", **kwargs})
    assert not (tmp_path / "w").exists()
