"""`SWITCHYARD_CIRCUIT_BREAKERS=off` lets every call through and counts nothing; on (the default),
the same failures open the circuit."""

from __future__ import annotations

import pytest

from switchyard.runtime.breakers import BREAKERS_ENV, CircuitBreakers
from switchyard.runtime.errors import CircuitOpenError, TransientError
from switchyard.stores.breaker import InMemoryBreakerStore


def _fail_ten_times(breakers: CircuitBreakers) -> list[str]:
    seen = []
    for _ in range(10):
        try:
            with breakers.guard("tool:wf/flaky"):
                raise TransientError("down")
        except CircuitOpenError:
            seen.append("refused")
        except TransientError:
            seen.append("made")
    return seen


def test_off_lets_every_call_through(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BREAKERS_ENV, "off")
    store = InMemoryBreakerStore()
    assert _fail_ten_times(CircuitBreakers(store)) == ["made"] * 10
    assert store.admit("tool:wf/flaky") == "closed"  # nothing was counted


def test_on_by_default_opens_on_the_same_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BREAKERS_ENV, raising=False)
    assert "refused" in _fail_ten_times(CircuitBreakers(InMemoryBreakerStore()))
