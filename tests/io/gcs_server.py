"""A Google Cloud Storage emulator for the ``gs://`` tests: gcp-storage-emulator (a
pure-Python server from PyPI) on loopback, in memory.

gcsfs reaches it over HTTP through the ``endpoint_url`` storage option (anonymous
token), as it reaches any GCS-compatible endpoint. Nothing in Python is replaced by a
mock. gcsfs's experimental zonal/hierarchical-namespace filesystem asks every bucket's
type over gRPC, which the emulator does not serve (each call then waits out a 60 s
timeout): the plain filesystem is chosen through its switch,
``GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false``, which gcsfs reads when first imported.
"""

from __future__ import annotations

import os
import secrets
import socket
import sys
from dataclasses import dataclass

import pytest

os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")


@dataclass
class GCS:
    """The running emulator: its endpoint, the storage options that reach it, and a
    fresh bucket per call of :meth:`bucket`."""

    endpoint: str

    @property
    def options(self) -> dict:
        return {"endpoint_url": self.endpoint, "token": "anon", "project": "neardup-test"}

    def cli_options(self) -> list[str]:
        return [arg for key, value in self.options.items()
                for arg in ("--storage-option", f"{key}={value}")]

    def fs(self):
        import gcsfs

        return gcsfs.GCSFileSystem(**self.options)

    def bucket(self) -> str:
        """A new, empty bucket's name."""
        name = f"neardup-{secrets.token_hex(4)}"
        self.fs().mkdir(name)
        return name


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def gcs():
    """gcp-storage-emulator on a free loopback port for the whole session."""
    pytest.importorskip("gcsfs", reason="the gs:// tests need gcsfs")
    emulator = pytest.importorskip("gcp_storage_emulator.server",
                                   reason="the gs:// tests need gcp-storage-emulator")
    if "gcsfs" in sys.modules and os.environ["GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT"] != "false":
        pytest.skip("gcsfs was imported with its gRPC bucket probe on, which the emulator "
                    "does not serve")
    port = _free_port()
    server = emulator.create_server("127.0.0.1", port, in_memory=True)
    server.start()
    # The emulator answers a ranged read with the whole object and the client hangs up
    # once it has its range: its HTTP server would print each broken pipe to stderr (into
    # the output the CLI tests read).
    httpd = server._api._httpd
    default_handle_error = httpd.handle_error

    def handle_error(request, client_address):
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            default_handle_error(request, client_address)

    httpd.handle_error = handle_error
    try:
        yield GCS(f"http://127.0.0.1:{port}")
    finally:
        server.stop()
