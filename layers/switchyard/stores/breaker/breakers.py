"""Circuit breakers: one state per downstream, shared by every process that calls it.

A circuit (`host:api.example.com`, `tool:crm/lookup`) is closed, open, or half-open:

- **closed**: calls go through, and each outcome is counted in the current window
  (`window_seconds`, aligned to the epoch). When a failure makes the window's failures at least
  `failure_rate` of its calls, and it has seen at least `min_calls`, the circuit opens.
- **open**: calls are refused at once (`CircuitOpenError`, `circuit_open`) for `open_seconds`.
- **half-open** (open, and `open_seconds` have passed): one call at a time goes through as a
  probe, holding the circuit for at most `probe_seconds`; the others are refused. The probe's
  success closes the circuit (counts start afresh); its failure opens it again.

The algorithm lives here, in pure functions over `BreakerState`; a backend only reads a state and
changes one atomically (`_read`, `_change`), so every backend behaves the same and one
conformance suite checks them all (tests/unit/stores/test_breaker_store.py).
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from switchyard.contract.step_errors import CircuitOpenError

Admission = Literal["closed", "probe"]
"""How a call was let through: the circuit was closed, or the call is its half-open probe."""
Outcome = Literal["success", "failure", "neutral"]
"""What a call says about its downstream: `neutral` when it says nothing (it never reached it)."""


@dataclass(frozen=True, slots=True)
class BreakerPolicy:
    window_seconds: int = 60
    min_calls: int = 5
    failure_rate: float = 0.5
    open_seconds: float = 30.0
    probe_seconds: float = 30.0
    """How long a probe holds a half-open circuit before another call may probe (a probe that
    never reports back, its process gone, must not keep the circuit shut)."""


DEFAULT_POLICY = BreakerPolicy()


@dataclass(frozen=True, slots=True)
class BreakerState:
    state: Literal["closed", "open"] = "closed"
    window: int = 0
    calls: int = 0
    failures: int = 0
    open_until: float = 0.0
    probe_until: float = 0.0
    opened: int = 0
    """How many times the circuit has opened."""
    version: int = 0
    """Bumped by every change (DynamoDB's optimistic condition)."""

    def half_open(self, now: float) -> bool:
        return self.state == "open" and now >= self.open_until


def counted(state: BreakerState, policy: BreakerPolicy, now: float, failed: bool) -> BreakerState:
    """A closed circuit with one more outcome counted, opened if that tips it."""
    window = int(now // policy.window_seconds) * policy.window_seconds
    if state.window != window:
        state = replace(state, window=window, calls=0, failures=0)
    state = replace(state, calls=state.calls + 1, failures=state.failures + int(failed))
    if (
        failed
        and state.calls >= policy.min_calls
        and state.failures >= policy.failure_rate * state.calls
    ):
        state = opened(state, policy, now)
    return state


def opened(state: BreakerState, policy: BreakerPolicy, now: float) -> BreakerState:
    return replace(
        state,
        state="open",
        open_until=now + policy.open_seconds,
        probe_until=0.0,
        opened=state.opened + 1,
    )


def closed(state: BreakerState, policy: BreakerPolicy, now: float) -> BreakerState:
    window = int(now // policy.window_seconds) * policy.window_seconds
    return replace(
        state, state="closed", window=window, calls=0, failures=0, open_until=0.0, probe_until=0.0
    )


def refusal(circuit: str, state: BreakerState, policy: BreakerPolicy, now: float) -> Exception:
    if not state.half_open(now):
        wait = state.open_until - now
        why = (
            f"{state.failures} of its last {state.calls} calls failed"
            if state.calls
            else "its probe call failed"
        )
        return CircuitOpenError(
            f"circuit {circuit} is open: {why}; calls fail fast without being made, and a probe "
            f"goes through in {wait:.0f}s",
            circuit=circuit,
            retry_after=wait,
        )
    wait = max(state.probe_until - now, 0.0)
    return CircuitOpenError(
        f"circuit {circuit} is half-open: a probe call is finding out whether it has recovered; "
        "other calls fail fast without being made until it has",
        circuit=circuit,
        retry_after=wait,
    )


class BreakerStore(ABC):
    """Circuit states shared by every process; backends: DynamoDB, PostgreSQL, memory."""

    def __init__(
        self, *, policy: BreakerPolicy = DEFAULT_POLICY, clock: Callable[[], float] = time.time
    ) -> None:
        self.policy = policy
        self._clock = clock

    def admit(self, circuit: str) -> Admission:
        """Let a call through, or raise `CircuitOpenError`. A closed circuit costs one read."""
        now = self._clock()
        state = self._read(circuit)
        if state.state == "closed":
            return "closed"
        if not state.half_open(now):
            raise refusal(circuit, state, self.policy, now)

        def take_probe(current: BreakerState) -> BreakerState | None:
            if not current.half_open(now) or current.probe_until > now:
                return None
            return replace(current, probe_until=now + self.policy.probe_seconds)

        before, after = self._change(circuit, take_probe)
        if after is before:  # closed meanwhile, or another call is the probe
            if after.state == "closed":
                return "closed"
            raise refusal(circuit, after, self.policy, now)
        return "probe"

    def record(
        self, circuit: str, admission: Admission, outcome: Outcome
    ) -> tuple[BreakerState, BreakerState]:
        """Count a call's outcome: (the state before, the state after)."""
        now = self._clock()
        policy = self.policy

        def change(current: BreakerState) -> BreakerState | None:
            if admission == "probe":
                if current.state != "open":
                    return None  # closed meanwhile by another probe
                if outcome == "success":
                    return closed(current, policy, now)
                if outcome == "failure":  # what the refusals say: the probe failed
                    return opened(replace(current, calls=0, failures=0), policy, now)
                return replace(current, probe_until=0.0)  # no answer: another call may probe
            if current.state != "closed" or outcome == "neutral":
                return None
            return counted(current, policy, now, failed=outcome == "failure")

        if admission == "closed" and outcome == "neutral":
            state = self._read(circuit)
            return state, state
        return self._change(circuit, change)

    def state(self, circuit: str) -> BreakerState:
        return self._read(circuit)

    @abstractmethod
    def _read(self, circuit: str) -> BreakerState:
        """The circuit's state (closed and empty when it has none)."""

    @abstractmethod
    def _change(
        self, circuit: str, change: Callable[[BreakerState], BreakerState | None]
    ) -> tuple[BreakerState, BreakerState]:
        """Apply `change` to the current state atomically (None: leave it); (before, after),
        with `after is before` when nothing changed."""


class InMemoryBreakerStore(BreakerStore):
    """One process's circuits (no database configured, and tests)."""

    def __init__(
        self, *, policy: BreakerPolicy = DEFAULT_POLICY, clock: Callable[[], float] = time.time
    ) -> None:
        super().__init__(policy=policy, clock=clock)
        self._states: dict[str, BreakerState] = {}
        self._lock = threading.Lock()

    def _read(self, circuit: str) -> BreakerState:
        with self._lock:
            return self._states.get(circuit, BreakerState())

    def _change(
        self, circuit: str, change: Callable[[BreakerState], BreakerState | None]
    ) -> tuple[BreakerState, BreakerState]:
        with self._lock:
            before = self._states.get(circuit, BreakerState())
            after = change(before)
            if after is None:
                return before, before
            after = replace(after, version=before.version + 1)
            self._states[circuit] = after
            return before, after
