"""uvicorn's HTTP/1.1 protocol (h11) with two things it leaves out: a deadline for a request's
headers (a client that trickles them, one byte at a time, is answered `408` and cut off instead
of holding its connection for ever), and error answers in the API's own JSON shape with the
status h11 recommends (`431` for headers too large, `400` for a malformed request line or a
`Content-Length` that is not a number), instead of a plain-text 400 for everything."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from switchyard.serving.limits import ErrorBody, Limits


@dataclass(frozen=True)
class _Guard:
    limits: Limits
    error_body: ErrorBody


class _Connection(h11.Connection):
    """Remembers the status h11 suggests for the last request it could not parse."""

    error_status = 400

    def next_event(self) -> Any:
        try:
            return super().next_event()
        except h11.RemoteProtocolError as exc:
            self.error_status = exc.error_status_hint
            raise


class GuardedH11Protocol(H11Protocol):
    """Configured per server by `bind(limits, error_body)` (a subclass each)."""

    guard: ClassVar[_Guard]

    @classmethod
    def bind(cls, limits: Limits, error_body: ErrorBody) -> type[GuardedH11Protocol]:
        return type("BoundGuardedH11Protocol", (cls,), {"guard": _Guard(limits, error_body)})

    @property
    def limits(self) -> Limits:
        return self.guard.limits

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn = _Connection(h11.SERVER, self.limits.max_header_bytes)
        self._header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_deadline()

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE and self._header_deadline is not None:
            self._header_deadline.cancel()  # the headers are in
            self._header_deadline = None

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:
            if self._header_deadline is None:
                self._arm_header_deadline()  # the first bytes of the next request
            if self._head_too_large(data):
                return
        super().data_received(data)

    def _head_too_large(self, data: bytes) -> bool:
        """h11 bounds only a head still incomplete; one that arrives whole in a read is
        measured here, so the limit holds however the bytes are split."""
        buffered = self.conn.trailing_data[0] + data
        end = buffered.find(b"\r\n\r\n")
        if (end if end >= 0 else len(buffered)) <= self.limits.max_header_bytes:
            return False
        self._answer(431, "request_header_fields_too_large", "the request's headers are too large")
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None
        super().connection_lost(exc)

    def _arm_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
        self._header_deadline = self.loop.call_later(
            self.limits.header_seconds, self._headers_too_slow
        )

    def _headers_too_slow(self) -> None:
        self._header_deadline = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self.conn.trailing_data[0]:  # part of a request came, and stalled
            self._answer(
                408,
                "request_timeout",
                f"the request's headers did not arrive within {self.limits.header_seconds:g} s",
            )
        else:  # a new connection that sent nothing: nothing to answer
            self.transport.close()

    def send_400_response(self, msg: str) -> None:
        status = getattr(self.conn, "error_status", 400)
        if status == 431:
            self._answer(
                431, "request_header_fields_too_large", "the request's headers are too large"
            )
        else:
            self._answer(400, "bad_request", "malformed HTTP request (request line or headers)")

    def _answer(self, status: int, code: str, message: str) -> None:
        body = self.guard.error_body(status, code, message)
        head = (
            f"HTTP/1.1 {status} {_PHRASES.get(status, 'Error')}\r\n"
            "Content-Type: application/json; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n"
        ).encode()
        # written raw: h11's state may be ERROR after a request it could not parse
        self.transport.write(head + body)
        self.transport.close()


_PHRASES = {
    400: "Bad Request",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
}
