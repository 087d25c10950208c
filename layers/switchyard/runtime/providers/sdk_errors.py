"""Exceptions of the `anthropic` SDK (direct and Bedrock) as step runtime errors.

429                               rate_limit, with the Retry-After the response carried
529 overloaded, other 5xx         transient (ModelOverloadedError: fallback models may answer)
408, the call timing out          timeout
connection errors                 transient
context length, other 4xx         permanent
"""

from __future__ import annotations

import anthropic

from switchyard.contract.step_errors import (
    PermanentError,
    RateLimitedError,
    StepError,
    StepTimeoutError,
    TransientError,
)
from switchyard.runtime.providers.base import ModelOverloadedError


def retry_after_seconds(headers: object) -> float | None:
    """Seconds from `retry-after-ms` or `retry-after` (seconds; an HTTP date is ignored)."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = get(name)
        if raw is None:
            continue
        try:
            value = float(raw) / scale
        except ValueError:
            continue
        if value >= 0:
            return value
    return None


def _api_message(exc: anthropic.APIStatusError) -> str:
    return exc.api_message or exc.message


def map_sdk_error(exc: Exception, *, provider: str, model: str) -> StepError:
    """The runtime error for an exception the SDK raised on one call of `model`."""
    where = f"{provider} {model}"
    if isinstance(exc, anthropic.RateLimitError):
        seconds = retry_after_seconds(exc.response.headers)
        return RateLimitedError(f"{where}: rate limited: {_api_message(exc)}", retry_after=seconds)
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        if status == 529 or exc.type == "overloaded_error":
            return ModelOverloadedError(f"{where}: overloaded: {_api_message(exc)}")
        if status >= 500:
            return ModelOverloadedError(f"{where}: server error {status}: {_api_message(exc)}")
        if status == 408:
            return StepTimeoutError(f"{where}: request timeout: {_api_message(exc)}")
        text = _api_message(exc)
        if _is_context_length(text):
            return PermanentError(f"{where}: the prompt does not fit the context window: {text}")
        return PermanentError(f"{where}: error {status}: {text}")
    if isinstance(exc, anthropic.APITimeoutError):
        return StepTimeoutError(f"{where}: timed out")
    if isinstance(exc, anthropic.APIConnectionError):
        return TransientError(f"{where}: connection failed: {exc.message}")
    if isinstance(exc, anthropic.APIResponseValidationError):
        return TransientError(f"{where}: unexpected response: {exc.message}")
    if isinstance(exc, anthropic.AnthropicError):
        return PermanentError(f"{where}: {exc}")
    raise exc


def _is_context_length(text: str) -> bool:
    lowered = text.lower()
    return any(
        needle in lowered
        for needle in ("prompt is too long", "context window", "context length", "too many tokens")
    )
