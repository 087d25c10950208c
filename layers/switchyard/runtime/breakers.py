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
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager

from switchyard.runtime.errors import (
    CircuitOpenError,
    PolicyViolationError,
    StepError,
    StepTimeoutError,
    ThrottledError,
    TransientError,
)
from switchyard.stores.breaker import Admission, BreakerStore, Outcome

log = logging.getLogger(__name__)

BREAKERS_ENV = "SWITCHYARD_CIRCUIT_BREAKERS"
"""`off` turns the circuits off (every call goes through and nothing is counted): for a test
or a drill whose tool fails on purpose. Anything else, or unset, leaves them on."""


def breakers_enabled() -> bool:
    return os.environ.get(BREAKERS_ENV, "on").strip().lower() != "off"


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
