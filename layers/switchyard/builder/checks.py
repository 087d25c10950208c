"""The project's own validator and compiler on a source sent as text: the diagnostics (each with
its code, document path and line), the output schema of each step (what the builder's template
fields complete), the compiled definition and the compiler's notes. Never raises on bad input:
bytes that are not UTF-8 or not YAML are a `parse` diagnostic like any other."""

from __future__ import annotations

import logging
from typing import Any

import yaml

from switchyard.compile import compile_workflow
from switchyard.diagnostics import Code, Diagnostic
from switchyard.source import load_document
from switchyard.validate import validate_document
from switchyard.validate.catalog import WorkflowCatalog
from switchyard.validate.output_types import output_schema
from switchyard.validate.structure import check_structure

FILE = "<builder>"
log = logging.getLogger("switchyard.builder")


def _decode(data: bytes) -> tuple[str | None, list[Diagnostic]]:
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        message = f"the source is not UTF-8 text (byte {exc.start})"
        return None, [Diagnostic(Code.PARSE, "", message, line=line, file=FILE)]


MAX_VALUES = 200_000
"""Values a source may expand to: aliases repeat the node they name, so a few lines can stand
for billions of values ('billion laughs'); such a source is a diagnostic, never parsed out."""


def _expansion(text: str) -> int:
    """How many values `text` expands to, counted over its node graph (each alias counts the
    node it names again) without expanding it; 0 when it does not compose (the loader says why)."""
    try:
        root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return 0
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        sizes[id(node)] = 1  # a node that contains itself counts once
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        sizes[id(node)] = min(total, MAX_VALUES + 1)
        return sizes[id(node)]

    return size(root) if root is not None else 0


def _too_large(text: str) -> list[Diagnostic]:
    if _expansion(text) <= MAX_VALUES:
        return []
    message = f"the source expands to more than {MAX_VALUES} values through its aliases"
    return [Diagnostic(Code.PARSE, "", message, line=1, file=FILE)]


def expands_too_far(data: bytes) -> bool:
    """True for a source whose aliases expand it past `MAX_VALUES` values."""
    return _expansion(data.decode("utf-8", errors="replace")) > MAX_VALUES


def _json(diagnostic: Diagnostic) -> dict[str, Any]:
    answer = diagnostic.as_json()
    answer.pop("file", None)
    return answer


def validate_source(data: bytes, catalog: WorkflowCatalog | None) -> dict[str, Any]:
    text, problems = _decode(data)
    problems = problems or _too_large(text or "")
    if text is None or problems:
        return {"ok": False, "diagnostics": [_json(d) for d in problems], "outputs": {}}
    document = load_document(text, file=FILE)
    result = validate_document(document, catalog=catalog)
    outputs: dict[str, Any] = {}
    if document.data is not None:
        workflow = result.workflow or check_structure(document).workflow
        if workflow is not None:
            for step_id, step in workflow.steps.items():
                try:
                    outputs[step_id] = output_schema(step, workflow)
                except Exception:  # a schema the partial workflow cannot give: left out
                    continue
    return {
        "ok": result.ok,
        "diagnostics": [_json(d) for d in result.diagnostics],
        "outputs": outputs,
    }


def compile_source(data: bytes, catalog: WorkflowCatalog | None) -> dict[str, Any]:
    text, problems = _decode(data)
    problems = problems or _too_large(text or "")
    if text is None or problems:
        return {
            "ok": False,
            "diagnostics": [_json(d) for d in problems],
            "definition": None,
            "notes": [],
        }
    document = load_document(text, file=FILE)
    result = validate_document(document, catalog=catalog)
    diagnostics = [_json(d) for d in result.diagnostics]
    if result.workflow is None:
        return {"ok": False, "diagnostics": diagnostics, "definition": None, "notes": []}
    try:
        compiled = compile_workflow(result.workflow, document=document)
    except Exception:  # a compiler bug must not be a 500 for the page: logged, and said
        log.exception("the compiler failed on a source that validates")
        failed = Diagnostic(Code.SCHEMA, "", "the compiler failed; see the server's log", file=FILE)
        return {
            "ok": False,
            "diagnostics": [*diagnostics, _json(failed)],
            "definition": None,
            "notes": [],
        }
    return {
        "ok": True,
        "diagnostics": diagnostics,
        "definition": compiled.definition,
        "notes": [_json(note) for note in compiled.notes],
    }
