"""The REST API's request and response bodies as pydantic models: the request models validate
what the routes take, and every model is what `/openapi.json` publishes (FastAPI generates the
document from these and the routes' parameters), so the document and the checks cannot drift.

Request bodies forbid unknown members. Response models describe what the routes answer; they
allow members a later version adds (a client must ignore what it does not know)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

RunStatus = Literal["running", "waiting", "paused", "succeeded", "failed", "cancelled", "timed_out"]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _Answer(BaseModel):
    model_config = ConfigDict(extra="allow")


# --- requests ---------------------------------------------------------------------------------


class ApproveBody(_Request):
    note: str | None = Field(None, description="Why; recorded with the decision.")
    edits: dict[str, Any] | None = Field(
        None, description="New values of the fields the gate shows (when it allows edits)."
    )


class RejectBody(_Request):
    note: str | None = Field(None, description="Why; recorded with the decision.")


class ResumeBody(_Request):
    raise_budget_usd: float | None = Field(
        None, gt=0, description="Dollars to raise the budget that paused the run by, first."
    )
    note: str | None = None


class CancelBody(_Request):
    note: str | None = Field(None, description="The cancellation's cause.")


RUN_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The run's input: the workflow's `inputs` (GET /workflows/{name} shows them).",
    "additionalProperties": True,
}


# --- answers ----------------------------------------------------------------------------------


class ErrorDetail(_Answer):
    code: str = Field(description="Stable, snake_case (docs/api.md lists them).")
    message: str
    problems: list[str] | None = Field(None, description="Every problem of an invalid input.")


class ErrorAnswer(BaseModel):
    error: ErrorDetail


class Health(BaseModel):
    ok: bool
    error: ErrorDetail | None = None


class WorkflowLinks(_Answer):
    runs: str


class WorkflowDescription(_Answer):
    name: str
    version: int
    description: str | None
    inputs: dict[str, Any]
    file: str
    links: WorkflowLinks


class WorkflowList(BaseModel):
    workflows: list[WorkflowDescription]


class RunLinks(_Answer):
    self_: str = Field(alias="self")


class Tokens(_Answer):
    input: int
    output: int


class RunStarted(_Answer):
    run_id: str
    workflow: str
    version: int | None
    status: RunStatus
    links: RunLinks


class RunSummary(_Answer):
    run_id: str
    workflow: str
    version: int | None
    status: RunStatus
    cost_usd: float
    tokens: Tokens
    started_at: str | None
    ended_at: str | None
    links: RunLinks


class RunList(BaseModel):
    runs: list[RunSummary]


class WaitingFor(_Answer):
    step: str
    kind: str
    assignee: str | None
    message: str | None
    approve_url: str


class StepView(_Answer):
    status: str
    attempts: int
    output: Any
    error: Any
    cost_usd: float
    tokens: Tokens
    started_at: str | None
    ended_at: str | None


class RunView(_Answer):
    """Exactly what `switchyard run --json` prints (docs/cli.md)."""

    run_id: str
    workflow: str
    version: int | None
    status: RunStatus
    output: Any
    error: Any
    cost_usd: float
    tokens: Tokens
    steps: dict[str, StepView]
    waiting_for: list[WaitingFor]
    started_at: str | None
    ended_at: str | None


class Cancelled(_Answer):
    run_id: str
    status: RunStatus
    links: RunLinks


class DecisionLinks(_Answer):
    run: str


class Decided(_Answer):
    run_id: str
    step: str
    decision: Literal["approved", "rejected"]
    reviewer: str
    note: str | None
    links: DecisionLinks


class Resumed(_Answer):
    run_id: str
    step: str
    resumed: bool
    reviewer: str
    budget_raised_usd: float | None
    budget_raised_scope: str | None
    links: DecisionLinks
    warnings: list[str] | None = None
