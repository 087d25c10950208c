"""A request as handlers see it (apart from any HTTP server), and the response they return.

Bodies are JSON both ways. A request body must be sent as `application/json` (or another `+json`
type); one with no `Content-Type` is read as JSON too, so `curl -d` needs the header only when it
would send a form."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from switchyard.api.errors import BadRequestError, UnsupportedMediaTypeError

JSON_TYPE = "application/json"


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: Mapping[str, list[str]] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    """By lower-case name."""
    body: bytes = b""
    params: Mapping[str, str] = field(default_factory=dict)
    """The route's path parameters (`/runs/{run_id}` → `run_id`), percent-decoded."""

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def query_value(self, name: str) -> str | None:
        values = self.query.get(name)
        if not values:
            return None
        if len(values) > 1:
            raise BadRequestError(f"the query parameter '{name}' is given {len(values)} times")
        return values[0]

    def check_query(self, known: Collection[str]) -> None:
        unknown = sorted(set(self.query) - set(known))
        if unknown:
            raise BadRequestError(
                f"unknown query parameter(s) {', '.join(unknown)}"
                f" (this endpoint takes: {', '.join(known) or 'none'})"
            )

    def json(self) -> Any:
        """The body's JSON value; None when there is no body."""
        if not self.body.strip():
            return None
        content_type = (self.header("content-type") or JSON_TYPE).split(";")[0].strip().lower()
        if content_type != JSON_TYPE and not content_type.endswith("+json"):
            raise UnsupportedMediaTypeError(
                f"the body must be JSON (Content-Type: {JSON_TYPE}), not {content_type}"
            )
        try:
            return json.loads(self.body, parse_constant=_not_json)
        except UnicodeDecodeError:
            raise BadRequestError("the body is not UTF-8 text", code="invalid_json") from None
        except ValueError as exc:
            raise BadRequestError(f"the body is not JSON: {exc}", code="invalid_json") from None

    def json_object(self, members: Collection[str]) -> dict[str, Any]:
        """The body as a JSON object of at most these members ({} when there is no body)."""
        value = self.json()
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise BadRequestError(f"the body must be a JSON object, not {_json_type(value)}")
        unknown = sorted(set(value) - set(members))
        if unknown:
            raise BadRequestError(
                f"unknown member(s) {', '.join(unknown)} in the body"
                f" (it takes: {', '.join(members) or 'nothing'})"
            )
        return value


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes = b""
    content_type: str = JSON_TYPE
    headers: Mapping[str, str] = field(default_factory=dict)


def json_response(status: int, data: Any, headers: Mapping[str, str] | None = None) -> Response:
    return Response(status, encode(data), headers=dict(headers or {}))


def encode(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, default=_default).encode()


def _default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON value")  # Python reads NaN and Infinity; JSON not


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null"


def optional_string(body: Mapping[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise BadRequestError(f"'{name}' must be a string, not {_json_type(value)}")
    return value


def optional_object(body: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    value = body.get(name)
    if value is not None and not isinstance(value, dict):
        raise BadRequestError(f"'{name}' must be a JSON object, not {_json_type(value)}")
    return value
