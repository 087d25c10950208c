"""One model call as a step makes it: rate-limit gate, quota, then the model, then its fallbacks.

`fallback_models` are tried in order when the provider reports overload or an outage for the
model (529, 5xx), and when the model's quota is used up for now (`throttled`): another model
with room answers instead of the step waiting. A 429 is not an overload: its Retry-After is
recorded for the whole account and the step fails with `rate_limit`, to be retried after at
least that long.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from switchyard.contract.step_errors import RateLimitedError, StepTimeoutError, ThrottledError
from switchyard.runtime.clock import Deadline
from switchyard.runtime.providers.base import (
    ModelOverloadedError,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    input_tokens,
)
from switchyard.runtime.quotas import QuotaGuard
from switchyard.runtime.rate_limits import RateLimitGate
from switchyard.stores.quota import QuotaGrant


def call_model(
    provider: ModelProvider,
    request: ModelRequest,
    *,
    fallback_models: Sequence[str] = (),
    gate: RateLimitGate | None = None,
    deadline: Deadline | None = None,
    quota: QuotaGuard | None = None,
) -> ModelResponse:
    """The first answer among `request.model` and its fallbacks."""
    gate = gate or RateLimitGate()
    overloaded: ModelOverloadedError | None = None
    throttled: ThrottledError | None = None
    for model in (request.model, *fallback_models):
        attempt = replace(request, model=model)
        if deadline is not None:
            remaining = deadline.remaining() - gate.margin
            if remaining <= 0:
                raise StepTimeoutError(f"no time left to call {model}")
            timeout = remaining if request.timeout is None else min(request.timeout, remaining)
            attempt = replace(attempt, timeout=timeout)
        gate.wait(provider.name, model, deadline)
        worst_case = input_tokens(attempt) + attempt.max_tokens
        try:
            grant = quota.admit(model, worst_case) if quota is not None else None
        except ThrottledError as exc:
            throttled = throttled or exc
            continue
        try:
            response = provider.complete(attempt)
        except RateLimitedError as exc:
            gate.record(provider.name, model, exc.retry_after)
            _give_back(quota, grant)
            raise
        except ModelOverloadedError as exc:
            _give_back(quota, grant)
            overloaded = exc
            continue
        except BaseException:
            _give_back(quota, grant)
            raise
        if quota is not None:
            quota.settle(grant, response.usage.input_tokens + response.usage.output_tokens)
        return response
    if throttled is not None:
        # Waiting is what helps now: the compiled Retry gives `throttled` the longer backoff.
        if not fallback_models:
            raise throttled
        others = f"; {overloaded.message}" if overloaded is not None else ""
        raise ThrottledError(
            f"{throttled.message} (fallback models {', '.join(fallback_models)} too{others})",
            quota=throttled.quota,
            retry_after=throttled.retry_after,
        )
    assert overloaded is not None
    if fallback_models:
        raise ModelOverloadedError(
            f"{overloaded.message} (fallback models {', '.join(fallback_models)} too)"
        )
    raise overloaded


def _give_back(quota: QuotaGuard | None, grant: QuotaGrant | None) -> None:
    """A failed call keeps its request and gives its tokens back."""
    if quota is not None:
        quota.settle(grant, 0)
