"""A run's reported cost is what its steps spent, including map items still in flight when the
run failed: their results come after the end, and their spend (settled in the budget ledger by
the step function) is counted on the run and on the step's item records all the same."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import psycopg
import pytest

from switchyard.engine import machines
from switchyard.engine.commands import StartExecution
from switchyard.engine.dispatch import FunctionRegistry
from switchyard.local.stack import local_engine
from tests.pg import fresh_database

COSTLY_MAP = {
    "Comment": "switchyard workflow costly version 1",
    "StartAt": "fan",
    "States": {
        "fan": {
            "Type": "Map",
            "ItemsPath": "$.items",
            "MaxConcurrency": 3,
            "ItemSelector": {"item.$": "$$.Map.Item.Value", "index.$": "$$.Map.Item.Index"},
            "ItemProcessor": {
                "ProcessorConfig": {"Mode": "INLINE"},
                "StartAt": "call",
                "States": {
                    "call": {
                        "Type": "Task",
                        "Resource": "arn:aws:states:::lambda:invoke",
                        "Parameters": {
                            "FunctionName": "agent_step",
                            "Payload": {
                                "step_id": "fan",
                                "item.$": "$.item",
                                "context": {"scope": {"index.$": "$.index"}},
                            },
                        },
                        "End": True,
                    }
                },
            },
            "End": True,
        }
    },
}


class BudgetExceededError(Exception):
    pass


@pytest.fixture
def database() -> Iterator[str]:
    with fresh_database() as conninfo:
        yield conninfo


def test_items_in_flight_when_a_map_fails_count_in_the_run_cost(database: str) -> None:
    release = threading.Event()
    registry = FunctionRegistry()

    def agent_step(event: Any, context: Any) -> Any:
        """Item 0 is refused by the budget at once; the others were already calling the model,
        and report what they spent (what the ledger settled for them) after the run failed."""
        if event["item"] == "refused":
            raise BudgetExceededError("budget: needs $0.05, $0.01 left")
        release.wait(timeout=30)
        usage = {"input_tokens": 1000, "output_tokens": 100, "model": "m", "provider": "scripted"}
        return {"status": "completed", "output": {"text": "ok"}, "cost_usd": 0.04, "usage": usage}

    registry.register("agent_step", agent_step)
    engine = local_engine(database, registry=registry, workers=4)
    engine.start()
    try:
        with engine.read() as store:
            arn = machines.create(
                store, engine.arns, name=f"costly-{uuid.uuid4().hex[:6]}",
                definition=json.dumps(COSTLY_MAP),
            )["stateMachineArn"]  # fmt: skip
        started = engine.submit(
            StartExecution(str(arn), "run-1", {"items": ["slow-a", "slow-b", "refused"]})
        )
        assert engine.wait(started["executionArn"], timeout=30) == "FAILED"
        release.set()
        with psycopg.connect(database, autocommit=True) as conn:
            deadline = time.monotonic() + 15
            while True:
                row = conn.execute(
                    "SELECT cost_usd, input_tokens FROM workflow_runs WHERE run_id = 'run-1'"
                ).fetchone()
                assert row is not None
                if row[0] == Decimal("0.08") or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert row == (Decimal("0.08"), 2000)
            items = conn.execute(
                "SELECT sum(cost_usd) FROM task_runs WHERE step_id = 'fan' AND item <> ''"
            ).fetchone()
            assert items == (Decimal("0.08"),)
    finally:
        release.set()
        engine.close()
