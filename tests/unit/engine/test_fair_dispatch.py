"""The engine hands ready tasks to its workers by their run's priority, and across runs in turn:
a small run's task does not wait behind a fan-out's."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from switchyard.engine import machines
from switchyard.engine.arns import Arns
from switchyard.engine.commands import StartExecution
from switchyard.engine.dispatch import FunctionRegistry
from switchyard.engine.store import EngineStore
from switchyard.local.stack import local_engine
from tests.pg import fresh_database

LAMBDA = "arn:aws:states:::lambda:invoke"


def work_task(run: dict[str, Any]) -> dict[str, Any]:
    """A Task whose payload carries `context.run` as the compiled machines' do."""
    return {
        "Type": "Task",
        "Resource": LAMBDA,
        "Parameters": {
            "FunctionName": "work",
            "Payload": {"name.$": "$$.Execution.Name", "context": {"run": run}},
        },
        "OutputPath": "$.Payload",
        "End": True,
    }


def fan_out() -> dict[str, Any]:
    return {
        "StartAt": "Each",
        "States": {
            "Each": {
                "Type": "Map",
                "ItemsPath": "$.items",
                "MaxConcurrency": 0,
                "ItemProcessor": {
                    "StartAt": "Work",
                    "States": {"Work": work_task({"id": "fan-out"})},
                },
                "End": True,
            }
        },
    }


def one_task(priority: str) -> dict[str, Any]:
    return {"StartAt": "Work", "States": {"Work": work_task({"id": "x", "priority": priority})}}


class Work:
    """The `work` function: records the order of calls; the first call waits for `release`."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self._lock = threading.Lock()

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        with self._lock:
            self.calls.append(event["name"])
            first = len(self.calls) == 1
        if first:
            self.entered.set()
            assert self.release.wait(30)
        return {}


@pytest.fixture
def database() -> Iterator[str]:
    with fresh_database() as conninfo:
        yield conninfo


def wait_until(done: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def order_of_calls(database: str, small_priority: str, *, fair: bool = True) -> list[str]:
    work = Work()
    registry = FunctionRegistry(None)
    registry.register("work", work)
    engine = local_engine(database, registry=registry, workers=1)
    if not fair:
        engine._dispatcher._ready.fair = False  # the order before priorities: arrival
    engine.start()
    try:
        with psycopg.connect(database, autocommit=True) as conn:
            store = EngineStore(conn)
            big = machines.create(store, Arns(), name="big", definition=json.dumps(fan_out()))
            small = machines.create(
                store, Arns(), name="small", definition=json.dumps(one_task(small_priority))
            )
        ready = engine._dispatcher._ready
        fan = engine.submit(StartExecution(big["stateMachineArn"], "fan", {"items": [1] * 5}))
        assert work.entered.wait(30)
        wait_until(lambda: len(ready) == 4)  # one fan-out task runs, four wait
        one = engine.submit(StartExecution(small["stateMachineArn"], "small", {}))
        wait_until(lambda: len(ready) == 5)
        work.release.set()
        assert engine.wait(fan["executionArn"], timeout=30) == "SUCCEEDED"
        assert engine.wait(one["executionArn"], timeout=30) == "SUCCEEDED"
    finally:
        engine.close()
    return work.calls


def test_a_high_priority_run_goes_before_a_fan_outs_waiting_tasks(database: str) -> None:
    assert order_of_calls(database, "high") == ["fan", "small", "fan", "fan", "fan", "fan"]


def test_a_run_of_the_same_priority_takes_its_turn_before_the_fan_out_goes_on(
    database: str,
) -> None:
    assert order_of_calls(database, "normal") == ["fan", "small", "fan", "fan", "fan", "fan"]


def test_a_low_priority_run_waits_for_the_normal_ones(database: str) -> None:
    assert order_of_calls(database, "low") == ["fan", "fan", "fan", "fan", "fan", "small"]


def test_in_arrival_order_the_small_run_would_wait_behind_the_fan_out(database: str) -> None:
    assert order_of_calls(database, "high", fair=False)[-1] == "small"


def branch(*names: str) -> dict[str, Any]:
    """Tasks in a row, each calling `work` with its state's name."""
    states: dict[str, Any] = {}
    for i, name in enumerate(names):
        state: dict[str, Any] = {
            "Type": "Task",
            "Resource": LAMBDA,
            "Parameters": {"FunctionName": "work", "Payload": {"name.$": "$$.State.Name"}},
            "ResultPath": None,
        }
        if i + 1 < len(names):
            state["Next"] = names[i + 1]
        else:
            state["End"] = True
        states[name] = state
    return {"StartAt": names[0], "States": states}


def test_within_a_run_the_branch_with_the_longest_path_is_dispatched_first(
    database: str,
) -> None:
    """Two branches ready at once, one worker: the three-task branch starts before the one-task
    branch declared before it, so the run's critical path is not left for last."""
    work = Work()
    registry = FunctionRegistry(None)
    registry.register("work", work)
    engine = local_engine(database, registry=registry, workers=1)
    engine.start()
    try:
        with psycopg.connect(database, autocommit=True) as conn:
            store = EngineStore(conn)
            blocker = machines.create(
                store, Arns(), name="blocker", definition=json.dumps(branch("Blocker"))
            )
            fork = {
                "StartAt": "Fork",
                "States": {
                    "Fork": {
                        "Type": "Parallel",
                        "Branches": [branch("Short"), branch("Long1", "Long2", "Long3")],
                        "End": True,
                    }
                },
            }
            forked = machines.create(store, Arns(), name="forked", definition=json.dumps(fork))
        ready = engine._dispatcher._ready
        first = engine.submit(StartExecution(blocker["stateMachineArn"], "blocker", {}))
        assert work.entered.wait(30)  # the one worker is busy
        run = engine.submit(StartExecution(forked["stateMachineArn"], "forked", {}))
        wait_until(lambda: len(ready) == 2)  # both branches' first tasks wait
        work.release.set()
        assert engine.wait(first["executionArn"], timeout=30) == "SUCCEEDED"
        assert engine.wait(run["executionArn"], timeout=30) == "SUCCEEDED"
    finally:
        engine.close()
    assert work.calls[:3] == ["Blocker", "Long1", "Short"]
