"""`neardup serve`: the HTTP API, its 4xx answers, and a graceful shutdown losing no add."""

from __future__ import annotations

import pytest

from neardup.index import Index
from tests.index.corpora import synthetic_texts

fastapi = pytest.importorskip("fastapi", reason="the serve extra (fastapi) is not installed")
httpx = pytest.importorskip("httpx", reason="the serve extra (httpx) is not installed")
from fastapi.testclient import TestClient  # noqa: E402

from neardup.index.service import create_app  # noqa: E402


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
    r = client.post("/add", json={"documents": [{"id": "d4", "text": texts[0]}]})
    assert r.json()["documents"][0]["status"] == "joined"
    # An index named by ids takes no document without one (issue #40: no collision with
    # positional ids): a 400, nothing added.
    r = client.post("/add", json={"documents": [{"text": texts[1]}]})
    assert r.status_code == 400 and client.get("/stats").json()["documents"] == 5


DEEP = b"[" * 1500 + b"]" * 1500
DOC = b'{"text": "a"}'


@pytest.mark.parametrize("path, body, status", [
    # not JSON, or not standard JSON
    ("/query", b"{not json", 422),
    ("/query", b"", 422),
    ("/add", b"\xff\xfe\x00garbage", 422),
    ("/add", b'{"documents": [{"text": "\xed\xa0\x80"}]}', 422),  # UTF-8 encoded surrogate
    ("/add", b'{"documents": [{"text": "\\ud800"}]}', 422),  # lone surrogate, text
    ("/add", b'{"documents": [{"id": "\\udfff", "text": "x"}]}', 422),  # lone surrogate, id
    ("/query", b'{"documents": [{"text": "a\\ud800b"}]}', 422),
    ("/query", b'{"documents": [{"text": "a"}], "\\ud800": 1}', 422),  # ... in a field name
    ("/query", b'{"documents": [{"text": "a"}], "top_k": NaN}', 422),
    ("/query", b'{"documents": [{"text": "a"}], "top_k": Infinity}', 422),
    ("/query", b'{"documents": [{"text": "a"}], "rerank": {"scorer": "verifier", "threshold": NaN}}', 422),
    ("/query", b'{"documents": [{"text": "a"}], "rerank": {"scorer": "verifier", "threshold": -Infinity}}', 422),
    ("/query", b'{"documents": [{"text": "a"}], "rerank": {"scorer": "verifier", "threshold": 1e999}}', 422),
    ("/query", b'{"documents": [{"text": "a"}], "top_k": ' + b"9" * 5000 + b"}", 422),
    ("/query", b'{"documents": [{"text": "a"}], "top_k": 1' + b"0" * 40 + b"}", 422),
    ("/query", b'{"documents": [{"text": "a"}], "top_k": -1' + b"0" * 40 + b"}", 422),
    ("/add", b'{"documents": [{"text": "a"}], "rerank": {"scorer": "verifier", "max_chars": 1' + b"0" * 30 + b"}}", 422),
    ("/query", b'{"documents": [{"text": ' + DEEP + b"}]}", 422),  # nested 1,500 deep
    ("/add", b'{"documents": ' + DEEP + b"}", 422),
    ("/add", DEEP, 422),
    ("/add", b'{"documents": [{"text": "a"}], "x": ' + DEEP + b"}", 422),
    # wrong shapes and types
    ("/query", b"[]", 422),
    ("/query", b"null", 422),
    ("/query", b'"documents"', 422),
    ("/query", b'{"documents": {"text": "a"}}', 422),
    ("/query", b'{"documents": ["a"]}', 422),
    ("/query", b'{"documents": [{"text": 5}]}', 422),
    ("/query", b'{"documents": [{"text": null}]}', 422),
    ("/query", b'{"documents": [{"text": ["a"]}]}', 422),
    ("/add", b'{"documents": [{"id": 5, "text": "a"}]}', 422),
    ("/query", b'{"documents": [{"text": "a"}], "top_k": "5"}', 422),
    ("/query", b'{"documents": [{"text": "a"}], "top_k": 5.0}', 422),
    ("/query", b'{"documents": [{"text": "a"}], "top_k": true}', 422),
    ("/add", b'{"documents": [{"text": "a"}], "skip_existing": "true"}', 422),
    ("/add", b'{"documents": [{"text": "a"}], "skip_existing": 1}', 422),
    ("/query", b'{"documents": [{"text": "a"}], "rerank": "verifier"}', 422),
    ("/query", b'{"documents": [{"text": "a"}], "rerank": {"scorer": "magic"}}', 422),
    ("/query", b'{"documents": [{"text": "a"}], "rerank": {"scorer": "verifier", "threshold": 2}}', 422),
    # missing, empty, unknown
    ("/query", b"{}", 422),
    ("/add", b"{}", 422),
    ("/query", b'{"documents": []}', 422),
    ("/add", b'{"documents": []}', 422),
    ("/query", b'{"documents": [{"id": "x"}]}', 422),
    ("/query", b'{"documents": [{}]}', 422),
    ("/query", b'{"documents": [{"text": "a"}], "surprise": 1}', 422),
    ("/add", b'{"documents": [{"text": "a", "title": "t"}]}', 422),
    ("/add", b'{"documents": [{"text": "a"}], "rerank": {"scorer": "none", "x": 1}}', 422),
    # limits
    ("/query", b'{"documents": [{"text": "a"}], "top_k": 0}', 422),
    ("/query", b'{"documents": [{"text": "a"}], "top_k": 100000}', 422),
    ("/query", b'{"documents": [' + b",".join([DOC] * 6) + b"]}", 422),
    ("/query", b'{"documents": [{"text": "' + b"a" * 2001 + b'"}]}', 422),
    ("/add", b'{"documents": [{"id": "' + b"i" * 1025 + b'", "text": "a"}]}', 422),
    ("/query", b'{"documents": [{"text": "' + b"a" * 30000 + b'"}]}', 413),
    # documents that conflict among themselves
    ("/add", b'{"documents": [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]}', 400),
    ("/add", b'{"documents": [{"id": "a", "text": "x"}, {"text": "y"}]}', 400),
    ("/add", b'{"documents": [{"text": "x"}, {"id": "a", "text": "y"}]}', 400),
    ("/add", b'{"documents": [{"id": "", "text": "x"}]}', 422),
    # elsewhere
    ("/nowhere", b"{}", 404),
    ("/stats", b"{}", 405),
])
def test_malformed_requests_get_4xx(client, path, body, status):
    r = client.post(path, content=body, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str) and detail
    assert len(r.content) < 5000  # the body is never echoed back
    if status == 422:
        assert r.json()["errors"] and all({"loc", "type", "msg"} <= set(e) for e in r.json()["errors"])
    assert "Index." not in detail and "Traceback" not in detail and "skip_existing=" not in detail
    assert client.get("/stats").json()["documents"] == 0  # nothing stored, still serving


@pytest.mark.parametrize("path", ["/add", "/query"])
def test_lone_surrogate_anywhere_gets_422_with_an_encodable_body(client, path):
    """A lone surrogate (JSON escape \\ud800) in a text, an id or a field name: 422, and the
    error body names where it is without echoing it (it cannot be encoded)."""
    for doc in ('{"text": "x\\ud800y"}', '{"id": "\\ud800", "text": "x"}',
                '{"id": "a\\udc00", "text": "x"}', '{"text": "x", "\\ud800": 1}'):
        r = client.post(path, content='{"documents": [%s]}' % doc,
                        headers={"content-type": "application/json"})
        assert r.status_code == 422, r.text
        r.content.decode("utf-8")  # strict: the body is valid UTF-8
        assert "surrogate" in r.json()["detail"] or "unicode" in r.json()["detail"]
    assert client.get("/stats").json()["documents"] == 0


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", "application/xml"])
def test_wrong_content_type_gets_415(client, content_type):
    body = b'{"documents": [{"text": "a"}]}'
    for path in ("/add", "/query"):
        r = client.post(path, content=body, headers={"content-type": content_type})
        assert r.status_code == 415, r.text
        assert "application/json" in r.json()["detail"]
    # JSON media types, and no Content-Type at all, are read as JSON
    assert client.post("/query", content=body).status_code == 200
    assert client.post("/query", content=body,
                       headers={"content-type": "application/json; charset=utf-8"}).status_code == 200
    assert client.get("/stats").json()["documents"] == 0


def test_invalid_bytes_are_not_echoed(client):
    r = client.post("/add", content=b"\xff" * 100, headers={"content-type": "text/plain"})
    assert r.status_code == 415
    r = client.post("/add", content=b'{"documents": [{"text": "\xff\xfe"}]}',
                    headers={"content-type": "application/json"})
    assert r.status_code == 422 and "UTF-8" in r.json()["detail"]


def test_422_names_the_field(client):
    r = client.post("/add", json={"documents": [{"text": "a"}, {"text": 7}]})
    assert r.status_code == 422
    assert r.json()["detail"].startswith("documents[1].text: ")
    r = client.post("/query", json={"documents": [{"text": "a"}], "top_k": 0})
    assert r.json()["detail"].startswith("top_k: ")
    r = client.post("/query", json={"documents": [{"text": "a"}], "oops": 1, "top_k": "x"})
    assert "more error" in r.json()["detail"]
    assert {e["loc"] for e in r.json()["errors"]} == {"oops", "top_k"}


def test_duplicate_ids_in_one_request_name_both_positions(client):
    r = client.post("/add", json={"documents": [{"id": "a", "text": "x"}, {"id": "b", "text": "y"},
                                                {"id": "a", "text": "z"}]})
    assert r.status_code == 400
    assert r.json()["detail"] == "documents[0] and documents[2] have the same id 'a'; ids must be unique"
    assert client.get("/stats").json()["documents"] == 0


def test_streamed_oversized_body_gets_413(client):
    def chunks():
        for _ in range(30):
            yield b" " * 1000
    r = client.post("/query", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413


def test_duplicate_id_is_409_and_wrong_verb_405(client):
    doc = {"documents": [{"id": "a", "text": "some text here"}]}
    assert client.post("/add", json=doc).status_code == 200
    r = client.post("/add", json={"documents": [{"id": "new", "text": "other text"}, *doc["documents"]]})
    assert r.status_code == 409 and "already in the index" in r.json()["detail"]
    assert '"skip_existing": true' in r.json()["detail"] and r.json()["ids"] == ["a"]
    assert "skip_existing=True" not in r.json()["detail"] and "--skip-existing" not in r.json()["detail"]
    assert client.get("/stats").json()["documents"] == 1  # nothing of the refused add stored
    r = client.post("/add", json={"documents": [{"id": "new", "text": "other text"}, *doc["documents"]],
                                  "skip_existing": True})
    assert r.status_code == 200
    assert [d["status"] for d in r.json()["documents"]] == ["new", "skipped"]
    assert (r.json()["added"], r.json()["skipped"]) == (1, 1)
    assert client.get("/add").status_code == 405


def test_foreign_directory_fails_at_startup(tmp_path):
    from neardup.index import IndexFormatError

    (tmp_path / "x").mkdir()
    with pytest.raises(IndexFormatError):
        create_app(tmp_path / "x")


def test_stats_of_an_index_whose_path_is_not_utf8(tmp_path):
    """A directory name that UTF-8 cannot encode (a raw byte on Linux) still gives a
    readable /stats: the path is written with \\u escapes instead of failing."""
    import os

    raw = os.fsencode(str(tmp_path)) + b"/idx-\xff"
    try:
        Index.create(os.fsdecode(raw), "minhash").close()
    except (OSError, UnicodeError):
        pytest.skip("the file system refuses non-UTF-8 names")
    with TestClient(create_app(os.fsdecode(raw)), raise_server_exceptions=False) as c:
        r = c.get("/stats")
        assert r.status_code == 200
        assert r.json()["documents"] == 0 and r.json()["path"].endswith("idx-\udcff")


@pytest.mark.parametrize("rerank", [None, "verifier"])
def test_rerank_setting_other_than_the_index_s_is_409(tmp_path, rerank):
    """A request's "rerank" is compared with the index's own; a model it names is never
    loaded (a path, a missing model or the other scorer's model: 409, not 500)."""
    Index.create(tmp_path / "idx", "minhash", rerank=rerank).close()
    with TestClient(create_app(tmp_path / "idx"), raise_server_exceptions=False) as c:
        own = c.get("/stats").json()["rerank"]
        mismatched = [{"scorer": "verifier", "model": "/etc"},
                      {"scorer": "verifier", "model": "/dev/zero"},
                      {"scorer": "verifier", "model": "no-such-model"},
                      {"scorer": "cross-encoder", "model": "verifier-news"},
                      {"scorer": "verifier", "threshold": 0.123},
                      {"scorer": "none" if rerank else "verifier"}]
        for setting in mismatched:
            for path in ("/query", "/add"):
                r = c.post(path, json={"documents": [{"text": "a b c"}], "rerank": setting})
                assert r.status_code == 409, (setting, r.text)
                assert 'Omit "rerank"' in r.json()["detail"] and r.json()["index_rerank"] == own
                assert "None" not in r.json()["detail"] and "{'" not in r.json()["detail"]
        same = {"scorer": "none"} if rerank is None else {"scorer": "verifier", "threshold": 0.9}
        assert c.post("/query", json={"documents": [{"text": "a b c"}], "rerank": same}).status_code == 200
        assert c.get("/stats").json()["documents"] == 0


def test_documents_without_ids_are_never_skipped_or_confused_with_stored_ids(client):
    """skip_existing without ids would drop new documents: 400. Documents without ids in an
    index named by ids are a 400 that does not suggest skip_existing."""
    r = client.post("/add", json={"documents": [{"text": "one two three"}], "skip_existing": True})
    assert r.status_code == 400 and "needs an id for every document" in r.json()["detail"]
    assert client.get("/stats").json()["documents"] == 0
    ids = ["1", "2"]  # the numbers the index would give the next documents
    r = client.post("/add", json={"documents": [{"id": i, "text": f"text number {i}"} for i in ids]})
    assert r.status_code == 200
    # An index named by ids takes no document without one (its position could collide
    # with a stored id): a 400 in the service's words, nothing added.
    r = client.post("/add", json={"documents": [{"text": "a new document"}]})
    assert r.status_code == 400, r.text
    detail = r.json()["detail"]
    assert "skip_existing" not in detail and 'an "id" on each document' in detail
    assert "ids=[" not in detail and "--id-field" not in detail
    assert client.get("/stats").json()["documents"] == 2
