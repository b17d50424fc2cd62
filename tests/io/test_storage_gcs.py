"""gs:// URLs (issue #38, item 5): read and written on the memory and local engines through
gcsfs, against a GCS emulator on loopback (:func:`tests.io.gcs_server.gcs`). Each run
gives the clusters of the same data read from a local file, every document once."""

from __future__ import annotations

import pytest

from tests.io import test_storage as s3_tests
from tests.io.test_storage import (
    assert_missing_bucket_errors_in_python,
    assert_missing_buckets_refused,
    assert_round_trip,
)

# The S3 tests' fixtures (the demo records, their clusters from a local file), shared here.
records = s3_tests.records
local_clusters = s3_tests.local_clusters


@pytest.mark.parametrize("engine", ["memory", "local"])
@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_gcs_round_trip(gcs, records, local_clusters, engine, fmt, tmp_path):
    assert_round_trip(gcs, "gs", records, local_clusters, engine, fmt, tmp_path)


def test_gcs_missing_bucket_is_a_clear_error_before_any_work(gcs, records, tmp_path):
    assert_missing_buckets_refused(gcs, "gs", records, tmp_path)


def test_gcs_missing_bucket_in_python(gcs):
    assert_missing_bucket_errors_in_python("gs", gcs.options)


def test_gcs_unusable_token_is_a_clear_error_before_any_work(gcs, records, tmp_path):
    """The emulator checks no credential, so the refusal tested is gcsfs's own: a token file
    that does not exist cannot be used, and the user is told so, naming the URL and the
    option, before anything is read or written."""
    from tests.io.test_storage import jsonl_bytes, run_cli

    bucket = gcs.bucket()
    gcs.fs().pipe_file(f"{bucket}/corpus.jsonl", jsonl_bytes(records[:20]))
    options = [arg for key, value in {**gcs.options, "token": str(tmp_path / "absent.json")}.items()
               for arg in ("--storage-option", f"{key}={value}")]
    out = tmp_path / "out"
    out.mkdir()
    result = run_cli(f"gs://{bucket}/corpus.jsonl", "--clusters-out", out / "c.parquet", *options,
                     ok=False)
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: gs://{bucket}/corpus.jsonl: "), result.output
    assert "absent.json" in result.output and "Traceback" not in result.output, result.output
    assert list(out.iterdir()) == []


def test_gcsfs_switch_goes_to_the_ray_workers(monkeypatch):
    """gcsfs reads its switch when imported, in each process: the Ray runs send this
    process's setting to the workers (connect's env) and no credential with it."""
    from neardup.io.locations import storage_env

    monkeypatch.setenv("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-sent")
    assert storage_env() == {"GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false"}
    monkeypatch.delenv("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT")
    assert storage_env() == {}
