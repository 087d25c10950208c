"""What a step's payload carries: the parts of the state its templates read."""

from __future__ import annotations

from typing import Any

from switchyard.model import (
    AgentBody,
    HumanGateStep,
    LlmRouter,
    LoopStep,
    MapStep,
    Step,
    SubWorkflowBody,
    ToolBody,
)
from switchyard.templates import template_info

ALL_STEPS = "*"


def template_strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in template_strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in template_strings(item)]
    return []


def templates_of(step: Step | AgentBody | ToolBody | SubWorkflowBody) -> list[str]:
    """Every template string of a step (not its conditions: Choice states read those)."""
    texts: list[str] = []
    texts += template_strings(getattr(step, "input", {}))
    if isinstance(step, AgentBody):
        texts += [t for t in (step.system, step.prompt) if t]
        if step.continue_as_new is not None and step.continue_as_new.summary:
            texts.append(step.continue_as_new.summary)
    elif isinstance(step, ToolBody):
        texts += template_strings(step.args)
    elif isinstance(step, HumanGateStep):
        texts += [step.message, *template_strings(step.show)]
    elif isinstance(step, LlmRouter):
        texts += [step.prompt] if step.prompt else []
    elif isinstance(step, MapStep):
        texts += [step.items, *templates_of(step.step)]
    elif isinstance(step, LoopStep):
        texts += templates_of(step.step)
    return texts


def referenced_steps(texts: list[str]) -> set[str]:
    """Step ids the templates read; `ALL_STEPS` when one reads `steps` without naming a step."""
    found: set[str] = set()
    for text in texts:
        for ref in template_info(text).references:
            if ref.root != "steps":
                continue
            if ref.parts and isinstance(ref.parts[0], str):
                found.add(ref.parts[0])
            else:
                found.add(ALL_STEPS)
    return found


def context_parameters(step_ids: set[str], *, scope: bool, prefix: str = "$") -> dict[str, Any]:
    """The `context` of a payload: inputs, run, the named step records, and the scope."""
    context: dict[str, Any] = {"inputs.$": f"{prefix}.inputs", "run.$": f"{prefix}.run"}
    if ALL_STEPS in step_ids:
        context["steps.$"] = f"{prefix}.steps"
    else:
        context["steps"] = {f"{s}.$": f"{prefix}.steps.{s}" for s in sorted(step_ids)}
    if scope:
        context["scope.$"] = f"{prefix}.scope"
    return context
