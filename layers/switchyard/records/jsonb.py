"""Compact JSON for jsonb parameters, shared by the engine's rows and the run records."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

_fast: Callable[[Any], bytes] | None
try:  # an order of magnitude faster than `json`; the Lambda layer ships without it
    import orjson

    _fast = orjson.dumps
    _FAST_ERRORS: tuple[type[Exception], ...] = (TypeError, orjson.JSONEncodeError)
except ImportError:  # pragma: no cover - exercised on Lambda
    _fast = None
    _FAST_ERRORS = (TypeError,)


def json_text(value: Any) -> str:
    """Compact JSON for a jsonb parameter. What orjson refuses (integers beyond 64 bits,
    non-string keys, NaN) goes through `json`, which PostgreSQL then judges as before."""
    if _fast is not None:
        try:
            return _fast(value).decode()
        except _FAST_ERRORS:
            pass
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
