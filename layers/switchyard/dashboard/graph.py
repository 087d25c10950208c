"""A run's DAG, read from the state machine it ran (the same ASL on AWS and locally), so that
every run draws, whichever file or version started it.

The compiler leaves these marks: a Task whose `Payload` carries `step_id` and the step's spec
(type, `after`, model); a Map or Parallel whose `ResultPath` is the step's record
`$.steps.<step>`; a rule router's Choice named as the step, its `Comment` starting `'<step>':`;
and, where a step has a `when` or an uncertain dependency, a `<step>:check` Choice over the
`$.steps.<dep>` records it depends on and a `<step>:skip` Pass. A step without a spec takes its
dependencies from the check's variables, else from the `$.steps.<dep>` paths its own state
reads."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

_STEP_ID = re.compile(r"^[a-z][a-z0-9_]*$")
_STEP_REF = re.compile(r"^\$\.steps\.([a-z][a-z0-9_]*)\.")
_STEP_RECORD = re.compile(r"^\$\.steps\.([a-z][a-z0-9_]*)$")
_MARKS = (":check", ":skip", ":first iteration", ":error", ":failed")
_KIND_OF_STATE = {"Choice": "router", "Map": "map", "Parallel": "parallel", "Task": "sub_workflow"}


@dataclass
class Node:
    id: str
    kind: str = "step"
    after: list[str] = field(default_factory=list)
    model: str | None = None
    detail: str | None = None
    """The tool, the sub-workflow or the gate's assignee."""

    def data(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "after": self.after,
            "model": self.model,
            "detail": self.detail,
        }


def _states(states: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, state in states.items():
        if not isinstance(state, dict):
            continue
        yield name, state
        for branch in state.get("Branches") or []:
            yield from _states(branch.get("States") or {})
        for key in ("ItemProcessor", "Iterator"):
            inner = state.get(key)
            if isinstance(inner, dict):
                yield from _states(inner.get("States") or {})


def _refs(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "Variable" and isinstance(item, str):
                match = _STEP_REF.match(item)
                if match:
                    yield match.group(1)
            else:
                yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


def _paths(value: Any) -> Iterator[str]:
    """The steps whose records a state reads anywhere in its fields (`$.steps.<step>.…`)."""
    if isinstance(value, str):
        match = _STEP_REF.match(value)
        if match:
            yield match.group(1)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in ("Catch", "Retry", "Next", "Default", "ResultPath"):
                yield from _paths(item)
    elif isinstance(value, list):
        for item in value:
            yield from _paths(item)


def _own_step(name: str, state: dict[str, Any]) -> str | None:
    """The step a Map, Parallel, sub-workflow's Task or rule router's Choice is, by the
    compiler's marks (a Task of any other step carries its spec, read before this)."""
    kind = state.get("Type")
    if kind in ("Map", "Parallel", "Task"):
        match = _STEP_RECORD.match(str(state.get("ResultPath") or ""))
        return match.group(1) if match else None
    if kind == "Choice" and _STEP_ID.match(name):
        comment = state.get("Comment")
        if isinstance(comment, str) and comment.startswith(f"'{name}':"):
            return name
    return None


def _payload(state: dict[str, Any]) -> dict[str, Any] | None:
    parameters = state.get("Parameters")
    if not isinstance(parameters, dict):
        return None
    payload = parameters.get("Payload", parameters.get("Input"))
    return payload if isinstance(payload, dict) and "step_id" in payload else None


def _from_spec(node: Node, payload: dict[str, Any]) -> None:
    spec = payload.get("step") or payload.get("gate") or {}
    if not isinstance(spec, dict):
        return
    node.kind = str(spec.get("type") or node.kind)
    after = spec.get("after")
    if isinstance(after, list) and after:
        node.after = [str(a) for a in after]
    model = spec.get("model")
    node.model = str(model) if model else node.model
    detail = spec.get("tool") or spec.get("workflow") or spec.get("assignee")
    node.detail = str(detail) if detail else node.detail


@lru_cache(maxsize=256)
def _graph_of(definition: str) -> tuple[tuple[Node, ...], dict[str, Any] | None]:
    try:
        machine = json.loads(definition)
    except ValueError:
        return (), None
    nodes: dict[str, Node] = {}
    checks: dict[str, list[str]] = {}
    reads: dict[str, list[str]] = {}
    budget: dict[str, Any] | None = None
    states = list(_states(machine.get("States") or {}))
    for name, state in states:
        payload = _payload(state)
        if payload is not None:
            step_id = str(payload["step_id"])
            _from_spec(nodes.setdefault(step_id, Node(step_id)), payload)
            workflow = payload.get("workflow")
            if budget is None and isinstance(workflow, dict):
                budget = workflow.get("budget") if isinstance(workflow.get("budget"), dict) else {}
            continue
        own = _own_step(name, state)
        if own is not None:
            node = nodes.setdefault(own, Node(own))
            node.kind = _KIND_OF_STATE[str(state["Type"])]
            reads[own] = [dep for dep in dict.fromkeys(_paths(state)) if dep != own]
            continue
        head, mark, _ = name.partition(":")
        if mark and _STEP_ID.match(head) and any(name == head + m for m in _MARKS):
            nodes.setdefault(head, Node(head))
            if name == f"{head}:check":
                checks[head] = list(dict.fromkeys(_refs(state.get("Choices"))))
    kinds = {name: str(state.get("Type")) for name, state in states}
    for step_id, node in nodes.items():
        if node.kind == "step" and kinds.get(step_id) in _KIND_OF_STATE:
            node.kind = _KIND_OF_STATE[kinds[step_id]]
        if not node.after and step_id in checks:
            node.after = [dep for dep in checks[step_id] if dep != step_id]
        elif not node.after and step_id in reads:
            node.after = reads[step_id]
    for node in nodes.values():
        node.after = [dep for dep in node.after if dep in nodes]
    return tuple(nodes.values()), budget


def workflow_graph(definition: str, recorded_steps: list[str]) -> dict[str, Any]:
    """Nodes (with `after`) of the machine's steps, plus any recorded step the machine does not
    name (drawn unconnected); and the workflow's budget, when it has one."""
    nodes, budget = _graph_of(definition)
    data = [node.data() for node in nodes]
    known = {node.id for node in nodes}
    data.extend(Node(step).data() for step in recorded_steps if step not in known)
    return {"nodes": data, "budget": budget or None}
