"""Runtime errors leave as the contract's error names, with causes a gate can show."""

from __future__ import annotations

import json

from switchyard.contract import HumanRequest, StepErrorName
from switchyard.contract.errors import error_type_of
from switchyard.contract.step_errors import (
    BudgetExceededError,
    HumanRequiredError,
    InvalidOutputError,
    PermanentError,
    PolicyViolationError,
    RateLimitedError,
    RejectedError,
    StepTimeoutError,
    TemplateRenderError,
    TransientError,
)


def test_each_error_has_its_contract_name_and_retryability() -> None:
    cases = [
        (PermanentError("x"), StepErrorName.PERMANENT, False),
        (TransientError("x"), StepErrorName.TRANSIENT, True),
        (StepTimeoutError("x"), StepErrorName.TIMEOUT, True),
        (RateLimitedError("x", retry_after=3), StepErrorName.RATE_LIMIT, True),
        (InvalidOutputError("x"), StepErrorName.INVALID_OUTPUT, False),
        (TemplateRenderError("x"), StepErrorName.TEMPLATE, False),
        (BudgetExceededError("x"), StepErrorName.BUDGET, False),
        (PolicyViolationError("x"), StepErrorName.POLICY, False),
        (RejectedError("x"), StepErrorName.REJECTED, False),
    ]
    for error, name, retryable in cases:
        assert error.name is name and error.retryable is retryable
        lambda_error = error.to_lambda_error()
        assert lambda_error["errorType"] == str(name)
        assert error_type_of(lambda_error["errorType"]) == str(name)
        assert json.loads(lambda_error["errorMessage"])["message"] == "x"
        raised = error.as_lambda_exception()
        assert type(raised).__name__ == str(name)
        assert json.loads(str(raised)) == error.cause()


def test_rate_limit_and_human_required_causes_carry_their_details() -> None:
    assert RateLimitedError("slow down", retry_after=12.5).cause()["retry_after"] == 12.5
    request = HumanRequest(
        kind="tool_approval", reason="over 100", tool="refund", args={"amount": 250}, call_id="c1"
    )
    error = HumanRequiredError(request)
    assert error.to_lambda_error()["errorType"] == "human_required"
    cause = json.loads(error.to_lambda_error()["errorMessage"])
    assert HumanRequest.model_validate(cause) == request
