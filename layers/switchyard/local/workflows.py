"""Install a workflow file (and the sub-workflows it calls) into the local engine: compile,
fill the placeholders with local ARNs, create or update its state machine, publish a version, and
record its triggers for whichever engine owns the database (docs/triggers.md)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from switchyard.compile import compile_workflow
from switchyard.engine import machines
from switchyard.engine.arns import Arns
from switchyard.engine.store import EngineStore
from switchyard.engine.substitution import local_values, substitute
from switchyard.local.triggers.store import InstalledTriggers, record_installed
from switchyard.model import LoopStep, MapStep, SubWorkflowBody, Workflow
from switchyard.validate import validate_file
from switchyard.validate.catalog import WORKFLOW_SUFFIXES


@dataclass(frozen=True)
class Installed:
    workflow: Workflow
    machine_arn: str
    version_arn: str
    alias_arn: str
    """`<machine>:v<n>`: the version installed from the workflow's version n, which a parent
    pinning `name@n` starts (new runs of the machine itself start on the newest)."""


class WorkflowFileError(ValueError):
    """A workflow (or a sub-workflow it calls) does not validate."""


def install(store: EngineStore, arns: Arns, path: Path) -> Installed:
    """Install the workflow and, first, the sub-workflows it calls (pinned ones at their
    version, found by name and version among the files beside it)."""
    return _install(store, arns, path, {}, set())


def _install(
    store: EngineStore,
    arns: Arns,
    path: Path,
    installed: dict[tuple[str, int | None], Installed],
    seen: set[Path],
) -> Installed:
    result = validate_file(path)
    if result.workflow is None:
        problems = "\n".join(d.format() for d in result.errors)
        raise WorkflowFileError(f"{path} does not validate:\n{problems}")
    workflow = result.workflow
    seen.add(path.resolve())
    for name, version in _children(workflow):
        if (name, version) in installed:
            continue
        child_path = _find(path.parent, name, version)
        if child_path.resolve() in seen:
            continue
        installed[(name, version)] = _install(store, arns, child_path, installed, seen)
    newest = {name: item.machine_arn for (name, _), item in installed.items()}
    pinned = [
        (name, version, item.alias_arn)
        for (name, version), item in installed.items()
        if version is not None
    ]
    text, missing = substitute(
        compile_workflow(workflow).text, local_values(arns, newest.items(), pinned)
    )
    if missing:
        raise WorkflowFileError(f"{path}: cannot fill {', '.join(missing)}")
    arn = arns.machine(workflow.name)
    digest = definition_digest(path)
    _refuse_changed_version(store, f"{arn}:v{workflow.version}", digest, workflow, path)
    if store.machine(arn) is None:
        created = machines.create(store, arns, name=workflow.name, definition=text, publish=True)
        version_arn = created["stateMachineVersionArn"]
    else:
        updated = machines.update(store, arn, definition=text, role_arn=None, publish=True)
        version_arn = updated["stateMachineVersionArn"]
    alias = machines.create_alias(
        store,
        name=f"v{workflow.version}",
        routing=[{"stateMachineVersionArn": version_arn, "weight": 100}],
        description=f"workflow {workflow.name} version {workflow.version} {_DIGEST}{digest}",
    )
    record_installed(store.conn, _triggers(workflow, arn))
    return Installed(workflow, arn, version_arn, alias["stateMachineAliasArn"])


def _triggers(workflow: Workflow, machine_arn: str) -> InstalledTriggers:
    return InstalledTriggers(
        workflow.name,
        workflow.version,
        machine_arn,
        dict(workflow.inputs),
        [trigger.model_dump(mode="json") for trigger in workflow.triggers],
    )


_DIGEST = "definition:"
"""The alias description ends with the digest of the definition installed under that version."""


def definition_digest(path: Path) -> str:
    """sha256 of the workflow as written (keys and values; not comments or layout)."""
    from switchyard.source import load_file

    data = load_file(path).data
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _refuse_changed_version(
    store: EngineStore, alias_arn: str, digest: str, workflow: Workflow, path: Path
) -> None:
    """A version number names one definition: runs, costs and history are kept per version, so
    another definition under the same number would make them lie (Step Functions would publish
    another machine version silently)."""
    alias = store.alias(alias_arn)
    description = (alias.description if alias else None) or ""
    if _DIGEST not in description:
        return  # not installed yet, or installed before digests were recorded
    if description.rsplit(_DIGEST, 1)[1].strip() == digest:
        return
    raise WorkflowFileError(
        f"{path}: workflow {workflow.name} version {workflow.version} is already installed with "
        f"a different definition; bump `version` to {workflow.version + 1} in {path.name} to "
        f"install this one (runs of version {workflow.version} keep theirs)"
    )


def _children(workflow: Workflow) -> list[tuple[str, int | None]]:
    found: list[tuple[str, int | None]] = []
    for step in workflow.steps.values():
        body = step.step if isinstance(step, MapStep | LoopStep) else step
        if isinstance(body, SubWorkflowBody):
            found.append((body.workflow_name, body.workflow_version))
    return found


def _find(directory: Path, name: str, version: int | None) -> Path:
    from switchyard.source import load_file

    best: tuple[int, Path] | None = None
    for candidate in sorted(directory.iterdir()):
        if candidate.suffix not in WORKFLOW_SUFFIXES:
            continue
        data = load_file(candidate).data
        if not isinstance(data, dict) or data.get("name") != name:
            continue
        number = data.get("version")
        if not isinstance(number, int):
            continue
        if version is not None and number == version:
            return candidate
        if version is None and (best is None or number > best[0]):
            best = (number, candidate)
    if best is None:
        raise WorkflowFileError(f"no file for workflow {name} beside {directory}")
    return best[1]
