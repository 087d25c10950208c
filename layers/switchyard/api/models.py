"""The REST API's request and response bodies as pydantic models: the request models validate
what the routes take, and every model is what `/openapi.json` publishes (FastAPI generates the
document from these and the routes' parameters), so the document and the checks cannot drift.

Request bodies forbid unknown members. Response models describe what the routes answer; they
allow members a later version adds (a client must ignore what it does not know)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator

RunStatus = Literal[
    "running", "waiting", "paused", "succeeded", "failed", "cancelled", "timed_out", "continued"
]
"""`continued`: one segment of a run that continued as new; the run shows its last one's."""


NO_NUL = r"^[^\x00]*$"
HOLDABLE_JSON_SCHEMA: dict[str, Any] = {
    "description": "Any JSON value PostgreSQL can store: no NUL character in a string or key, no"
    " lone surrogate, at most 64 levels of nesting (docs/api.md, Limits).",
    "anyOf": [
        {"type": "string", "pattern": NO_NUL},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
        {"type": "array", "items": {"$ref": "#/components/schemas/HoldableJson"}},
        {
            "type": "object",
            "propertyNames": {"pattern": NO_NUL},
            "additionalProperties": {"$ref": "#/components/schemas/HoldableJson"},
        },
    ],
}
"""Published as `#/components/schemas/HoldableJson` (the app adds it to the document)."""
HOLDABLE_MARK = "x-switchyard-holdable-json"
"""Pydantic cannot emit a `$ref` to a schema it does not own: a model field marks the place, and
the app's document generation puts the reference there."""
HoldableJson = Annotated[Any, WithJsonSchema({HOLDABLE_MARK: True})]
HoldableText = Annotated[str, WithJsonSchema({"type": "string", "pattern": NO_NUL})]


MAX_RAISE_USD = 1_000_000
"""The most one resume raises a budget by; far more would overflow the ledger's columns."""


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _Answer(BaseModel):
    model_config = ConfigDict(extra="allow")


# --- requests ---------------------------------------------------------------------------------


class ApproveBody(_Request):
    note: HoldableText | None = Field(None, description="Why; recorded with the decision.")
    edits: dict[str, HoldableJson] | None = Field(
        None, description="New values of the fields the gate shows (when it allows edits)."
    )


class RejectBody(_Request):
    note: HoldableText | None = Field(None, description="Why; recorded with the decision.")


class ResumeBody(_Request):
    raise_budget_usd: float | None = Field(
        None,
        gt=0,
        le=MAX_RAISE_USD,
        description="Dollars to raise the budget that paused the run by, first.",
    )
    note: HoldableText | None = None


class CancelBody(_Request):
    note: HoldableText | None = Field(None, description="The cancellation's cause.")


class ResetBody(_Request):
    to: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")] = Field(
        description="The step to run afresh; the steps before it replay their recorded results."
    )
    version: int | None = Field(
        None, ge=1, description="The workflow version the new run runs (default: the run's)."
    )
    cancel: bool = Field(False, description="Cancel the run first if it has not ended.")
    note: HoldableText | None = None

    @field_validator("version", mode="before")
    @classmethod
    def _whole(cls, value: Any) -> Any:
        """JSON Schema's integers include `2.0`; strict pydantic's do not."""
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value


RUN_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The run's input: the workflow's `inputs` (GET /workflows/{name} shows them).",
    "propertyNames": {"pattern": NO_NUL},
    "additionalProperties": {"$ref": "#/components/schemas/HoldableJson"},
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


class StuckWait(_Answer):
    kind: Literal["task", "callback", "timer", "sub_workflow", "none"] = Field(
        description="A step's function that has not returned (`task`), a task token no open gate"
        " holds (`callback`), a timer that fell due and did not fire (`timer`), a stuck"
        " sub-workflow run (`sub_workflow`), or nothing in flight (`none`): docs/runbooks.md."
    )
    state: str | None = Field(description="The state machine's state.")
    step: str | None = Field(description="The workflow's step, when known.")
    due_at: str | None = Field(description="When the timer fell due.")
    run_id: str | None = Field(description="The stuck sub-workflow's run.")


class Stuck(_Answer):
    last_transition_at: str
    idle_seconds: float
    waiting_on: list[StuckWait]


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
    stuck: Stuck | None = Field(
        None, description="Only in `GET /runs?stuck=true`: since when and on what the run waits."
    )


class RunList(BaseModel):
    runs: list[RunSummary]


class WaitingFor(_Answer):
    step: str
    kind: str
    assignee: str | None
    message: str | None
    approve_url: str | None = Field(
        description="The signed approval link of the gate's first decider; null for pauses and "
        "budget pauses (resumed, not linked) and for a gate whose role has no one to send it to."
    )


class StepView(_Answer):
    status: str
    attempts: int
    output: Any
    error: Any
    cost_usd: float
    tokens: Tokens
    started_at: str | None
    ended_at: str | None


class SegmentView(_Answer):
    """One execution of a run that continued as new (docs/engine.md, Continue-as-new)."""

    run_id: str
    segment: int
    continued_from: str | None
    status: RunStatus
    cost_usd: float
    input_tokens: int
    output_tokens: int
    started_at: str
    ended_at: str | None
    execution_arn: str


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
    segments: list[SegmentView] | None = None
    """Of a run that continued as new: its executions in order (its totals are theirs)."""


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


class ResetStarted(_Answer):
    run_id: str
    execution_arn: str
    workflow: str
    version: int
    reset_from: str
    to: str
    reused: list[str]
    fresh: list[str]
    cancelled_original: bool
    links: DecisionLinks
