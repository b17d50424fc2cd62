"""`neardup serve`: the HTTP API, its 4xx answers, and a graceful shutdown losing no add."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from neardup.index import Index

from tests.index.conftest import synthetic_texts

fastapi = pytest.importorskip("fastapi", reason="the serve extra (fastapi) is not installed")
httpx = pytest.importorskip("httpx", reason="the serve extra (httpx) is not installed")
from fastapi.testclient import TestClient  # noqa: E402

from neardup.index.service import create_app  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def client(tmp_path):
    Index.create(tmp_path / "idx", "minhash").close()
    app = create_app(tmp_path / "idx", max_documents=5, max_text_chars=2000, max_body_bytes=20_000)
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def test_add_query_stats_health(client):
    texts = synthetic_texts(4, seed=3, copies=0)
    r = client.post("/add", json={"documents": [{"id": f"d{i}", "text": t} for i, t in enumerate(texts)]})
    assert r.status_code == 200, r.text
    assert [d["status"] for d in r.json()["documents"]] == ["new"] * 4
    r = client.post("/query", json={"documents": [{"id": "q", "text": texts[2]}, {"text": "zzz"}],
                                    "top_k": 2})
    assert r.status_code == 200
    results = r.json()["results"]
    assert results[0]["id"] == "q" and results[0]["matches"][0]["id"] == "d2"
    assert results[0]["matches"][0]["type"] == "exact" and results[1]["matches"] == []
    assert client.get("/stats").json()["documents"] == 4
    assert client.get("/health").json() == {"status": "ok", "documents": 4}
    r = client.post("/add", json={"documents": [{"text": texts[0]}]})
    assert r.json()["documents"][0]["status"] == "joined"


@pytest.mark.parametrize("path, body, status", [
    ("/query", b"{not json", 422),
    ("/query", b"[]", 422),
    ("/query", b'{"documents": []}', 422),
    ("/query", b'{"documents": [{"id": "x"}]}', 422),
    ("/query", b'{"documents": [{"text": 5}]}', 422),
    ("/query", b'{"documents": [{"text": "a"}], "top_k": 0}', 422),
    ("/query", b'{"documents": [{"text": "a"}], "top_k": 100000}', 422),
    ("/query", b'{"documents": [{"text": "a"}], "surprise": 1}', 422),
    ("/query", b'{"documents": [' + b",".join([b'{"text": "a"}'] * 6) + b"]}", 422),
    ("/query", b'{"documents": [{"text": "' + b"a" * 2001 + b'"}]}', 422),
    ("/query", b'{"documents": [{"text": "' + b"a" * 30000 + b'"}]}', 413),
    ("/add", b'{"documents": [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]}', 400),
    ("/add", b'{"documents": [{"id": "a", "text": "x"}, {"text": "y"}]}', 400),
    ("/add", b'{"documents": [{"id": "", "text": "x"}]}', 422),
    ("/add", b"\xff\xfe\x00garbage", 422),
    ("/nowhere", b"{}", 404),
])
def test_malformed_requests_get_4xx(client, path, body, status):
    r = client.post(path, content=body, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    assert "detail" in r.json()
    assert client.get("/health").status_code == 200  # still serving


def test_streamed_oversized_body_gets_413(client):
    def chunks():
        for _ in range(30):
            yield b" " * 1000
    r = client.post("/query", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413


def test_duplicate_id_is_409_and_wrong_verb_405(client):
    doc = {"documents": [{"id": "a", "text": "some text here"}]}
    assert client.post("/add", json=doc).status_code == 200
    r = client.post("/add", json=doc)
    assert r.status_code == 409 and "already in the index" in r.json()["detail"]
    assert client.post("/add", json={**doc, "skip_existing": True}).status_code == 200
    assert client.get("/add").status_code == 405


def test_foreign_directory_fails_at_startup(tmp_path):
    from neardup.index import IndexFormatError

    (tmp_path / "x").mkdir()
    with pytest.raises(IndexFormatError):
        create_app(tmp_path / "x")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sigterm_loses_no_acknowledged_add(tmp_path):
    Index.create(tmp_path / "idx", "minhash").close()
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    server = subprocess.Popen([sys.executable, "-m", "neardup", "serve", str(tmp_path / "idx"),
                               "--port", str(port)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.2)
        texts = synthetic_texts(4000, seed=4)
        acknowledged: list[str] = []
        lock = threading.Lock()

        def writer(w: int) -> None:
            with httpx.Client(base_url=base, timeout=60) as c:
                for b in range(100):
                    start = (w * 100 + b) * 10 % len(texts)
                    docs = [{"id": f"w{w}-b{b}-{i}", "text": texts[(start + i) % len(texts)]}
                            for i in range(10)]
                    try:
                        r = c.post("/add", json={"documents": docs})
                    except httpx.TransportError:
                        return  # the server stopped: this add was never acknowledged
                    if r.status_code != 200:
                        return
                    with lock:
                        acknowledged.extend(d["id"] for d in docs)

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        while len(acknowledged) < 200:
            time.sleep(0.05)
        server.send_signal(signal.SIGTERM)
        for t in threads:
            t.join()
        # uvicorn re-raises the signal once it has shut down gracefully: -SIGTERM.
        assert server.wait(timeout=60) in (0, -signal.SIGTERM)
        assert b"Traceback" not in server.stderr.read()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    with Index(tmp_path / "idx") as index:
        stored = set(index.clusters().column("id").to_pylist())
        assert index.stats(check=True)["documents"] == len(stored)
    assert set(acknowledged) <= stored
    assert len(stored) - len(acknowledged) <= 4 * 10  # at most one unanswered add per writer
