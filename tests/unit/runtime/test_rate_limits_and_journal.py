"""Shared stores of the runtime: Retry-After windows and the agent turn journal, both backends."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from psycopg_pool import ConnectionPool

from switchyard.contract.step_errors import RateLimitedError
from switchyard.runtime.clock import Deadline, ManualClock
from switchyard.runtime.journal import InMemoryTurnJournal, PostgresTurnJournal, TurnJournal
from switchyard.runtime.rate_limits import (
    InMemoryNotBeforeStore,
    NotBeforeStore,
    PostgresNotBeforeStore,
    RateLimitGate,
)


@pytest.fixture(params=["memory", "postgres"])
def not_before(request: pytest.FixtureRequest) -> NotBeforeStore:
    if request.param == "memory":
        return InMemoryNotBeforeStore()
    pool: ConnectionPool = request.getfixturevalue("pg_pool")
    return PostgresNotBeforeStore(pool)


@pytest.fixture(params=["memory", "postgres"])
def journal(request: pytest.FixtureRequest) -> TurnJournal:
    if request.param == "memory":
        return InMemoryTurnJournal()
    pool: ConnectionPool = request.getfixturevalue("pg_pool")
    return PostgresTurnJournal(pool)


def test_a_retry_after_seen_by_one_process_holds_every_other(not_before: NotBeforeStore) -> None:
    clock = ManualClock()
    model = f"claude-{uuid.uuid4().hex[:6]}"
    one, other = RateLimitGate(not_before, clock=clock), RateLimitGate(not_before, clock=clock)
    one.record("anthropic", model, 30)
    one.record("anthropic", model, 5)  # a shorter window never shortens the longer one
    with pytest.raises(RateLimitedError) as info:
        other.wait("anthropic", model, Deadline.after(20, clock))
    assert info.value.retry_after == pytest.approx(30)
    other.wait("anthropic", model, Deadline.after(120, clock))
    assert clock.sleeps == [pytest.approx(30)]
    other.wait("anthropic", model, Deadline.after(120, clock))  # the window has passed
    assert len(clock.sleeps) == 1
    other.wait("bedrock", model)  # other buckets are not held


def test_journal_keeps_turns_and_tool_results(journal: TurnJournal) -> None:
    key = f"run-{uuid.uuid4().hex[:6]}:agent"
    response: dict[str, Any] = {
        "content": [{"type": "tool_use", "id": "t1"}],
        "stop_reason": "tool_use",
    }
    journal.put_turn(key, 0, response)
    journal.put_turn(key, 0, {"content": [], "stop_reason": "other"})  # first write wins
    journal.put_result(key, 0, "t1", {"content": '{"ok": true}'})
    assert journal.turns(key) == {
        0: {"response": response, "results": {"t1": {"content": '{"ok": true}'}}}
    }
    assert journal.turns("run-other:agent") == {}


def test_journal_marks_turns_whose_cost_was_reported(journal: TurnJournal) -> None:
    key = f"run-{uuid.uuid4().hex[:6]}:agent"
    for turn in (0, 1, 2):
        journal.put_turn(key, turn, {"content": [], "stop_reason": "tool_use"})
    journal.put_result(key, 1, "t1", {"content": "ok"})
    journal.mark_reported(key, [0, 1])
    journal.mark_reported(key, [])
    turns = journal.turns(key)
    assert [bool(turns[t].get("reported")) for t in (0, 1, 2)] == [True, True, False]
    assert turns[1]["results"] == {"t1": {"content": "ok"}}
