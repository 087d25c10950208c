"""The example workflows, compiled, on moto's Step Functions interpreter (independent of ours),
with our real step functions behind Lambda.

Every Lambda invocation runs `functions/<name>/handler.py` as Lambda would, wired from the
environment as the stack wires it on AWS: the run database (Aurora there) is a fresh PostgreSQL
database, idempotency records and the budget ledger are DynamoDB tables and large outputs an S3
bucket, on moto. Models (and the tools that would reach the network) answer from the example's
script in workflows/scripts/ through `SWITCHYARD_LLM_SCRIPT`. Human gates are opened by
approval_notify and decided through `switchyard.gates.decide`, which answers the task token
with SendTaskSuccess.

On AWS nothing keeps run records (workflow_runs and task_runs are the local engine's): what a
run spent is in the budget ledger, per run. So the tests check that the step results the
functions returned (the cost and usage that the machine writes into each step's record) are the
script's tokens priced by the model catalog, and add up to the ledger's totals of each run.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.dynamodb.responses import DynamoHandler
from psycopg_pool import ConnectionPool

from switchyard.constants import (
    BUDGET_TABLE_ENV,
    DATABASE_URL_ENV,
    IDEMPOTENCY_TABLE_ENV,
    LLM_SCRIPT_ENV,
    OUTPUT_BUCKET_ENV,
)
from switchyard.engine.dispatch import FunctionRegistry, LambdaContext
from switchyard.gates import Decision, Gate, GateStore, decide
from switchyard.gates.callbacks import Boto3Callbacks
from switchyard.model import LoopStep, Workflow
from switchyard.runtime import wiring
from switchyard.stores.budget import DynamoDBBudgetLedger, Scope, create_budget_table
from switchyard.stores.idempotency import create_idempotency_table
from switchyard.validate import validate_file
from tests.conftest import REPO
from tests.e2e.examples import (
    APPROVALS,
    CHILDREN,
    EXAMPLES,
    STEP_STATUSES,
    expected_child_runs,
    expected_model_calls,
    expected_output,
    price,
    run_input,
    script_path,
    workflow_path,
)
from tests.pg import fresh_database
from tests.scenarios.harness.moto_runner import (
    DEADLINE_SECONDS,
    FUNCTION_ARN,
    REGION,
    create_machines,
    execution_history,
    moto_step_functions,
)
from tests.scenarios.harness.outcome import records_from_history

FUNCTIONS_DIR = REPO / "functions"
STEP_FUNCTIONS = ("agent_step", "tool_step", "router_step")
BUDGET_TABLE = "switchyard-budget"
IDEMPOTENCY_TABLE = "switchyard-idempotency"
OUTPUT_BUCKET = "switchyard-step-outputs"
REVIEWER = "lead@example.com"
MICROS = Decimal(1_000_000)
PARENT = "{}-on-moto"
"""The run id (execution name) of an example's run."""


@dataclass
class Returned:
    """What a step function returned for one invocation."""

    run_id: str
    step_id: str
    scope: dict[str, Any]
    result: dict[str, Any]


@dataclass
class LambdaFunctions:
    """`functions/<name>/handler.py`, called as Lambda calls it; step results are kept."""

    registry: FunctionRegistry = field(default_factory=lambda: FunctionRegistry(FUNCTIONS_DIR))
    returned: list[Returned] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def invoke(self, function: str, payload: dict[str, Any]) -> Any:
        spec = self.registry.resolve(function)
        if spec is None:
            raise LookupError(f"no functions/{function}/handler.py")
        context = LambdaContext(
            function_name=function,
            invoked_function_arn=FUNCTION_ARN.format(function),
            timeout_seconds=spec.timeout_seconds,
        )
        result = spec.handler(payload, context)
        if function in STEP_FUNCTIONS:
            with self._lock:
                self.returned.append(
                    Returned(
                        payload["context"]["run"]["id"],
                        payload["step_id"],
                        payload["context"].get("scope") or {},
                        result,
                    )
                )
        return result


@dataclass
class MotoRun:
    described: dict[str, Any]
    events: list[dict[str, Any]]
    runs: dict[str, str]
    """Run id -> workflow name: the run and its sub-workflow runs."""
    spent: dict[str, tuple[int, int]]
    """Run id -> (micro-dollars, tokens) settled in the budget ledger."""
    returned: list[Returned]
    decided: list[Gate]

    @property
    def output(self) -> Any:
        return json.loads(self.described["output"])


@pytest.fixture(scope="module")
def conninfo() -> Iterator[str]:
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    with fresh_database() as found:
        yield found


def _clear_handler_caches() -> None:
    """The handlers build their services once per process (as on Lambda): build them anew."""
    wiring.step_services.cache_clear()
    wiring.database_pool.cache_clear()
    notify = sys.modules.get("switchyard_functions.approval_notify.handler")
    if notify is not None:
        notify._store.cache_clear()


_DYNAMODB = threading.Lock()
_call_action = DynamoHandler.call_action


def _one_request_at_a_time(handler: DynamoHandler) -> Any:
    """DynamoDB applies each request atomically; moto's in-memory tables do not, and concurrent
    sub-workflow runs sharing their parent's budget row corrupt it (a transaction half applied
    under another). Serving one request at a time gives back DynamoDB's atomicity."""
    with _DYNAMODB:
        return _call_action(handler)


@contextmanager
def lambda_environment(
    monkeypatch: pytest.MonkeyPatch, conninfo: str, example: str, script: Path | None = None
) -> Iterator[None]:
    """The functions' environment as the stack sets it, with moto's DynamoDB and S3."""
    monkeypatch.setattr(DynamoHandler, "call_action", _one_request_at_a_time)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv(DATABASE_URL_ENV, conninfo)
    monkeypatch.setenv(IDEMPOTENCY_TABLE_ENV, IDEMPOTENCY_TABLE)
    monkeypatch.setenv(BUDGET_TABLE_ENV, BUDGET_TABLE)
    monkeypatch.setenv(OUTPUT_BUCKET_ENV, OUTPUT_BUCKET)
    monkeypatch.setenv(LLM_SCRIPT_ENV, str(script or script_path(example)))
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    create_budget_table(dynamodb, BUDGET_TABLE)
    create_idempotency_table(dynamodb, IDEMPOTENCY_TABLE)
    boto3.client("s3", region_name=REGION).create_bucket(Bucket=OUTPUT_BUCKET)
    _clear_handler_caches()
    pool = wiring.database_pool()  # the one the handlers share, closed at the end
    try:
        yield
    finally:
        if pool is not None:
            pool.close()
        _clear_handler_caches()


def _workflow(name: str) -> Workflow:
    result = validate_file(workflow_path(name))
    assert result.workflow is not None, [d.format() for d in result.errors]
    return result.workflow


def _drive(sfn: Any, execution: str, run_id: str, gates: GateStore) -> tuple[Any, list[Gate]]:
    """Follow the execution to its end, approving every gate that opens, as a reviewer would."""
    decided: list[Gate] = []
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        for gate in gates.open_for(run_id):
            decision = Decision("approve", REVIEWER, note="checked against the ticket")
            decided.append(decide(gate, decision, store=gates, callbacks=Boto3Callbacks(sfn)))
        described = sfn.describe_execution(executionArn=execution)
        if described["status"] != "RUNNING":
            return described, decided
        time.sleep(0.02)
    raise TimeoutError(f"{execution} did not finish in {DEADLINE_SECONDS} s")


def run_on_moto(
    example: str,
    conninfo: str,
    monkeypatch: pytest.MonkeyPatch,
    *,
    given: dict[str, Any] | None = None,
    script: Path | None = None,
) -> MotoRun:
    """Run `example` with its input and script, or with `given` input and `script`."""
    functions = LambdaFunctions()
    children = [_workflow(name) for name in CHILDREN.get(example, ())]
    with (
        moto_step_functions(functions) as sfn,
        lambda_environment(monkeypatch, conninfo, example, script),
        ConnectionPool(conninfo, min_size=1, max_size=2, kwargs={"autocommit": True}) as pool,
    ):
        arn = create_machines(sfn, children, _workflow(example))
        run_id = PARENT.format(example)
        execution = sfn.start_execution(
            stateMachineArn=arn, name=run_id, input=json.dumps(given or run_input(example))
        )["executionArn"]
        described, decided = _drive(sfn, execution, run_id, GateStore(pool))
        runs = {run_id: example}
        for machine in sfn.list_state_machines()["stateMachines"]:
            if machine["name"] != example:
                listed = sfn.list_executions(stateMachineArn=machine["stateMachineArn"])
                runs.update({e["name"]: machine["name"] for e in listed["executions"]})
        ledger = DynamoDBBudgetLedger(BUDGET_TABLE)
        spent = {}
        for run in runs:
            totals = ledger.totals(Scope("run", run))
            spent[run] = (totals.spent_micros, totals.tokens)
        return MotoRun(
            described=dict(described),
            events=execution_history(sfn, execution),
            runs=runs,
            spent=spent,
            returned=list(functions.returned),
            decided=decided,
        )


def _usd(value: Any) -> Decimal:
    return Decimal(str(value))


def _tokens(usage: dict[str, Any] | None) -> int:
    usage = usage or {}
    return sum(int(usage.get(k, 0)) for k in ("input_tokens", "output_tokens", "cache_read_tokens"))


@pytest.fixture(scope="module")
def moto_run(conninfo: str) -> Iterator[Callable[[str], MotoRun]]:
    """Each example's run on moto, run once for the module's tests."""
    done: dict[str, MotoRun] = {}
    with pytest.MonkeyPatch.context() as monkeypatch:

        def run(example: str) -> MotoRun:
            if example not in done:
                done[example] = run_on_moto(example, conninfo, monkeypatch)
            return done[example]

        yield run


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_example_succeeds_and_its_steps_costs_add_up_to_each_runs_spend(
    example: str, moto_run: Callable[[str], MotoRun]
) -> None:
    run = moto_run(example)
    assert run.described["status"] == "SUCCEEDED", (
        run.described.get("error"),
        run.described.get("cause"),
    )
    assert run.output == expected_output(example)
    assert sorted(g.step_id for g in run.decided) == sorted(APPROVALS.get(example, ()))
    assert all(g.decision == "approved" and g.reviewer == REVIEWER for g in run.decided)
    records, _ = records_from_history(run.events)
    expected = STEP_STATUSES[example]
    assert {s: records[s]["status"] for s in expected} == expected
    assert len(run.runs) == 1 + expected_child_runs(example)

    for run_id, workflow in run.runs.items():
        returned = [r for r in run.returned if r.run_id == run_id]
        assert returned, f"no step of run {run_id} ({workflow}) ran"
        # Each model step made the calls the script says, each priced by the catalog.
        for step_id, calls in expected_model_calls(example, workflow).items():
            results = sorted(
                (r.result for r in returned if r.step_id == step_id),
                key=lambda result: (result.get("loop_output") or {}).get("iterations", 0),
            )
            got = [
                (r["usage"]["model"], r["usage"]["input_tokens"], r["usage"]["output_tokens"])
                for r in results
            ]
            assert got == calls, f"{workflow}.{step_id}"
            assert [_usd(r["cost_usd"]) for r in results] == [price(*call) for call in calls]
            assert all(r["usage"]["provider"] == "scripted" for r in results)
        # Tool steps answered from the script cost nothing and call no model.
        for result in (r.result for r in returned):
            if result["usage"] is None:
                assert result["cost_usd"] == 0
        # The steps' costs and tokens add up to what the ledger settled on the run. (A run with
        # sub-workflow runs has their spend in its totals too: see the test after this one.)
        if run_id == PARENT.format(example) and expected_child_runs(example):
            continue
        micros, tokens = run.spent[run_id]
        assert sum(_usd(r.result["cost_usd"]) for r in returned) == Decimal(micros) / MICROS > 0
        assert sum(_tokens(r.result["usage"]) for r in returned) == tokens

    # The machine carries each step's cost and usage in its record, as the function returned it;
    # a loop's record is its last iteration's output (ASL cannot add up dollars, which are not
    # integers: the iterations' costs are in their own records and in the ledger).
    workflow = _workflow(example)
    parent = [r for r in run.returned if r.run_id == PARENT.format(example)]
    for step_id, calls in expected_model_calls(example, example).items():
        results = [r.result for r in parent if r.step_id == step_id]
        record = records[step_id]
        if isinstance(workflow.steps[step_id], LoopStep):
            assert record["output"] == results[-1]["loop_output"]
            assert record["output"]["iterations"] == len(calls)
        else:
            (result,) = results
            assert _usd(record["cost_usd"]) == _usd(result["cost_usd"])
            assert record["usage"] == result["usage"]


def test_a_sub_workflows_spend_counts_toward_the_parent_runs_budget(
    moto_run: Callable[[str], MotoRun],
) -> None:
    run = moto_run("document-processing")
    parent = PARENT.format("document-processing")
    own = sum(_usd(r.result["cost_usd"]) for r in run.returned if r.run_id == parent)
    children = sum(Decimal(run.spent[r][0]) for r in run.runs if r != parent) / MICROS
    assert children > 0
    assert Decimal(run.spent[parent][0]) / MICROS == own + children
