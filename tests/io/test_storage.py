"""Where the data lives (issue #38, item 5): object stores, memory://, Parquet shard
directories and Hugging Face datasets, read and written on the memory and local engines.

Object storage is a real S3-compatible server (moto's server mode on loopback, started by
the :func:`tests.io.s3_server.s3` fixture), reached over HTTP by s3fs. Every run checks
that each input document appears exactly once in the clusters output, and the runs over
a URL give the clusters of the same data read from a local file.
"""

from __future__ import annotations

import gzip
import io
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import neardup
from neardup.cli import main
from neardup.data import demo_corpus_path
from neardup.errors import InputError, OutputError
from neardup.io import OutputSet, ReaderConfig, read_corpus

_N = 400  # documents of the demo corpus used: enough for duplicate clusters, fast


@pytest.fixture(scope="module")
def records():
    with gzip.open(demo_corpus_path(), "rt") as handle:
        rows = [json.loads(line) for line in handle][:_N]
    return [{"id": r["id"], "text": r["text"]} for r in rows]


def jsonl_bytes(records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def parquet_bytes(records) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(records), sink)
    return sink.getvalue()


def run_cli(*args, ok: bool = True):
    result = CliRunner().invoke(main, ["dedup", *map(str, args), "-q"])
    assert "Traceback" not in result.output, result.output
    if ok:
        assert result.exit_code == 0, result.output
    return result


def read_table(fs, path: str) -> pa.Table:
    with fs.open(path, "rb") as handle:
        return pq.read_table(handle)


def assert_each_once(clusters: pa.Table, records) -> None:
    ids = clusters.column("id").to_pylist()
    assert sorted(ids) == sorted(r["id"] for r in records)
    assert len(set(ids)) == len(ids)


@pytest.fixture(scope="module")
def local_clusters(records, tmp_path_factory):
    """The clusters of the same records read from a local JSON Lines file, per engine."""
    directory = tmp_path_factory.mktemp("local")
    (directory / "corpus.jsonl").write_bytes(jsonl_bytes(records))
    found = {}
    for engine in ("memory", "local"):
        out = directory / f"clusters-{engine}.parquet"
        run_cli(directory / "corpus.jsonl", "--id-field", "id", "--engine", engine,
                "--clusters-out", out)
        found[engine] = pq.read_table(out)
        assert found[engine].column("cluster_size").to_numpy().max() > 1  # duplicates found
    return found


def hidden_keys(fs, bucket: str) -> list[str]:
    """Temporary or backup keys left in the bucket."""
    return [p for p in fs.find(bucket) if any(part.startswith(".") for part in p.split("/"))]


def assert_round_trip(store, scheme: str, records, local_clusters, engine: str, fmt: str,
                      tmp_path) -> None:
    """``records`` read from ``scheme://`` on ``store`` (a test server: ``fs()``,
    ``bucket()``, ``cli_options()``) and every output written there: the clusters of the
    local file, a previous output replaced, no temporary key left, the input untouched."""
    fs = store.fs()
    bucket = store.bucket()
    data = jsonl_bytes(records) if fmt == "jsonl" else parquet_bytes(records)
    fs.pipe_file(f"{bucket}/in/corpus.{fmt}", data)
    # A previous output, replaced as a whole by the run.
    fs.pipe_file(f"{bucket}/out/kept.jsonl", b'{"previous": "output"}\n')
    base = f"{scheme}://{bucket}/out"
    run_cli(f"{scheme}://{bucket}/in/corpus.{fmt}", "--id-field", "id", "--engine", engine,
            "--clusters-out", f"{base}/clusters.parquet", "--out", f"{base}/kept.jsonl",
            "--pairs-out", f"{base}/pairs.csv", "--report", f"{base}/report.json",
            *store.cli_options(), "--work-dir" if engine == "local" else "--seed",
            tmp_path / "work" if engine == "local" else "0")
    clusters = read_table(fs, f"{bucket}/out/clusters.parquet")
    assert_each_once(clusters, records)
    assert clusters.equals(local_clusters[engine])
    kept = [json.loads(line) for line in fs.cat_file(f"{bucket}/out/kept.jsonl").splitlines()]
    representatives = clusters.filter(clusters.column("representative")).column("id").to_pylist()
    assert [r["id"] for r in kept] == representatives
    report = json.loads(fs.cat_file(f"{bucket}/out/report.json"))
    assert report["inputs"] == [f"{scheme}://{bucket}/in/corpus.{fmt}"]
    assert fs.cat_file(f"{bucket}/out/pairs.csv").startswith(b"id_a,id_b,score")
    assert hidden_keys(fs, bucket) == []
    assert fs.cat_file(f"{bucket}/in/corpus.{fmt}") == data  # the input untouched


@pytest.mark.parametrize(("fmt", "engine"), [
    ("jsonl", "memory"),
    pytest.param("parquet", "memory", marks=pytest.mark.slow),
    pytest.param("jsonl", "local", marks=pytest.mark.slow),
    pytest.param("parquet", "local", marks=pytest.mark.slow),
])
def test_s3_round_trip(s3, records, local_clusters, engine, fmt, tmp_path):
    assert_round_trip(s3, "s3", records, local_clusters, engine, fmt, tmp_path)


def test_s3_gzip_csv_and_tsv_inputs_read_like_local_files(s3, records, tmp_path):
    fs = s3.fs()
    bucket = s3.bucket()
    # One line per text, so that TSV (no quoting) holds them too.
    part = [{"id": r["id"], "text": " ".join(r["text"].split())} for r in records[:30]]
    fs.pipe_file(f"{bucket}/a.jsonl.gz", gzip.compress(jsonl_bytes(part[:10])))
    fs.pipe_file(f"{bucket}/b.csv", pa_csv(part[10:20], ","))
    fs.pipe_file(f"{bucket}/c.tsv", pa_csv(part[20:], "\t"))
    urls = [f"s3://{bucket}/{name}" for name in ("a.jsonl.gz", "b.csv", "c.tsv")]
    config = ReaderConfig(id_field="id", storage_options=s3.options)
    batches = list(read_corpus(urls, config))
    assert [b.source for b in batches] == urls
    assert [i for b in batches for i in b.ids] == [r["id"] for r in part]
    assert [t for b in batches for t in b.texts] == [r["text"] for r in part]


def pa_csv(records, delimiter: str) -> bytes:
    import csv

    sink = io.StringIO()
    if delimiter == "\t":
        rows = ["id\ttext"] + [f"{r['id']}\t{r['text']}" for r in records]
        return ("\n".join(rows) + "\n").encode()
    writer = csv.writer(sink)
    writer.writerow(["id", "text"])
    writer.writerows([r["id"], r["text"]] for r in records)
    return sink.getvalue().encode()


def test_parquet_shard_directory_on_s3_and_on_disk(s3, records, local_clusters, tmp_path):
    fs = s3.fs()
    bucket = s3.bucket()
    cuts = [0, 150, 260, len(records)]
    local = tmp_path / "shards"
    (local / "sub").mkdir(parents=True)
    for i, (a, b) in enumerate(zip(cuts, cuts[1:])):
        name = f"part-{i}.parquet" if i < 2 else f"sub/part-{i}.parquet"  # sorted by path
        fs.pipe_file(f"{bucket}/shards/{name}", parquet_bytes(records[a:b]))
        (local / name).write_bytes(parquet_bytes(records[a:b]))
    fs.pipe_file(f"{bucket}/shards/_SUCCESS", b"")  # not a shard: no known extension
    (local / ".part-9.parquet.crc").write_bytes(b"hidden")  # hidden: left out
    for source in (f"s3://{bucket}/shards", local):
        out = tmp_path / "clusters.parquet"
        run_cli(source, "--id-field", "id", "--engine", "memory", "--clusters-out", out,
                *(s3.cli_options() if isinstance(source, str) else ()))
        clusters = pq.read_table(out)
        assert_each_once(clusters, records)
        assert clusters.equals(local_clusters["memory"])


@pytest.mark.slow
def test_saved_hugging_face_dataset_directory(s3, records, local_clusters, tmp_path):
    datasets = pytest.importorskip("datasets")
    dataset = datasets.Dataset.from_list(records)
    local = tmp_path / "saved"
    dataset.save_to_disk(str(local), num_shards=2)
    bucket = s3.bucket()
    dataset.save_to_disk(f"s3://{bucket}/saved", num_shards=3, storage_options=s3.options)
    for source in (local, f"s3://{bucket}/saved"):
        out = tmp_path / "clusters.parquet"
        run_cli(source, "--id-field", "id", "--engine", "local", "--clusters-out", out,
                *(s3.cli_options() if isinstance(source, str) else ()))
        clusters = pq.read_table(out)
        assert_each_once(clusters, records)
        assert clusters.equals(local_clusters["local"])
    # A DatasetDict's directory names its splits.
    datasets.DatasetDict({"train": dataset}).save_to_disk(str(tmp_path / "dict"))
    result = run_cli(tmp_path / "dict", "--clusters-out", tmp_path / "c.parquet", ok=False)
    assert result.exit_code == 1
    assert "a DatasetDict saved with save_to_disk (splits 'train')" in result.output
    assert f"{tmp_path / 'dict'}/train" in result.output


def test_memory_url_round_trip(records, local_clusters):
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe_file("/neardup-test/in/corpus.jsonl", jsonl_bytes(records))
    run_cli("memory://neardup-test/in/corpus.jsonl", "--id-field", "id", "--engine", "memory",
            "--clusters-out", "memory://neardup-test/out/clusters.parquet",
            "--out", "memory://neardup-test/out/kept.parquet")
    clusters = read_table(fs, "/neardup-test/out/clusters.parquet")
    assert_each_once(clusters, records)
    assert clusters.equals(local_clusters["memory"])
    kept = read_table(fs, "/neardup-test/out/kept.parquet")
    assert kept.num_rows == int(np.sum(clusters.column("representative").to_numpy()))
    assert [p for p in fs.find("/neardup-test") if "/." in p] == []
    fs.rm("/neardup-test", recursive=True)


def assert_missing_buckets_refused(store, scheme: str, records, tmp_path) -> str:
    """A missing input bucket, then a missing output bucket, on ``store`` (a test server:
    ``fs()``, ``bucket()``, ``cli_options()``): clear errors before any work. Returns the
    existing bucket used, holding corpus.jsonl."""
    fs = store.fs()
    bucket = store.bucket()
    fs.pipe_file(f"{bucket}/corpus.jsonl", jsonl_bytes(records[:20]))
    result = run_cli(f"{scheme}://neardup-no-such-bucket/corpus.jsonl", "--clusters-out",
                     tmp_path / "c.parquet", *store.cli_options(), ok=False)
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: {scheme}://neardup-no-such-bucket/corpus.jsonl: the "
                                    "bucket 'neardup-no-such-bucket' does not exist"), result.output
    assert not (tmp_path / "c.parquet").exists()
    # A missing output bucket: named with its flag, and nothing is read or written.
    local_out = tmp_path / "kept.jsonl"
    result = run_cli(f"{scheme}://{bucket}/corpus.jsonl", "--out", local_out, "--clusters-out",
                     f"{scheme}://neardup-no-such-bucket/c.parquet", *store.cli_options(), ok=False)
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: --clusters-out: {scheme}://neardup-no-such-bucket/"
                                    "c.parquet: the bucket 'neardup-no-such-bucket' does not "
                                    "exist"), result.output
    assert not local_out.exists() and list(tmp_path.iterdir()) == []
    return bucket


def assert_missing_bucket_errors_in_python(scheme: str, options: dict) -> None:
    config = ReaderConfig(storage_options=options)
    with pytest.raises(InputError, match="bucket 'neardup-absent' does not exist"):
        read_corpus([f"{scheme}://neardup-absent/corpus.jsonl"], config)  # at call time
    outputs = OutputSet(storage_options=options)
    outputs.add("clusters", f"{scheme}://neardup-absent/c.parquet")
    with pytest.raises(OutputError, match=rf"^clusters: {scheme}://neardup-absent/c\.parquet: the bucket"):
        outputs.prepare()


def test_missing_bucket_is_a_clear_error_before_any_work(s3, records, tmp_path):
    bucket = assert_missing_buckets_refused(s3, "s3", records, tmp_path)
    # A missing key in an existing bucket.
    result = run_cli(f"s3://{bucket}/nothing.jsonl", *s3.cli_options(), ok=False)
    assert "Error: s3://" in result.output and "no such file or directory" in result.output


def test_missing_bucket_in_python_is_an_input_error(s3):
    assert_missing_bucket_errors_in_python("s3", s3.options)


def test_wrong_credentials_are_refused_before_any_work(s3, records, tmp_path):
    """The server checks access keys and signatures (moto's IAM enforcement, switched on
    through its API for this test): a wrong secret and an unknown key are refused with a
    message naming the URL; the right credential of an IAM user works."""
    import boto3

    bucket = s3.bucket()
    s3.fs().pipe_file(f"{bucket}/corpus.jsonl", jsonl_bytes(records[:40]))
    iam = boto3.client("iam", endpoint_url=s3.endpoint, region_name="us-east-1")
    user = f"reader-{bucket}"
    iam.create_user(UserName=user)
    iam.put_user_policy(UserName=user, PolicyName="s3", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
    key = iam.create_access_key(UserName=user)["AccessKey"]
    right = ["--storage-option", f"key={key['AccessKeyId']}",
             "--storage-option", f"secret={key['SecretAccessKey']}"]
    s3.enforce_credentials(True)
    try:
        for wrong in (["--storage-option", f"key={key['AccessKeyId']}",
                       "--storage-option", "secret=not-the-secret"],
                      ["--storage-option", "key=AKIANOSUCHKEY0000000",
                       "--storage-option", "secret=whatever"]):
            result = run_cli(f"s3://{bucket}/corpus.jsonl", "--clusters-out",
                             tmp_path / "c.parquet", *s3.cli_options(), *wrong, ok=False)
            assert result.exit_code == 1
            assert result.output.startswith(f"Error: s3://{bucket}/corpus.jsonl: access denied"), \
                result.output
            assert "--storage-option" in result.output and "AWS_ACCESS_KEY_ID" in result.output
            assert not (tmp_path / "c.parquet").exists()
        # An output on the store with a wrong credential: named by its flag, before work.
        result = run_cli(f"s3://{bucket}/corpus.jsonl", "--clusters-out",
                         f"s3://{bucket}/c.parquet", *s3.cli_options(),
                         "--storage-option", "key=AKIANOSUCHKEY0000000",
                         "--storage-option", "secret=whatever", ok=False)
        assert result.output.startswith(f"Error: --clusters-out: s3://{bucket}/c.parquet: "
                                        "access denied"), result.output
        run_cli(f"s3://{bucket}/corpus.jsonl", "--id-field", "id", "--clusters-out",
                f"s3://{bucket}/c.parquet", *s3.cli_options(), *right)
    finally:
        s3.enforce_credentials(False)
    clusters = read_table(s3.fs(), f"{bucket}/c.parquet")
    assert_each_once(clusters, records[:40])


def test_failed_run_leaves_no_final_key_and_the_previous_object(s3):
    fs = s3.fs()
    bucket = s3.bucket()
    fs.pipe_file(f"{bucket}/out/clusters.jsonl", b'{"previous": 1}\n')
    outputs = OutputSet(storage_options=s3.options)
    outputs.add("--clusters-out", f"s3://{bucket}/out/clusters.jsonl")
    outputs.add("--pairs-out", f"s3://{bucket}/out/pairs.parquet")
    with pytest.raises(RuntimeError), outputs:
        assert len(hidden_keys(fs, bucket)) == 2  # the temporary keys, proving the bucket writable
        outputs.write_records("--clusters-out", [{"new": 1}])
        raise RuntimeError("the run fails before its commit")
    assert sorted(fs.find(bucket)) == [f"{bucket}/out/clusters.jsonl"]
    assert fs.cat_file(f"{bucket}/out/clusters.jsonl") == b'{"previous": 1}\n'
    # An output on an input, and two outputs on one key, are refused before any work.
    outputs = OutputSet([f"s3://{bucket}/out/clusters.jsonl"], storage_options=s3.options)
    outputs.add("--out", f"s3://{bucket}//out/clusters.jsonl")
    with pytest.raises(OutputError, match="is the input"):
        outputs.prepare()
    outputs = OutputSet(storage_options=s3.options)
    outputs.add("--out", f"s3://{bucket}/out/a.jsonl")
    outputs.add("--clusters-out", f"s3://{bucket}/out/a.jsonl")
    with pytest.raises(OutputError, match="name the same object"):
        outputs.prepare()
    assert hidden_keys(fs, bucket) == []


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["memory", "local"])
def test_hugging_face_datasets_in_the_api_give_the_list_clusters(records, engine):
    datasets = pytest.importorskip("datasets")
    records = records[:160]
    expected = neardup.dedup(records, id_field="id", engine=engine, batch_size=64)
    assert expected.clusters_table().column("cluster_size").to_numpy().max() > 1
    dataset = datasets.Dataset.from_list(records)
    streamed = dataset.to_iterable_dataset(num_shards=3)
    for data in (dataset, streamed):
        result = neardup.dedup(data, id_field="id", engine=engine, batch_size=64)
        assert np.array_equal(result.clusters, expected.clusters)
        assert np.array_equal(result.representative, expected.representative)
        assert result.clusters_table().equals(expected.clusters_table())
        assert sorted(result.clusters_table().column("id").to_pylist()) == sorted(
            r["id"] for r in records)
    # After select/shuffle the dataset's own order is read (an indices mapping).
    order = np.random.default_rng(0).permutation(len(records))
    shuffled = neardup.dedup(dataset.select(order), id_field="id", engine=engine, batch_size=64)
    again = neardup.dedup([records[i] for i in order], id_field="id", engine=engine, batch_size=64)
    assert np.array_equal(shuffled.clusters, again.clusters)


@pytest.mark.slow
def test_streamed_dataset_ids_are_checked_across_batches(records):
    datasets = pytest.importorskip("datasets")
    repeated = datasets.Dataset.from_list(records[:50] + [records[0]]).to_iterable_dataset()
    with pytest.raises(InputError, match="duplicate id"):
        neardup.dedup(repeated, id_field="id", batch_size=16)
    with pytest.raises(InputError, match=r"DatasetDict \(splits 'train'\); pass one split"):
        neardup.dedup(datasets.DatasetDict({"train": datasets.Dataset.from_list(records[:3])}))


def test_index_add_reads_an_s3_input(s3, records, tmp_path):
    fs = s3.fs()
    bucket = s3.bucket()
    fs.pipe_file(f"{bucket}/monday.jsonl", jsonl_bytes(records[:100]))
    runner = CliRunner()
    index = tmp_path / "news.idx"
    result = runner.invoke(main, ["index", "create", str(index), "--method", "minhash"])
    assert result.exit_code == 0, result.output
    out = tmp_path / "monday.csv"
    result = runner.invoke(main, ["index", "add", str(index), f"s3://{bucket}/monday.jsonl",
                                  "--id-field", "id", "--clusters-out", str(out),
                                  *s3.cli_options()])
    assert result.exit_code == 0, result.output
    assert "committed 100 documents" in result.output
    ids = [line.split(",")[0] for line in out.read_text().splitlines()[1:]]
    assert sorted(ids) == sorted(r["id"] for r in records[:100])
    result = runner.invoke(main, ["index", "add", str(index), "s3://neardup-absent/x.jsonl",
                                  *s3.cli_options()])
    assert result.exit_code == 1 and "bucket 'neardup-absent' does not exist" in result.output
    assert "Traceback" not in result.output


def test_storage_option_without_a_url_is_a_usage_error(s3, tmp_path):
    (tmp_path / "c.jsonl").write_text('{"text": "a"}\n')
    result = run_cli(tmp_path / "c.jsonl", *s3.cli_options(), ok=False)
    assert result.exit_code == 2
    assert "--storage-option applies to inputs and outputs given as URLs" in result.output
    result = run_cli(tmp_path / "c.jsonl", "--storage-option", "oops", ok=False)
    assert result.exit_code == 2 and "takes KEY=VALUE; got 'oops'" in result.output


def test_a_failed_upload_at_the_commit_changes_no_final_key(s3):
    """Every output is uploaded before any target is replaced: a bucket that disappears
    between the checks and the commit fails the commit with the other bucket's previous
    object untouched and no new key anywhere."""
    fs = s3.fs()
    first, second = s3.bucket(), s3.bucket()
    fs.pipe_file(f"{first}/clusters.jsonl", b'{"previous": 1}\n')
    outputs = OutputSet(storage_options=s3.options)
    outputs.add("--clusters-out", f"s3://{first}/clusters.jsonl")
    outputs.add("--out", f"s3://{second}/kept.jsonl")
    with pytest.raises(OutputError, match=rf"^--out: s3://{second}/kept\.jsonl: the bucket"), \
            outputs:
        outputs.write_records("--clusters-out", [{"new": 1}])
        outputs.write_records("--out", [{"kept": 1}])
        fs.rm(second, recursive=True)  # its temporary key, then the bucket itself
        if fs.exists(second):
            fs.rmdir(second)
        outputs.commit()
    assert sorted(fs.find(first)) == [f"{first}/clusters.jsonl"]
    assert fs.cat_file(f"{first}/clusters.jsonl") == b'{"previous": 1}\n'


def test_file_urls_name_the_local_disk(records, local_clusters, tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "corpus.jsonl").write_bytes(jsonl_bytes(records))
    run_cli(f"file://{tmp_path}/in/corpus.jsonl", "--id-field", "id", "--engine", "memory",
            "--clusters-out", f"file://{tmp_path}/out/clusters.parquet")
    clusters = pq.read_table(tmp_path / "out" / "clusters.parquet")
    assert clusters.equals(local_clusters["memory"])
    # An output on the input is recognised through the URL too.
    result = run_cli(f"file://{tmp_path}/in/corpus.jsonl", "--out",
                     f"file://{tmp_path}/in/corpus.jsonl", ok=False)
    assert result.exit_code == 1 and "writing it would replace the input" in result.output
