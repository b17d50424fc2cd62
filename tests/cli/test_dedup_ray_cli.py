"""``neardup dedup --engine ray`` writes its report through the same builder, OutputSet
and HTML page as ``--engine local`` (issue #36): same clusters, same report keys, and an
HTML report. Two Ray nodes on this machine; a few hundred documents."""

from __future__ import annotations

import gzip
import json

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.data import demo_corpus_path

ray = pytest.importorskip("ray", reason="the Ray engine needs pip install 'neardup[ray]'")


pytestmark = pytest.mark.ray


@pytest.fixture
def address(ray_cluster):
    """The session's Ray cluster (tests/conftest.py): its address."""
    return ray_cluster["address"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    with gzip.open(demo_corpus_path(), "rt") as handle:
        records = [json.loads(line) for _, line in zip(range(400), handle)]
    path = tmp_path_factory.mktemp("corpus") / "corpus.jsonl"
    path.write_text("".join(json.dumps({"id": r["id"], "text": r["text"]}) + "\n"
                            for r in records))
    return path


def _partition(table) -> set[frozenset[str]]:
    """The clusters as sets of ids (the engines number clusters differently)."""
    groups: dict[int, set[str]] = {}
    for doc, label in zip(table.column("id").to_pylist(), table.column("cluster").to_pylist()):
        groups.setdefault(label, set()).add(doc)
    return {frozenset(g) for g in groups.values()}


def test_ray_cli_writes_the_local_engines_clusters_report_and_html(address, corpus, tmp_path,
                                                                   monkeypatch):
    # --method auto (the default) chooses on the driver as locally: minhash, as the 400
    # documents exceed a limit lowered to 100 (rerank's Ray runs: test_ray_engine.py).
    monkeypatch.setattr("neardup.method_choice.RERANK_MAX_DOCS", 100)
    base = ["dedup", str(corpus), "--id-field", "id", "--quiet"]
    local = CliRunner().invoke(main, [*base, "--clusters-out", str(tmp_path / "local.parquet"),
                                      "--report", str(tmp_path / "local.json"),
                                      "--html", str(tmp_path / "local.html")])
    assert local.exit_code == 0, local.output
    on_ray = CliRunner().invoke(main, [*base, "--engine", "ray", "--ray-address", address,
                                       "--clusters-out", str(tmp_path / "clusters"),
                                       "--report", str(tmp_path / "ray.json"),
                                       "--html", str(tmp_path / "ray.html")])
    assert on_ray.exit_code == 0, on_ray.output
    local_clusters = _partition(pq.read_table(tmp_path / "local.parquet"))
    assert _partition(pq.read_table(tmp_path / "clusters")) == local_clusters
    assert any(len(c) > 1 for c in local_clusters)  # the corpus has duplicates to find
    local_report = json.loads((tmp_path / "local.json").read_text())
    ray_report = json.loads((tmp_path / "ray.json").read_text())
    assert set(ray_report) == set(local_report)
    assert set(ray_report["summary"]) == set(local_report["summary"])
    for key in ("documents", "clusters", "duplicates_removed", "largest_cluster"):
        assert ray_report["summary"][key] == local_report["summary"][key], key
    assert ray_report["params"]["engine"] == "ray"
    # --profile auto (the default) reads the same first documents on both: the driver's
    # look on Ray, the run's own read locally. The demo corpus looks noisy.
    assert ray_report["params"]["profile"] == local_report["params"]["profile"] == "noisy"
    assert ray_report["params"]["profile_auto"] == local_report["params"]["profile_auto"]
    assert ray_report["method"] == local_report["method"] == "minhash"
    assert ray_report["params"]["method_auto"] == local_report["params"]["method_auto"]
    assert not ray_report["params"]["method_auto"]["within_limits"]
    assert set(ray_report["params"]) == set(local_report["params"])
    page = (tmp_path / "ray.html").read_text(encoding="utf-8")
    assert page.lstrip().lower().startswith("<!doctype html") and "minhash" in page
    # Written as a set: no temporary file left beside the outputs.
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["clusters", "local.html", "local.json", "local.parquet", "ray.html", "ray.json"])


def test_ray_out_keeps_the_parquet_column_types_as_locally(address, corpus, tmp_path):
    # Parquet shards into --out: each worker copies its shard's kept rows as Arrow, so the
    # parts hold the local --out's rows with the input's types (32-bit integers, a
    # dictionary, a millisecond timestamp; tests/cli/test_dedup_parquet_out.py locally).
    import datetime as dt

    import pyarrow as pa

    records = [json.loads(line) for line in corpus.read_text().splitlines()]
    start = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
    table = pa.table({
        "id": [str(r["id"]) for r in records], "text": [r["text"] for r in records],
        "n": pa.array(range(len(records)), pa.int32()),
        "source": pa.array(["wire" if i % 3 else "paper" for i in range(len(records))]).dictionary_encode(),
        "when": pa.array([start + dt.timedelta(hours=i) for i in range(len(records))],
                         pa.timestamp("ms", tz="UTC")),
    })
    inputs = []
    for part, rows in enumerate((slice(0, 250), slice(250, None))):
        path = tmp_path / f"part-{part}.parquet"
        pq.write_table(table[rows], path, row_group_size=60)  # several shards a file
        inputs.append(str(path))
    base = ["dedup", *inputs, "--method", "minhash", "--id-field", "id", "--quiet"]
    local = CliRunner().invoke(main, [*base, "--out", str(tmp_path / "local.parquet")])
    assert local.exit_code == 0, local.output
    on_ray = CliRunner().invoke(main, [*base, "--engine", "ray", "--ray-address", address,
                                       "--ray-shard-rows", "60", "--out", str(tmp_path / "kept")])
    assert on_ray.exit_code == 0, on_ray.output
    expected = pq.read_table(tmp_path / "local.parquet")
    assert expected.schema.equals(table.schema) and 0 < expected.num_rows < table.num_rows
    written = pq.read_table(tmp_path / "kept")
    assert written.schema.equals(table.schema)
    assert written.sort_by("id").equals(expected.sort_by("id"))


def test_report_of_a_ray_run_refuses_a_shard_rewritten_after_it(address, corpus, tmp_path):
    # Each read task records its shard's texts (a file's row range); `neardup report` reads
    # the corpus whole when the files changed and holds each range to the run's.
    import pyarrow as pa

    records = [json.loads(line) for line in corpus.read_text().splitlines()]
    table = pa.table({"id": [str(r["id"]) for r in records], "text": [r["text"] for r in records]})
    inputs = []
    for part, rows in enumerate((slice(0, 250), slice(250, None))):
        path = tmp_path / f"part-{part}.parquet"
        pq.write_table(table[rows], path, row_group_size=60)
        inputs.append(path)
    run = CliRunner().invoke(main, [
        "dedup", *map(str, inputs), "--method", "minhash", "--id-field", "id", "--quiet",
        "--engine", "ray", "--ray-address", address, "--ray-shard-rows", "60",
        "--clusters-out", str(tmp_path / "clusters"), "--report", str(tmp_path / "run.json")])
    assert run.exit_code == 0, run.output
    recorded = json.loads((tmp_path / "run.json").read_text())["input_texts"]
    assert [(e["source"], e["first"], e["documents"]) for e in recorded] == [
        (str(inputs[0]), 0, 60), (str(inputs[0]), 60, 60), (str(inputs[0]), 120, 60),
        (str(inputs[0]), 180, 60), (str(inputs[0]), 240, 10),
        (str(inputs[1]), 0, 60), (str(inputs[1]), 60, 60), (str(inputs[1]), 120, 30)]

    def report(name):
        return CliRunner().invoke(main, ["report", str(tmp_path / "clusters"),
                                         str(tmp_path / "run.json"), "--id-field", "id",
                                         "--out", str(tmp_path / name)])

    same = report("same.html")  # the run's directories read as its tables
    assert same.exit_code == 0, same.output
    assert "clusters shown" in same.output
    texts = table.column("text").to_pylist()
    texts[250 + 70] = texts[250 + 70] + " An added sentence."  # the second file's second shard
    pq.write_table(table.set_column(1, "text", pa.array(texts))[250:], inputs[1],
                   row_group_size=60)
    changed = report("changed.html")
    assert changed.exit_code == 1 and not (tmp_path / "changed.html").exists()
    assert f"{inputs[1]}: this is not the corpus the run read (its texts in rows 60 to 119 " \
           "differ" in changed.output
