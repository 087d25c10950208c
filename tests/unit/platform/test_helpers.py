"""The render function's helpers: a failed step's error made readable, deadlines, output checks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from switchyard.contract import HumanRequest, StepErrorName
from switchyard.contract.errors import read_cause
from switchyard.contract.step_errors import InvalidOutputError, PermanentError, TemplateRenderError
from switchyard.platform.render import handle


def lambda_cause(error: Exception) -> str:
    """The Cause Step Functions gives a Catch when a Lambda function raised `error`."""
    return json.dumps(
        {"errorMessage": str(error), "errorType": type(error).__name__, "requestId": "r-1"}
    )


def test_a_step_error_reads_as_its_message_and_the_attempt_it_failed_on() -> None:
    raised = PermanentError("404 not found").as_lambda_exception(attempt=3)
    assert read_cause(lambda_cause(raised)) == ("404 not found", 3)


def test_a_human_request_reads_as_its_reason() -> None:
    request = HumanRequest(kind="loop", reason="called 3 times", tool="echo", args={"x": 1})
    raised = json.dumps(request.model_dump(mode="json", exclude_none=True))
    cause = json.dumps({"errorMessage": raised, "errorType": "human_required"})
    assert read_cause(cause) == ("called 3 times", None)


CHILD_FAILED = json.dumps(
    {
        "Error": "permanent",
        "Cause": lambda_cause(PermanentError("no such document").as_lambda_exception()),
    }
)
UNEXPECTED = json.dumps({"errorMessage": "'NoneType' has no attribute 'x'", "errorType": "X"})


@pytest.mark.parametrize(
    ("cause", "message"),
    [
        # an unexpected exception in a function: errorMessage is plain text
        (UNEXPECTED, "'NoneType' has no attribute 'x'"),
        # render's template errors
        (lambda_cause(TemplateRenderError("'steps' is undefined")), "'steps' is undefined"),
        # a human gate's rejection (SendTaskFailure)
        (json.dumps({"reviewer": "lead", "note": "tone is off"}), "rejected by lead: tone is off"),
        (json.dumps({"reviewer": None, "note": None}), "rejected"),
        # a child execution's failure, as startExecution.sync reports it
        (CHILD_FAILED, "no such document"),
        # States.Timeout and the machine's own Pass and Fail states: plain text, or nothing
        ("The state timed out", "The state timed out"),
        ("", ""),
        (None, ""),
        # JSON of another shape stays JSON
        (json.dumps([1, 2]), "[1, 2]"),
        (json.dumps({"a": 1}), '{"a": 1}'),
    ],
)
def test_every_shape_of_cause_reads_as_text(cause: Any, message: str) -> None:
    assert read_cause(cause) == (message, None)


def test_the_failure_helper_rewrites_the_caught_error() -> None:
    raised = InvalidOutputError("not JSON", errors=["a"]).as_lambda_exception(attempt=2)
    error = {"Error": "invalid_output", "Cause": lambda_cause(raised)}
    assert handle({"helper": "failure", "error": error}) == {
        "Error": "invalid_output",
        "Cause": "not JSON",
        "attempts": 2,
    }
    assert handle({"helper": "failure", "error": {"Error": "States.Timeout"}}) == {
        "Error": "timeout",  # a Fail state may not raise a States.* name
        "Cause": "",
        "attempts": None,
    }


CAUGHT_STATE: dict[str, Any] = {
    "inputs": {"ticket": "T-1"},
    "run": {"id": "r-1"},
    "steps": {"first": {"status": "completed", "output": {"text": "ok"}}},
    "scope": {"iteration": 2},
}


def caught(step: dict[str, Any], error: dict[str, Any], **info: Any) -> dict[str, Any]:
    state = json.loads(json.dumps(CAUGHT_STATE))
    state["steps"]["broken"] = error  # where the Catch wrote it
    table = {"first": {}, "broken": {"reads": ["first"], **step}}
    event = {"helper": "caught", "state": state, "workflow": {"name": "w", "version": 3}}
    return handle({**event, "steps": table, **info})


def test_the_caught_helper_records_the_failure_and_builds_its_dead_letter() -> None:
    raised = InvalidOutputError("not JSON", errors=["a"]).as_lambda_exception(attempt=2)
    state = caught(
        {"on_error": "continue", "scope": True},
        {"Error": "invalid_output", "Cause": lambda_cause(raised)},
    )
    record = {
        "status": "failed",
        "output": None,
        "error": {"type": "invalid_output", "message": "not JSON"},
        "attempts": 2,
    }
    assert state["steps"]["broken"] == record
    assert state["inputs"] == CAUGHT_STATE["inputs"] and state["scope"] == {"iteration": 2}
    error = state["error"]
    assert (error["step"], error["action"]) == ("broken", "continue")
    assert (error["Error"], error["Cause"], error["attempts"]) == ("invalid_output", "not JSON", 2)
    assert error["letter"] == {
        "workflow": "w",
        "version": 3,
        "run": {"id": "r-1"},
        "step_id": "broken",
        "error": record["error"],
        "input": {
            "inputs": {"ticket": "T-1"},
            "steps": {"first": CAUGHT_STATE["steps"]["first"]},
            "scope": {"iteration": 2},
        },
    }
    assert error["context"] == {"run": {"id": "r-1"}, "scope": {"iteration": 2}}


def test_a_budget_or_human_error_goes_to_its_gate_as_caught() -> None:
    state = caught({}, {"Error": "budget", "Cause": "needs $1"})
    assert "broken" not in state["steps"]  # the step runs again after the gate
    assert state["error"]["action"] == "budget"
    assert state["error"]["gate"] == {"Error": "budget", "Cause": "needs $1"}
    assert state["error"]["letter"] is None
    refused = caught({"on_exceeded": "fail"}, {"Error": "budget", "Cause": "needs $1"})
    assert refused["error"]["action"] == "stop"
    out_of_a_map = caught({"parks": False}, {"Error": "budget", "Cause": "needs $1"})
    assert out_of_a_map["error"]["action"] == "fail"  # the items had their own gates
    assert out_of_a_map["steps"]["broken"]["status"] == "failed"
    human = caught({}, {"Error": "human_required", "Cause": "{}"})
    assert human["error"]["action"] == "human" and human["error"]["context"] == {
        "run": {"id": "r-1"}
    }


def test_a_failure_handed_up_by_its_branch_reads_as_the_step_s_own() -> None:
    """A Parallel branch's Fail carries the step's caught error as JSON text (contract.errors
    .BRANCH_FAILED); the tail outside reads it as if the step had failed in its block."""
    raised = InvalidOutputError("not JSON", errors=["a"]).as_lambda_exception(attempt=2)
    error = {"Error": "invalid_output", "Cause": lambda_cause(raised)}
    direct = caught({}, error)
    branch_failed = "switchyard.branch_failed:broken"
    handed = caught({"parks": False}, {"Error": branch_failed, "Cause": json.dumps(error)})
    assert handed["steps"]["broken"] == direct["steps"]["broken"]
    assert handed["error"] == direct["error"]
    no_cause = caught({}, {"Error": branch_failed, "Cause": '{"Error":"States.Timeout"}'})
    assert no_cause["steps"]["broken"]["error"] == {"type": "timeout", "message": ""}
    # Cut at Step Functions' limit, the JSON text still names the error first.
    cut = json.dumps(error)[:60]
    truncated = caught({}, {"Error": branch_failed, "Cause": cut})
    assert truncated["steps"]["broken"]["error"]["type"] == "invalid_output"


def test_a_gate_s_last_timeout_is_its_on_timeout() -> None:
    state = caught({"on_timeout": "reject"}, {"Error": "States.Timeout", "Cause": ""})
    assert state["steps"]["broken"]["error"] == {
        "type": "rejected",
        "message": "nobody decided within the time of every tier; the gate rejected",
    }
    assert state["error"]["action"] == "fail"


@pytest.mark.parametrize(
    ("start", "seconds", "at"),
    [
        ("2026-11-29T15:13:01.333Z", 90, "2026-11-29T15:14:31.333Z"),
        ("2026-12-31T23:59:59Z", 1, "2027-01-01T00:00:00.000Z"),
        ("2026-11-29T16:13:01.333456+01:00", 0, "2026-11-29T15:13:01.333Z"),
    ],
)
def test_a_deadline_is_the_start_plus_the_seconds_in_utc(start: str, seconds: int, at: str) -> None:
    assert handle({"helper": "deadline", "start": start, "seconds": seconds}) == {"at": at}


SCHEMA = {
    "type": "array",
    "items": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}


def test_an_output_that_matches_its_schema_passes() -> None:
    request = {"helper": "check_output", "step_id": "each", "output_schema": SCHEMA}
    assert handle({**request, "value": [{"text": "a"}, {"text": "b"}]}) == {"valid": True}


def test_an_output_that_does_not_match_fails_invalid_output() -> None:
    request = {"helper": "check_output", "step_id": "each", "output_schema": SCHEMA}
    with pytest.raises(Exception) as raised:
        handle({**request, "value": [{"text": "a"}, {"label": "b"}]})
    assert type(raised.value).__name__ == StepErrorName.INVALID_OUTPUT == "invalid_output"
    cause = json.loads(str(raised.value))
    assert cause["type"] == "invalid_output"
    assert "'each'" in cause["message"] and "1: " in cause["message"]
    assert cause["errors"] == ['1: "text" is a required property']


def test_parts_moved_to_the_output_store_are_not_checked() -> None:
    reference = {"$switchyard_ref": {"store": "s3", "key": "k", "bytes": 40000}}
    request = {"helper": "check_output", "step_id": "each", "output_schema": SCHEMA}
    assert handle({**request, "value": [{"text": reference}, reference]}) == {"valid": True}
    with pytest.raises(Exception, match="required"):
        handle({**request, "value": [{"text": reference}, {"label": "b"}]})


def test_an_unknown_helper_is_a_permanent_error() -> None:
    with pytest.raises(Exception) as raised:
        handle({"helper": "nope"})
    assert type(raised.value).__name__ == "permanent"
