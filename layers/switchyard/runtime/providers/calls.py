"""One model call as a step makes it: rate-limit gate, then the model, then its fallbacks.

`fallback_models` are tried in order when the provider reports overload or an outage for the
model (529, 5xx). A 429 is not an overload: its Retry-After is recorded for the whole account and
the step fails with `rate_limit`, to be retried after at least that long.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from switchyard.runtime.clock import Deadline
from switchyard.runtime.errors import RateLimitedError, StepTimeoutError
from switchyard.runtime.providers.base import (
    ModelOverloadedError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
)
from switchyard.runtime.rate_limits import RateLimitGate


def call_model(
    provider: ModelProvider,
    request: ModelRequest,
    *,
    fallback_models: Sequence[str] = (),
    gate: RateLimitGate | None = None,
    deadline: Deadline | None = None,
) -> ModelResponse:
    """The first answer among `request.model` and its fallbacks."""
    gate = gate or RateLimitGate()
    last: ModelOverloadedError | None = None
    for model in (request.model, *fallback_models):
        attempt = replace(request, model=model)
        if deadline is not None:
            remaining = deadline.remaining() - gate.margin
            if remaining <= 0:
                raise StepTimeoutError(f"no time left to call {model}")
            timeout = remaining if request.timeout is None else min(request.timeout, remaining)
            attempt = replace(attempt, timeout=timeout)
        gate.wait(provider.name, model, deadline)
        try:
            return provider.complete(attempt)
        except RateLimitedError as exc:
            gate.record(provider.name, model, exc.retry_after)
            raise
        except ModelOverloadedError as exc:
            last = exc
            continue
    assert last is not None
    if fallback_models:
        raise ModelOverloadedError(
            f"{last.message} (fallback models {', '.join(fallback_models)} too)"
        )
    raise last
