"""gs:// URLs (issue #38, item 5): read and written on the memory and local engines through
gcsfs, against a GCS emulator on loopback (:func:`tests.io.gcs_server.gcs`). Each run
gives the clusters of the same data read from a local file, every document once."""

from __future__ import annotations

import json

import pytest

from neardup.errors import InputError, OutputError
from neardup.io import OutputSet, ReaderConfig, read_corpus
from tests.io import test_storage as s3_tests
from tests.io.test_storage import assert_each_once, jsonl_bytes, parquet_bytes, read_table, run_cli

# The S3 tests' fixtures (the demo records, their clusters from a local file), shared here.
records = s3_tests.records
local_clusters = s3_tests.local_clusters


@pytest.mark.parametrize("engine", ["memory", "local"])
@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_gcs_round_trip(gcs, records, local_clusters, engine, fmt, tmp_path):
    fs = gcs.fs()
    bucket = gcs.bucket()
    data = jsonl_bytes(records) if fmt == "jsonl" else parquet_bytes(records)
    fs.pipe_file(f"{bucket}/in/corpus.{fmt}", data)
    fs.pipe_file(f"{bucket}/out/kept.jsonl", b'{"previous": "output"}\n')  # replaced whole
    base = f"gs://{bucket}/out"
    run_cli(f"gs://{bucket}/in/corpus.{fmt}", "--id-field", "id", "--engine", engine,
            "--clusters-out", f"{base}/clusters.parquet", "--out", f"{base}/kept.jsonl",
            "--report", f"{base}/report.json", *gcs.cli_options(),
            *(("--work-dir", tmp_path / "work") if engine == "local" else ()))
    clusters = read_table(fs, f"{bucket}/out/clusters.parquet")
    assert_each_once(clusters, records)
    assert clusters.equals(local_clusters[engine])
    kept = [json.loads(line) for line in fs.cat_file(f"{bucket}/out/kept.jsonl").splitlines()]
    representatives = clusters.filter(clusters.column("representative")).column("id").to_pylist()
    assert [r["id"] for r in kept] == representatives
    report = json.loads(fs.cat_file(f"{bucket}/out/report.json"))
    assert report["inputs"] == [f"gs://{bucket}/in/corpus.{fmt}"]
    assert sorted(p.rsplit("/", 1)[1] for p in fs.find(f"{bucket}/out")) == [
        "clusters.parquet", "kept.jsonl", "report.json"]  # no temporary object left
    assert fs.cat_file(f"{bucket}/in/corpus.{fmt}") == data


def test_gcs_missing_bucket_is_a_clear_error_before_any_work(gcs, records, tmp_path):
    fs = gcs.fs()
    bucket = gcs.bucket()
    fs.pipe_file(f"{bucket}/corpus.jsonl", jsonl_bytes(records[:20]))
    result = run_cli("gs://neardup-no-such-bucket/corpus.jsonl", "--clusters-out",
                     tmp_path / "c.parquet", *gcs.cli_options(), ok=False)
    assert result.exit_code == 1
    assert result.output.startswith("Error: gs://neardup-no-such-bucket/corpus.jsonl: the "
                                    "bucket 'neardup-no-such-bucket' does not exist"), result.output
    assert not (tmp_path / "c.parquet").exists()
    local_out = tmp_path / "kept.jsonl"
    result = run_cli(f"gs://{bucket}/corpus.jsonl", "--out", local_out, "--clusters-out",
                     "gs://neardup-no-such-bucket/c.parquet", *gcs.cli_options(), ok=False)
    assert result.exit_code == 1
    assert result.output.startswith("Error: --clusters-out: gs://neardup-no-such-bucket/"
                                    "c.parquet: the bucket 'neardup-no-such-bucket' does not "
                                    "exist"), result.output
    assert list(tmp_path.iterdir()) == []


def test_gcs_missing_bucket_in_python(gcs):
    config = ReaderConfig(storage_options=gcs.options)
    with pytest.raises(InputError, match="bucket 'neardup-absent' does not exist"):
        read_corpus(["gs://neardup-absent/corpus.jsonl"], config)
    outputs = OutputSet(storage_options=gcs.options)
    outputs.add("clusters", "gs://neardup-absent/c.parquet")
    with pytest.raises(OutputError, match=r"^clusters: gs://neardup-absent/c\.parquet: the bucket"):
        outputs.prepare()
