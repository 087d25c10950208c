"""Circuit breakers as the tool gateway uses them: a failing downstream is given a rest.

When a host starts failing, every workflow that calls it retries, and the retries keep it down
(a retry storm). A circuit per downstream counts the outcomes of the calls that reach it, from
every process (`stores/breaker`): once enough fail, it opens, and calls fail fast with
`circuit_open` (transient) without being made, which the compiled `Retry` waits out with backoff
and jitter; after a rest, one probe call finds out whether the downstream has recovered.

What a call says about its downstream (`outcome_of`): a transient error or a timeout is a
failure; an answer is a success, even a 4xx or a 429 (the downstream is up; a 429's Retry-After
has its own gate); a call refused before it was made (a policy, another open circuit, a quota)
says nothing.

When a circuit opens and how long it rests is its policy (`BreakerPolicy`): the defaults, or
`SWITCHYARD_CIRCUIT_BREAKER_POLICY` (JSON; on AWS from the CDK context
`switchyard:circuitBreakers`), one policy for every circuit of the process.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields
from typing import Any

from switchyard.contract.step_errors import (
    CircuitOpenError,
    PolicyViolationError,
    StepError,
    StepTimeoutError,
    ThrottledError,
    TransientError,
)
from switchyard.runtime.settings import CIRCUIT_BREAKER_POLICY_ENV
from switchyard.stores.breaker import (
    DEFAULT_POLICY,
    Admission,
    BreakerPolicy,
    BreakerStore,
    Outcome,
)

log = logging.getLogger(__name__)

BREAKERS_ENV = "SWITCHYARD_CIRCUIT_BREAKERS"
"""`off` turns the circuits off (every call goes through and nothing is counted): for a test
or a drill whose tool fails on purpose. `on`, or unset, leaves them on; anything else is an
error (a typo must not leave them on unnoticed)."""


class BreakerConfigError(ValueError):
    """The circuit breakers' configuration does not parse; the message names where and what."""


def breakers_enabled() -> bool:
    value = os.environ.get(BREAKERS_ENV, "on").strip().lower()
    if value not in ("on", "off", ""):
        raise BreakerConfigError(f"{BREAKERS_ENV}: expected on or off, got {value!r}")
    return value != "off"


_POLICY_KEYS = tuple(f.name for f in fields(BreakerPolicy))


def _policy_value(key: str, value: Any, where: str) -> int | float:
    """One setting, checked: whole numbers >= 1 for the window and the calls, a rate in (0, 1],
    positive seconds for the rest."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BreakerConfigError(f"{where}.{key}: expected a number, got {value!r}")
    if key in ("window_seconds", "min_calls"):
        if not isinstance(value, int) or value < 1:
            raise BreakerConfigError(f"{where}.{key}: expected a whole number >= 1, got {value!r}")
        return value
    if key == "failure_rate":
        if not 0 < value <= 1:
            raise BreakerConfigError(
                f"{where}.{key}: expected a fraction of the calls above 0 and at most 1 "
                f"(0.5: half of them), got {value!r}"
            )
        return float(value)
    if value <= 0:
        raise BreakerConfigError(f"{where}.{key}: expected seconds above 0, got {value!r}")
    return float(value)


def parse_breaker_policy(data: Any, *, source: str = CIRCUIT_BREAKER_POLICY_ENV) -> BreakerPolicy:
    """`{"failure_rate": 0.5, "window_seconds": 60, "min_calls": 5, "open_seconds": 30,
    "probe_seconds": 30}`, any of them (the others keep their defaults), checked."""
    if not isinstance(data, dict):
        raise BreakerConfigError(
            f"{source}: expected an object of settings ({', '.join(_POLICY_KEYS)}), got {data!r}"
        )
    unknown = sorted(set(data) - set(_POLICY_KEYS))
    if unknown:
        raise BreakerConfigError(
            f"{source}: unknown key {unknown[0]!r} (known: {', '.join(_POLICY_KEYS)})"
        )
    values = {key: _policy_value(key, value, source) for key, value in data.items()}
    return BreakerPolicy(**values)  # type: ignore[arg-type]


def breaker_policy_from_env() -> BreakerPolicy:
    raw = os.environ.get(CIRCUIT_BREAKER_POLICY_ENV)
    if not raw or not raw.strip():
        return DEFAULT_POLICY
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise BreakerConfigError(f"{CIRCUIT_BREAKER_POLICY_ENV}: not JSON: {exc}") from None
    return parse_breaker_policy(data)


def outcome_of(error: BaseException | None) -> Outcome:
    if error is None:
        return "success"
    if isinstance(error, CircuitOpenError | ThrottledError | PolicyViolationError):
        return "neutral"
    if isinstance(error, TransientError | StepTimeoutError):
        return "failure"
    if isinstance(error, StepError):
        return "success"
    return "neutral"  # a bug in a tool says nothing about its downstream


def host_circuit(host: str, port: int | None = None) -> str:
    """`host:api.example.com`, or `host:127.0.0.1:8081` when the URL names a port (two services
    on one machine are two downstreams)."""
    return f"host:{host.lower()}" + (f":{port}" if port is not None else "")


def tool_circuit(workflow: str, tool: str) -> str:
    return f"tool:{workflow}/{tool}"


class CircuitBreakers:
    """Guards calls with the circuits of a `BreakerStore`."""

    def __init__(self, store: BreakerStore, *, enabled: bool | None = None) -> None:
        self.store = store
        self.enabled = breakers_enabled() if enabled is None else enabled

    @contextmanager
    def guard(self, circuit: str) -> Iterator[None]:
        """Let the call in the block through its circuit (or raise `CircuitOpenError` before
        it), and count its outcome."""
        if not self.enabled:
            yield
            return
        admission = self.store.admit(circuit)
        try:
            yield
        except BaseException as error:
            self._record(circuit, admission, outcome_of(error))
            raise
        self._record(circuit, admission, "success")

    def _record(self, circuit: str, admission: Admission, outcome: Outcome) -> None:
        try:
            before, after = self.store.record(circuit, admission, outcome)
        except Exception:  # the call is over: a store failure must not change its outcome
            log.warning("circuit %s: its outcome could not be counted", circuit, exc_info=True)
            return
        if after.state == "open" and after.opened > before.opened:
            why = (
                f"{after.failures} of {after.calls} calls failed in "
                f"{self.store.policy.window_seconds}s"
                if admission == "closed"
                else "its probe call failed"
            )
            log.warning(
                "circuit %s opened: %s; calls fail fast (circuit_open) for %.0fs",
                circuit,
                why,
                self.store.policy.open_seconds,
            )
        elif before.state == "open" and after.state == "closed":
            log.warning("circuit %s closed: its probe call succeeded", circuit)
