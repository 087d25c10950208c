"""Batches: the coordinator applies many commands in one pipelined transaction. A command the
database refuses must lose only itself; starts within a batch see each other's names."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import psycopg
import pytest

from switchyard.engine import errors, machines
from switchyard.engine.arns import Arns
from switchyard.engine.commands import StartExecution
from switchyard.engine.dispatch import FunctionRegistry
from switchyard.engine.engine import Engine
from switchyard.engine.store import EngineStore
from switchyard.local.stack import local_engine
from tests.pg import fresh_database

TASK = {
    "StartAt": "T",
    "States": {
        "T": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "echo", "Payload.$": "$"},
            "OutputPath": "$.Payload",
            "End": True,
        }
    },
}


@pytest.fixture
def database() -> Iterator[str]:
    with fresh_database() as conninfo:
        yield conninfo


def create_machine(database: str, name: str) -> str:
    with psycopg.connect(database, autocommit=True) as conn:
        created = machines.create(EngineStore(conn), Arns(), name=name, definition=json.dumps(TASK))
    return str(created["stateMachineArn"])


def first_batch(database: str, commands: list[StartExecution]) -> tuple[Engine, list[Future[Any]]]:
    """Queue the commands before the coordinator runs, so that they make up its first batch."""
    registry = FunctionRegistry()
    registry.register("echo", lambda event, context: event)
    engine = local_engine(database, registry=registry)
    futures: list[Future[Any]] = []
    for command in commands:
        command.reply = Future()
        futures.append(command.reply)
        engine.post(command)
    engine.start()
    return engine, futures


def test_a_start_the_database_refuses_loses_only_itself(database: str) -> None:
    arn = create_machine(database, "echo")
    good = [StartExecution(arn, f"good-{i}", {"i": i}) for i in range(20)]
    bad = StartExecution(arn, "bad", {"text": "a NUL \x00 jsonb cannot store"})
    engine, futures = first_batch(database, [*good[:10], bad, *good[10:]])
    try:
        results = [future.exception(timeout=30) or future.result() for future in futures]
        refused = results.pop(10)
        assert isinstance(refused, psycopg.Error)
        for i, started in enumerate(results):
            assert engine.wait(started["executionArn"], timeout=30) == "SUCCEEDED", i
        with engine.read() as store:
            assert (
                store.execution_row(arn=started["executionArn"].replace("good-19", "bad")) is None
            )
    finally:
        engine.close()


def test_starts_in_one_batch_see_each_others_names(database: str) -> None:
    arn = create_machine(database, "names")
    commands = [
        StartExecution(arn, "same", {"n": 1}),
        StartExecution(arn, "same", {"n": 1}),  # the same start again: idempotent
        StartExecution(arn, "same", {"n": 2}),  # another input under a taken name
    ]
    engine, futures = first_batch(database, commands)
    try:
        first, again = futures[0].result(timeout=30), futures[1].result(timeout=30)
        assert again["executionArn"] == first["executionArn"]
        with pytest.raises(errors.ExecutionAlreadyExists):
            futures[2].result(timeout=30)
        assert engine.wait(first["executionArn"], timeout=30) == "SUCCEEDED"
    finally:
        engine.close()


def test_a_start_on_a_missing_machine_fails_alone(database: str) -> None:
    arn = create_machine(database, "present")
    missing = arn.replace("present", "absent")
    engine, futures = first_batch(
        database, [StartExecution(missing, "x", {}), StartExecution(arn, "y", {})]
    )
    try:
        with pytest.raises(errors.StateMachineDoesNotExist):
            futures[0].result(timeout=30)
        assert engine.wait(futures[1].result(timeout=30)["executionArn"], timeout=30) == "SUCCEEDED"
    finally:
        engine.close()


def test_ids_are_drawn_ahead_and_never_reused_after_a_restart(database: str) -> None:
    arn = create_machine(database, "ids")
    engine, futures = first_batch(database, [StartExecution(arn, "one", {})])
    try:
        first = futures[0].result(timeout=30)["executionArn"]
        engine.wait(first, timeout=30)
    finally:
        engine.close()
    engine, futures = first_batch(database, [StartExecution(arn, "two", {})])
    try:
        second = futures[0].result(timeout=30)["executionArn"]
        assert engine.wait(second, timeout=30) == "SUCCEEDED"
        with engine.read() as store:
            one, two = store.execution_row(arn=first), store.execution_row(arn=second)
        assert one is not None and two is not None and two.id > one.id
    finally:
        engine.close()
