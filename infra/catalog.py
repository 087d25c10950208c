"""What the app deploys: compiled machines from `statemachines/`, their workflows from `workflows/`.

Each `<name>.asl.json` is one workflow at one version (the version is in its `run_start`
payload). A workflow file is attached to the machine of the same name: the stack reads its
triggers and, for the permissions of the step functions, its tools. A workflow with triggers but
no compiled machine, a workflow at another version than its machine, and a machine with tool or
agent steps but no workflow file are errors: the deployed machine would not be the one the files
describe, or its tools would get no permissions.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from switchyard.contract import (
    DEAD_LETTER_QUEUE_URL,
    FunctionName,
    function_placeholder,
    placeholders_in,
    state_machine_placeholder,
)
from switchyard.model import Workflow
from switchyard.model.triggers import Trigger
from switchyard.validate import validate_file

_FUNCTION_PLACEHOLDERS = {function_placeholder(f)[2:-1]: f for f in FunctionName}
_DLQ_PLACEHOLDER = DEAD_LETTER_QUEUE_URL[2:-1]
_MACHINE_PLACEHOLDER = re.compile(r"^[A-Za-z0-9]+StateMachineArn$")


class CatalogError(ValueError):
    pass


@dataclass(frozen=True)
class ChildRef:
    placeholder: str
    """Without `${}`."""
    workflow: str
    version: int | None
    """None: the child's newest version (its `live` alias)."""


@dataclass
class CompiledMachine:
    name: str
    version: int
    path: Path
    definition: str
    functions: list[FunctionName] = field(default_factory=list)
    uses_dead_letter_queue: bool = False
    children: list[ChildRef] = field(default_factory=list)
    triggers: list[Trigger] = field(default_factory=list)
    workflow: Workflow | None = None
    """The workflow file's contents; None for a machine without tool or agent steps and no file."""

    @property
    def placeholders(self) -> list[str]:
        return placeholders_in(self.definition)


def _identity(data: dict[str, Any], path: Path) -> tuple[str, int]:
    """Workflow name and version from the run_start payload of the first state."""
    start = data.get("States", {}).get(data.get("StartAt", ""), {})
    workflow = start.get("Parameters", {}).get("Payload", {}).get("workflow", {})
    if not isinstance(workflow.get("name"), str) or not isinstance(workflow.get("version"), int):
        raise CatalogError(
            f"{path}: not a switchyard machine (its first state is not run_start); "
            "compile it with `switchyard compile`"
        )
    return workflow["name"], workflow["version"]


def load_machines(folder: Path) -> list[CompiledMachine]:
    if not folder.is_dir():
        raise CatalogError(f"no compiled state machines: {folder} is not a folder")
    machines: list[CompiledMachine] = []
    for path in sorted(folder.glob("*.asl.json")):
        text = path.read_text()
        name, version = _identity(json.loads(text), path)
        machines.append(CompiledMachine(name=name, version=version, path=path, definition=text))
    names = [m.name for m in machines]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise CatalogError(f"{folder}: more than one machine for {', '.join(duplicates)}")
    _resolve_placeholders(machines)
    return machines


def _resolve_placeholders(machines: list[CompiledMachine]) -> None:
    by_placeholder: dict[str, tuple[CompiledMachine, int | None]] = {}
    for machine in machines:
        by_placeholder[state_machine_placeholder(machine.name, None)[2:-1]] = (machine, None)
        pinned = state_machine_placeholder(machine.name, machine.version)[2:-1]
        by_placeholder[pinned] = (machine, machine.version)
    for machine in machines:
        for placeholder in machine.placeholders:
            if placeholder in _FUNCTION_PLACEHOLDERS:
                machine.functions.append(_FUNCTION_PLACEHOLDERS[placeholder])
            elif placeholder == _DLQ_PLACEHOLDER:
                machine.uses_dead_letter_queue = True
            elif placeholder in by_placeholder:
                child, version = by_placeholder[placeholder]
                machine.children.append(ChildRef(placeholder, child.name, version))
            elif _MACHINE_PLACEHOLDER.match(placeholder):
                raise CatalogError(
                    f"{machine.path}: ${{{placeholder}}} names a sub-workflow that is not in "
                    f"{machine.path.parent} at that version; compile the child (a workflow "
                    "pinned to an older version of a child needs that version deployed)"
                )
            else:
                raise CatalogError(f"{machine.path}: unknown placeholder ${{{placeholder}}}")


def _workflow_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml"))


def load_workflows(folder: Path) -> list[Workflow]:
    workflows: list[Workflow] = []
    for path in _workflow_files(folder):
        result = validate_file(path)
        if result.workflow is None or any(d.is_error for d in result.diagnostics):
            problems = "\n".join(d.format() for d in result.diagnostics)
            raise CatalogError(f"{path} does not validate:\n{problems}")
        workflows.append(result.workflow)
    return workflows


_NEEDS_WORKFLOW_FILE = (FunctionName.TOOL_STEP, FunctionName.AGENT_STEP)


def attach_workflows(machines: list[CompiledMachine], workflows: list[Workflow]) -> None:
    by_name = {m.name: m for m in machines}
    for workflow in workflows:
        machine = by_name.get(workflow.name)
        if machine is None:
            if workflow.triggers:
                raise CatalogError(
                    f"workflow {workflow.name} has triggers but no compiled machine; run "
                    "`switchyard compile` first"
                )
            continue
        if machine.version != workflow.version:
            raise CatalogError(
                f"{machine.path} is version {machine.version} but the workflow file is version "
                f"{workflow.version}: recompile with `switchyard compile`"
            )
        machine.triggers = list(workflow.triggers)
        machine.workflow = workflow
    for machine in machines:
        if machine.workflow is None and any(f in machine.functions for f in _NEEDS_WORKFLOW_FILE):
            raise CatalogError(
                f"{machine.path} has tool or agent steps but no file in the workflows folder "
                f"holds workflow {machine.name}: the stack grants its tools' permissions from "
                "that file; put the workflow's YAML there"
            )


def load_catalog(statemachines: Path, workflows: Path) -> list[CompiledMachine]:
    machines = load_machines(statemachines)
    attach_workflows(machines, load_workflows(workflows))
    return machines
