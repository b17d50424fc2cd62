"""`neardup serve` as a real process on 127.0.0.1: SIGTERM/SIGINT/SIGKILL under load (no
acknowledged add lost, the index opens and `neardup index stats --check` tells the truth),
hostile bytes on the wire, a full database, and startup errors in the CLI's words.

Every loop is bounded in count and in time; all traffic goes to 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from neardup.index import Index
from neardup.index._errors import database_path
from tests.in_process import invoke
from tests.index.corpora import synthetic_texts

pytest.importorskip("fastapi", reason="the serve extra (fastapi) is not installed")
httpx = pytest.importorskip("httpx", reason="the serve extra (httpx) is not installed")

pytestmark = pytest.mark.faults

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
WRITERS, BATCHES, PER_BATCH = 4, 60, 10


def _neardup(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "neardup", *args], env=ENV, capture_output=True,
                          text=True, timeout=120, **kwargs)


class _Server:
    """``neardup serve DIR --port 0`` in a subprocess; the port is read from its stderr."""

    def __init__(self, directory: Path, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "neardup", "serve", str(directory), "--port", "0", *args],
            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stderr.readline()  # "neardup serve: DIR on http://127.0.0.1:PORT"
        match = re.search(r"on (http://127\.0\.0\.1:\d+)$", line.strip())
        if match is None:
            self.process.kill()
            raise AssertionError(f"no address line: {line!r} {self.process.stderr.read()!r}")
        self.base = match.group(1)
        self.port = int(self.base.rsplit(":", 1)[1])
        deadline = time.monotonic() + 60
        while True:  # the socket listens already; wait for the app's startup
            try:
                if httpx.get(self.base + "/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.kill()
                raise AssertionError("the server did not start")
            time.sleep(0.1)

    def finish(self, timeout: float = 60) -> tuple[int, str]:
        """Wait for the process; its exit status and the rest of its stderr."""
        try:
            rc = self.process.wait(timeout=timeout)
        finally:
            self.kill()
        return rc, self.process.stderr.read()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def _load(base: str, texts: list[str], stop_after: int, stop) -> tuple[list[str], int]:
    """WRITERS threads each sending up to BATCHES adds of PER_BATCH documents; ``stop()`` is
    called once ``stop_after`` documents are acknowledged. The acknowledged ids (2xx), and
    how many adds got no answer or a non-2xx one."""
    acknowledged: list[str] = []
    unanswered = [0]
    lock = threading.Lock()
    stopped = threading.Event()

    def writer(w: int) -> None:
        with httpx.Client(base_url=base, timeout=60) as client:
            for b in range(BATCHES):
                start = (w * BATCHES + b) * PER_BATCH
                docs = [{"id": f"w{w}-b{b}-{i}", "text": texts[(start + i) % len(texts)]}
                        for i in range(PER_BATCH)]
                try:
                    r = client.post("/add", json={"documents": docs})
                except httpx.TransportError:
                    with lock:
                        unanswered[0] += 1
                    return  # the server is gone: this add was never acknowledged
                if not 200 <= r.status_code < 300:
                    # only a shutting-down server may refuse (503), never a 5xx otherwise
                    assert r.status_code == 503, r.text
                    with lock:
                        unanswered[0] += 1
                    return
                assert [d["status"] for d in r.json()["documents"]] != ["skipped"] * PER_BATCH
                with lock:
                    acknowledged.extend(d["id"] for d in docs)
                    if len(acknowledged) >= stop_after and not stopped.is_set():
                        stopped.set()
                        stop()

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    assert not any(t.is_alive() for t in threads)
    assert stopped.is_set(), "the load ended before the signal was sent"
    return acknowledged, unanswered[0]


def _check_index(directory: Path, acknowledged: list[str]) -> set[str]:
    """The index opens, every acknowledged add is stored, and `stats --check` agrees with
    an independent count of the database."""
    with Index(directory) as index:
        stored = set(index.clusters().column("id").to_pylist())
    assert set(acknowledged) <= stored
    # at most one add per writer was in flight, unanswered, when the server stopped
    assert len(stored - set(acknowledged)) <= WRITERS * PER_BATCH
    result = _neardup("index", "stats", str(directory), "--check")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    stats = json.loads(result.stdout)
    con = sqlite3.connect(database_path(directory))
    try:
        assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert stats["documents"] == con.execute("SELECT count(*) FROM docs").fetchone()[0]
        assert stats["clusters"] == con.execute(
            "SELECT count(DISTINCT cluster) FROM docs").fetchone()[0]
    finally:
        con.close()
    assert stats["documents"] == len(stored)
    return stored


@pytest.fixture
def index_dir(tmp_path) -> Path:
    Index.create(tmp_path / "idx", "minhash").close()
    return tmp_path / "idx"


@pytest.mark.parametrize("sig, status, name", [(signal.SIGTERM, 143, "SIGTERM"),
                                               (signal.SIGINT, 130, "SIGINT")])
def test_signal_under_load_loses_no_acknowledged_add(index_dir, sig, status, name):
    server = _Server(index_dir)
    try:
        texts = synthetic_texts(600, seed=4)
        acknowledged, unanswered = _load(server.base, texts, stop_after=100,
                                         stop=lambda: server.process.send_signal(sig))
        rc, stderr = server.finish()
    finally:
        server.kill()
    assert rc == status, stderr
    assert "Traceback" not in stderr and "Error" not in stderr, stderr
    assert f"stopped by {name}" in stderr
    assert 100 <= len(acknowledged) < WRITERS * BATCHES * PER_BATCH  # stopped mid-load
    assert unanswered <= WRITERS
    _check_index(index_dir, acknowledged)


def test_sigkill_under_load_loses_no_acknowledged_add(index_dir):
    """An add is answered only after its commit is synced: even SIGKILL loses none."""
    server = _Server(index_dir)
    try:
        texts = synthetic_texts(600, seed=5)
        acknowledged, _ = _load(server.base, texts, stop_after=100, stop=server.process.kill)
        rc, _ = server.finish()
    finally:
        server.kill()
    assert rc == -signal.SIGKILL
    assert 100 <= len(acknowledged) < WRITERS * BATCHES * PER_BATCH  # killed mid-load
    _check_index(index_dir, acknowledged)
    # the index serves again, and takes the rest of the load
    server = _Server(index_dir)
    try:
        r = httpx.post(server.base + "/add", json={"documents": [{"id": "after", "text": "x y z"}]},
                       timeout=30)
        assert r.status_code == 200
        server.process.send_signal(signal.SIGTERM)
        assert server.finish()[0] == 143
    finally:
        server.kill()


def _raw(port: int, request: bytes) -> bytes:
    """Send raw bytes to 127.0.0.1:port and read the whole answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


def test_real_server_answers_hostile_requests_with_4xx(index_dir):
    """The reported case (a lone surrogate: 500 on /add, a reset connection on /query) and
    other hostile requests, through uvicorn: every one gets a 4xx, none a reset."""
    server = _Server(index_dir, "--max-body-mib", "1")
    try:
        c = httpx.Client(base_url=server.base, timeout=30)
        json_header = {"content-type": "application/json"}
        cases = [
            ("/add", b'{"documents": [{"id": "\\ud800", "text": "x"}]}', json_header, 422),
            ("/add", b'{"documents": [{"text": "\\ud800"}]}', json_header, 422),
            ("/query", b'{"documents": [{"id": "q\\udfff", "text": "x"}]}', json_header, 422),
            ("/query", b'{"documents": [{"text": "\\ud800"}]}', json_header, 422),
            ("/query", b'{"documents": [{"text": ' + b"[" * 1500 + b"]" * 1500 + b"}]}",
             json_header, 422),
            ("/query", b'{"documents": [{"text": "a"}], "top_k": NaN}', json_header, 422),
            ("/query", b'{"documents": [{"text": "a"}], "top_k": ' + b"9" * 5000 + b"}",
             json_header, 422),
            ("/add", b'{"documents": [{"text": "a"}]}', {"content-type": "text/plain"}, 415),
            ("/add", b'{"documents": [{"text": "' + b"a" * (1 << 20) + b'"}]}', json_header, 413),
        ]
        for path, body, headers, status in cases:
            r = c.post(path, content=body, headers=headers)
            assert r.status_code == status, (path, body[:60], r.text)
            r.content.decode("utf-8")
            assert r.json()["detail"]
        # a streamed (chunked) body above the limit
        r = c.post("/add", content=(b" " * 65536 for _ in range(20)), headers=json_header)
        assert r.status_code == 413
        # bytes that are not HTTP at all, and a lying Content-Length
        assert _raw(server.port, b"\x16\x03\x01\x02\x00garbage\r\n\r\n").startswith(b"HTTP/1.1 4")
        answer = _raw(server.port, b"POST /add HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999"
                                   b"\r\nContent-Type: application/json\r\n\r\n{}")
        assert answer.startswith(b"HTTP/1.1 413")
        assert c.get("/stats").json()["documents"] == 0
        r = c.post("/add", json={"documents": [{"id": "ok", "text": "still serving"}]})
        assert r.status_code == 200
        c.close()
        server.process.send_signal(signal.SIGTERM)
        rc, stderr = server.finish()
    finally:
        server.kill()
    assert rc == 143 and "Traceback" not in stderr, stderr


def test_full_database_gets_507_and_keeps_serving(tmp_path):
    """SQLite's "database or disk is full" (here: a page limit on the index's writer): 507,
    nothing of that add stored, and the index keeps answering and passes its check."""
    from fastapi.testclient import TestClient

    from neardup.index.service import create_app

    Index.create(tmp_path / "idx", "minhash").close()
    app = create_app(tmp_path / "idx", max_body_bytes=0)
    index = app.state.index
    texts = synthetic_texts(400, seed=6, copies=0)
    with TestClient(app, raise_server_exceptions=False) as c:
        assert c.post("/add", json={"documents": [{"id": "first", "text": texts[0]}]}).status_code == 200
        pages = index._store.writer.execute("PRAGMA page_count").fetchone()[0]
        index._store.writer.execute(f"PRAGMA max_page_count={pages + 2}")
        statuses = []
        for b in range(20):  # bounded: the limit is hit within a few batches
            docs = [{"id": f"b{b}-{i}", "text": texts[1 + (b * 20 + i) % 399]} for i in range(20)]
            r = c.post("/add", json={"documents": docs})
            statuses.append(r.status_code)
            if r.status_code != 200:
                break
        assert statuses[-1] == 507, statuses
        assert "full" in r.json()["detail"] and "nothing of this request was stored" in r.json()["detail"]
        stored = c.get("/stats").json()["documents"]
        assert stored == 1 + 20 * (len(statuses) - 1)  # the refused add left nothing behind
        assert c.post("/query", json={"documents": [{"text": texts[0]}]}).json()[
            "results"][0]["matches"][0]["id"] == "first"
        index._store.writer.execute("PRAGMA max_page_count=1073741823")
        r = c.post("/add", json={"documents": docs})
        assert r.status_code == 200  # the same add succeeds once there is room
    with Index(tmp_path / "idx") as reopened:
        assert reopened.stats(check=True)["documents"] == stored + 20


def test_port_in_use_is_a_cli_error_naming_the_flag(index_dir):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = _neardup("serve", str(index_dir), "--port", str(port))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"port {port}" in result.stderr and "--port" in result.stderr


def _refused(monkeypatch, *args: str):
    """``neardup serve ARGS`` run in this process, for a refusal that comes before any
    socket is served: a real process costs seconds of start-up, and the real process's
    words for the same guarantee are checked by the port test above. uvicorn's run is
    replaced, so that a command that would serve fails instead of hanging the test."""
    import uvicorn

    def served(self, *args, **kwargs):
        raise AssertionError("neardup serve started serving")

    monkeypatch.setattr(uvicorn.Server, "run", served)
    return invoke("serve", *args)


def test_bad_host_is_a_cli_error_naming_the_flag(index_dir, monkeypatch):
    result = _refused(monkeypatch, str(index_dir), "--host", "no.such.host.invalid", "--port", "0")
    assert result.exit_code == 2
    assert "Traceback" not in result.stderr and "--host" in result.stderr


@pytest.mark.parametrize("make", ["missing", "foreign", "damaged"])
def test_unusable_index_is_refused_before_serving(tmp_path, monkeypatch, make):
    directory = tmp_path / "idx"
    if make == "foreign":
        directory.mkdir()
        (directory / "notes.txt").write_text("hello")
    elif make == "damaged":
        Index.create(directory, "minhash").close()
        for db in directory.iterdir():
            if db.is_file():
                db.write_bytes(b"\0garbage" * 512)
    before = {p.name: p.read_bytes() for p in directory.iterdir()} if directory.exists() else None
    result = _refused(monkeypatch, str(directory), "--port", "0")
    assert result.exit_code == 1
    assert "Traceback" not in result.stderr and str(directory) in result.stderr
    assert "on http://" not in result.stderr  # never started serving
    assert "Index." not in result.stderr  # the CLI's words, not Python callers
    if make != "damaged":  # the hint names the command that makes an index
        assert "`neardup index create DIR" in result.stderr and "--param" not in result.stderr
    after = {p.name: p.read_bytes() for p in directory.iterdir()} if directory.exists() else None
    assert after == before  # nothing created or changed


def test_damaged_pages_get_a_json_500_that_says_how_to_check(tmp_path):
    """Pages of the database overwritten after startup (the file still opens): the
    requests that read them get 500 with a JSON body naming `neardup index stats --check`,
    never a dropped connection, and the service keeps answering the others."""
    from fastapi.testclient import TestClient

    from neardup.index.service import create_app

    directory = tmp_path / "idx"
    with Index.create(directory, "minhash") as index:
        texts = synthetic_texts(2000, seed=1)
        index.add(texts, [f"d{i}" for i in range(2000)])
    db = database_path(directory)
    data = bytearray(db.read_bytes())
    pages = len(data) // 4096
    for page in range(pages // 3, pages // 3 + 40):
        data[page * 4096 + 100: page * 4096 + 2000] = b"\xa5" * 1900
    db.write_bytes(bytes(data))
    with TestClient(create_app(directory), raise_server_exceptions=False) as c:
        r = c.get("/stats")  # reads every table
        assert r.status_code == 500
        assert f"neardup index stats --check {directory}" in r.json()["detail"]
        assert "malformed" in r.json()["detail"]
        for r in (c.post("/query", json={"documents": [{"text": texts[5]}]}),
                  c.post("/add", json={"documents": [{"id": "new", "text": texts[7]}]}),
                  c.get("/health")):
            assert r.status_code in (200, 500) and r.json()


def test_help_documents_status_codes_limits_and_exit_codes():
    from click.testing import CliRunner

    from neardup.cli import main

    result = CliRunner().invoke(main, ["serve", "--help"], terminal_width=100)
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    for needle in ("413", "415", "422", "400", "409", "--max-body-mib", "143", "130",
                   "Every add that was answered is stored", "--shutdown-timeout", "0: any free port"):
        assert needle in text, needle
