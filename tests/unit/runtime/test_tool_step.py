"""Tool steps: rendering, the gateway, effectively-once side effects, outputs."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools.utilities.idempotency import BasePersistenceLayer
from moto import mock_aws
from psycopg_pool import ConnectionPool

from switchyard.contract import OUTPUT_REF_KEY, StepErrorName, StepInvocation
from switchyard.contract.step_errors import (
    HumanRequiredError,
    InvalidOutputError,
    PolicyViolationError,
    RejectedError,
    TemplateRenderError,
    TransientError,
)
from switchyard.runtime import StepServices, run_tool_step
from switchyard.runtime.large_outputs import InMemoryOutputStore, resolve
from switchyard.runtime.settings import LLM_SCRIPT_ENV
from switchyard.runtime.tools import GatewayStores, ToolEnvironment
from switchyard.stores.idempotency import (
    IdempotentCalls,
    OutcomeUnknownError,
    PostgresPersistenceLayer,
    create_idempotency_table,
    dynamodb_persistence_layer,
)
from switchyard.stores.tool_calls import ToolDecision
from tests.unit.runtime.helpers import invocation, retried
from tests.unit.stores.backends import serialised_dynamodb_client

SENT: list[dict[str, Any]] = []


def send_invoice(customer: str, amount: float) -> dict[str, Any]:
    SENT.append({"customer": customer, "amount": amount})
    return {"invoice": f"INV-{len(SENT)}", "customer": customer}


class Crash(BaseException):
    """The process dies: no handler of ours or Powertools' runs."""


def send_then_die(customer: str, amount: float) -> dict[str, Any]:
    send_invoice(customer, amount)
    raise Crash


def lose_answer(customer: str, amount: float) -> dict[str, Any]:
    send_invoice(customer, amount)
    raise OutcomeUnknownError("the connection dropped after the request was sent")


def big(n: int) -> dict[str, Any]:
    return {"status": "ok", "rows": ["x" * 100 for _ in range(n)]}


def tool_defs(function: str, side_effect: str = "idempotent") -> dict[str, Any]:
    return {
        "invoice": {
            "description": "Send an invoice.",
            "kind": "python",
            "config": {"function": f"tests.unit.runtime.test_tool_step:{function}"},
            "side_effect": side_effect,
        }
    }


def tool_step(
    function: str = "send_invoice", side_effect: str = "idempotent", **extra: Any
) -> dict[str, Any]:
    return {
        "type": "tool",
        "tool": "invoice",
        "args": {"customer": "{{ inputs.customer }}", "amount": "{{ steps.quote.output.total }}"},
        "tool_defs": tool_defs(function, side_effect),
        **extra,
    }


STEPS = {"quote": {"status": "completed", "output": {"total": 42.5}}}


@dataclass
class LambdaContext:
    remaining_ms: int

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


@pytest.fixture(params=["dynamodb", "postgres"])
def persistence(request: pytest.FixtureRequest) -> Iterator[BasePersistenceLayer]:
    if request.param == "dynamodb":
        with mock_aws():
            client = serialised_dynamodb_client()
            create_idempotency_table(client, "idempotency")
            yield dynamodb_persistence_layer("idempotency", client=client)
    else:
        pool: ConnectionPool = request.getfixturevalue("pg_pool")
        yield PostgresPersistenceLayer(pool)


@pytest.fixture
def services(persistence: BasePersistenceLayer) -> StepServices:
    return StepServices(
        tools=GatewayStores(idempotency=IdempotentCalls(persistence)), tool_env=ToolEnvironment()
    )


def test_args_render_with_native_types_and_the_output_comes_back(services: StepServices) -> None:
    inv = invocation("bill", tool_step(), inputs={"customer": "acme"}, steps=STEPS)
    result = run_tool_step(inv, services)
    assert result.output["customer"] == "acme"
    assert SENT[-1] == {"customer": "acme", "amount": 42.5}
    assert result.attempts == 1 and result.cost_usd == 0.0


def test_a_handler_that_crashes_after_the_side_effect_and_is_retried_makes_it_once(
    services: StepServices,
) -> None:
    inv = invocation(
        "bill", tool_step(), inputs={"customer": f"c-{uuid.uuid4().hex[:6]}"}, steps=STEPS
    )
    before = len(SENT)

    def handler(event: Any) -> Any:
        run_tool_step(event, services, lambda_context=LambdaContext(30_000))
        raise Crash  # the Lambda dies before it can return the result

    with pytest.raises(Crash):
        handler(inv)
    retry = run_tool_step(retried(inv, 1), services, lambda_context=LambdaContext(30_000))
    assert len(SENT) == before + 1
    assert retry.output == {
        "invoice": f"INV-{before + 1}",
        "customer": inv.context.inputs["customer"],
    }
    assert retry.attempts == 2


def test_a_non_idempotent_call_that_died_mid_effect_goes_to_a_person(
    services: StepServices,
) -> None:
    inv = invocation(
        "bill", tool_step("send_then_die", "non_idempotent"), inputs={"customer": "x"}, steps=STEPS
    )
    before = len(SENT)
    with pytest.raises(Crash):
        run_tool_step(inv, services, lambda_context=LambdaContext(1))
    time.sleep(0.01)  # past the crashed attempt's Lambda deadline
    with pytest.raises(HumanRequiredError) as info:
        run_tool_step(retried(inv, 1), services, lambda_context=LambdaContext(30_000))
    assert info.value.request.kind == "unknown_outcome"
    assert len(SENT) == before + 1  # not sent a second time

    # The person checked: the invoice did go out. The step completes with what they saw.
    services.tools.decisions.record(
        inv.context.run.id,
        info.value.request.call_id or "",
        ToolDecision("approved", output={"invoice": "INV-seen"}),
    )
    assert run_tool_step(retried(inv, 2), services).output == {"invoice": "INV-seen"}
    assert len(SENT) == before + 1


def test_an_unknown_outcome_of_a_non_idempotent_call_is_not_retried(services: StepServices) -> None:
    inv = invocation(
        "bill", tool_step("lose_answer", "non_idempotent"), inputs={"customer": "y"}, steps=STEPS
    )
    with pytest.raises(HumanRequiredError) as info:
        run_tool_step(inv, services)
    assert info.value.name is StepErrorName.HUMAN_REQUIRED
    cause = info.value.cause()
    assert cause["kind"] == "unknown_outcome" and cause["tool"] == "invoice"


ECHOED: list[dict[str, Any]] = []


def echo(x: int) -> dict[str, Any]:
    ECHOED.append({"x": x})
    return {"x": x}


def echo_step() -> dict[str, Any]:
    return {
        "type": "tool",
        "tool": "echo",
        "args": {"x": 1},
        "tool_defs": {
            "echo": {
                "description": "Echo.",
                "kind": "python",
                "config": {"function": "tests.unit.runtime.test_tool_step:echo"},
                "side_effect": "none",
            }
        },
    }


def third_identical_call(services: StepServices) -> tuple[StepInvocation, str]:
    """Three tool steps of one run call `echo` with the same arguments: the first two run, the
    third stops for a person (loop detection); returns its invocation and the call's id."""
    run_id = f"run-{uuid.uuid4().hex[:10]}"
    for step_id in ("first", "second"):
        run_tool_step(invocation(step_id, echo_step(), run_id=run_id), services)
    third = invocation("third", echo_step(), run_id=run_id)
    before = len(ECHOED)
    with pytest.raises(HumanRequiredError) as info:
        run_tool_step(third, services)
    assert info.value.request.kind == "loop" and info.value.request.tool == "echo"
    assert "3 times" in info.value.request.reason
    assert len(ECHOED) == before  # stopped before it ran
    return third, info.value.request.call_id or ""


def test_a_loop_stopped_tool_step_runs_the_call_once_more_when_a_person_approves() -> None:
    services = StepServices()
    third, call_id = third_identical_call(services)
    services.tools.decisions.record(
        third.context.run.id, call_id, ToolDecision("approved", reviewer="ops")
    )
    before = len(ECHOED)
    # The machine runs the step again from its first state once the gate is answered.
    assert run_tool_step(third, services).output == {"x": 1}
    assert len(ECHOED) == before + 1
    # Another step making the same call later in the run is a new call: it stops again.
    with pytest.raises(HumanRequiredError):
        run_tool_step(invocation("fourth", echo_step(), run_id=third.context.run.id), services)


def test_a_loop_stopped_tool_step_fails_rejected_when_a_person_rejects() -> None:
    services = StepServices()
    third, call_id = third_identical_call(services)
    services.tools.decisions.record(
        third.context.run.id, call_id, ToolDecision("rejected", reviewer="ops", note="stuck")
    )
    before = len(ECHOED)
    with pytest.raises(RejectedError, match="stuck") as info:
        run_tool_step(third, services)
    assert info.value.name is StepErrorName.REJECTED
    assert len(ECHOED) == before


def test_undefined_template_names_fail_with_template() -> None:
    inv = invocation("bill", tool_step(), inputs={}, steps=STEPS)
    with pytest.raises(TemplateRenderError):
        run_tool_step(inv, StepServices())


def test_output_schema_is_enforced() -> None:
    step = tool_step(output_schema={"type": "object", "required": ["receipt"]})
    with pytest.raises(InvalidOutputError, match="receipt"):
        run_tool_step(
            invocation("bill", step, inputs={"customer": "z"}, steps=STEPS), StepServices()
        )


def test_large_outputs_leave_by_reference_and_loop_outputs_count_iterations() -> None:
    store = InMemoryOutputStore()
    step = {
        "type": "tool",
        "tool": "big",
        "args": {"n": "{{ iteration * 200 }}"},
        "tool_defs": {
            "big": {
                "description": "Big.",
                "kind": "python",
                "config": {"function": "tests.unit.runtime.test_tool_step:big"},
                "side_effect": "none",
            }
        },
    }
    inv = invocation("fetch", step, scope={"iteration": 2, "previous": None})
    result = run_tool_step(inv, StepServices(output_store=store))
    assert result.output["status"] == "ok"
    assert OUTPUT_REF_KEY in result.output["rows"]
    assert len(resolve(result.output, store)["rows"]) == 400
    assert result.loop_output["iterations"] == 2


SCRIPT = {"bill": [{"output": {"invoice": "INV-scripted"}}]}


def test_a_script_stored_with_the_run_answers_the_step_and_the_tool_is_not_called() -> None:
    inv = invocation("bill", tool_step(), inputs={"customer": "s"}, steps=STEPS)
    scripted = StepInvocation.model_validate({**inv.model_dump(), "llm_script": SCRIPT})
    before = len(SENT)
    assert run_tool_step(scripted, StepServices()).output == {"invoice": "INV-scripted"}
    assert len(SENT) == before


def _scripted(inv: StepInvocation, script: dict[str, Any]) -> StepInvocation:
    return StepInvocation.model_validate({**inv.model_dump(), "llm_script": script})


def test_a_scripted_call_goes_through_the_gateway_policy_audit_and_output_schema() -> None:
    """The script stands in for the tool only: approval policy, audit and `output_schema` hold."""
    defs = tool_defs("send_invoice")
    defs["invoice"]["policy"] = {"require_approval_if": "args.amount > 40"}
    step = tool_step(tool_defs=defs, output_schema={"type": "object", "required": ["invoice"]})
    inv = _scripted(invocation("bill", step, inputs={"customer": "p"}, steps=STEPS), SCRIPT)
    services = StepServices()
    before = len(SENT)

    with pytest.raises(HumanRequiredError) as info:
        run_tool_step(inv, services)
    assert info.value.request.kind == "tool_approval"
    services.tools.decisions.record(
        inv.context.run.id,
        info.value.request.call_id or "",
        ToolDecision("approved", reviewer="ops"),
    )
    assert run_tool_step(inv, services).output == {"invoice": "INV-scripted"}

    assert len(SENT) == before  # the script answered; the tool never ran
    audit = services.tools.audit.for_run(inv.context.run.id)
    assert [(r.tool, r.outcome) for r in audit] == [
        ("invoice", "human_required"),
        ("invoice", "ok"),
    ]
    assert audit[-1].arguments == {"customer": "p", "amount": 42.5}
    unchecked = tool_step(output_schema={"type": "object", "required": ["invoice"]})
    bad = _scripted(
        invocation("bill", unchecked, inputs={"customer": "p"}, steps=STEPS),
        {"bill": [{"output": {"receipt": "R-1"}}]},
    )
    with pytest.raises(InvalidOutputError, match="invoice"):
        run_tool_step(bad, StepServices())


def test_a_scripted_error_is_the_tools_error_and_is_audited() -> None:
    inv = invocation("bill", tool_step(), inputs={"customer": "q"}, steps=STEPS)
    failing = _scripted(inv, {"bill": [{"error": "transient", "message": "upstream 503"}]})
    services = StepServices()
    with pytest.raises(TransientError, match="upstream 503"):
        run_tool_step(failing, services)
    (record,) = services.tools.audit.for_run(inv.context.run.id)
    assert (record.outcome, record.error_type) == ("error", "transient")


def test_a_scripted_call_with_arguments_outside_the_input_schema_is_refused() -> None:
    defs = tool_defs("send_invoice")
    defs["invoice"]["input_schema"] = {
        "type": "object",
        "properties": {"amount": {"type": "number", "maximum": 10}},
    }
    inv = _scripted(
        invocation("bill", tool_step(tool_defs=defs), inputs={"customer": "r"}, steps=STEPS),
        SCRIPT,
    )
    with pytest.raises(PolicyViolationError, match="amount"):
        run_tool_step(inv, StepServices())


def test_the_script_of_switchyard_llm_script_answers_tool_steps_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "script.yaml"
    path.write_text(
        "bill:\n  - {error: transient}\n  - {output: {invoice: INV-from-env}}\n"
        "other:\n  - {output: {}}\n"
    )
    monkeypatch.setenv(LLM_SCRIPT_ENV, str(path))
    inv = invocation("bill", tool_step(), inputs={"customer": "e"}, steps=STEPS)
    before = len(SENT)
    with pytest.raises(TransientError):
        run_tool_step(inv, StepServices())
    assert run_tool_step(retried(inv, 1), StepServices()).output == {"invoice": "INV-from-env"}
    assert len(SENT) == before
    # The run's own script wins over the environment's.
    own = StepInvocation.model_validate({**inv.model_dump(), "llm_script": SCRIPT})
    assert run_tool_step(own, StepServices()).output == {"invoice": "INV-scripted"}
    # A step the script does not name calls its tool.
    unscripted = invocation("pay", tool_step(), inputs={"customer": "e"}, steps=STEPS)
    assert run_tool_step(unscripted, StepServices()).output["customer"] == "e"
    assert len(SENT) == before + 1


def test_a_calls_timeout_is_bounded_by_the_functions_remaining_time() -> None:
    import httpx

    from switchyard.engine.dispatch.lambda_context import LambdaContext

    timeouts: list[float] = []

    def answer(request: httpx.Request) -> httpx.Response:
        timeouts.append(request.extensions["timeout"]["read"])
        return httpx.Response(200, json={"ok": True})

    services = StepServices(tool_env=ToolEnvironment(http_transport=httpx.MockTransport(answer)))
    step = {"type": "tool", "tool": "http.request", "args": {"url": "https://api.example.com/x"}}
    context = LambdaContext("tool_step", "arn:aws:lambda:::function:tool_step", timeout_seconds=6.0)
    run_tool_step(invocation("fetch", step), services, lambda_context=context)
    # 6 s left, less the function's margin (2 s) and the call's own (1 s): at most 3 s, not 30.
    assert 2.0 < timeouts[0] <= 3.0


def test_a_hosts_retry_after_is_waited_out_before_the_retry_calls_it_again() -> None:
    import httpx

    from switchyard.contract.step_errors import RateLimitedError
    from switchyard.runtime.clock import ManualClock
    from switchyard.runtime.rate_limits import RateLimitGate

    clock = ManualClock()
    calls: list[tuple[str, float]] = []
    answers = [httpx.Response(429, headers={"retry-after": "20"})]

    def answer(request: httpx.Request) -> httpx.Response:
        calls.append((request.url.host, clock.now()))
        if request.url.host == "api.example.com" and answers:
            return answers.pop(0)
        return httpx.Response(200, json={"ok": True})

    services = StepServices(
        tool_env=ToolEnvironment(http_transport=httpx.MockTransport(answer)),
        gate=RateLimitGate(clock=clock),
        clock=clock,
    )
    step = {
        "type": "tool",
        "tool": "http.request",
        "args": {"url": "https://api.example.com/x"},
        "timeout": "60s",
    }
    inv = invocation("fetch", step)
    with pytest.raises(RateLimitedError) as info:
        run_tool_step(inv, services)
    assert info.value.retry_after == 20.0
    started = clock.now()

    # Another host is not held back.
    other = {**step, "args": {"url": "https://other.example.com/x"}}
    run_tool_step(invocation("other", other), services)
    assert clock.sleeps == []

    # The machine retries sooner than 20 s (its backoff): the attempt waits out the rest first.
    clock.advance(5)
    result = run_tool_step(retried(inv, 1), services)
    assert result.output["status"] == 200
    assert clock.sleeps == [pytest.approx(15.0)]
    assert calls[-1] == ("api.example.com", pytest.approx(started + 20.0))

    # An attempt whose deadline comes first fails at once, without calling the host.
    answers.append(httpx.Response(429, headers={"retry-after": "120"}))
    with pytest.raises(RateLimitedError):
        run_tool_step(retried(inv, 2), services)
    sent = len(calls)
    with pytest.raises(RateLimitedError, match="past this attempt's deadline") as fast:
        run_tool_step(retried(inv, 3), services)
    assert fast.value.retry_after == pytest.approx(120.0)
    assert len(calls) == sent and clock.sleeps == [pytest.approx(15.0)]
