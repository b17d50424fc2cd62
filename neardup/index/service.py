"""The index as an HTTP JSON service (FastAPI), started by ``neardup serve DIR``.

Endpoints::

    GET  /health           {"status": "ok", "documents": n}
    GET  /stats            the index's stats (method, parameters, counts, size)
    POST /query            {"documents": [{"id"?, "text"}], "top_k"?: 10}
                           -> {"results": [{"id", "matches": [{"id", "score", "type", "cluster"}]}]}
    POST /add              {"documents": [{"id"?, "text"}], "skip_existing"?: false}
                           -> {"documents": [{"id", "cluster", "status", "duplicate_of", "score"}],
                               "merged_clusters": n}

    Both POSTs take an optional "rerank": {"scorer": "verifier" | "cross-encoder" | "none",
    "model"?, "threshold"?, "max_chars"?}: the rerank verification the client expects; a
    request naming another than the index's gets 409 (the index always uses its own, see
    ``GET /stats`` "rerank").

Queries run concurrently (FastAPI runs synchronous endpoints on a thread pool; each
thread reads its own snapshot), adds one at a time (the index's write lock). An add is
answered only after its transaction is committed with a full sync, so an acknowledged
add survives a crash or shutdown; on SIGTERM/SIGINT uvicorn stops accepting connections
and finishes the requests in flight before the index is closed.

Requests are validated at the boundary: bodies above ``max_body_bytes`` get 413, more than
``max_documents`` documents or a text above ``max_text_chars`` characters 422, malformed
JSON or fields 422, an id already in the index or a mismatched rerank setting 409; no request crashes the server.
"""

# No "from __future__ import annotations": FastAPI reads the endpoint annotations, and
# the request models are local to create_app.
import os
from contextlib import asynccontextmanager
from typing import Any, Literal

from neardup.errors import InputError, NeardupError

__all__ = ["create_app"]


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
                return await _too_large(send, self.limit)
        # Read the body first (the app would buffer it anyway), stopping at the limit.
        chunks, seen = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            seen += len(message.get("body", b""))
            if seen > self.limit:
                return await _too_large(send, self.limit)
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        replay = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def replayed():
            return replay.pop() if replay else await receive()

        await self.app(scope, replayed, send)


async def _too_large(send, limit: int) -> None:
    import json

    body = json.dumps({"detail": f"request body above the limit of {limit} bytes; send fewer "
                                 "or shorter documents per request"}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def create_app(directory: str | os.PathLike, *, max_documents: int = 1000,
               max_text_chars: int = 1_000_000, max_body_bytes: int = 32 << 20,
               max_top_k: int = 100):
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
        Request body size.
    max_top_k : int, default 100
        Largest ``top_k`` a query may ask for.
    """
    try:
        from fastapi import FastAPI, Request
        from fastapi.responses import JSONResponse
        from pydantic import BaseModel, ConfigDict, Field
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "neardup serve needs FastAPI and uvicorn: pip install 'neardup[serve]'"
        ) from exc

    from neardup.index import DuplicateIdError, Index, IndexMismatchError

    index = Index(directory)  # fails here, before serving, on a foreign or damaged index

    class Document(BaseModel):
        model_config = ConfigDict(extra="forbid")
        id: str | None = Field(default=None, min_length=1, max_length=1024)
        text: str = Field(max_length=max_text_chars)

    class RerankSetting(BaseModel):
        """The rerank verification the client expects (refused with 409 unless it is
        the index's; unset fields take their defaults, as for Index.create)."""
        model_config = ConfigDict(extra="forbid")
        scorer: Literal["verifier", "cross-encoder", "none"]
        model: str | None = Field(default=None, max_length=4096)
        threshold: float | None = Field(default=None, ge=0.0, le=1.0)
        max_chars: int | None = Field(default=None, ge=1)

    def _check_rerank(setting: RerankSetting | None) -> None:
        if setting is None:
            return
        if setting.scorer == "none":
            index.check_rerank(None)
        else:
            index.check_rerank(setting.model_dump(exclude_none=True))

    class QueryRequest(BaseModel):
        model_config = ConfigDict(extra="forbid")
        documents: list[Document] = Field(min_length=1, max_length=max_documents)
        top_k: int = Field(default=10, ge=1, le=max_top_k)
        rerank: RerankSetting | None = None

    class AddRequest(BaseModel):
        model_config = ConfigDict(extra="forbid")
        documents: list[Document] = Field(min_length=1, max_length=max_documents)
        skip_existing: bool = False
        rerank: RerankSetting | None = None

    @asynccontextmanager
    async def lifespan(app):
        yield
        index.close()  # after uvicorn has finished the requests in flight

    app = FastAPI(title="neardup index", lifespan=lifespan)
    app.state.index = index

    @app.exception_handler(DuplicateIdError)
    async def _duplicate(request: Request, exc: DuplicateIdError):
        return JSONResponse(status_code=409, content={"detail": str(exc)})

    @app.exception_handler(InputError)
    async def _input(request: Request, exc: InputError):
        return JSONResponse(status_code=400, content={"detail": str(exc)})

    @app.exception_handler(IndexMismatchError)
    async def _mismatch(request: Request, exc: IndexMismatchError):
        return JSONResponse(status_code=409, content={"detail": str(exc)})

    @app.exception_handler(NeardupError)
    async def _neardup(request: Request, exc: NeardupError):
        return JSONResponse(status_code=500, content={"detail": str(exc)})

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "documents": len(index)}

    @app.get("/stats")
    def stats() -> dict[str, Any]:
        return index.stats()

    @app.post("/query")
    def query(request: QueryRequest) -> dict[str, Any]:
        _check_rerank(request.rerank)
        docs = request.documents
        ids = [d.id if d.id is not None else str(i) for i, d in enumerate(docs)]
        result = index.query([d.text for d in docs], ids, top_k=request.top_k)
        return {"results": result.records()}

    @app.post("/add")
    def add(request: AddRequest) -> dict[str, Any]:
        _check_rerank(request.rerank)
        docs = request.documents
        given = [d.id is not None for d in docs]
        if any(given) and not all(given):
            raise InputError("add: give an id for every document or for none.")
        ids = [d.id for d in docs] if all(given) else None
        result = index.add([d.text for d in docs], ids, skip_existing=request.skip_existing)
        rows = result.table().to_pylist()
        return {"documents": rows, "merged_clusters": result.merged_clusters}

    return _BodyLimit(app, max_body_bytes) if max_body_bytes else app
