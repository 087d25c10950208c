"""The engine's life cycle on a real database: timeouts, stops, redrives, the history limit,
payload limits, idempotent starts, and recovery after a restart (tasks re-dispatched, timers
re-armed)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from switchyard.engine import errors, machines
from switchyard.engine.commands import Callback, RedriveExecution, StartExecution, StopExecution
from switchyard.engine.dispatch import FunctionRegistry
from switchyard.engine.engine import Engine
from switchyard.local.stack import local_engine
from tests.pg import fresh_database

FN = "arn:aws:states:::lambda:invoke"


class Calls:
    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.tokens: list[str] = []
        self.release = threading.Event()
        self.lock = threading.Lock()

    def count(self, name: str) -> int:
        with self.lock:
            self.counts[name] = self.counts.get(name, 0) + 1
            return self.counts[name]


def registry(calls: Calls) -> FunctionRegistry:
    registry = FunctionRegistry()

    def flaky(event: Any, context: Any) -> Any:
        if calls.count("flaky") == 1:
            raise RuntimeError("the first call fails")
        return {"ok": True}

    def slow(event: Any, context: Any) -> Any:
        calls.count("slow")
        calls.release.wait(timeout=30)
        return {"slow": "done"}

    def token(event: Any, context: Any) -> Any:
        with calls.lock:
            calls.tokens.append(event["token"])
        return {}

    def ok(event: Any, context: Any) -> Any:
        calls.count("ok")
        return {"ok": True}

    for name, handler in (("flaky", flaky), ("slow", slow), ("token", token), ("ok", ok)):
        registry.register(name, handler)
    return registry


@pytest.fixture
def database() -> Iterator[str]:
    with fresh_database() as conninfo:
        yield conninfo


@pytest.fixture
def calls() -> Calls:
    return Calls()


@pytest.fixture
def engine(database: str, calls: Calls) -> Iterator[Engine]:
    engine = local_engine(database, registry=registry(calls))
    engine.start()
    yield engine
    calls.release.set()
    engine.close()


def machine(engine: Engine, definition: dict[str, Any]) -> str:
    with engine.read() as store:
        name = f"m-{uuid.uuid4().hex[:8]}"
        return str(
            machines.create(store, engine.arns, name=name, definition=json.dumps(definition))[
                "stateMachineArn"
            ]
        )


def start(engine: Engine, arn: str, data: Any = None, name: str | None = None) -> str:
    return str(
        engine.submit(StartExecution(arn, name or uuid.uuid4().hex, data or {}))["executionArn"]
    )


def history_types(engine: Engine, execution: str) -> list[str]:
    with engine.read() as store:
        row = store.execution_row(arn=execution)
        assert row is not None
        return [e.type for e in store.history(row.id, after=0, limit=100_000, reverse=False)]


def task(function: str, **extra: Any) -> dict[str, Any]:
    return {
        "Type": "Task",
        "Resource": FN,
        "Parameters": {"FunctionName": function, "Payload": {}},
        **extra,
    }


def test_an_execution_times_out(engine: Engine) -> None:
    arn = machine(
        engine,
        {
            "TimeoutSeconds": 1,
            "StartAt": "W",
            "States": {"W": {"Type": "Wait", "Seconds": 30, "End": True}},
        },
    )
    execution = start(engine, arn)
    assert engine.wait(execution, timeout=10) == "TIMED_OUT"
    assert history_types(engine, execution)[-1] == "ExecutionTimedOut"


def test_a_stopped_execution_is_aborted_and_its_token_is_dead(engine: Engine, calls: Calls) -> None:
    definition = {
        "StartAt": "T",
        "States": {
            "T": {
                "Type": "Task",
                "Resource": FN + ".waitForTaskToken",
                "Parameters": {"FunctionName": "token", "Payload": {"token.$": "$$.Task.Token"}},
                "End": True,
            }
        },
    }
    execution = start(engine, machine(engine, definition))
    deadline = time.monotonic() + 5
    while not calls.tokens:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    engine.submit(StopExecution(execution, "Cancelled", "by the test"))
    assert engine.wait(execution, timeout=5) == "ABORTED"
    with engine.read() as store:
        row = store.execution_row(arn=execution)
    assert row is not None and (row.error, row.cause) == ("Cancelled", "by the test")
    with pytest.raises(errors.TaskTimedOut):  # as on AWS: the token's task is closed
        engine.submit(Callback(calls.tokens[0], "success", output={}))


def test_redrive_runs_the_failed_state_again_and_keeps_what_succeeded(
    engine: Engine, calls: Calls
) -> None:
    definition = {
        "StartAt": "Both",
        "States": {
            "Both": {
                "Type": "Parallel",
                "Branches": [
                    {"StartAt": "Good", "States": {"Good": task("ok", End=True)}},
                    {"StartAt": "Bad", "States": {"Bad": task("flaky", End=True)}},
                ],
                "End": True,
            }
        },
    }
    execution = start(engine, machine(engine, definition))
    assert engine.wait(execution, timeout=10) == "FAILED"
    engine.submit(RedriveExecution(execution))
    assert engine.wait(execution, timeout=10) == "SUCCEEDED"
    assert calls.counts == {"ok": 1, "flaky": 2}  # the branch that had succeeded did not run again
    assert "ExecutionRedriven" in history_types(engine, execution)
    with pytest.raises(errors.ExecutionNotRedrivable):
        engine.submit(RedriveExecution(execution))


def test_the_history_limit_fails_a_runaway_execution(engine: Engine) -> None:
    definition = {
        "StartAt": "Count",
        "States": {
            "Count": {
                "Type": "Pass",
                "Parameters": {"n.$": "States.MathAdd($.n, 1)"},
                "Next": "More",
            },
            "More": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.n", "NumericLessThan": 100000, "Next": "Count"}],
                "Default": "Done",
            },
            "Done": {"Type": "Succeed"},
        },
    }
    execution = start(engine, machine(engine, definition), {"n": 0})
    assert engine.wait(execution, timeout=60) == "FAILED"
    with engine.read() as store:
        row = store.execution_row(arn=execution)
    assert row is not None and row.error == "States.Runtime"
    assert "25000" in (row.cause or "")
    assert len(history_types(engine, execution)) <= 25_001


def test_an_output_over_256_kib_fails_with_data_limit_exceeded(engine: Engine) -> None:
    big = "x" * (300 * 1024)
    definition = {"StartAt": "Big", "States": {"Big": {"Type": "Pass", "Result": big, "End": True}}}
    execution = start(engine, machine(engine, definition))
    assert engine.wait(execution, timeout=10) == "FAILED"
    with engine.read() as store:
        row = store.execution_row(arn=execution)
    assert row is not None and row.error == "States.DataLimitExceeded"


def test_start_is_idempotent_by_name_and_input(engine: Engine) -> None:
    arn = machine(
        engine, {"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 5, "End": True}}}
    )
    first = start(engine, arn, {"a": 1}, name="same")
    assert start(engine, arn, {"a": 1}, name="same") == first
    with pytest.raises(errors.ExecutionAlreadyExists):
        start(engine, arn, {"a": 2}, name="same")


def test_a_task_in_flight_at_a_crash_runs_again_after_restart(database: str, calls: Calls) -> None:
    first = local_engine(database, registry=registry(calls))
    first.start()
    arn = machine(
        first,
        {
            "StartAt": "Slow",
            "States": {"Slow": task("slow", ResultSelector={"r.$": "$.Payload"}, End=True)},
        },
    )
    execution = start(first, arn)
    deadline = time.monotonic() + 5
    while calls.counts.get("slow", 0) < 1:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    first._stop.set()  # the coordinator stops; the result of the task in flight is never recorded
    assert first._thread is not None
    first._thread.join(timeout=5)
    calls.release.set()
    time.sleep(0.1)
    second = local_engine(database, registry=registry(calls))
    second.start()
    try:
        assert second.wait(execution, timeout=10) == "SUCCEEDED"
        assert calls.counts["slow"] == 2  # at least once: dispatched again after the restart
    finally:
        second.close()
        first.close()


def test_a_timer_survives_a_restart(database: str, calls: Calls) -> None:
    first = local_engine(database, registry=registry(calls))
    first.start()
    arn = machine(
        first,
        {
            "StartAt": "W",
            "States": {"W": {"Type": "Wait", "Seconds": 1, "Next": "T"}, "T": task("ok", End=True)},
        },
    )
    execution = start(first, arn)
    first.close()
    started = time.monotonic()
    second = local_engine(database, registry=registry(calls))
    second.start()
    try:
        assert second.wait(execution, timeout=10) == "SUCCEEDED"
        assert time.monotonic() - started < 5
    finally:
        second.close()
