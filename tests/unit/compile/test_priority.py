"""A workflow's `priority`: validated, and passed to run_start and every step's payload."""

from __future__ import annotations

from typing import Any

from switchyard.compile import compile_workflow
from switchyard.validate import validate_text

WORKFLOW = """
switchyard: 1
name: prio
version: 1
{priority}
defaults: {{model: claude-haiku-4-5}}
steps:
  draft: {{type: agent, prompt: p}}
  send: {{type: tool, tool: http.request, after: [draft], args: {{method: GET, url: "https://x.example"}}}}
"""


def workflow_infos(priority_line: str) -> list[dict[str, Any]]:
    result = validate_text(WORKFLOW.format(priority=priority_line))
    assert result.workflow is not None, [d.format() for d in result.diagnostics]
    found: list[dict[str, Any]] = []

    def collect(value: Any) -> None:
        if isinstance(value, dict):
            info = value.get("workflow")
            if isinstance(info, dict) and "tenant" in info:  # a WorkflowInfo
                found.append(info)
            for child in value.values():
                collect(child)
        elif isinstance(value, list):
            for child in value:
                collect(child)

    collect(compile_workflow(result.workflow).definition)
    return found


def test_a_workflows_priority_reaches_run_start_and_every_step() -> None:
    infos = workflow_infos("priority: high")
    assert len(infos) >= 3  # run_start, draft, send (and the failure tail's)
    assert all(info["priority"] == "high" for info in infos)


def test_normal_is_the_default_and_left_out_of_the_machine() -> None:
    assert all("priority" not in info for info in workflow_infos(""))
    assert all("priority" not in info for info in workflow_infos("priority: normal"))


def test_a_priority_that_is_not_one_is_a_schema_error() -> None:
    result = validate_text(WORKFLOW.format(priority="priority: urgent"))
    assert result.workflow is None
    (problem,) = [d for d in result.diagnostics if d.code == "schema"]
    assert "'urgent' is not allowed here; use one of: 'high', 'normal' or 'low'" in problem.message
