"""`http.request`, and declared tools of kind `http` (a request templated over `args`).

    429                          rate_limit, with the Retry-After the response carried, which
                                 the next call to the host waits out first (as for models)
    5xx, connection refused      transient
    connect or pool timeout      timeout (nothing was sent)
    read or write timeout        timeout, but "outcome unknown" (a non-idempotent call goes to a
                                 person instead of being retried)
    drop after send              transient, outcome unknown likewise
    other 4xx                    permanent

Writes carry an `Idempotency-Key` header (the step's key), so endpoints that honour it apply a
retried request once. Every request goes through its host's circuit breaker (`host:<name>[:<port>]`,
runtime/breakers.py): while the circuit is open it fails `circuit_open` without being sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from switchyard.contract.step_errors import (
    PermanentError,
    PolicyViolationError,
    RateLimitedError,
    StepTimeoutError,
    TransientError,
)
from switchyard.model import SideEffect
from switchyard.model.builtin_tools import BUILTIN_TOOLS
from switchyard.runtime.breakers import host_circuit
from switchyard.runtime.rate_limits import RateLimitGate
from switchyard.runtime.rendering import render
from switchyard.runtime.tools.base import CallInfo, ToolEnvironment
from switchyard.stores.idempotency import OutcomeUnknownError, OutcomeUnknownTimeoutError

_READS = {"GET", "HEAD", "OPTIONS"}
_BUCKET = "http"
"""Retry-After times are kept per host: `http:<host>` in the rate-limit gate."""


def _retry_after(response: httpx.Response) -> float | None:
    raw = response.headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(float(raw), 0.0)
    except ValueError:
        return None


def send_request(
    env: ToolEnvironment,
    call: CallInfo,
    *,
    method: str,
    url: str,
    headers: Mapping[str, str] | None = None,
    params: Mapping[str, Any] | None = None,
    json_body: Any = None,
    body: str | None = None,
    timeout: float | None = None,
    tool: str = "http.request",
    check_host: bool = True,
) -> dict[str, Any]:
    """Send one request; the output `{status, headers, body}` or a mapped error."""
    method = method.upper()
    host = urlsplit(url).hostname or ""
    if urlsplit(url).scheme not in ("http", "https"):
        raise PolicyViolationError(f"{tool}: only http and https URLs may be called", tool=tool)
    if check_host and not env.host_allowed(host):
        raise PolicyViolationError(f"{tool}: host {host!r} is not on the allow-list", tool=tool)
    sent_headers = dict(headers or {})
    if method not in _READS:
        sent_headers.setdefault("Idempotency-Key", call.idempotency_key)
    limit = min(timeout, call.timeout) if timeout is not None else call.timeout
    gate = call.rate_limits
    if gate is not None:
        gate.wait(_BUCKET, host, call.deadline)  # a Retry-After the host sent earlier
        if call.deadline is not None:
            limit = min(limit, max(call.deadline.remaining() - gate.margin, 1.0))
    breakers = call.breakers
    circuit = host_circuit(host, urlsplit(url).port)
    with breakers.guard(circuit) if breakers is not None else nullcontext():
        return _exchange(
            env,
            tool=tool,
            method=method,
            url=url,
            host=host,
            headers=sent_headers,
            params=params,
            json_body=json_body,
            body=body,
            limit=limit,
            gate=gate,
        )


def _exchange(
    env: ToolEnvironment,
    *,
    tool: str,
    method: str,
    url: str,
    host: str,
    headers: dict[str, str],
    params: Mapping[str, Any] | None,
    json_body: Any,
    body: str | None,
    limit: float,
    gate: RateLimitGate | None,
) -> dict[str, Any]:
    """The request and its answer, mapped to an output or an error (inside the host's circuit:
    what it raises is the host's outcome)."""
    try:
        with env.http_client(limit) as client:
            response = client.request(
                method,
                url,
                headers=headers,
                params=dict(params) if params else None,
                json=json_body,
                content=body,
            )
    except (httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
        raise StepTimeoutError(f"{tool}: timed out connecting to {host}: {exc}") from None
    except httpx.ConnectError as exc:
        raise TransientError(f"{tool}: could not connect to {host}: {exc}") from None
    except httpx.TimeoutException as exc:
        raise OutcomeUnknownTimeoutError(
            f"{tool}: {method} {url} timed out waiting for an answer: {exc}"
        ) from None
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
        raise OutcomeUnknownError(f"{tool}: {method} {url} got no answer: {exc}") from None
    except httpx.HTTPError as exc:
        raise TransientError(f"{tool}: {method} {url} failed: {exc}") from None
    status = response.status_code
    if status == 429:
        retry_after = _retry_after(response)
        if gate is not None:
            gate.record(_BUCKET, host, retry_after)
        raise RateLimitedError(f"{tool}: {host} answered 429", retry_after=retry_after)
    if status >= 500:
        raise TransientError(f"{tool}: {host} answered {status}")
    if status >= 400:
        raise PermanentError(f"{tool}: {method} {url} answered {status}: {response.text[:500]}")
    content_type = response.headers.get("content-type", "")
    parsed: Any = response.text
    if "json" in content_type and response.content:
        try:
            parsed = response.json()
        except ValueError:
            parsed = response.text
    return {"status": status, "headers": dict(response.headers), "body": parsed}


class HttpRequestTool:
    """The built-in `http.request`."""

    name = "http.request"

    def __init__(self) -> None:
        builtin = BUILTIN_TOOLS[self.name]
        self.description = builtin.description
        self.input_schema = builtin.args_schema

    def side_effect(self, args: Mapping[str, Any]) -> SideEffect:
        return BUILTIN_TOOLS[self.name].default_side_effect(dict(args))

    def invoke(self, args: dict[str, Any], env: ToolEnvironment, call: CallInfo) -> Any:
        return send_request(
            env,
            call,
            method=str(args.get("method", "GET")),
            url=str(args["url"]),
            headers=args.get("headers"),
            params=args.get("params"),
            json_body=args.get("json"),
            body=args.get("body"),
            timeout=args.get("timeout"),
        )


@dataclass
class DeclaredHttpTool:
    """A workflow's `kind: http` tool: `config` (method, url, headers, params, json, body,
    timeout) rendered over `{args}` for each call; with no body configured, a write sends `args`
    as its JSON body."""

    name: str
    description: str
    input_schema: dict[str, Any]
    config: dict[str, Any]
    declared_side_effect: SideEffect

    def side_effect(self, args: Mapping[str, Any]) -> SideEffect:
        return self.declared_side_effect

    def invoke(self, args: dict[str, Any], env: ToolEnvironment, call: CallInfo) -> Any:
        rendered = render(self.config, {"args": args})
        method = str(rendered.get("method", "GET")).upper()
        json_body = rendered.get("json")
        if json_body is None and "body" not in rendered and method not in _READS:
            json_body = args
        return send_request(
            env,
            call,
            method=method,
            url=str(rendered["url"]),
            headers=rendered.get("headers"),
            params=rendered.get("params"),
            json_body=json_body,
            body=rendered.get("body"),
            timeout=rendered.get("timeout"),
            tool=self.name,
        )
