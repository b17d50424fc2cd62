"""The report data and page from a run's output files or an in-memory Result."""

import json
import re

import numpy as np
import pytest

import neardup
from neardup.errors import InputError
from neardup.io import ReaderConfig
from neardup.report import (
    ReportLimits,
    collect_report,
    load_run,
    outputs_from_result,
    render_html,
    write_report,
)

READER = ReaderConfig(id_field="id", date_field="date")


def _embedded(page: str) -> dict:
    block = re.search(r'<script id="neardup-data" type="application/json">(.*?)</script>',
                      page, re.S)
    return json.loads(block.group(1))


def test_report_from_files_covers_every_cluster(run_files):
    path, rows, out = run_files
    outputs = load_run(out["clusters"], out["pairs"], out["summary"])
    data = collect_report(outputs, [path], READER, label_field="cluster")
    assert data["meta"]["clusters_total"] == data["meta"]["clusters_shown"] == 8
    shown = [m["id"] for c in data["clusters"] for m in c["members"]]
    assert sorted(shown) == sorted(r["id"] for r in rows)
    sizes = [c["size"] for c in data["clusters"]]
    assert sizes == sorted(sizes, reverse=True)
    story0 = next(c for c in data["clusters"] if any(m["id"] == "s0" for m in c["members"]))
    rep, *copies = story0["members"]
    assert "text" in rep and all("seg" in m for m in copies)
    for m in copies:  # member text is the alignment's second side; scores and types shown
        source = next(r["text"] for r in rows if r["id"] == m["id"])
        assert "".join(s[2] if s[0] == 3 else "" if s[0] == 1 else s[1] for s in m["seg"]) == source
        assert m["type"] in ("exact", "corrected", "expanded", "near", "template")
        assert 0.5 <= m["score"] <= 1.0
    assert data["summary"]["documents"] == len(rows)
    # The out-of-core engine writes the spanning forest: one edge per joined document.
    forest = len(rows) - 8
    assert data["histogram"]["threshold"] == 0.5 and sum(data["histogram"]["counts"]) == forest
    assert data["sweep"][0] == {"threshold": 0.5, "clusters": 8, "duplicates": len(rows) - 8,
                                "duplicate_clusters": 5, "largest": 4, "edges": forest}
    labels = data["labels"]
    assert [m["cluster"] for m in labels["false_merge_list"]] == [
        next(c["cluster"] for c in data["clusters"] if c["members"][0]["id"] in ("acme", "bolt"))]
    assert [m["label"] for m in labels["miss_list"]] == ["story1"]


def test_limits_bound_what_is_embedded(run_files):
    path, _, out = run_files
    outputs = load_run(out["clusters"], out["pairs"])
    limits = ReportLimits(max_clusters=2, max_members=2, max_chars=30)
    data = collect_report(outputs, [path], READER, limits=limits)
    assert data["meta"]["clusters_shown"] == 2 and data["meta"]["clusters_total"] == 8
    assert [c["size"] for c in data["clusters"]] == [4, 3]
    assert all(len(c["members"]) == 2 for c in data["clusters"])
    assert all(len(c["members"][0]["text"]) <= 30 for c in data["clusters"])


def test_time_window_pairs_are_listed_apart(labelled_corpus, tmp_path):
    path, rows = labelled_corpus
    result = neardup.dedup(rows, method="minhash", id_field="id", date_field="date",
                           time_window_hours=48)
    data = collect_report(outputs_from_result(result), [path], READER)
    assert data["outside_total"] == 1
    [pair] = data["outside_window"]
    assert {pair["a"], pair["b"]} == {"acme", "bolt"} and pair["type"] == "template"
    assert pair["date_a"].startswith("1987-03-02") and "Acme Corp" in pair["text_a"]
    assert sum(data["outside_histogram"]["counts"]) == 1


def test_untyped_pairs_are_typed_from_the_texts_read(labelled_corpus):
    path, rows = labelled_corpus
    result = neardup.dedup(rows, method="minhash", id_field="id", pair_types=False)
    data = collect_report(outputs_from_result(result), [path], READER)
    types = {m.get("type") for c in data["clusters"] for m in c["members"][1:]}
    assert types and types <= {"exact", "corrected", "expanded", "near", "template"}


def test_template_clusters_are_listed(labelled_corpus):
    path, rows = labelled_corpus
    result = neardup.dedup(rows, method="minhash", id_field="id", max_cluster_size=3)
    data = collect_report(outputs_from_result(result), [path], READER)
    assert [t["size"] for t in data["templates"]] == [4]
    assert next(c for c in data["clusters"] if c["size"] == 4)["template"] is True


def test_input_that_is_not_the_runs_input_is_refused(run_files, tmp_path):
    path, rows, out = run_files
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps({**r, "id": r["id"] + "x"}) + "\n" for r in rows))
    outputs = load_run(out["clusters"], out["pairs"])
    with pytest.raises(InputError, match=r"has id 's0x', but the run's document 0 is 's0'"):
        collect_report(outputs, [other], READER)
    short = tmp_path / "short.jsonl"
    short.write_text("".join(json.dumps(r) + "\n" for r in rows[:3]))
    with pytest.raises(InputError, match="the input has 3 documents but the run has 18"):
        collect_report(outputs, [short], READER)


def test_pairs_of_another_run_are_refused(run_files, tmp_path):
    _, _, out = run_files
    bad = tmp_path / "p.jsonl"
    bad.write_text(json.dumps({"id_a": "s0", "id_b": "ghost", "score": 0.9}) + "\n")
    with pytest.raises(InputError, match="names id 'ghost', which is not in the clusters table"):
        load_run(out["clusters"], bad)
    with pytest.raises(InputError, match="has no column 'id' .*pass the file neardup dedup wrote with --clusters-out"):
        load_run(bad)


def test_jsonl_and_csv_tables_read_like_parquet(run_files, tmp_path):
    import pyarrow.parquet as pq

    from neardup.io import write_table

    _, _, out = run_files
    reference = load_run(out["clusters"], out["pairs"])
    for suffix in (".jsonl.gz", ".csv"):
        write_table(tmp_path / f"c{suffix}", pq.read_table(out["clusters"]))
        write_table(tmp_path / f"p{suffix}", pq.read_table(out["pairs"]))
        got = load_run(tmp_path / f"c{suffix}", tmp_path / f"p{suffix}")
        assert got.ids.tolist() == reference.ids.tolist()
        assert np.array_equal(got.clusters, reference.clusters)
        assert np.array_equal(got.pair_left, reference.pair_left)
        assert got.pair_type.tolist() == reference.pair_type.tolist()


def test_page_is_self_contained_and_escapes_documents(run_files, tmp_path):
    path, _, out = run_files
    target = tmp_path / "report.html"
    size = write_report(target, load_run(out["clusters"], out["pairs"], out["summary"]),
                        [path], READER)
    page = target.read_text(encoding="utf-8")
    assert size == len(page.encode("utf-8"))
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)  # nothing fetched
    assert "<script>alert(1)" not in page and "odd</script>" not in page
    data = _embedded(page)
    ids = [m["id"] for c in data["clusters"] for m in c["members"]]
    assert "odd</script><b>" in ids
    assert render_html({"x": "</script>"}).count("</script>") == render_html({}).count("</script>")
