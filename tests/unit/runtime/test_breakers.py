"""`SWITCHYARD_CIRCUIT_BREAKERS=off` lets every call through and counts nothing; on (the default),
the same failures open the circuit. `SWITCHYARD_CIRCUIT_BREAKER_POLICY` sets when, checked."""

from __future__ import annotations

import pytest

from switchyard.contract.step_errors import CircuitOpenError, TransientError
from switchyard.runtime.breakers import (
    BREAKERS_ENV,
    BreakerConfigError,
    CircuitBreakers,
    breaker_policy_from_env,
    breakers_enabled,
)
from switchyard.runtime.settings import CIRCUIT_BREAKER_POLICY_ENV
from switchyard.runtime.tools import GatewayStores
from switchyard.stores.breaker import DEFAULT_POLICY, BreakerPolicy, InMemoryBreakerStore


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


def test_a_typo_in_the_switch_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BREAKERS_ENV, "of")
    with pytest.raises(BreakerConfigError, match="SWITCHYARD_CIRCUIT_BREAKERS: expected on or off"):
        breakers_enabled()
    monkeypatch.setenv(BREAKERS_ENV, " ON ")
    assert breakers_enabled()


def test_the_policy_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CIRCUIT_BREAKER_POLICY_ENV, raising=False)
    assert breaker_policy_from_env() == DEFAULT_POLICY
    monkeypatch.setenv(
        CIRCUIT_BREAKER_POLICY_ENV, '{"failure_rate": 0.25, "min_calls": 20, "open_seconds": 5}'
    )
    policy = BreakerPolicy(failure_rate=0.25, min_calls=20, open_seconds=5.0)
    assert breaker_policy_from_env() == policy
    assert GatewayStores().breakers.policy == policy  # what a gateway without a database uses


def test_the_policy_decides_when_a_circuit_opens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BREAKERS_ENV, raising=False)
    monkeypatch.setenv(CIRCUIT_BREAKER_POLICY_ENV, '{"min_calls": 20}')
    assert _fail_ten_times(CircuitBreakers(GatewayStores().breakers)) == ["made"] * 10


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{", "SWITCHYARD_CIRCUIT_BREAKER_POLICY: not JSON"),
        ("[1]", "SWITCHYARD_CIRCUIT_BREAKER_POLICY: expected an object of settings"),
        ('{"open_secs": 5}', "unknown key 'open_secs' (known: window_seconds, min_calls"),
        ('{"failure_rate": 50}', "failure_rate: expected a fraction of the calls above 0"),
        ('{"failure_rate": 0}', "failure_rate: expected a fraction"),
        ('{"min_calls": 0}', "min_calls: expected a whole number >= 1, got 0"),
        ('{"window_seconds": 2.5}', "window_seconds: expected a whole number >= 1, got 2.5"),
        ('{"open_seconds": -1}', "open_seconds: expected seconds above 0, got -1"),
        ('{"probe_seconds": "30"}', "probe_seconds: expected a number, got '30'"),
        ('{"min_calls": true}', "min_calls: expected a number, got True"),
    ],
)
def test_a_bad_policy_says_what_is_wrong(
    monkeypatch: pytest.MonkeyPatch, raw: str, message: str
) -> None:
    monkeypatch.setenv(CIRCUIT_BREAKER_POLICY_ENV, raw)
    with pytest.raises(BreakerConfigError) as info:
        breaker_policy_from_env()
    assert message in str(info.value)
