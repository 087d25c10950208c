"""The step handlers as Lambda calls them: the real `functions/*/handler.py`, scripted model
answers, a real PostgreSQL behind the stores. What leaves: the result, EMF metrics on stdout,
and failures raised under the contract's error names."""

from __future__ import annotations

import importlib.util
import json
import threading
import time
import uuid
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from aws_lambda_powertools import Metrics

from switchyard.constants import (
    DATABASE_URL_ENV,
    LLM_SCRIPT_ENV,
    METRICS_NAMESPACE,
    TENANT_QUOTAS_ENV,
)
from switchyard.contract import StepErrorName
from switchyard.engine.dispatch.lambda_context import LambdaContext
from switchyard.runtime.wiring import step_services
from tests import held
from tests.unit.runtime.helpers import invocation, retried

FUNCTIONS = Path(__file__).resolve().parents[3] / "functions"
AGENT = {"type": "agent", "model": "claude-sonnet-4-5", "prompt": "Ticket: {{ inputs.body }}"}


@cache  # a handler module loads once per process, as in Lambda
def handler_module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"test_{name}_handler", FUNCTIONS / name / "handler.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def environment(
    pg_conninfo: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    script = tmp_path / "script.yaml"
    monkeypatch.setenv(DATABASE_URL_ENV, pg_conninfo)
    monkeypatch.setenv(LLM_SCRIPT_ENV, str(script))
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")  # an in-process engine sets it
    Metrics(namespace=METRICS_NAMESPACE).clear_metrics()  # metrics are shared per process
    step_services.cache_clear()
    yield script
    step_services.cache_clear()


def context(name: str) -> LambdaContext:
    return LambdaContext(name, f"arn:aws:lambda:us-east-1:123456789012:function:{name}")


def emitted_metrics(stdout: str) -> dict[str, Any]:
    for line in stdout.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            return dict(json.loads(line))
    raise AssertionError(f"no EMF record in {stdout!r}")


def test_an_agent_step_returns_its_result_and_publishes_cost_tokens_and_duration(
    environment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    environment.write_text("draft:\n  - {text: Refunded., input_tokens: 1000, output_tokens: 50}\n")
    event = invocation("draft", AGENT, inputs={"body": "charged twice"}).model_dump(mode="json")

    result = handler_module("agent_step").handler(event, context("agent_step"))

    assert result["output"] == {"text": "Refunded."}
    assert result["usage"]["input_tokens"] == 1000
    record = emitted_metrics(capsys.readouterr().out)
    names = {m["Name"] for m in record["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert names == {"StepCostUSD", "InputTokens", "OutputTokens", "StepDuration"}
    assert record["_aws"]["CloudWatchMetrics"][0]["Namespace"] == METRICS_NAMESPACE
    assert record["workflow"] == "support" and record["service"] == "agent_step"
    assert record["InputTokens"] == [1000.0]
    assert record["StepCostUSD"] == [pytest.approx(float(result["cost_usd"]))]


def test_a_failed_step_raises_under_its_contract_error_name(environment: Path) -> None:
    environment.write_text("draft:\n  - {error: rate_limit, retry_after: 7}\n")
    event = invocation("draft", AGENT, inputs={"body": "x"}).model_dump(mode="json")

    with pytest.raises(Exception) as raised:
        handler_module("agent_step").handler(event, context("agent_step"))

    assert type(raised.value).__name__ == StepErrorName.RATE_LIMIT.value == "rate_limit"
    assert "7" in str(raised.value)


def test_a_failed_attempt_says_which_attempt_it_was(environment: Path) -> None:
    """Step Functions does not tell a Catch how often the Task was tried: the cause says."""
    environment.write_text("draft:\n  - {error: transient, message: down}\n")
    event = retried(invocation("draft", AGENT, inputs={"body": "x"}), 2).model_dump(mode="json")

    with pytest.raises(Exception) as raised:
        handler_module("agent_step").handler(event, context("agent_step"))

    assert json.loads(str(raised.value)) == {"type": "transient", "message": "down", "attempts": 3}


def test_a_malformed_event_is_refused_before_anything_runs(environment: Path) -> None:
    with pytest.raises(Exception, match="step_id"):
        handler_module("tool_step").handler({"step": {}}, context("tool_step"))


def test_a_handler_module_imported_twice_in_one_process_runs_from_both_copies(
    environment: Path,
) -> None:
    """The engine's function registry and a test may each import functions/<name>/handler.py."""
    environment.write_text("draft:\n  - {text: Done.}\n")
    spec = importlib.util.spec_from_file_location(
        "test_agent_step_handler_again", FUNCTIONS / "agent_step" / "handler.py"
    )
    assert spec is not None and spec.loader is not None
    again = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(again)

    step = {**AGENT, "model": "claude-haiku-4-5"}  # not held back by another test's rate limit
    for module in (handler_module("agent_step"), again):
        event = invocation("draft", step, inputs={"body": "x"}).model_dump(mode="json")
        assert module.handler(event, context("agent_step"))["output"] == {"text": "Done."}


def test_with_metrics_disabled_as_the_local_engine_runs_steps_nothing_reaches_stdout(
    environment: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Powertools keeps one metric set per process and, disabled, never clears it; once a metric
    holds 100 values it prints the set anyway, on stdout, where `switchyard run --json` prints
    the run (a map over 100 documents did it)."""
    environment.write_text("note:\n  - {output: {status: 200}}\n")
    step = {"type": "tool", "tool": "http.request", "args": {"method": "GET", "url": "https://x"}}
    event = invocation("note", step).model_dump(mode="json")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    for _ in range(120):
        handler_module("tool_step").handler(event, context("tool_step"))
    assert capsys.readouterr().out == ""

    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    handler_module("tool_step").handler(event, context("tool_step"))
    record = emitted_metrics(capsys.readouterr().out)
    assert len(record["StepDuration"]) == 1  # nothing kept from the disabled invocations


def test_a_failed_attempt_reports_what_it_spent_in_its_error_and_its_metrics(
    environment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The model answered (and was paid) but not with JSON: the attempt fails invalid_output,
    and its cost must still reach the run's totals and CloudWatch."""
    from switchyard.contract.errors import read_spend

    environment.write_text(
        "classify:\n  - {text: not json, input_tokens: 1000, output_tokens: 50}\n"
    )
    schema = {"type": "object", "properties": {"label": {"type": "string"}}}
    step = {**AGENT, "output_schema": schema}
    event = invocation("classify", step, inputs={"body": "x"}).model_dump(mode="json")

    with pytest.raises(Exception) as raised:
        handler_module("agent_step").handler(event, context("agent_step"))

    assert type(raised.value).__name__ == "invalid_output"
    cause = json.loads(str(raised.value))
    assert cause["cost_usd"] == pytest.approx((1000 * 3 + 50 * 15) / 1e6)
    assert cause["usage"]["input_tokens"] == 1000 and cause["usage"]["output_tokens"] == 50
    assert cause["usage"]["model"] == "claude-sonnet-4-5"
    # What the engine's run records read from the Cause that Lambda wraps around it.
    lambda_cause = json.dumps({"errorMessage": str(raised.value), "errorType": "invalid_output"})
    assert read_spend(lambda_cause) == {
        "cost_usd": cause["cost_usd"],
        "usage": cause["usage"],
        "attempts": 1,
    }
    record = emitted_metrics(capsys.readouterr().out)
    assert record["StepCostUSD"] == [pytest.approx(cause["cost_usd"])]
    assert record["InputTokens"] == [1000.0] and record["OutputTokens"] == [50.0]


def test_a_failed_attempt_that_spent_nothing_reports_no_spend(environment: Path) -> None:
    environment.write_text("draft:\n  - {error: transient, message: down}\n")
    event = invocation("draft", AGENT, inputs={"body": "x"}).model_dump(mode="json")
    with pytest.raises(Exception) as raised:
        handler_module("agent_step").handler(event, context("agent_step"))
    assert "cost_usd" not in json.loads(str(raised.value))


def _counts(record: dict[str, Any]) -> dict[str, Any]:
    names = ("RetryAttempts", "RateLimitedAttempts", "VersionConflicts")
    return {name: record[name] for name in names if name in record}


def test_a_retried_rate_limited_attempt_is_counted_as_both(
    environment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    environment.write_text("draft:\n  - {error: rate_limit, retry_after: 2}\n")
    first = invocation("draft", AGENT, inputs={"body": "x"})

    for event in (first, retried(first, 1)):
        with pytest.raises(Exception, match="retry_after"):
            handler_module("agent_step").handler(event.model_dump(mode="json"), context("a"))
        record = emitted_metrics(capsys.readouterr().out)
        if event is first:
            assert _counts(record) == {"RateLimitedAttempts": [1.0]}
        else:
            assert _counts(record) == {"RateLimitedAttempts": [1.0], "RetryAttempts": [1.0]}


def test_a_duplicate_invocation_of_a_running_side_effect_is_a_version_conflict(
    environment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Lambda may deliver one invocation twice at once: the second finds the step's idempotency
    record in progress, fails `transient` (the machine retries it) and counts a conflict."""
    environment.write_text("other:\n  - {text: not this step}\n")  # the tool itself runs
    key = f"conflict-{uuid.uuid4().hex[:8]}"
    tool = {"description": "Hold.", "kind": "python", "config": {"function": "tests.held:hold"}}
    step = {"type": "tool", "tool": "held", "args": {"key": key}, "tool_defs": {"held": tool}}
    event = invocation("charge", {**step, "side_effect": "idempotent"}).model_dump(mode="json")
    first = threading.Thread(
        target=lambda: handler_module("tool_step").handler(event, context("tool_step"))
    )
    first.start()
    try:
        deadline = time.monotonic() + 10
        while not held.holding(key):
            assert time.monotonic() < deadline, "the first invocation never started its call"
            time.sleep(0.01)
        capsys.readouterr()
        with pytest.raises(Exception, match="already running") as raised:
            handler_module("tool_step").handler(event, context("tool_step"))
    finally:
        held.release(key)
        first.join(10)
    assert type(raised.value).__name__ == "transient"
    record = emitted_metrics(capsys.readouterr().out)
    assert _counts(record) == {"VersionConflicts": [1.0]}


def test_a_throttled_step_is_counted_in_its_metric(
    environment: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = f"t{uuid.uuid4().hex[:8]}"
    quotas = {tenant: {"claude-sonnet-4-5": {"requests_per_minute": 1}}}
    monkeypatch.setenv(TENANT_QUOTAS_ENV, json.dumps(quotas))
    environment.write_text("draft:\n  - {text: Refunded.}\n")
    handler = handler_module("agent_step").handler
    first = invocation("draft", AGENT, inputs={"body": "x"}, tenant=tenant)
    handler(first.model_dump(mode="json"), context("agent_step"))
    capsys.readouterr()

    second = invocation("draft", AGENT, inputs={"body": "x"}, tenant=tenant)
    with pytest.raises(Exception) as raised:
        handler(second.model_dump(mode="json"), context("agent_step"))

    assert type(raised.value).__name__ == "throttled"
    assert json.loads(str(raised.value))["quota"] == f"{tenant}:claude-sonnet-4-5:requests"
    record = emitted_metrics(capsys.readouterr().out)
    assert record["ThrottledSteps"] == [1.0]


def test_a_call_to_a_host_whose_circuit_is_open_fails_fast_and_is_counted(
    environment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    environment.write_text("{}\n")  # a tool step asks no model
    host = f"{uuid.uuid4().hex[:8]}.example.com"
    breakers = step_services().tools.breakers
    for _ in range(breakers.policy.min_calls):  # other workers' calls to it failed
        breakers.record(f"host:{host}", breakers.admit(f"host:{host}"), "failure")
    step = {
        "type": "tool",
        "tool": "http.request",
        "args": {"method": "GET", "url": f"https://{host}/"},
    }
    event = invocation("fetch", step).model_dump(mode="json")

    with pytest.raises(Exception) as raised:
        handler_module("tool_step").handler(event, context("tool_step"))

    assert type(raised.value).__name__ == "circuit_open"
    cause = json.loads(str(raised.value))
    assert cause["circuit"] == f"host:{host}" and cause["retry_after"] > 0
    assert "calls fail fast without being made" in cause["message"]
    record = emitted_metrics(capsys.readouterr().out)
    assert record["CircuitOpenSteps"] == [1.0]
