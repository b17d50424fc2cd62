"""The index as an HTTP JSON service (FastAPI), started by ``neardup serve DIR``.

Endpoints::

    GET  /health           {"status": "ok", "documents": n}
    GET  /stats            the index's stats (method, parameters, counts, size)
    POST /query            {"documents": [{"id"?, "text"}], "top_k"?: 10}
                           -> {"results": [{"id", "matches": [{"id", "score", "type", "cluster"}]}]}
    POST /add              {"documents": [{"id"?, "text"}], "skip_existing"?: false}
                           -> {"documents": [{"id", "cluster", "status", "duplicate_of", "score"}],
                               "added": n, "skipped": n, "merged_clusters": n}

    Both POSTs take an optional "rerank": {"scorer": "verifier" | "cross-encoder" | "none",
    "model"?, "threshold"?, "max_chars"?}: the rerank verification the client expects; a
    request naming another than the index's gets 409 (the index always uses its own, see
    ``GET /stats`` "rerank").

Queries run concurrently (each runs on a thread of the pool and reads its own snapshot),
adds one at a time (the index's write lock). An add is answered only after its
transaction is committed with a full sync, so an acknowledged add survives a crash or
shutdown. On SIGTERM/SIGINT the server stops accepting connections, finishes the requests
in flight, then closes the index (``neardup serve`` exits with 143 / 130).

Requests are checked at the boundary, and a request the service cannot serve gets a 4xx
with a JSON body ``{"detail": "<message>"}`` (422 also lists ``"errors"``: ``loc``, ``type``,
``msg``), never a 500 and never a dropped connection:

* 413: a body above ``max_body_bytes`` (Content-Length or streamed);
* 415: a Content-Type other than JSON (``application/json`` or ``*/*+json``; none is read
  as JSON);
* 422: a body that is not standard JSON (UTF-8; no NaN/Infinity, no lone surrogate, nesting
  within 200 levels, integers within 4,300 digits) or does not match the request schema.
  Types are checked strictly (``"5"`` is not a number, ``1.0`` not an integer), unknown
  fields are refused, and a body value is never echoed back (error bodies only name the
  field's location, escaped);
* 400: documents that conflict among themselves (an id twice, ids for some only), or
  ``skip_existing`` without ids;
* 409: an id already in the index (without ``skip_existing``) or a rerank setting other
  than the index's.

Conditions of the server rather than the request get 503 (index busy in another process,
or the service shutting down; with Retry-After), 507 (disk or database full; nothing of that
add is stored) or 500 (the database cannot be read: run ``neardup index stats --check``).
"""

# No "from __future__ import annotations": pydantic reads the model annotations, and the
# request models are local to create_app.
import errno
import json
import logging
import os
import re
import sqlite3
import threading
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Literal

from neardup.errors import InputError, NeardupError, spelled_as

__all__ = ["create_app"]

_log = logging.getLogger("neardup.serve")

#: How the index's messages name its settings to a client of the service (JSON fields).
_SERVICE_SPELLING = {"id_field": 'an "id" on each document', "ids": 'an "id" on each document',
                     "skip_existing": '"skip_existing": true'}

#: Media types read as JSON (besides a request without Content-Type).
_JSON_TYPE = re.compile(r"^application/(json|[\w.+-]*\+json)$")


class _BodyLimit:
    """ASGI middleware: 413 for a request body above ``limit`` bytes, whether announced by
    Content-Length or streamed."""

    def __init__(self, app, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                return await _send_json(send, 413, _too_large(self.limit))
        # Read the body first (the app would buffer it anyway), stopping at the limit.
        chunks, seen = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            seen += len(message.get("body", b""))
            if seen > self.limit:
                return await _send_json(send, 413, _too_large(self.limit))
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        replay = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def replayed():
            return replay.pop() if replay else await receive()

        await self.app(scope, replayed, send)


def _too_large(limit: int) -> dict[str, Any]:
    return {"detail": f"request body above the limit of {limit} bytes "
                      f"({limit / (1 << 20):g} MiB, `neardup serve --max-body-mib`); send fewer "
                      "or shorter documents per request"}


async def _send_json(send, status: int, content: dict[str, Any]) -> None:
    body = _dumps(content)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def _dumps(content: Any) -> bytes:
    """JSON bytes that can always be sent: UTF-8, and a string that UTF-8 cannot encode
    (a lone surrogate, e.g. from a file name) is written with \\u escapes instead."""
    try:
        return json.dumps(content, ensure_ascii=False, allow_nan=False,
                          separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(content, ensure_ascii=True, allow_nan=False,
                          separators=(",", ":")).encode("ascii")


def _safe(value: Any, limit: int = 80) -> str:
    """``value`` as text fit for an error body: at most ``limit`` characters, anything that
    UTF-8 cannot encode escaped."""
    text = value if isinstance(value, str) else str(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


_SURROGATE = re.compile(rb"(?<!\\)(?:\\\\)*\\u([dD][89a-fA-F][0-9a-fA-F]{2})")


def _lone_surrogate(body: bytes) -> str | None:
    """The first ``\\uD800``-style escape in a JSON body that is a lone surrogate (not a
    high one directly followed by a low one), as written; None if there is none."""
    pending = None  # an unpaired high surrogate: (its end offset, its text)
    for m in _SURROGATE.finditer(body):
        high = m.group(1)[1:2].lower() in b"89ab"
        if pending is not None:
            if not high and m.start(1) - 2 == pending[0]:
                pending = None
                continue
            return pending[1]
        if not high:
            return "\\" + m.group(0).lstrip(b"\\").decode("ascii")
        pending = (m.end(), "\\" + m.group(0).lstrip(b"\\").decode("ascii"))
    return pending[1] if pending else None


def _location(loc: tuple) -> str:
    """pydantic's error location as a path into the body: ``documents[2].text``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            part = _safe(part, 40)
            out += f".{part}" if out else part
    return out or "body"


class _Refused(Exception):
    """A request answered with ``status`` and ``{"detail": detail, **extra}``."""

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None,
                 **extra: Any) -> None:
        super().__init__(detail)
        self.status, self.detail, self.headers, self.extra = status, detail, headers, extra


class _Gate:
    """Counts the index operations in flight, so that shutdown closes the index only
    after the last one (also one that outlived uvicorn's graceful timeout)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._busy = 0
        self._closed = False

    @contextmanager
    def using(self):
        with self._cond:
            if self._closed:
                raise _Refused(503, "the service is shutting down; retry against the new one",
                               headers={"Retry-After": "5"})
            self._busy += 1
        try:
            yield
        finally:
            with self._cond:
                self._busy -= 1
                self._cond.notify_all()

    def close(self, timeout: float) -> bool:
        """Refuse new operations; wait for those in flight. True once idle."""
        with self._cond:
            self._closed = True
            return self._cond.wait_for(lambda: self._busy == 0, timeout)


def _strip_caller(message: str) -> str:
    """A library message without its Python caller prefix (``Index.add: ``)."""
    return re.sub(r"^Index(\.\w+)?: ", "", message)


def _database_error(exc: BaseException, directory: Any) -> _Refused:
    """The answer to an error of the database or the disk, in the service's words."""
    # The first error is the one that counts: a failed ROLLBACK after SQLite has already
    # rolled back (as it does when the disk is full) raises a second one on top of it.
    chain, seen = [], exc
    while seen is not None and len(chain) < 10:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    text = " | ".join(str(e) for e in chain).lower()
    if any(isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT) for e in chain):
        text += " disk is full"
    if "full" in text:
        return _Refused(507, "the disk or the index database is full; nothing of this request "
                             "was stored. Free space (or run `neardup index compact` after "
                             "deletes) and retry.")
    if "locked" in text or "busy" in text:
        return _Refused(503, "the index is busy in another process (e.g. `neardup index add` "
                             "or `compact`); retry later.", headers={"Retry-After": "5"})
    cause = _safe(chain[-1], 200)
    return _Refused(500, f"the index database could not be read or written ({cause}); "
                         f"check it with `neardup index stats --check {directory}`.")


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """A pydantic JSON schema with its ``$defs`` inlined (for the OpenAPI page)."""
    defs = schema.pop("$defs", {})

    def walk(node):
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return walk(dict(defs[ref.rsplit("/", 1)[1]]))
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema)


def create_app(directory: str | os.PathLike, *, max_documents: int = 1000,
               max_text_chars: int = 1_000_000, max_body_bytes: int = 32 << 20,
               max_top_k: int = 100, shutdown_timeout: float = 60.0):
    """The FastAPI application serving the index in ``directory``.

    Parameters
    ----------
    directory : path
        An index made by ``neardup index create``; opened (and checked) at startup.
    max_documents : int, default 1000
        Documents per query or add request.
    max_text_chars : int, default 1_000_000
        Characters per document text.
    max_body_bytes : int, default 32 MiB
        Request body size (0: no limit).
    max_top_k : int, default 100
        Largest ``top_k`` a query may ask for.
    shutdown_timeout : float, default 60
        Seconds the shutdown waits for index operations still running before it closes
        the index.
    """
    try:
        from fastapi import FastAPI, Request
        from fastapi.responses import JSONResponse
        from pydantic import BaseModel, ConfigDict, Field, ValidationError
        from starlette.concurrency import run_in_threadpool
        from starlette.exceptions import HTTPException as StarletteHTTPException
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "neardup serve needs FastAPI and uvicorn: pip install 'neardup[serve]'"
        ) from exc

    from neardup.index import DuplicateIdError, Index, IndexMismatchError
    from neardup.index._errors import IndexBusyError, IndexFormatError, IndexStorageError
    from neardup.index._store import present_ids

    class _JSON(JSONResponse):
        def render(self, content: Any) -> bytes:
            return _dumps(content)

    index = Index(directory)  # fails here, before serving, on a foreign or damaged index
    gate = _Gate()
    strict = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    class Document(BaseModel):
        model_config = strict
        id: str | None = Field(default=None, min_length=1, max_length=1024)
        text: str = Field(max_length=max_text_chars)

    class RerankSetting(BaseModel):
        """The rerank verification the client expects (refused with 409 unless it is
        the index's; unset fields take their defaults, as for Index.create)."""
        model_config = strict
        scorer: Literal["verifier", "cross-encoder", "none"]
        model: str | None = Field(default=None, min_length=1, max_length=4096)
        threshold: float | None = Field(default=None, ge=0.0, le=1.0)
        max_chars: int | None = Field(default=None, ge=1, le=1 << 40)

    class QueryRequest(BaseModel):
        model_config = strict
        documents: list[Document] = Field(min_length=1, max_length=max_documents)
        top_k: int = Field(default=10, ge=1, le=max_top_k)
        rerank: RerankSetting | None = None

    class AddRequest(BaseModel):
        model_config = strict
        documents: list[Document] = Field(min_length=1, max_length=max_documents)
        skip_existing: bool = False
        rerank: RerankSetting | None = None

    def parse(request: Request, body: bytes, model):
        """The request body as ``model``, or a 415/422 that echoes none of it."""
        media = request.headers.get("content-type")
        if media is not None and not _JSON_TYPE.match(media.split(";")[0].strip().lower()):
            raise _Refused(415, f"send the body as JSON with the header Content-Type: "
                                f"application/json (got {_safe(media, 60)!r})")
        try:
            return model.model_validate_json(body)
        except ValidationError as exc:
            errors = [{"loc": _location(e["loc"]), "type": e["type"], "msg": _safe(e["msg"], 200)}
                      for e in exc.errors(include_url=False, include_input=False,
                                          include_context=False)]
            first = errors[0]
            if first["type"] == "json_invalid":
                lone = _lone_surrogate(body)
                detail = ("the request body is not standard JSON in UTF-8: "
                          + (f"it holds the lone surrogate escape {lone}, which is not a "
                             "Unicode character (send text as valid Unicode)" if lone else
                             first["msg"].removeprefix("Invalid JSON: ")))
            else:
                detail = f"{first['loc']}: {first['msg']}"
                if len(errors) > 1:
                    detail += f" (and {len(errors) - 1} more error(s), see \"errors\")"
            raise _Refused(422, detail, errors=errors[:20]) from None

    def check_rerank(setting) -> None:
        """409 unless ``setting`` (what the client expects) is the index's rerank
        verification. A model the client names is compared as a string with the index's
        own: the server never loads a model or reads a path a request names."""
        if setting is None:
            return
        mine = index.rerank
        sent = setting.model_dump(exclude_none=True)
        want = None if setting.scorer == "none" else sent

        def refuse():
            theirs = "uses no rerank verification" if mine is None else (
                "was built with rerank verification " + json.dumps(mine, sort_keys=True))
            return _Refused(409, f"this index {theirs}; the request asks for "
                                 f"{_safe(json.dumps(sent, sort_keys=True), 300)}. Omit \"rerank\" "
                                 "to use the index's own (GET /stats shows it).",
                            index_rerank=mine)

        if (want is None) != (mine is None):
            raise refuse()
        if want is None:
            return
        own_model = mine.get("model")
        if want["scorer"] != mine.get("scorer") or want.get("model", own_model) != own_model:
            raise refuse()
        try:  # the defaults of unset fields are the index's own model's
            index.check_rerank({**want, "model": own_model})
        except IndexMismatchError:
            raise refuse() from None
        except Exception as exc:  # the index's own model is gone or unreadable
            raise _Refused(500, "the index's rerank model cannot be loaded "
                                f"({_safe(exc, 200)}); restore it, or serve another index"
                           ) from None

    def run(operation):
        """``operation()`` on the index, its failures as answers in the service's words."""
        with gate.using(), spelled_as(_SERVICE_SPELLING.get):
            try:
                return operation()
            except _Refused:
                raise
            except DuplicateIdError:
                raise  # the caller words it
            except IndexMismatchError as exc:
                raise _Refused(409, _safe(_strip_caller(str(exc)), 1000)) from None
            except InputError as exc:
                raise _Refused(400, _safe(_strip_caller(str(exc)), 1000)) from None
            except IndexBusyError as exc:
                raise _Refused(503, _safe(_strip_caller(str(exc)), 1000),
                               headers={"Retry-After": "5"}) from None
            except (sqlite3.Error, OSError, IndexStorageError, IndexFormatError) as exc:
                # The index words storage failures as its own errors; the service answers
                # them by what failed (full: 507; damaged: 500 naming the check).
                _log.error("index operation failed: %s", exc)
                raise _database_error(exc, index.path) from None
            except NeardupError as exc:
                raise _Refused(500, _safe(_strip_caller(str(exc)), 1000)) from None

    def stored_among(ids: list[str]) -> list[str]:
        """Which of ``ids`` the index holds (for the 409's message)."""
        def lookup():
            with index._store.read() as con:  # noqa: SLF001 - same package
                return sorted(present_ids(con, ids))
        try:
            return run(lookup)
        except Exception:  # only used to word an error; never fail on it
            return []

    @asynccontextmanager
    async def lifespan(app):
        yield
        # uvicorn has finished the requests in flight (or given up on them after its
        # graceful timeout): close the index once no operation is running on it.
        if await run_in_threadpool(gate.close, shutdown_timeout):
            index.close()
        else:
            _log.warning("an index operation is still running after %ss; exiting without "
                         "closing the index (committed adds are safe)", shutdown_timeout)

    def body_schema(model) -> dict[str, Any]:
        return {"requestBody": {"required": True, "content": {"application/json": {
            "schema": _inline_refs(model.model_json_schema())}}}}

    app = FastAPI(title="neardup index", lifespan=lifespan, default_response_class=_JSON)
    app.state.index = index

    @app.exception_handler(_Refused)
    async def _refused(request: Request, exc: _Refused):
        return _JSON(status_code=exc.status, content={"detail": exc.detail, **exc.extra},
                     headers=exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException):  # 404, 405
        return _JSON(status_code=exc.status_code, content={"detail": _safe(exc.detail, 200)},
                     headers=getattr(exc, "headers", None))

    @app.get("/health")
    async def health():
        return {"status": "ok", "documents": await run_in_threadpool(run, index.__len__)}

    @app.get("/stats")
    async def stats():
        return await run_in_threadpool(run, index.stats)

    @app.post("/query", openapi_extra=body_schema(QueryRequest))
    async def query(request: Request):
        body = parse(request, await request.body(), QueryRequest)
        check_rerank(body.rerank)
        docs = body.documents
        ids = [d.id if d.id is not None else str(i) for i, d in enumerate(docs)]
        texts = [d.text for d in docs]
        result = await run_in_threadpool(
            run, lambda: index.query(texts, ids, top_k=body.top_k).records())
        return {"results": result}

    @app.post("/add", openapi_extra=body_schema(AddRequest))
    async def add(request: Request):
        body = parse(request, await request.body(), AddRequest)
        check_rerank(body.rerank)
        docs = body.documents
        given = [d.id is not None for d in docs]
        if any(given) and not all(given):
            missing = given.index(False) if given[0] else given.index(True)
            raise _Refused(400, "give an id for every document or for none (documents[0] "
                                f"{'has' if given[0] else 'has none'}, documents[{missing}] "
                                f"{'has none' if given[0] else 'has'})")
        ids = [d.id for d in docs] if all(given) else None
        if ids is None and body.skip_existing:
            # Without ids the index numbers the documents itself: a number that is already
            # stored belongs to another document, and skipping would drop a new one.
            raise _Refused(400, "\"skip_existing\": true needs an id for every document "
                                "(it skips documents whose id is already stored; documents "
                                "without ids are always new)")
        if ids is not None:
            first: dict[str, int] = {}
            for i, doc_id in enumerate(ids):
                if doc_id in first:
                    raise _Refused(400, f"documents[{first[doc_id]}] and documents[{i}] have the "
                                        f"same id {_safe(doc_id)!r}; ids must be unique",
                                   id=_safe(doc_id, 1024))
                first[doc_id] = i
        texts = [d.text for d in docs]
        try:
            result = await run_in_threadpool(
                run, lambda: index.add(texts, ids, skip_existing=body.skip_existing))
        except DuplicateIdError:
            if ids is None:
                raise _Refused(409, "the numbers the index gives documents without ids are "
                                    "already used as ids of stored documents; nothing was "
                                    "added. Give every document an id.") from None
            stored = await run_in_threadpool(stored_among, ids)
            some = ", ".join(repr(_safe(i)) for i in stored[:5])
            raise _Refused(409, f"{len(stored) or 'some'} of the ids are already in the index"
                                + (f" (e.g. {some})" if some else "")
                                + "; nothing was added. Send \"skip_existing\": true to skip "
                                  "those documents, e.g. when resuming an interrupted load.",
                           ids=stored[:100]) from None
        rows = result.table().to_pylist()
        skipped = sum(r["status"] == "skipped" for r in rows)
        return {"documents": rows, "added": len(rows) - skipped, "skipped": skipped,
                "merged_clusters": result.merged_clusters}

    return _BodyLimit(app, max_body_bytes) if max_body_bytes else app
