"""What a request may cost the server, and the ASGI middleware that holds every request to it.

The body is read here, before any route sees it: a `Content-Length` over the limit is answered
`413` at once (the body is never read, the connection closed); a body without a length (chunked)
is counted as it streams and refused the moment it passes the limit; a body that stalls is cut
off at its deadline with `408`. What reaches the app is the whole body, replayed from memory, so
routes can `await request.body()` knowing it is bounded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send


@dataclass(frozen=True)
class Limits:
    max_body: int = 1024 * 1024
    """Bytes of a request body."""
    header_seconds: float = 10.0
    """From a connection's first byte of a request to the end of its headers."""
    body_seconds: float = 30.0
    """From the end of the headers to the end of the body."""
    keep_alive_seconds: int = 60
    """An idle keep-alive connection is closed after this long."""
    max_header_bytes: int = 64 * 1024
    """The request line and headers together (431 beyond)."""
    backlog: int = 2048
    """Connections the kernel queues before the server accepts them."""
    max_connections: int = 1000
    """Open connections at once; a request beyond is answered 503."""


ErrorBody = Callable[[int, str, str], bytes]
"""(status, code, message) → the response body in the API's own error shape."""


class BodyLimit:
    """ASGI middleware: the limits above, for HTTP requests of `app`."""

    def __init__(self, app: ASGIApp, *, limits: Limits, error_body: ErrorBody) -> None:
        self.app = app
        self.limits = limits
        self.error_body = error_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = _content_length(scope)
        if length is not None and length > self.limits.max_body:
            await self._refuse(send, 413, "payload_too_large", self._too_large(length))
            return
        try:
            body = await asyncio.wait_for(self._read(receive), self.limits.body_seconds)
        except _TooLargeError:
            await self._refuse(send, 413, "payload_too_large", self._too_large(None))
            return
        except TimeoutError:
            await self._refuse(
                send,
                408,
                "request_timeout",
                f"the body did not arrive within {self.limits.body_seconds:g} s",
            )
            return
        except _DisconnectedError:
            return
        await self.app(scope, _replay(body, receive), send)

    async def _read(self, receive: Receive) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _DisconnectedError
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limits.max_body:
                raise _TooLargeError
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _too_large(self, length: int | None) -> str:
        given = f"the body is {length} bytes" if length is not None else "the body is larger"
        return f"{given}; at most {self.limits.max_body} are read"

    async def _refuse(self, send: Send, status: int, code: str, message: str) -> None:
        body = self.error_body(status, code, message)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),  # the body was not read: the stream is out of step
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


class _TooLargeError(Exception):
    pass


class _DisconnectedError(Exception):
    pass


def _content_length(scope: Scope) -> int | None:
    """The declared length (the HTTP parser has refused one that is not a number)."""
    for name, value in scope["headers"]:
        if name == b"content-length":
            return int(value) if value.strip().isdigit() else None
    return None


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # http.disconnect, when the client goes

    return replayed
