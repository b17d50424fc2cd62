"""``neardup serve``: the index as an HTTP JSON service (see :mod:`neardup.index.service`).

The command binds the address itself, so that a port in use or an address that does not
exist is a one-line error naming ``--host``/``--port`` (and ``--port 0`` can say which port
it got), then hands the socket to uvicorn. On SIGTERM or SIGINT the server stops accepting
connections, finishes the requests in flight (at most ``--shutdown-timeout`` seconds),
closes the index, prints one line on stderr and exits with 143 (SIGTERM) or 130 (SIGINT),
as ``neardup dedup`` does, without a traceback.
"""

from __future__ import annotations

import signal
import socket
import sys
from contextlib import contextmanager
from pathlib import Path

import click

from neardup.errors import NeardupError

__all__ = ["serve_command", "EXIT_INTERRUPTED", "EXIT_TERMINATED"]

#: Exit codes after Ctrl-C (SIGINT) and SIGTERM, as shells report them (128 + signal).
from neardup.cli._checks import EXIT_INTERRUPTED, EXIT_TERMINATED


def _bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port``, or a ClickException naming the flag."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        raise click.BadParameter(f"{host!r} is not an address of this machine ({exc}).",
                                 param_hint="'--host'") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if port and exc.errno in (98, 48, 10048):  # EADDRINUSE (Linux, macOS, Windows)
            raise click.ClickException(
                f"port {port} on {host} is in use by another program; choose another --port "
                "(or --port 0 for any free one).") from None
        raise click.ClickException(
            f"cannot listen on {host} port {port} ({exc.strerror or exc}); check --host and "
            "--port (ports below 1024 need privileges).") from None
    sock.set_inheritable(True)
    return sock


@click.command("serve")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (0.0.0.0 exposes the index to the network).")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True,
              help="Port to listen on (0: any free port; the one chosen is printed on stderr).")
@click.option("--max-documents", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Documents per query or add request (more: 422).")
@click.option("--max-text-chars", type=click.IntRange(min=1), default=1_000_000,
              show_default=True, help="Characters per document (more: 422).")
@click.option("--max-body-mib", type=click.IntRange(min=1, max=4096), default=32,
              show_default=True, help="Request body size, MiB (more: 413).")
@click.option("--shutdown-timeout", type=click.IntRange(min=1), default=60, show_default=True,
              help="Seconds to let requests in flight finish after SIGTERM/SIGINT.")
def serve_command(directory: Path, host: str, port: int, max_documents: int,
                  max_text_chars: int, max_body_mib: int, shutdown_timeout: int) -> None:
    """Serve the index in DIRECTORY over HTTP: POST /query, POST /add, GET /stats, GET /health.

    Queries run concurrently; adds one at a time, each answered after it is committed.
    A malformed request gets a 4xx with a JSON body {"detail": ...}: 413 for a body above
    --max-body-mib, 415 for a body that is not JSON, 422 for JSON that does not fit the
    API, 400 for conflicting documents, 409 for an id already stored.

    SIGTERM or Ctrl-C stops accepting requests, finishes those in flight, closes the index
    and exits with 143 (SIGTERM) or 130 (Ctrl-C). Every add that was answered is stored.

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
    from neardup.cli.index import index_message, spell_index_setting
    from neardup.errors import spelled_as
    from neardup.index.service import create_app

    try:
        # Hints in the index commands' spelling (`neardup index create DIR ...`).
        with spelled_as(spell_index_setting):
            app = create_app(directory, max_documents=max_documents, max_text_chars=max_text_chars,
                             max_body_bytes=max_body_mib << 20, shutdown_timeout=shutdown_timeout)
    except ImportError as exc:
        raise click.ClickException(str(exc)) from None
    except (NeardupError, ValueError, OSError) as exc:
        # The library names its Python callers ("Index.open: "); the command names the
        # directory instead.
        message = index_message(exc)
        raise click.ClickException(message if str(directory) in message
                                   else f"{directory}: {message}") from None
    sock = _bind(host, port)
    bound = sock.getsockname()
    shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    click.echo(f"neardup serve: {directory} on http://{shown}:{bound[1]}", err=True)

    class _Server(uvicorn.Server):
        """uvicorn's server, but a signal ends it with an exit code rather than by
        re-raising the signal once it has shut down."""

        stopped_by: int | None = None

        @contextmanager
        def capture_signals(self):
            previous = {sig: signal.signal(sig, self.handle_exit)
                        for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

        def handle_exit(self, sig, frame) -> None:
            if self.stopped_by is None:
                self.stopped_by = sig
            super().handle_exit(sig, frame)

    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=shutdown_timeout,
                            lifespan="on")
    server = _Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    if server.stopped_by is not None:
        name = "SIGTERM" if server.stopped_by == signal.SIGTERM else "SIGINT"
        click.echo(f"neardup serve: stopped by {name}; every answered add is stored.", err=True)
        sys.exit(EXIT_TERMINATED if server.stopped_by == signal.SIGTERM else EXIT_INTERRUPTED)
