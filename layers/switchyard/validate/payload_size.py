"""A run's state within Step Functions' 256 KB: how large each step's output may stay inline.

A run's state holds the inputs and every step's output, and no state's input or output may pass
256 KB (`States.DataLimitExceeded`, which no `Catch` catches: the run fails). Every output that
goes into the state passes through the large-output offload (`runtime/large_outputs.py`), which
moves parts of it to the output store until it fits a limit. This module gives each step its
limit so that the worst case fits:

- an agent, tool or LLM-router step, a sub-workflow (the child's `outputs`) and a loop's step:
  `LARGE_OUTPUT_BYTES` (32 KiB), or an equal share of what is left when that many do not fit;
- a map: `MAP_SHARE` (128 KiB, or its share) split over its `maxItems` items, each item at least
  `MIN_INLINE_BYTES`, which a reference to the output store always fits in.

What cannot fit even then (a map over more items than fit as references, inputs whose schema
allows more than the state can hold) is refused (`payload_size`). Where the worst case cannot be
known (a map whose list has no `maxItems`, inputs of unbounded size) it is assumed and said so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from switchyard.contract import LARGE_OUTPUT_BYTES
from switchyard.diagnostics import Code
from switchyard.model import (
    AgentBody,
    HumanGateStep,
    LlmRouter,
    LoopStep,
    MapStep,
    Step,
    SubWorkflowBody,
    ToolBody,
    Workflow,
)
from switchyard.validate.context import Checks

STATE_LIMIT = 256 * 1024
"""Step Functions' limit on a state's input or output (262,144 bytes of UTF-8 JSON)."""
RESERVED_BYTES = 16 * 1024
"""The run's context, every step's record around its output (status, attempts, cost, usage),
and the machine's scratch values (rendered items, errors)."""
ASSUMED_INPUT_BYTES = 32 * 1024
"""Inputs whose schema does not bound their size are assumed to take this much."""
GATE_BYTES = 8 * 1024
"""A gate's decision (who, when, a note, edits of what it showed) is assumed to take this."""
MAP_SHARE = 128 * 1024
"""What one map's list of item outputs may take, before sharing."""
MIN_INLINE_BYTES = 512
"""The smallest limit an output is given: a reference to the output store (`$switchyard_ref`
with store, key and size; the key holds the run id and the step's idempotency key) fits."""
ASSUMED_MAP_ITEMS = 40
"""Items assumed for a map whose list has no `maxItems` (as the history estimate does)."""


@dataclass(frozen=True, slots=True)
class PayloadProblem:
    step_id: str | None
    message: str
    refused: bool
    """True: cannot fit at all (an error). False: the worst case had to be assumed (a note)."""


@dataclass
class PayloadPlan:
    """Each step's output limit; for a map, each item's."""

    limits: dict[str, int] = field(default_factory=dict)
    worst_case: int = 0
    """Bytes of state the inputs, the outputs at their limits and the reserve can take."""
    problems: list[PayloadProblem] = field(default_factory=list)

    def limit(self, step_id: str) -> int:
        return self.limits.get(step_id, LARGE_OUTPUT_BYTES)


def payload_plan(workflow: Workflow) -> PayloadPlan:
    plan = PayloadPlan()
    inputs = _inputs_bytes(workflow, plan)
    fixed = RESERVED_BYTES + inputs
    outputs: list[str] = []
    maps: dict[str, int] = {}
    for step_id, step in workflow.steps.items():
        if isinstance(step, HumanGateStep):
            fixed += GATE_BYTES
        elif isinstance(step, MapStep):
            maps[step_id] = _map_items(step_id, step, workflow, plan)
        elif _has_output(step):
            outputs.append(step_id)
    available = STATE_LIMIT - fixed
    per_output = min(LARGE_OUTPUT_BYTES, available // max(len(outputs) + len(maps), 1))
    per_output = max(MIN_INLINE_BYTES, per_output)
    for step_id in outputs:
        plan.limits[step_id] = per_output
    room = min(MAP_SHARE, (available - per_output * len(outputs)) // max(len(maps), 1))
    for step_id, items in maps.items():
        per_item = min(LARGE_OUTPUT_BYTES, room // items)
        plan.limits[step_id] = max(MIN_INLINE_BYTES, per_item)
    steps = workflow.steps
    plan.worst_case = fixed + sum(_at_most(plan.limits[s], steps[s]) for s in outputs)
    plan.worst_case += sum(
        _at_most(plan.limits[s], _inner(steps[s])) * items for s, items in maps.items()
    )
    if plan.worst_case > STATE_LIMIT:
        plan.problems.append(
            PayloadProblem(
                max(maps, key=lambda s: maps[s]) if maps else None,
                _too_large(plan.worst_case, inputs, outputs, maps),
                refused=True,
            )
        )
    return plan


def check_payload_size(checks: Checks) -> None:
    """Refuse a workflow whose state cannot fit 256 KB even with every large output stored
    aside; the error is at the map that needs the most room, else at `steps`."""
    for problem in payload_plan(checks.workflow).problems:
        if problem.refused:
            where = ("steps", problem.step_id, "items") if problem.step_id else ("steps",)
            checks.report(Code.PAYLOAD_SIZE, where, problem.message)


def _inner(step: Step) -> Any:
    return step.step if isinstance(step, MapStep | LoopStep) else step


def _at_most(limit: int, body: Any) -> int:
    """An output's worst case: its limit, or less when its `output_schema` bounds it (a map of
    2,000 items that each answer an enum fits whatever their limit)."""
    schema = getattr(body, "output_schema", None)
    bound = schema_bytes(schema) if schema is not None else None
    return min(limit, bound) if bound is not None else limit


def _has_output(step: Step) -> bool:
    return isinstance(step, AgentBody | ToolBody | LlmRouter | SubWorkflowBody | LoopStep)


def _too_large(worst: int, inputs: int, outputs: list[str], maps: dict[str, int]) -> str:
    parts = [f"inputs {_kib(inputs)}"]
    if outputs:
        parts.append(f"{len(outputs)} step output(s) at {_kib(MIN_INLINE_BYTES)} or more each")
    at_least = _kib(MIN_INLINE_BYTES)
    parts += [f"map '{s}' {items} items at {at_least} each" for s, items in maps.items()]
    return (
        f"a run's state could reach {_kib(worst)} ({', '.join(parts)}), over Step Functions' "
        f"{_kib(STATE_LIMIT)} limit even with every large output stored aside. Lower maxItems, "
        "bound the inputs (maxLength, maxItems), or move part of the work into a sub-workflow "
        "(whose state is its own)"
    )


def _kib(size: int) -> str:
    return f"{size / 1024:.0f} KiB" if size >= 1024 else f"{size} B"


def _map_items(step_id: str, step: MapStep, workflow: Workflow, plan: PayloadPlan) -> int:
    text = step.items.strip()
    if text.startswith("{{") and text.endswith("}}"):
        expression = text[2:-2].strip()
        name = expression.removeprefix("inputs.")
        if expression.startswith("inputs.") and "." not in name:
            value = workflow.inputs.get(name, {}).get("maxItems")
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    plan.problems.append(
        PayloadProblem(
            step_id,
            f"map '{step_id}' has no maxItems on its list; assumed {ASSUMED_MAP_ITEMS} items for "
            f"its share of the 256 KB state (give the list input a maxItems)",
            refused=False,
        )
    )
    return ASSUMED_MAP_ITEMS


def _inputs_bytes(workflow: Workflow, plan: PayloadPlan) -> int:
    total = 2
    unbounded: list[str] = []
    for name, schema in workflow.inputs.items():
        size = schema_bytes(schema)
        if size is None:
            unbounded.append(name)
        else:
            total += len(name) + 4 + size
    if unbounded:
        total += ASSUMED_INPUT_BYTES
    return total


def schema_bytes(schema: Any, depth: int = 0) -> int | None:
    """The most bytes of compact JSON a value of `schema` can take, when the schema bounds it
    (strings by maxLength or enum, arrays by maxItems, objects by their properties without
    additional ones); None when it does not."""
    if not isinstance(schema, dict) or depth > 8:
        return None
    if "enum" in schema and isinstance(schema["enum"], list):
        return max((len(_dumps(v)) for v in schema["enum"]), default=4)
    if "const" in schema:
        return len(_dumps(schema["const"]))
    kind = schema.get("type")
    if kind == "string":
        length = schema.get("maxLength")
        # Up to 4 bytes of UTF-8 a character (control characters, escaped as \uXXXX, are 6:
        # text that is mostly control characters is not what a workflow's input is).
        return 2 + 4 * length if isinstance(length, int) else None
    if kind in ("integer", "number"):
        return 24
    if kind == "boolean":
        return 5
    if kind == "null":
        return 4
    if kind == "array":
        items = schema.get("maxItems")
        each = schema_bytes(schema.get("items"), depth + 1)
        if not isinstance(items, int) or each is None:
            return None
        return 2 + items * (each + 1)
    if kind == "object":
        properties = schema.get("properties")
        closed = schema.get("additionalProperties", True) is False
        if not isinstance(properties, dict) or not closed:
            return None
        total = 2
        for key, sub in properties.items():
            size = schema_bytes(sub, depth + 1)
            if size is None:
                return None
            total += len(_dumps(key)) + 2 + size
        return total
    return None


def _dumps(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"))
