"""Bodies and query strings as the routes read them, and the JSON they answer with.

A request body must be sent as `application/json` (or another `+json` type); one with no
`Content-Type` is read as JSON too, so `curl -d` needs the header only when it would send a form.
Its JSON is parsed by `switchyard.serving.jsontext`: NaN, Infinity, nesting beyond 64 levels, a
NUL or a lone surrogate are refused as `400 invalid_json` (PostgreSQL could not store them)."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import Any, TypeVar

from fastapi import Request
from fastapi.responses import Response
from pydantic import BaseModel, ValidationError

from switchyard.api.errors import BadRequestError, UnsupportedMediaTypeError
from switchyard.serving import UnholdableJsonError, holdable_text_problem, loads_holdable

JSON_TYPE = "application/json"
Model = TypeVar("Model", bound=BaseModel)


class _NoBody:
    """No body at all (JSON `null` is a body, and not an object)."""

    def __repr__(self) -> str:
        return "NO_BODY"


NO_BODY: Any = _NoBody()


async def read_json(request: Request) -> Any:
    """The body's JSON value; `NO_BODY` when there is none. The body is already bounded: the
    server read it whole, up to its limit, before the route ran."""
    body = await request.body()
    if not body.strip():
        return NO_BODY
    content_type = (request.headers.get("content-type") or JSON_TYPE).split(";")[0]
    content_type = content_type.strip().lower()
    if content_type != JSON_TYPE and not content_type.endswith("+json"):
        raise UnsupportedMediaTypeError(
            f"the body must be JSON (Content-Type: {JSON_TYPE}), not {content_type}"
        )
    try:
        return loads_holdable(body)
    except UnholdableJsonError as exc:
        raise BadRequestError(
            f"the body is not JSON this API can hold: {exc}", code="invalid_json"
        ) from None


def body_model(model: type[Model], value: Any) -> Model:
    """`value` (a parsed body; `NO_BODY` is `{}`) as `model`, or 400 naming every problem."""
    if value is NO_BODY:
        value = {}
    if not isinstance(value, dict):
        raise BadRequestError(f"the body must be a JSON object, not {json_type(value)}")
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise BadRequestError("; ".join(_problems(model, exc))) from None


def _problems(model: type[BaseModel], error: ValidationError) -> list[str]:
    problems: list[str] = []
    unknown: list[str] = []
    for item in error.errors():
        name = ".".join(str(part) for part in item["loc"])
        if item["type"] == "extra_forbidden":
            unknown.append(name)
            continue
        given = item.get("input")
        ctx = item.get("ctx") or {}
        if item["type"] == "missing":
            problems.append(f"'{name}' is required")
        elif "ge" in ctx:
            problems.append(f"'{name}' must be at least {ctx['ge']}, not {given!r}")
        elif "pattern" in ctx:
            problems.append(f"'{name}' must match {ctx['pattern']}, not {given!r}")
        elif "gt" in ctx:
            problems.append(f"'{name}' must be a number above {ctx['gt']}, not {given!r}")
        elif "le" in ctx:
            problems.append(f"'{name}' must be at most {ctx['le']}, not {given!r}")
        else:
            expected = _EXPECTED.get(item["type"], "of another type")
            problems.append(f"'{name}' must be {expected}, not {json_type(given)}")
    if unknown:
        takes = ", ".join(model.model_fields) or "nothing"
        problems.insert(
            0, f"unknown member(s) {', '.join(sorted(unknown))} in the body (it takes: {takes})"
        )
    return problems


_EXPECTED = {
    "string_type": "a string",
    "dict_type": "a JSON object",
    "float_type": "a number",
    "int_type": "a whole number",
    "bool_type": "true or false",
    "list_type": "an array",
}


def check_query(request: Request, known: Collection[str]) -> None:
    """400 for a query parameter the route does not take, one given twice, or a value that
    PostgreSQL could not hold (FastAPI would silently ignore the first two)."""
    names = [name for name, _ in request.query_params.multi_items()]
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise BadRequestError(
            f"unknown query parameter(s) {', '.join(unknown)}"
            f" (this endpoint takes: {', '.join(known) or 'none'})"
        )
    for name in set(names):
        values = request.query_params.getlist(name)
        if len(values) > 1:
            raise BadRequestError(f"the query parameter '{name}' is given {len(values)} times")
        problem = holdable_text_problem(values[0])
        if problem is not None:
            raise BadRequestError(f"the query parameter '{name}' cannot be used: {problem}")


def check_path_value(name: str, value: str) -> None:
    problem = holdable_text_problem(value)
    if problem is not None:
        raise BadRequestError(f"the path's {name} cannot be used: {problem}")


def json_response(status: int, data: Any, headers: Mapping[str, str] | None = None) -> Response:
    return Response(
        encode(data),
        status_code=status,
        media_type=f"{JSON_TYPE}; charset=utf-8",
        headers={"Cache-Control": "no-store", **(headers or {})},
    )


def encode(data: Any) -> bytes:
    try:
        return json.dumps(data, ensure_ascii=False, default=_default).encode()
    except UnicodeEncodeError:  # a lone surrogate echoed from a request: escape it as JSON does
        return json.dumps(data, default=_default).encode()


def _default(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def json_type(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null"
