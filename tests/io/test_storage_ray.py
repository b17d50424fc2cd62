"""The Ray engine reads its shards from and writes its part files to an S3-compatible
server (moto's server mode on loopback, tests/io/s3_server.py), on a two-node local
cluster as in tests/engine/test_ray_engine.py: the clusters of the local engine, every
document exactly once."""

from __future__ import annotations

import gzip
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from neardup.cli import main
from neardup.data import demo_corpus_path

ray = pytest.importorskip("ray", reason="the Ray engine needs pip install 'neardup[ray]'")

pytestmark = pytest.mark.ray


@pytest.fixture
def cluster(ray_cluster):
    """The session's two Ray nodes (tests/conftest.py), whose workers import this checkout."""
    return ray_cluster["address"]


def test_ray_reads_and_writes_s3(s3, cluster, tmp_path):
    with gzip.open(demo_corpus_path(), "rt") as handle:
        records = [{"id": r["id"], "text": r["text"]}
                   for r in (json.loads(line) for line, _ in zip(handle, range(1500)))]
    fs = s3.fs()
    bucket = s3.bucket()
    for i, (a, b) in enumerate([(0, 600), (600, 1100), (1100, len(records))]):
        if i < 2:
            sink = io.BytesIO()
            pq.write_table(pa.Table.from_pylist(records[a:b]), sink, row_group_size=200)
            fs.pipe_file(f"{bucket}/corpus/part-{i}.parquet", sink.getvalue())
        else:
            fs.pipe_file(f"{bucket}/corpus/part-{i}.jsonl",
                         "".join(json.dumps(r) + "\n" for r in records[a:b]).encode())
    # The workers get the endpoint and the credential as storage options, not from the
    # driver's environment.
    storage = [*s3.cli_options(), "--storage-option", "key=neardup-test",
               "--storage-option", "secret=neardup-test-secret"]
    args = ["dedup", f"s3://{bucket}/corpus", "--id-field", "id", "--quiet", *storage]
    local = tmp_path / "local.parquet"
    result = CliRunner().invoke(main, [*args, "--clusters-out", str(local)])
    assert result.exit_code == 0, result.output
    # A previous output directory, replaced as a whole.
    fs.pipe_file(f"{bucket}/out/clusters/part-00099.parquet", b"old")
    result = CliRunner().invoke(main, [
        *args, "--engine", "ray", "--ray-address", cluster, "--ray-shard-rows", "400",
        "--clusters-out", f"s3://{bucket}/out/clusters", "--out", f"s3://{bucket}/out/kept",
        "--pairs-out", f"s3://{bucket}/out/pairs", "--report", f"s3://{bucket}/out/report.json"])
    assert result.exit_code == 0, result.output
    expected = pq.read_table(local).to_pandas().set_index("id")
    parts = sorted(fs.find(f"{bucket}/out/clusters"))
    assert f"{bucket}/out/clusters/part-00099.parquet" not in parts
    got = pa.concat_tables([pq.read_table(io.BytesIO(fs.cat_file(p))) for p in parts]).to_pandas()
    assert sorted(got["id"]) == sorted(r["id"] for r in records)  # every document once
    got = got.set_index("id").loc[expected.index]
    pairs = set(zip(expected["cluster"], got["cluster"]))  # same membership, renumbered
    assert len(pairs) == expected["cluster"].nunique() == got["cluster"].nunique()
    assert (got["representative"] == expected["representative"]).all()
    kept = pa.concat_tables([pq.read_table(io.BytesIO(fs.cat_file(p)))
                             for p in sorted(fs.find(f"{bucket}/out/kept"))])
    assert sorted(kept.column("id").to_pylist()) == sorted(expected.index[expected["representative"]])
    report = json.loads(fs.cat_file(f"{bucket}/out/report.json"))
    assert report["summary"]["clusters"] == int(expected["representative"].sum())
    assert [p for p in fs.find(bucket) if "/." in p] == []  # no temporary keys left
    # A missing output bucket: refused before the cluster does any work.
    result = CliRunner().invoke(main, [*args, "--engine", "ray", "--ray-address", cluster,
                                       "--clusters-out", "s3://neardup-absent/clusters"])
    assert result.exit_code == 1
    assert "--clusters-out: s3://neardup-absent/clusters: the bucket 'neardup-absent' does not " \
           "exist" in result.output
    assert "Traceback" not in result.output
