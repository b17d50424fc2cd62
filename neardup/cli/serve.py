"""``neardup serve``: the index as an HTTP JSON service (see :mod:`neardup.index.service`)."""

from __future__ import annotations

from pathlib import Path

import click

from neardup.errors import NeardupError

__all__ = ["serve_command"]


@click.command("serve")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (0.0.0.0 exposes the index to the network).")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True)
@click.option("--max-documents", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Documents per query or add request.")
@click.option("--max-text-chars", type=click.IntRange(min=1), default=1_000_000,
              show_default=True, help="Characters per document.")
@click.option("--max-body-mib", type=click.IntRange(min=1), default=32, show_default=True,
              help="Request body size, MiB.")
@click.option("--shutdown-timeout", type=click.IntRange(min=1), default=60, show_default=True,
              help="Seconds to let requests in flight finish after SIGTERM/SIGINT.")
def serve_command(directory: Path, host: str, port: int, max_documents: int,
                  max_text_chars: int, max_body_mib: int, shutdown_timeout: int) -> None:
    """Serve the index in DIRECTORY over HTTP: POST /query, POST /add, GET /stats, GET /health.

    Queries run concurrently; adds one at a time, each answered after it is committed.
    SIGTERM or Ctrl-C stops accepting requests and finishes those in flight.

    \b
    Example:
      neardup serve news.idx --port 8080
      curl -s localhost:8080/query -H 'content-type: application/json' \\
           -d '{"documents": [{"text": "..."}]}'
    """
    try:
        import uvicorn
    except ImportError as exc:
        raise click.ClickException(
            "neardup serve needs FastAPI and uvicorn: pip install 'neardup[serve]'") from exc
    from neardup.index.service import create_app

    try:
        app = create_app(directory, max_documents=max_documents, max_text_chars=max_text_chars,
                         max_body_bytes=max_body_mib << 20)
    except (NeardupError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    uvicorn.run(app, host=host, port=port, log_level="warning",
                timeout_graceful_shutdown=shutdown_timeout)
