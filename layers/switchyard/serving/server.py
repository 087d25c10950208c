"""An ASGI app served by uvicorn on a socket bound at construction (so port 0 is known at once),
with the interface of the standard library's servers that `EngineProcess` and the tests drive:
`serve_forever()` from a thread, `shutdown()` from another, then `server_close()`."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol, TypeVar

import uvicorn
from starlette.types import ASGIApp

from switchyard.serving.limits import BodyLimit, ErrorBody, Limits
from switchyard.serving.protocol import GuardedH11Protocol

log = logging.getLogger("switchyard.serving")

SHUTDOWN_SECONDS = 5
"""Requests under way when the server stops get this long to finish."""


class HttpServer:
    def __init__(
        self,
        app: ASGIApp,
        host: str,
        port: int,
        *,
        limits: Limits,
        error_body: ErrorBody,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.app = app
        self.limits = limits
        self._on_close = on_close
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # proto IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and
        # without it the body, written after the headers, waits 40 ms for a delayed ACK
        self.socket = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind((host, port))
            self.socket.listen(limits.backlog)
        except BaseException:
            self.socket.close()
            raise
        self.server_address: tuple[str, int] = self.socket.getsockname()[:2]
        config = uvicorn.Config(
            BodyLimit(app, limits=limits, error_body=error_body),
            http=GuardedH11Protocol.bind(limits, error_body),
            lifespan="off",
            log_config=None,
            access_log=False,
            server_header=False,
            backlog=limits.backlog,
            limit_concurrency=limits.max_connections,
            timeout_keep_alive=limits.keep_alive_seconds,
            timeout_graceful_shutdown=SHUTDOWN_SECONDS,
        )
        self._uvicorn = uvicorn.Server(config)
        self._stopped = threading.Event()
        self._stopped.set()

    @property
    def url(self) -> str:
        host, port = self.server_address
        shown = "127.0.0.1" if host in ("", "0.0.0.0") else host
        return f"http://{f'[{shown}]' if ':' in shown else shown}:{port}"

    def serve_forever(self, poll_interval: float = 0.1) -> None:
        """Serve until `shutdown()`; `poll_interval` is accepted for the standard library's
        signature (uvicorn checks for shutdown every 0.1 s)."""
        self._stopped.clear()
        try:
            self._uvicorn.run(sockets=[self.socket])
        finally:
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop serving; returns once `serve_forever` has returned."""
        self._uvicorn.should_exit = True
        self._stopped.wait(SHUTDOWN_SECONDS + 5)

    def server_close(self) -> None:
        self.socket.close()
        if self._on_close is not None:
            on_close, self._on_close = self._on_close, None
            on_close()


class _Serving(Protocol):
    def serve_forever(self, poll_interval: float = ...) -> None: ...
    def shutdown(self) -> None: ...
    def server_close(self) -> None: ...


_Server = TypeVar("_Server", bound=_Serving)


@contextmanager
def serving_in_thread(server: _Server, name: str) -> Iterator[_Server]:
    """`server` answering from a daemon thread while the block runs; shut down and closed after."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, name=name, daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=SHUTDOWN_SECONDS + 5)
