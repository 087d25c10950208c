"""Page sizes and `nextToken`s. A token is opaque to the client and names the operation and the
filters it was issued for, so a token reused with other arguments is an InvalidToken (AWS asks
callers to keep all other arguments unchanged between pages)."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from typing import Any, TypeVar

from switchyard.engine import errors

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000

T = TypeVar("T")


def page_size(request: dict[str, Any]) -> int:
    """`maxResults`, where 0 or absent means the default (the model already bounds it)."""
    return int(request.get("maxResults") or DEFAULT_PAGE_SIZE)


def issue(operation: str, filters: dict[str, Any], position: Any) -> str:
    data = {"o": operation, "f": _fingerprint(filters), "p": position}
    return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).decode()


def position(operation: str, filters: dict[str, Any], token: str | None) -> Any:
    """Where the page of `token` starts; None for the first page."""
    if token is None:
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        valid = (
            isinstance(data, dict)
            and data.get("o") == operation
            and data.get("f") == _fingerprint(filters)
            and "p" in data
        )
    except ValueError:
        valid = False
    if not valid:
        raise errors.InvalidToken(f"Invalid Token: '{token}'")
    return data["p"]


def _fingerprint(filters: dict[str, Any]) -> str:
    text = json.dumps(filters, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def offset_page(
    operation: str, filters: dict[str, Any], request: dict[str, Any], items: Sequence[T]
) -> tuple[list[T], str | None]:
    """One page of a short list that is read whole (machines, versions, aliases)."""
    start = position(operation, filters, request.get("nextToken")) or 0
    if not isinstance(start, int) or start < 0:
        raise errors.InvalidToken(f"Invalid Token: '{request.get('nextToken')}'")
    end = start + page_size(request)
    token = issue(operation, filters, end) if end < len(items) else None
    return list(items[start:end]), token


def with_token(response: dict[str, Any], token: str | None) -> dict[str, Any]:
    if token is not None:
        response["nextToken"] = token
    return response
