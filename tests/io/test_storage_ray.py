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


def _demo_records(n: int = 1500) -> list[dict]:
    with gzip.open(demo_corpus_path(), "rt") as handle:
        return [{"id": r["id"], "text": r["text"]}
                for r in (json.loads(line) for line, _ in zip(handle, range(n)))]


def test_ray_reads_and_writes_s3(s3, cluster, tmp_path):
    # The workers get the endpoint and the credential as storage options, not from the
    # driver's environment.
    storage = [*s3.cli_options(), "--storage-option", "key=neardup-test",
               "--storage-option", "secret=neardup-test-secret"]
    assert_ray_round_trip(s3, "s3", storage, cluster, tmp_path)


def test_ray_reads_and_writes_gcs(gcs, cluster, tmp_path):
    """gs:// through gcsfs against the emulator: the workers reach it by the storage
    options, and get gcsfs's switch (GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT) from the job's
    environment."""
    assert_ray_round_trip(gcs, "gs", gcs.cli_options(), cluster, tmp_path)


def assert_ray_round_trip(store, scheme: str, storage: list[str], cluster: str, tmp_path) -> None:
    """Parquet and JSONL shards on ``store`` read by the Ray workers, every output written
    back to it: the local engine's clusters, every document once, an old output
    replaced, no temporary key left; a missing output bucket refused before work."""
    records = _demo_records()
    fs = store.fs()
    bucket = store.bucket()
    for i, (a, b) in enumerate([(0, 600), (600, 1100), (1100, len(records))]):
        if i < 2:
            sink = io.BytesIO()
            pq.write_table(pa.Table.from_pylist(records[a:b]), sink, row_group_size=200)
            fs.pipe_file(f"{bucket}/corpus/part-{i}.parquet", sink.getvalue())
        else:
            fs.pipe_file(f"{bucket}/corpus/part-{i}.jsonl",
                         "".join(json.dumps(r) + "\n" for r in records[a:b]).encode())
    args = ["dedup", f"{scheme}://{bucket}/corpus", "--id-field", "id", "--quiet", *storage]
    local = tmp_path / "local.parquet"
    result = CliRunner().invoke(main, [*args, "--clusters-out", str(local)])
    assert result.exit_code == 0, result.output
    # A previous output directory, replaced as a whole.
    fs.pipe_file(f"{bucket}/out/clusters/part-00099.parquet", b"old")
    result = CliRunner().invoke(main, [
        *args, "--engine", "ray", "--ray-address", cluster, "--ray-shard-rows", "400",
        "--clusters-out", f"{scheme}://{bucket}/out/clusters", "--out", f"{scheme}://{bucket}/out/kept",
        "--pairs-out", f"{scheme}://{bucket}/out/pairs", "--report", f"{scheme}://{bucket}/out/report.json"])
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
                                       "--clusters-out", f"{scheme}://neardup-absent/clusters"])
    assert result.exit_code == 1
    assert f"--clusters-out: {scheme}://neardup-absent/clusters: the bucket 'neardup-absent' does not " \
           "exist" in result.output
    assert "Traceback" not in result.output


def test_ray_refuses_a_wrong_credential_before_any_work(s3, cluster, tmp_path):
    """The server checks keys (moto's IAM enforcement): a wrong secret given to a Ray run is
    a clear CLI error naming the input URL, raised by the driver's checks before any task
    runs, and no output exists afterwards, on the store or on disk."""
    from tests.io.test_storage import jsonl_bytes

    fs = s3.fs()
    bucket = s3.bucket()
    fs.pipe_file(f"{bucket}/corpus.jsonl", jsonl_bytes(_demo_records(40)))
    wrong = ["--storage-option", "key=AKIANOSUCHKEY0000000", "--storage-option", "secret=whatever"]
    local_out = tmp_path / "report.json"
    s3.enforce_credentials(True)
    try:
        # The input refused; then an output on the store, checked (and refused) first.
        for outputs, named in ((["--report", str(local_out)], f"s3://{bucket}/corpus.jsonl"),
                               (["--clusters-out", f"s3://{bucket}/out/clusters", "--report",
                                 str(local_out)], f"--clusters-out: s3://{bucket}/out/clusters")):
            result = CliRunner().invoke(main, [
                "dedup", f"s3://{bucket}/corpus.jsonl", "--id-field", "id", "--quiet",
                "--engine", "ray", "--ray-address", cluster, *s3.cli_options(), *wrong, *outputs])
            assert result.exit_code == 1, result.output
            assert result.output.startswith(f"Error: {named}: access denied"), result.output
            assert "--storage-option" in result.output and "Traceback" not in result.output
            assert not local_out.exists() and list(tmp_path.iterdir()) == []
    finally:
        s3.enforce_credentials(False)
    assert fs.find(bucket) == [f"{bucket}/corpus.jsonl"]  # nothing written, not even a temporary key
