"""A scenario file: a workflow, its input, what each step answers, what must come out.

description: a gate approved on its second tier
workflow: {switchyard: 1, name: ..., steps: ...}     # the workflow, inline
children: [{switchyard: 1, name: child, ...}]       # sub-workflows it calls
input: {...}
script:                                              # per step id, one entry per attempt
  classify: [{output: {label: billing}}]             #   (per item / per iteration)
  research: [{error: transient}, {text: "found it"}]  #   `sleep: 1.2` makes an entry slow
gates:                                               # per step id, one action per opening
  approve: [timeout, {action: approve, reviewer: lead, edits: {draft: "v2"}}]
expect:
  status: succeeded                                  # failed, cancelled, timed_out
  error: rejected                                    # the run's error name, when it failed
  steps: {classify: completed, research: skipped}
  output: {...}                                      # the run's output, exactly
  calls: {research: 2}                               # invocations of the step's function
  entered: ["research:needs a human"]                # states that must have been entered
  dead_letters: [research]                           # steps whose failure reached the queue
  records: {research: {error.type: timeout}}         # fields of the final step records
  letters: {research: {input.inputs: {...}}}          # fields of the dead-letter messages
  cause: "..."                                       # the run's cause, when it failed
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from switchyard.model import Workflow
from switchyard.source import load_document
from switchyard.validate import WorkflowCatalog, validate_document
from switchyard.validate.catalog import WorkflowCatalog as _Catalog


@dataclass
class Scenario:
    name: str
    description: str
    workflow: Workflow
    children: list[Workflow]
    input: dict[str, Any]
    script: dict[str, list[dict[str, Any]]]
    gates: dict[str, list[dict[str, Any]]]
    expect: dict[str, Any]
    covers: list[str] = field(default_factory=list)


def _workflow(data: dict[str, Any], where: str, catalog: WorkflowCatalog | None) -> Workflow:
    import yaml

    document = load_document(yaml.safe_dump(data, sort_keys=False), file=where)
    result = validate_document(document, catalog=catalog)
    if result.workflow is None:
        problems = "\n".join(d.format() for d in result.diagnostics)
        raise ValueError(f"scenario workflow {where} is invalid:\n{problems}")
    return result.workflow


def _gate_action(entry: Any) -> dict[str, Any]:
    return {"action": entry} if isinstance(entry, str) else dict(entry)


def load_scenario(path: Path) -> Scenario:
    document = load_document(path.read_text(), file=str(path))
    if document.diagnostics:
        raise ValueError("\n".join(d.format() for d in document.diagnostics))
    data = document.data
    catalog = _Catalog()
    children = []
    for index, child in enumerate(data.get("children", [])):
        workflow = _workflow(child, f"{path.name}#children[{index}]", None)
        children.append(workflow)
        catalog.add(workflow.name, workflow.version, workflow.inputs)
    return Scenario(
        name=path.stem,
        description=data.get("description", ""),
        workflow=_workflow(data["workflow"], f"{path.name}#workflow", catalog),
        children=children,
        input=data.get("input", {}),
        script={k: list(v) for k, v in (data.get("script") or {}).items()},
        gates={k: [_gate_action(e) for e in v] for k, v in (data.get("gates") or {}).items()},
        expect=data["expect"],
        covers=list(data.get("covers", [])),
    )
