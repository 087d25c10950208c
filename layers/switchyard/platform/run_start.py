"""run_start: the first state of every machine. It checks the execution's input against the
workflow's `inputs`, fills defaults, and builds the run's identity.

An input without a `default` is required; unknown inputs are refused (a typo in an input name
must not be silently dropped). Every problem is reported at once.
"""

from __future__ import annotations

from typing import Any

import jsonschema_rs
from pydantic import ValidationError

from switchyard.contract import (
    CONTINUE_KEY,
    PARENT_LINK_KEY,
    PRIORITY_KEY,
    RESET_KEY,
    Continuation,
    EnclosingBudget,
    ParentLink,
    ReplayedChild,
    ResetFrom,
    RunContext,
    RunStartRequest,
    RunStartResult,
    StepErrorName,
    continuation_of,
)
from switchyard.contract.errors import lambda_error
from switchyard.model import PRIORITIES, Priority

PARENT_KEY = "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID"
MAX_CONTINUABLE_RUN_ID = 80 - len("-1000000")
"""A run id whose every segment's name (`<run id>-<segment>`, segments up to the most
iterations a loop may have) fits Step Functions' 80 characters."""


class InvalidRunInputError(ValueError):
    """The run's input does not fit the workflow's inputs; `problems` lists every reason."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def check_inputs(schemas: dict[str, dict[str, Any]], given: Any) -> dict[str, Any]:
    """The inputs checked and with defaults filled; InvalidRunInputError lists every problem."""
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise InvalidRunInputError([f"the input must be a JSON object, not {type(given).__name__}"])
    problems: list[str] = []
    inputs: dict[str, Any] = {}
    for name, value in given.items():
        if name.startswith("AWS_STEP_FUNCTIONS_") or name in (
            PARENT_LINK_KEY,
            PRIORITY_KEY,
            CONTINUE_KEY,
            RESET_KEY,
        ):
            continue
        if name not in schemas:
            known = ", ".join(schemas) or "none"
            problems.append(f"'{name}' is not an input of this workflow (inputs: {known})")
            continue
        inputs[name] = value
    for name, schema in schemas.items():
        if name not in inputs:
            if "default" in schema:
                inputs[name] = schema["default"]
            else:
                problems.append(f"the input '{name}' is required")
            continue
        for error in jsonschema_rs.validator_for(schema, validate_formats=True).iter_errors(
            inputs[name]
        ):
            where = "".join(
                f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.instance_path
            )
            problems.append(f"inputs.{name}{where}: {error.message}")
    if problems:
        raise InvalidRunInputError(problems)
    return inputs


def enclosing_budgets(link: ParentLink) -> list[EnclosingBudget]:
    """The budgets a child run's spend counts toward: its parent's (and theirs), outermost
    first, then the `sub_workflow` step's own. The parent's run is always there, with or without
    limits, so that its totals count the child's spend."""
    parent = link.budget
    budgets = [
        *link.run.enclosing_budgets,
        EnclosingBudget(
            kind="run",
            id=link.run.id,
            max_cost_usd=parent.max_cost_usd if parent else None,
            max_tokens=parent.max_tokens if parent else None,
        ),
    ]
    if link.composite_budget is not None:
        budgets.append(
            EnclosingBudget(
                kind="step",
                id=f"{link.run.id}:{link.step}",
                max_cost_usd=link.composite_budget.max_cost_usd,
                max_tokens=link.composite_budget.max_tokens,
            )
        )
    if link.step_budget is not None:
        budgets.append(
            EnclosingBudget(
                kind="step",
                id=f"{link.run.id}:{link.step}{link.item}",
                max_cost_usd=link.step_budget.max_cost_usd,
                max_tokens=link.step_budget.max_tokens,
            )
        )
    return budgets


def _parent_link(value: Any) -> ParentLink:
    try:
        return ParentLink.model_validate(value)
    except ValidationError as exc:
        raise InvalidRunInputError([f"'{PARENT_LINK_KEY}' is not a parent link: {exc}"]) from None


def _reset_from(value: Any) -> ResetFrom:
    try:
        return ResetFrom.model_validate(value)
    except ValidationError as exc:
        raise InvalidRunInputError([f"'{RESET_KEY}' is not a reset: {exc}"]) from None


def run_priority(given: dict[str, Any], link: ParentLink | None, workflow: Priority) -> Priority:
    """The run's own priority (`PRIORITY_KEY` in its input), else its parent run's, else its
    workflow's."""
    if PRIORITY_KEY in given:
        value = given[PRIORITY_KEY]
        if value not in PRIORITIES:
            raise InvalidRunInputError(
                [f"'{PRIORITY_KEY}' must be one of {', '.join(PRIORITIES)}, not {value!r}"]
            )
        chosen: Priority = value
        return chosen
    if link is not None and link.run.priority is not None:
        return link.run.priority
    return workflow


def start_run(request: RunStartRequest) -> RunStartResult:
    carried = continuation_of(request.input)
    if carried is not None:
        return continue_run(request, _continuation(carried))
    result = _new_run(request)
    if request.continuable:
        if len(request.execution_name) > MAX_CONTINUABLE_RUN_ID:
            raise InvalidRunInputError(
                [
                    f"the run id {request.execution_name!r} has {len(request.execution_name)} "
                    f"characters; this workflow's loop continues as new, in executions named "
                    f"'<run id>-<segment>' (at most 80 characters), so its run ids may have at "
                    f"most {MAX_CONTINUABLE_RUN_ID}"
                ]
            )
        run = result.run.model_copy(update={"segment": 1})
        return RunStartResult(inputs=result.inputs, run=run, steps={}, resume={})
    return result


def continue_run(request: RunStartRequest, carried: Continuation) -> RunStartResult:
    """A continued segment: the first segment's run, state and loop position, taken as they
    were handed over (they were checked when the run started). The segment must run the
    version the run started on: a machine updated in between has other steps."""
    if not request.continuable:
        raise InvalidRunInputError(
            [f"'{CONTINUE_KEY}' continues a run, but this workflow has no continue_as_new loop"]
        )
    run = carried.run
    if (run.workflow, run.version) != (request.workflow.name, request.workflow.version):
        raise InvalidRunInputError(
            [
                f"segment {carried.segment} of run {run.id} continues {run.workflow} version "
                f"{run.version}, but this state machine runs {request.workflow.name} version "
                f"{request.workflow.version}; redrive the previous segment after restoring it"
            ]
        )
    run = run.model_copy(
        update={"segment": carried.segment, "continued_from": carried.continued_from}
    )
    resume: dict[str, Any] = {"loop": carried.loop, "scope": carried.scope}
    if carried.deadline is not None:
        resume["deadline"] = carried.deadline
    return RunStartResult(inputs=carried.inputs, run=run, steps=carried.steps, resume=resume)


def _continuation(value: dict[str, Any]) -> Continuation:
    try:
        return Continuation.model_validate(value)
    except ValidationError as exc:
        raise InvalidRunInputError([f"'{CONTINUE_KEY}' is not a continuation: {exc}"]) from None


def _new_run(request: RunStartRequest) -> RunStartResult:
    inputs = check_inputs(request.inputs_schema, request.input)
    given = request.input if isinstance(request.input, dict) else {}
    parent = given.get(PARENT_KEY)
    link = _parent_link(given[PARENT_LINK_KEY]) if given.get(PARENT_LINK_KEY) else None
    priority = run_priority(given, link, request.workflow.priority)
    run = RunContext(
        id=request.execution_name,
        workflow=request.workflow.name,
        version=request.workflow.version,
        started_at=request.start_time,
        tenant=request.workflow.tenant,
        parent=parent if isinstance(parent, str) else None,
        enclosing_budgets=enclosing_budgets(link) if link else [],
        output_limit=link.output_limit if link else None,
        # Left out when normal (most runs), unless that overrides the workflow's own priority.
        priority=None if priority == request.workflow.priority == "normal" else priority,
        reset=_reset_from(given[RESET_KEY]) if given.get(RESET_KEY) else None,
        replays_child=replayed_child(link) if link else None,
    )
    return RunStartResult(inputs=inputs, run=run)


def replayed_child(link: ParentLink) -> ReplayedChild | None:
    """The child run this one replays: when its parent is a reset run whose `sub_workflow` step
    comes before the reset's step, the child that step started in the run the parent replays.
    (Only one level: a child of a replayed child runs its steps.)"""
    reset = link.run.reset
    replays = reset.reuse.get(link.step) if reset is not None else None
    if replays is None:
        return None
    return ReplayedChild(parent_run=replays, step=link.step, item=link.item)


def handle(event: dict[str, Any]) -> dict[str, Any]:
    """The Lambda contract: a RunStartRequest in, a RunStartResult out, `invalid_input` on error."""
    request = RunStartRequest.model_validate(event)
    try:
        result = start_run(request)
    except InvalidRunInputError as exc:
        raise lambda_error(StepErrorName.INVALID_INPUT, str(exc)) from None
    return result.model_dump(mode="json", exclude_none=True)
