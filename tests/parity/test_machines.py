"""Hand-written machines, run on moto's interpreter and on switchyard's engine: they agree on
status, output, error and the states entered."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from switchyard.contract.errors import lambda_error
from switchyard.engine import machines as engine_machines
from switchyard.engine.commands import Callback, StartExecution
from switchyard.engine.dispatch import FunctionRegistry
from switchyard.engine.engine import Engine
from switchyard.local.stack import local_engine
from tests.parity.machines import CASES, HEARTBEAT
from tests.scenarios.harness.moto_runner import ROLE, moto_step_functions
from tests.scenarios.harness.outcome import STATUS

FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:{}"


class Functions:
    def __init__(self) -> None:
        self.tokens: list[str] = []
        self.lock = threading.Lock()

    def invoke(self, name: str, payload: Any) -> Any:
        if name == "double":
            return {"twice": payload["first"]["qty"] * 2}
        if name == "fail_odd":
            value = payload["value"] if isinstance(payload, dict) else payload
            if value % 2:
                raise lambda_error("Odd.Value", f"{value} is odd")
            return {"even": value}
        if name == "always_fails":
            raise lambda_error("Custom.Error", "always")
        if name == "remember_token":
            with self.lock:
                self.tokens.append(payload["token"])
            return {"notified": True}
        raise ValueError(name)


def _qualified(definition: dict[str, Any]) -> str:
    text = json.dumps(definition)
    for name in ("double", "fail_odd", "always_fails", "remember_token"):
        text = text.replace(
            f'"FunctionName": "{name}"', f'"FunctionName": "{FUNCTION_ARN.format(name)}"'
        )
    return text


def _outcome(status: str, output: Any, error: Any, events: list[dict[str, Any]]) -> dict[str, Any]:
    entered = {
        e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e
    }
    return {"status": STATUS[status], "output": output, "error": error, "entered": entered}


def _json_or_text(text: str | None) -> Any:
    """moto writes a string output without its JSON quotes (AWS writes `"full"`)."""
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def run_moto(
    definition: dict[str, Any], data: Any, drive: Callable[..., None] | None = None
) -> dict[str, Any]:
    functions = Functions()
    with moto_step_functions(functions) as sfn:  # type: ignore[arg-type]
        arn = sfn.create_state_machine(name="m", definition=_qualified(definition), roleArn=ROLE)[
            "stateMachineArn"
        ]
        execution = sfn.start_execution(stateMachineArn=arn, input=json.dumps(data))["executionArn"]
        if drive is not None:
            drive(
                functions,
                lambda token: sfn.send_task_heartbeat(taskToken=token),
                lambda token: sfn.send_task_success(taskToken=token, output='{"done": true}'),
            )
        deadline = time.monotonic() + 60
        while (described := sfn.describe_execution(executionArn=execution))["status"] == "RUNNING":
            assert time.monotonic() < deadline
            time.sleep(0.02)
        events = sfn.get_execution_history(executionArn=execution, maxResults=1000)["events"]
    output = _json_or_text(described.get("output"))
    return _outcome(described["status"], output, described.get("error"), events)


@pytest.fixture(scope="module")
def engine(pg_conninfo: str) -> Iterator[tuple[Engine, Functions]]:
    functions = Functions()
    registry = FunctionRegistry()
    for name in ("double", "fail_odd", "always_fails", "remember_token"):
        registry.register(name, lambda event, context, n=name: functions.invoke(n, event))
    engine = local_engine(pg_conninfo, registry=registry)
    engine.start()
    yield engine, functions
    engine.close()


def run_engine(
    engine: Engine, functions: Functions, name: str, definition: dict[str, Any], data: Any,
    drive: Callable[..., None] | None = None,
) -> dict[str, Any]:  # fmt: skip
    with engine.read() as store:
        arn = engine_machines.create(
            store, engine.arns, name=f"hand-{name}", definition=_qualified(definition)
        )["stateMachineArn"]
    execution = engine.submit(StartExecution(arn, "run", data))["executionArn"]
    if drive is not None:
        drive(
            functions,
            lambda token: engine.submit(Callback(token, "heartbeat")),
            lambda token: engine.submit(Callback(token, "success", output={"done": True})),
        )
    status = engine.wait(execution, timeout=60)
    with engine.read() as store:
        row = store.execution_row(arn=execution)
        assert row is not None
        events = [
            row_.details for row_ in store.history(row.id, after=0, limit=10_000, reverse=False)
        ]
    return _outcome(status, row.output, row.error, events)


# Where moto differs from AWS's documented behaviour, the engine follows AWS: the expected
# outcome is written out, and moto's deviation is asserted too, so that a fixed moto shows up.
MOTO_DEVIATIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "map-tolerated-failures": (
        "moto ignores ToleratedFailureCount and fails the Map at the first failed item",
        {"status": "succeeded", "error": None},
    ),
    "map-failure-over-threshold": (
        "moto's ASL parser rejects ToleratedFailurePercentage",
        {"status": "succeeded", "error": None},
    ),
}


# moto runs Parallel branches on threads and stops the others when one fails; whether a sibling
# branch entered its first state before that is a race there (AWS, and the engine, enter every
# branch). Such states are left out of the comparison.
RACY_STATES: dict[str, set[str]] = {"parallel-branch-fails": {"Ok"}}


@pytest.mark.parametrize("name", sorted(set(CASES) - set(MOTO_DEVIATIONS)))
def test_hand_written_machine_agrees_with_moto(name: str, engine: tuple[Engine, Functions]) -> None:
    definition, data = CASES[name]
    expected = run_moto(definition, data)
    got = run_engine(*engine, name, definition, data)
    racy = RACY_STATES.get(name, set())
    assert racy <= got["entered"]
    for outcome in (expected, got):
        outcome["entered"] = outcome["entered"] - racy
    assert got == expected


def test_map_tolerates_failures_up_to_the_count(engine: tuple[Engine, Functions]) -> None:
    definition, data = CASES["map-tolerated-failures"]
    got = run_engine(*engine, "map-tolerated", definition, data)
    assert (got["status"], got["error"]) == ("succeeded", None)
    results = got["output"]["results"]
    assert [r.get("value") for r in results] == [{"even": 2}, None, {"even": 4}, None, {"even": 6}]
    assert [r.get("Error") for r in results] == [None, "Odd.Value", None, "Odd.Value", None]
    moto = run_moto(definition, data)
    assert (moto["status"], moto["error"]) == ("failed", "Odd.Value"), MOTO_DEVIATIONS[
        "map-tolerated-failures"
    ][0]


def test_map_over_the_tolerated_percentage_fails(engine: tuple[Engine, Functions]) -> None:
    definition, data = CASES["map-failure-over-threshold"]
    got = run_engine(*engine, "map-threshold", definition, data)
    assert got["status"] == "succeeded"  # the Catch took the failure
    assert got["output"]["error"]["Error"] == "States.ExceedToleratedFailureThreshold"
    with pytest.raises(Exception, match="ToleratedFailurePercentage"):
        run_moto(definition, data)


def _keep_alive(
    functions: Functions, heartbeat: Callable[[str], Any], succeed: Callable[[str], Any]
) -> None:
    deadline = time.monotonic() + 10
    while not functions.tokens:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    token = functions.tokens[-1]
    for _ in range(4):  # 2 s of heartbeats every 0.5 s: longer than HeartbeatSeconds
        time.sleep(0.5)
        heartbeat(token)
    succeed(token)


def test_heartbeats_keep_a_task_alive(engine: tuple[Engine, Functions]) -> None:
    expected = run_moto(HEARTBEAT, {}, _keep_alive)
    got = run_engine(*engine, "heartbeat-alive", HEARTBEAT, {}, _keep_alive)
    assert got == expected
    assert got["output"] == {"done": True}


def test_a_missing_heartbeat_times_the_task_out(engine: tuple[Engine, Functions]) -> None:
    got = run_engine(*engine, "heartbeat-late", HEARTBEAT, {})
    # AWS names a missed heartbeat States.HeartbeatTimeout, so the Catch takes it.
    assert (got["status"], got["output"]) == ("succeeded", "no heartbeat")
    assert got["entered"] == {"Wait for a person", "Too late"}
    moto = run_moto(HEARTBEAT, {})
    assert (moto["status"], moto["error"]) == ("failed", "States.Timeout"), (
        "moto names a missed heartbeat States.Timeout, which the Catch does not match"
    )
