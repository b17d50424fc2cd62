"""Fixtures of the I/O tests: the session's S3-compatible server (tests/io/s3_server.py)
and GCS emulator (tests/io/gcs_server.py)."""

from tests.io.gcs_server import gcs  # noqa: F401 - a fixture, found by pytest here
from tests.io.s3_server import s3  # noqa: F401 - a fixture, found by pytest here
