"""Fuzzing the HTTP API's request bodies (hypothesis, in process through FastAPI's
TestClient): arbitrary JSON values, near-valid payloads and raw bytes on every endpoint.
Whatever the body, the answer is below 500 with a JSON body, and afterwards the index
still answers /stats with exactly the documents that 2xx answers reported as added."""

from __future__ import annotations

import json

import pytest

# Each search sends a few hundred requests through the service: the slow lane.
pytestmark = pytest.mark.slow

hypothesis = pytest.importorskip("hypothesis")
pytest.importorskip("fastapi", reason="the serve extra (fastapi) is not installed")
pytest.importorskip("httpx", reason="the serve extra (httpx) is not installed")

from fastapi.testclient import TestClient  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from neardup.index import Index  # noqa: E402
from neardup.index.service import create_app  # noqa: E402

FUZZ = settings(max_examples=100, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
ENDPOINTS = ["/add", "/query", "/stats", "/health"]

# Text that includes what breaks encoders: lone surrogates, NUL, controls, astral characters.
TEXT = st.one_of(
    st.text(max_size=40),
    st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()),
            max_size=20),
    st.sampled_from(["", " ", "\ud800", "a\udfffb", "\x00", "\r\n", "\U0001F600" * 3,
                     "a" * 3000]),
)
NUMBERS = st.one_of(
    st.integers(), st.integers(min_value=-(10**60), max_value=10**60),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0, -1, 1, 10**400, 0.5]),
)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, TEXT)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=12,
)
KEYS = st.sampled_from(["documents", "top_k", "skip_existing", "rerank", "id", "text",
                        "scorer", "threshold", "model", "max_chars", "extra"])


@st.composite
def near_valid(draw):
    """A valid request (ids for all documents or none, texts of printable Unicode), or
    one mutated in one place: a field replaced by any JSON value, a field added or
    removed, a number out of range, the document list emptied, overfilled or given a
    repeated id, a rerank setting."""
    n = draw(st.integers(1, 5))
    texts = draw(st.lists(st.text(max_size=60), min_size=n, max_size=n))
    docs = [{"text": t} for t in texts]
    if draw(st.booleans()):
        ids = draw(st.lists(st.text(min_size=1, max_size=6), min_size=n, max_size=n,
                            unique=True))
        for doc, doc_id in zip(docs, ids):
            doc["id"] = doc_id
    body: dict = {"documents": docs}
    if draw(st.booleans()):
        body["top_k"] = draw(st.integers(1, 50))
    if draw(st.booleans()):
        body["skip_existing"] = draw(st.booleans())
    mutation = draw(st.integers(0, 9))
    if mutation == 4:  # one document field replaced by anything
        doc = docs[draw(st.integers(0, n - 1))]
        doc[draw(st.sampled_from(["id", "text"]))] = draw(st.one_of(TEXT, JSON_VALUES))
    elif mutation == 5:  # a field added, at the top or in a document
        target = draw(st.sampled_from([body, docs[0]]))
        target[draw(st.one_of(KEYS, TEXT))] = draw(JSON_VALUES)
    elif mutation == 6:  # a field removed
        target = draw(st.sampled_from([body, docs[0]]))
        del target[draw(st.sampled_from(sorted(target)))]
    elif mutation == 7:
        body[draw(st.sampled_from(["top_k", "skip_existing"]))] = draw(NUMBERS)
    elif mutation == 8:
        kind = draw(st.sampled_from(["empty", "many", "repeat", "mixed"]))
        if kind == "empty":
            body["documents"] = []
        elif kind == "many":
            body["documents"] = docs * 6
        elif kind == "repeat":
            body["documents"] = docs + [dict(docs[0])]
        elif "id" in docs[0]:
            del docs[0]["id"]
        else:
            docs[0]["id"] = "mixed"
    elif mutation == 9:
        body["rerank"] = draw(st.one_of(
            st.fixed_dictionaries(
                {"scorer": st.sampled_from(["verifier", "cross-encoder", "none", "x"])},
                optional={"threshold": st.one_of(st.floats(0, 1), NUMBERS),
                          "model": st.one_of(st.sampled_from(
                              ["verifier-news", "cross-encoder-news", "/etc", "/dev/zero",
                               "nonexistent", ".."]), TEXT),
                          "max_chars": st.one_of(st.integers(1, 10**6), NUMBERS)}),
            JSON_VALUES))
    return body


def _encode(value) -> bytes:
    """JSON as a careless client writes it: NaN/Infinity literals, surrogates as escapes."""
    return json.dumps(value, ensure_ascii=True, allow_nan=True).encode("ascii")


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    directory = tmp_path_factory.mktemp("fuzz") / "idx"
    Index.create(directory, "minhash").close()
    app = create_app(directory, max_documents=5, max_text_chars=2000, max_body_bytes=64_000,
                     max_top_k=50)
    with TestClient(app, raise_server_exceptions=True) as client:
        yield client, {"documents": 0}


def _check(service, path: str, body: bytes, content_type: str | None = "application/json"):
    client, expected = service
    headers = {"content-type": content_type} if content_type else {}
    if path in ("/stats", "/health"):
        r = client.request("GET", path, content=body, headers=headers)
    else:
        r = client.post(path, content=body, headers=headers)
    assert r.status_code < 500, (path, body[:200], r.text)
    answer = r.json()  # always a JSON body
    if r.status_code >= 400:
        assert isinstance(answer["detail"], str) and answer["detail"]
    elif path == "/add":
        expected["documents"] += answer["added"]
        assert answer["added"] + answer["skipped"] == len(answer["documents"])
    elif path == "/query":
        assert len(answer["results"]) == len(json.loads(body)["documents"])
    stats = client.get("/stats")
    assert stats.status_code == 200
    assert stats.json()["documents"] == expected["documents"]
    assert client.get("/health").json()["documents"] == expected["documents"]


@FUZZ
@given(path=st.sampled_from(ENDPOINTS), value=JSON_VALUES)
def test_arbitrary_json_values(service, path, value):
    _check(service, path, _encode(value))


@FUZZ
@given(path=st.sampled_from(["/add", "/query"]), body=near_valid())
def test_near_valid_payloads(service, path, body):
    _check(service, path, _encode(body))


@FUZZ
@given(path=st.sampled_from(ENDPOINTS), body=near_valid(), cut=st.integers(0, 200),
       junk=st.binary(max_size=8))
def test_damaged_bytes(service, path, body, cut, junk):
    """A valid-looking body cut short or with bytes spliced in (invalid UTF-8 included)."""
    raw = _encode(body)
    at = min(cut, len(raw))
    _check(service, path, raw[:at] + junk + raw[at + len(junk):])


@FUZZ
@given(path=st.sampled_from(["/add", "/query"]), body=near_valid(),
       content_type=st.one_of(st.none(), st.sampled_from(
           ["application/json", "text/plain", "application/x-www-form-urlencoded",
            "application/problem+json", "application/json; charset=latin-1", "*/*", "",
            "multipart/form-data"])))
def test_content_types(service, path, body, content_type):
    _check(service, path, _encode(body), content_type)
