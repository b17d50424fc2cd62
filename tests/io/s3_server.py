"""A real S3-compatible server for the storage tests: moto's server mode on loopback.

The server speaks S3 over HTTP on 127.0.0.1; s3fs reaches it through the
``endpoint_url`` storage option, exactly as it reaches MinIO or another S3-compatible
store. Nothing in Python is replaced by a mock. Import the fixture into a test module
(``from tests.io.s3_server import s3``).
"""

from __future__ import annotations

import os
import secrets
import urllib.request
from dataclasses import dataclass

import pytest

_ENV = {"AWS_ACCESS_KEY_ID": "neardup-test", "AWS_SECRET_ACCESS_KEY": "neardup-test-secret",
        "AWS_DEFAULT_REGION": "us-east-1"}


@dataclass
class S3:
    """The running server: its endpoint, the storage options that reach it, and a fresh
    bucket per call of :meth:`bucket`."""

    endpoint: str

    @property
    def options(self) -> dict:
        return {"endpoint_url": self.endpoint}

    def cli_options(self) -> list[str]:
        return ["--storage-option", f"endpoint_url={self.endpoint}"]

    def fs(self, **extra):
        import s3fs

        return s3fs.S3FileSystem(endpoint_url=self.endpoint, **extra)

    def bucket(self) -> str:
        """A new, empty bucket's name."""
        name = f"neardup-{secrets.token_hex(4)}"
        self.fs().mkdir(name)
        return name

    def enforce_credentials(self, enforce: bool) -> None:
        """Make the server check every request's access key and signature against its IAM
        users (moto's INITIAL_NO_AUTH_ACTION_COUNT, set through its API), or stop."""
        body = b"0" if enforce else b"inf"
        request = urllib.request.Request(f"{self.endpoint}/moto-api/reset-auth", data=body,
                                         method="POST", headers={"Content-Type": "text/plain"})
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200


@pytest.fixture(scope="session")
def s3():
    """moto's S3 server on a free loopback port for the whole session, with test
    credentials in the environment (restored afterwards)."""
    pytest.importorskip("s3fs", reason="the storage tests need s3fs (neardup[llm])")
    server_module = pytest.importorskip("moto.server", reason="needs moto[server]")
    saved = {key: os.environ.get(key) for key in _ENV}
    os.environ.update(_ENV)
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield S3(f"http://{host}:{port}")
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
