"""What each Task sends to `functions/*` and what comes back (pydantic models).

The compiler writes the `Parameters` that produce these payloads; the functions validate them on
the way in. Field names are the JSON keys on the wire.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from switchyard.model import Priority, WorkflowBudget


class Wire(BaseModel):
    """Base of payload models: unknown keys are kept (newer machines may send more)."""

    model_config = ConfigDict(extra="allow", frozen=True)


class WorkflowInfo(Wire):
    name: str
    version: int
    tenant: str = "default"
    budget: WorkflowBudget | None = None
    priority: Priority = "normal"
    """The workflow's `priority` (the compiler writes it only when it is not `normal`)."""


class BudgetLimits(Wire):
    max_cost_usd: float | None = None
    max_tokens: int | None = None


class EnclosingBudget(Wire):
    """A budget that a step's spend also counts toward, besides its own run's and step's: in a
    sub-workflow run, the run of every ancestor (`max_cost_usd` is "whole run, sub-workflows
    included"), the budget of the map or loop it runs in, and the budget of the `sub_workflow`
    step that started it; inside a map or loop, that map's or loop's budget. `kind` and `id` name
    the budget ledger's scope."""

    kind: Literal["run", "step"]
    id: str
    max_cost_usd: float | None = None
    max_tokens: int | None = None


class ResetFrom(Wire):
    """Of a run started by a reset (`switchyard runs reset`, docs/operations.md): the run it
    resets, the step it starts again from, and for each step before that step the run whose
    idempotency records it replays (the reset run's, or the one that run replayed in turn)."""

    run: str
    """The run id of the run this one resets."""
    to: str
    """The step this run runs afresh, with every step downstream of it."""
    reuse: dict[str, str] = Field(default_factory=dict)
    """Step id -> the run id whose recorded results the step returns, and whose idempotency
    keys it uses when there is no record to return."""


class ReplayedChild(Wire):
    """Of a child run that a reset run's `sub_workflow` step started before the reset's step:
    the child it replays, named by the parent run that started it, the step and the map index
    or loop iteration (`:<n>`, as `ParentLink.item`). Every step of this run returns what that
    child's step recorded (`switchyard.runtime.replay`)."""

    parent_run: str
    step: str
    item: str = ""


class RunContext(Wire):
    """`run` in templates: the run's identity."""

    id: str
    """The execution name; stable across retries, redrives and recovery."""
    workflow: str
    version: int
    started_at: str
    tenant: str = "default"
    parent: str | None = None
    """Execution id of the run that started this one as a sub-workflow."""
    enclosing_budgets: list[EnclosingBudget] = Field(default_factory=list)
    """Of a sub-workflow run: the budgets above it, outermost first (see EnclosingBudget)."""
    output_limit: int | None = None
    """Of a sub-workflow run: the most bytes its `outputs` may take inline in the parent's state
    (the rest goes to the output store); unset: `LARGE_OUTPUT_BYTES`."""
    priority: Priority | None = None
    """The run's priority, given at its start (`PRIORITY_KEY`), else its parent run's, else its
    workflow's; None: `normal`. Quotas and the local engine's dispatch read it."""
    segment: int | None = None
    """Of a workflow with a `continue_as_new` loop: which execution of the run this is (1 for
    the first). Every segment keeps the first one's `id`, `started_at` and budgets, so the
    budget ledger, idempotency keys and loop detection see one run."""
    continued_from: str | None = None
    """Of a segment after the first: the execution name of the segment before it."""
    reset: ResetFrom | None = None
    """Of a run a reset started (`RESET_KEY`): which steps replay which run's records."""
    replays_child: ReplayedChild | None = None
    """Of a child run started by a replayed `sub_workflow` step: the child whose records its
    steps replay."""


class ParentLink(Wire):
    """What a `sub_workflow` step passes to its child under `PARENT_LINK_KEY` in the child's
    input: the parent's run (with its own enclosing budgets), the parent workflow's budget, and
    the step with its budget. `run_start` turns it into the child's `enclosing_budgets`."""

    run: RunContext
    budget: BudgetLimits | None = None
    """The parent workflow's `budget` (its money and token limits)."""
    step: str
    item: str = ""
    """`:<index>` inside a map, `:<iteration>` inside a loop: the step's ledger key suffix."""
    composite_budget: BudgetLimits | None = None
    """Inside a map or loop: its `budget`, which all its items' or iterations' runs share."""
    step_budget: BudgetLimits | None = None
    """The `sub_workflow` step's `budget`."""
    output_limit: int | None = None
    """The most bytes the child's outputs may take in the parent's state (a map's per-item
    share, or a workflow's share when many outputs must fit); unset: `LARGE_OUTPUT_BYTES`."""


PARENT_LINK_KEY = "switchyard:parent"
"""The key of a child execution's input that carries the ParentLink (not a workflow input: an
input name cannot contain a colon)."""
PRIORITY_KEY = "switchyard:priority"
"""The key of an execution's input that gives the run a priority of its own (`high`, `normal`,
`low`), over its workflow's: what `switchyard run --priority` and `POST /runs` set."""
RESET_KEY = "switchyard:reset"
"""The key of an execution's input that makes the run a reset of another (a `ResetFrom`): what
`switchyard runs reset` and `POST /runs/{run_id}/reset` set."""


class StepContext(Wire):
    """What templates of a step can read: the machine's state, trimmed to what the step uses."""

    inputs: dict[str, Any] = Field(default_factory=dict)
    run: RunContext
    steps: dict[str, Any] = Field(default_factory=dict)
    """Records of the steps this step's templates read, and of its `after` steps."""
    scope: dict[str, Any] | None = None
    """Inside a map: item, index. Inside a loop: iteration, previous."""


class StepInvocation(Wire):
    """Payload of agent_step, tool_step and router_step."""

    step_id: str
    step: dict[str, Any]
    """The step as written in the file (map and loop items: the inline step), with the
    workflow's `defaults` applied; tools it may call are under `step["tool_defs"]`."""
    workflow: WorkflowInfo
    context: StepContext
    retry_count: int | None = None
    """`$$.State.RetryCount`: retries Step Functions has made of this Task."""
    loop_retries: int = 0
    """Retries made by an explicit wait loop (linear backoff)."""
    parent_budget: BudgetLimits | None = None
    """Inside a map or loop with a `budget`: that budget, shared by all its items or iterations."""
    output_limit: int | None = None
    """The most bytes the output may take inline in the run's state (the rest goes to the output
    store): set by the compiler where the state's 256 KB must be shared more finely (a map's
    items, a workflow of many steps); unset: `LARGE_OUTPUT_BYTES`."""

    @property
    def attempt(self) -> int:
        return (self.retry_count or 0) + self.loop_retries + 1

    @property
    def idempotency_key(self) -> str:
        """`run_id:step_id[:index][:iteration]`: never changes across retries or recovery. In a
        run started by a reset, a step before the reset's step takes the run id of the run it
        replays, so its side effects' recorded results come back instead of running again."""
        reset = self.context.run.reset
        run_id = reset.reuse.get(self.step_id, self.context.run.id) if reset else None
        return self._key(run_id or self.context.run.id)

    @property
    def step_key(self) -> str:
        """`run_id:step_id[:index][:iteration]` of this run always (budgets count its spend)."""
        return self._key(self.context.run.id)

    def _key(self, run_id: str) -> str:
        key = f"{run_id}:{self.step_id}"
        scope = self.context.scope or {}
        if "index" in scope:
            key += f":{scope['index']}"
        if "iteration" in scope:
            key += f":{scope['iteration']}"
        return key


class Usage(Wire):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    model: str | None = None
    provider: str | None = None


class StepResult(Wire):
    """What agent_step, tool_step and router_step return."""

    output: Any = None
    attempts: int = 1
    cost_usd: float = 0.0
    usage: Usage | None = None
    loop_output: Any = None
    """Inside a loop: the output with `iterations` added (a non-object as {value, iterations})."""
    replayed_from: str | None = None
    """In a run a reset started: the run whose recorded result this step returned instead of
    running (`switchyard.runtime.replay`); it cost nothing this time."""
    continued: bool = False
    """An agent with `continue_as_new` ran its segment's turns without an answer: `output` is
    `{continued, summary, turns}`, what the run's next segment starts from."""


class GateKind(StrEnum):
    APPROVAL = "approval"
    """A human_gate step (one tier of it)."""
    PAUSE = "pause"
    """A step failed with on_error: pause; resuming runs it again."""
    BUDGET = "budget"
    """A step was refused for budget; resuming (after raising the budget) runs it again."""
    HUMAN = "human"
    """A step raised human_required (tool call approval, loop, unknown outcome)."""


GATE_KIND_OF_ERROR = {"human_required": GateKind.HUMAN.value}
"""A gate opened straight from a step's `Catch` may name its kind by the error it caught
(`budget`, `human_required`): one gate state then serves both."""


class GateRequest(Wire):
    """Payload of approval_notify: a task token waits for a person."""

    kind: GateKind
    step_id: str
    workflow: WorkflowInfo
    context: StepContext
    task_token: str
    execution_arn: str = ""
    """`$$.Execution.Id`: what an operator's cancel stops."""
    gate: dict[str, Any] | None = None
    """The human_gate step (kind approval)."""
    tier: int = 0
    assignee: str | None = None
    timeout_seconds: int | None = None
    error: dict[str, Any] | None = None
    """The failure that opened a pause, budget or human gate: Step Functions' {Error, Cause}."""

    @field_validator("kind", mode="before")
    @classmethod
    def _kind_of_error(cls, value: Any) -> Any:
        return GATE_KIND_OF_ERROR.get(value, value) if isinstance(value, str) else value


class GateDecision(Wire):
    """The output of an approval gate (what SendTaskSuccess carries)."""

    decision: str
    reviewer: str | None = None
    note: str | None = None
    edits: dict[str, Any] = Field(default_factory=dict)
    decided_at: str
    tier: int = 0
    replayed_from: str | None = None
    """In a run a reset started: the run whose recorded decision this is (nobody was asked)."""


class HumanRequest(Wire):
    """The cause of a human_required error, as JSON in the error message."""

    kind: str
    """tool_approval, loop or unknown_outcome."""
    reason: str
    tool: str | None = None
    args: dict[str, Any] | None = None
    call_id: str | None = None


class RenderRequest(Wire):
    """Payload of the render function: templates to render against a step's context."""

    step_id: str | None = None
    templates: Any
    context: StepContext
    merge: str | None = None
    after: list[str] = Field(default_factory=list)


class RenderResult(Wire):
    value: Any


class RunStartRequest(Wire):
    """Payload of run_start: the execution's raw input, checked against the workflow's inputs."""

    workflow: WorkflowInfo
    inputs_schema: dict[str, dict[str, Any]]
    input: Any
    execution_id: str
    execution_name: str
    start_time: str
    continuable: bool = False
    """The workflow has a `continue_as_new` loop: the result also carries `steps` and
    `resume` (what a continued segment picks up; `{}` for a new run)."""


class RunStartResult(Wire):
    inputs: dict[str, Any]
    run: RunContext
    steps: dict[str, Any] | None = None
    """Of a continuable machine: the step records a continued segment carries, else `{}`."""
    resume: dict[str, Any] | None = None
    """Of a continuable machine: `{loop, scope}` for a continued segment, else `{}`."""


class DeadLetter(Wire):
    """What a failed step sends to the dead-letter queue."""

    workflow: str
    version: int
    run: RunContext
    step_id: str
    error: dict[str, Any]
    input: dict[str, Any]
    """What the step's Task received: the run's inputs, the records of the steps it reads, and
    its scope inside a map or loop."""


def record_item(scope: Mapping[str, Any] | None) -> str:
    """The run records' `item` of a step run in `scope`: '' for a step, `[index]` for a map
    item, `#iteration` for a loop iteration."""
    scope = scope or {}
    if "index" in scope:
        return f"[{scope['index']}]"
    if "iteration" in scope:
        return f"#{scope['iteration']}"
    return ""


def loop_output(output: Any, iterations: int) -> Any:
    """A loop's output: the last iteration's object with `iterations` added; any other value is
    wrapped as {value, iterations}."""
    if isinstance(output, dict):
        return {**output, "iterations": iterations}
    return {"value": output, "iterations": iterations}
