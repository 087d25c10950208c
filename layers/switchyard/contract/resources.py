"""Placeholders in compiled state machines, filled by CDK (`definition_substitutions`) on AWS and
by the function registry of the local engine.

    ${AgentStepFunctionArn}       functions/agent_step        agent steps
    ${ToolStepFunctionArn}        functions/tool_step         tool steps
    ${RouterStepFunctionArn}      functions/router_step       LLM routers
    ${ApprovalNotifyFunctionArn}  functions/approval_notify   every waitForTaskToken gate
    ${RunStartFunctionArn}        functions/run_start         validates the run input
    ${RenderFunctionArn}          functions/render            templates that JSONPath cannot express
    ${DeadLetterQueueUrl}         the dead-letter queue of failed step inputs
    ${<Name>StateMachineArn}      a sub-workflow's state machine (alias of its newest version)
    ${<Name>V<n>StateMachineArn}  a sub-workflow pinned to version n
"""

from __future__ import annotations

import re
from enum import StrEnum


class FunctionName(StrEnum):
    """The Lambda functions compiled machines call; each is `functions/<value>/handler.py`."""

    AGENT_STEP = "agent_step"
    TOOL_STEP = "tool_step"
    ROUTER_STEP = "router_step"
    APPROVAL_NOTIFY = "approval_notify"
    RUN_START = "run_start"
    RENDER = "render"


FUNCTIONS: tuple[FunctionName, ...] = tuple(FunctionName)
DEAD_LETTER_QUEUE_URL = "${DeadLetterQueueUrl}"
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9]+)\}")


def _pascal(text: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[-_]", text) if part)


def function_placeholder(function: FunctionName) -> str:
    """`${AgentStepFunctionArn}` for `agent_step`."""
    return f"${{{_pascal(function.value)}FunctionArn}}"


def function_for_placeholder(name: str) -> FunctionName | None:
    """The function that `AgentStepFunctionArn` (without `${}`) names, if any."""
    for function in FunctionName:
        if f"{_pascal(function.value)}FunctionArn" == name:
            return function
    return None


def state_machine_placeholder(workflow: str, version: int | None) -> str:
    """`${SummarizeDocumentStateMachineArn}`, or `${SummarizeDocumentV2StateMachineArn}`."""
    pinned = f"V{version}" if version is not None else ""
    return f"${{{_pascal(workflow)}{pinned}StateMachineArn}}"


def placeholders_in(definition: str) -> list[str]:
    """Every placeholder name in a definition, sorted, without `${}`."""
    return sorted(set(_PLACEHOLDER.findall(definition)))
