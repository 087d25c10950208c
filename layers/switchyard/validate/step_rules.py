"""Rules about what is inside steps: templates, conditions, tools, models, sub-workflows,
JSON Schemas and triggers."""

from __future__ import annotations

import difflib
from typing import Any

import jsonschema_rs

from switchyard.conditions import ConditionError, parse_path
from switchyard.diagnostics import Code
from switchyard.model import (
    AgentBody,
    EventTrigger,
    HumanGateStep,
    LlmRouter,
    LoopStep,
    MapStep,
    QueueTrigger,
    RuleRouter,
    ScheduleTrigger,
    ScoreRouter,
    Step,
    SubWorkflowBody,
    ToolBody,
    WebhookTrigger,
)
from switchyard.model.builtin_tools import BUILTIN_TOOLS
from switchyard.source import DocPath
from switchyard.templates import template_info
from switchyard.triggers.patterns import PatternError, check_pattern
from switchyard.validate.catalog import WorkflowCatalog
from switchyard.validate.context import Checks
from switchyard.validate.output_types import inline_output_schema, json_types, types_text
from switchyard.validate.references import ReferenceChecker, Scope

_CONTEXT = frozenset({"inputs", "steps", "run"})
_TRIGGER_ROOTS = {
    "schedule": frozenset({"schedule"}),
    "event": frozenset({"event"}),
    "webhook": frozenset({"body", "headers", "query"}),
    "queue": frozenset({"message"}),
}


class StepRules:
    def __init__(
        self, checks: Checks, references: ReferenceChecker, catalog: WorkflowCatalog | None
    ) -> None:
        self._checks = checks
        self._refs = references
        self._catalog = catalog
        self._workflow = checks.workflow

    def run(self) -> None:
        self._input_schemas()
        self._declared_tools()
        fallbacks = self._workflow.fallback_steps()
        primary_of = {s.fallback: sid for sid, s in self._workflow.steps.items() if s.fallback}
        for step_id, step in self._workflow.steps.items():
            # A fallback step stands in for its primary: it sees what the primary sees.
            owner = primary_of.get(step_id, step_id) if step_id in fallbacks else step_id
            self._step(step_id, step, owner)
        self._outputs()
        self._triggers()

    # --- steps -----------------------------------------------------------------------------

    def _step(self, step_id: str, step: Step, owner: str) -> None:
        base: DocPath = ("steps", step_id)
        # A fallback may read the record (error) of the step it backs up.
        extra = frozenset({owner}) if step_id != owner else frozenset()
        step_scope = Scope(_CONTEXT, owner, also_visible=extra)
        if step.when is not None:
            self._refs.condition(step.when, (*base, "when"), step_scope)
        body_scope = (
            step_scope.with_roots("joined") if step.after or step_id != owner else step_scope
        )
        if isinstance(step, RuleRouter | ScoreRouter | LlmRouter):
            self._router(base, step, step_scope, body_scope)
            return
        self._refs.templates(step.input, (*base, "input"), body_scope)
        if step.input:
            body_scope = body_scope.with_roots("input")
        if isinstance(step, HumanGateStep):
            self._refs.template(step.message, (*base, "message"), body_scope)
            self._refs.templates(step.show, (*base, "show"), body_scope)
        elif isinstance(step, MapStep):
            self._map(base, step, body_scope)
        elif isinstance(step, LoopStep):
            self._loop(base, step, body_scope)
        else:
            self._body(base, step, body_scope)
        own_schema = getattr(step, "output_schema", None)
        if own_schema is not None:
            self._json_schema(own_schema, (*base, "output_schema"))

    def _body(
        self, base: DocPath, body: AgentBody | ToolBody | SubWorkflowBody, scope: Scope
    ) -> None:
        if body.output_schema is not None and base[-1] == "step":  # top-level: checked in _step
            self._json_schema(body.output_schema, (*base, "output_schema"))
        if isinstance(body, AgentBody):
            self._model(base, body.model)
            if body.system is not None:
                self._refs.template(body.system, (*base, "system"), scope)
            self._refs.template(body.prompt, (*base, "prompt"), scope)
            summary = body.continue_as_new.summary if body.continue_as_new else None
            if summary is not None:
                self._refs.template(summary, (*base, "continue_as_new", "summary"), scope)
            for index, name in enumerate(body.tools):
                if name not in self._workflow.tools:
                    self._unknown_tool((*base, "tools", index), name, declared_only=True)
        elif isinstance(body, ToolBody):
            self._tool_step(base, body, scope)
        else:
            self._refs.templates(body.input, (*base, "input"), scope)
            self._sub_workflow(base, body, scope)

    def _map(self, base: DocPath, step: MapStep, scope: Scope) -> None:
        self._refs.template(step.items, (*base, "items"), scope)
        info = template_info(step.items) if "{{" in step.items else None
        if info is None or not info.single_expression:
            self._checks.report(
                Code.BAD_TEMPLATE,
                (*base, "items"),
                "items must be one {{ expression }} that gives a list, e.g. "
                "'{{ inputs.documents }}'",
            )
        inner = scope.with_roots("item", "index")
        self._inline(base, step.step, inner)

    def _loop(self, base: DocPath, step: LoopStep, scope: Scope) -> None:
        inner = scope.with_roots("iteration", "previous")
        self._inline(base, step.step, inner)
        summary = step.continue_as_new.summary if step.continue_as_new else None
        where = (*base, "continue_as_new", "summary")
        if isinstance(summary, dict):
            self._refs.templates(summary, where, inner)
        elif summary is not None:
            self._refs.template(summary, where, inner)
        if step.until is not None:
            output = inline_output_schema(step.step, self._workflow)
            until_scope = Scope(_CONTEXT, scope.owner).with_roots("iteration", output=output)
            self._refs.condition(step.until, (*base, "until"), until_scope)

    def _inline(
        self, base: DocPath, body: AgentBody | ToolBody | SubWorkflowBody, scope: Scope
    ) -> None:
        where = (*base, "step")
        if not isinstance(body, SubWorkflowBody):
            self._refs.templates(body.input, (*where, "input"), scope)
            if body.input:
                scope = scope.with_roots("input")
        self._body(where, body, scope)

    def _router(
        self,
        base: DocPath,
        router: RuleRouter | ScoreRouter | LlmRouter,
        scope: Scope,
        body_scope: Scope,
    ) -> None:
        if isinstance(router, RuleRouter):
            for index, route in enumerate(router.routes):
                self._refs.condition(route.when, (*base, "routes", index, "when"), scope)
        elif isinstance(router, ScoreRouter):
            self._score(base, router, scope)
        else:
            self._model(base, router.model)
            if router.prompt is not None:
                self._refs.template(router.prompt, (*base, "prompt"), body_scope)

    def _score(self, base: DocPath, router: ScoreRouter, scope: Scope) -> None:
        where = (*base, "score")
        try:
            path = parse_path(router.score)
        except ConditionError as problem:
            self._checks.report(
                Code.BAD_CONDITION, where, f"score must be a path to a number: {problem}"
            )
            return
        before = len(self._checks.diagnostics)
        self._refs.condition(f"{router.score} exists", where, scope)
        if len(self._checks.diagnostics) != before:
            return
        types = json_types(self._refs.path_schema(path, scope))
        if types is not None and "number" not in types:
            self._checks.report(
                Code.TYPE_MISMATCH,
                where,
                f"{router.score} is not a number by its output_schema; a score router compares "
                "a number with its thresholds",
            )

    def _model(self, base: DocPath, model: str | None) -> None:
        if model is None and self._workflow.defaults.model is None:
            self._checks.report(
                Code.SCHEMA,
                base,
                "no model: set model on this step or defaults.model for the workflow",
            )

    # --- tools -----------------------------------------------------------------------------

    def _tool_step(self, base: DocPath, body: ToolBody, scope: Scope) -> None:
        self._refs.templates(body.args, (*base, "args"), scope)
        builtin = BUILTIN_TOOLS.get(body.tool)
        if builtin is None:
            if body.tool not in self._workflow.tools:
                self._unknown_tool((*base, "tool"), body.tool, declared_only=False)
            return
        schema = builtin.args_schema
        allowed = schema["properties"]
        for key in body.args:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = (
                    f"did you mean '{close[0]}'?"
                    if close
                    else f"its arguments: {', '.join(allowed)}"
                )
                self._checks.report(
                    Code.SCHEMA,
                    (*base, "args", key),
                    f"{body.tool} takes no argument '{key}'; {hint}",
                )
        for key, value in body.args.items():
            if key in allowed and isinstance(value, str):
                self._typed_slot(
                    (*base, "args", key), value, scope, allowed[key], f"{body.tool} takes '{key}'"
                )
        for key in schema["required"]:
            if key not in body.args:
                self._checks.report(
                    Code.SCHEMA,
                    (*base, "args"),
                    f"{body.tool} needs the argument '{key}'; add it under args",
                )

    def _unknown_tool(self, where: DocPath, name: str, *, declared_only: bool) -> None:
        known = list(self._workflow.tools) + ([] if declared_only else list(BUILTIN_TOOLS))
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        if declared_only:
            hint = "declare it under tools (agents may call declared tools only)"
        else:
            hint = "use a built-in tool or declare it under tools"
        if close:
            hint = f"did you mean '{close[0]}'? Otherwise {hint}"
        self._checks.report(Code.UNKNOWN_TOOL, where, f"unknown tool '{name}'; {hint}")

    def _declared_tools(self) -> None:
        for name, tool in self._workflow.tools.items():
            base: DocPath = ("tools", name)
            self._json_schema(tool.input_schema, (*base, "input_schema"))
            scope = Scope(frozenset({"args", "inputs", "run"}), None, {"args": tool.input_schema})
            self._refs.templates(tool.config, (*base, "config"), scope)
            if tool.policy.require_approval_if is not None:
                self._refs.condition(
                    tool.policy.require_approval_if,
                    (*base, "policy", "require_approval_if"),
                    scope,
                )

    # --- sub-workflows ---------------------------------------------------------------------

    def _typed_slot(self, where: DocPath, text: str, scope: Scope, target: Any, what: str) -> None:
        """A value going where a schema expects some types: report when no type can fit."""
        wanted = json_types(target) if isinstance(target, dict) else None
        if wanted is None:
            return
        found, described = self._refs.value_types(text, scope)
        if found is None or found & wanted:
            return
        self._checks.report(
            Code.TYPE_MISMATCH,
            where,
            f"{what} as {types_text(wanted)}, but {described}",
        )

    def _sub_workflow(self, base: DocPath, body: SubWorkflowBody, scope: Scope) -> None:
        if self._catalog is None:
            return
        name, version = body.workflow_name, body.workflow_version
        if name == self._workflow.name and (version is None or version == self._workflow.version):
            self._checks.report(
                Code.UNKNOWN_WORKFLOW,
                (*base, "workflow"),
                "a workflow cannot run itself as a sub-workflow; use a loop step to repeat work",
            )
            return
        child_inputs = self._catalog.inputs_of(name, version)
        if child_inputs is None:
            self._checks.report(
                Code.UNKNOWN_WORKFLOW,
                (*base, "workflow"),
                f"{self._catalog.describe(name)}; put its file in the same folder",
            )
            return
        for key, value in body.input.items():
            if child_inputs and key not in child_inputs:
                self._checks.report(
                    Code.TYPE_MISMATCH,
                    (*base, "input", key),
                    f"workflow '{name}' has no input '{key}' "
                    f"(its inputs: {', '.join(child_inputs)})",
                )
            elif key in child_inputs:
                self._typed_slot(
                    (*base, "input", key),
                    value,
                    scope,
                    child_inputs[key],
                    f"workflow '{name}' takes '{key}'",
                )
        # An input the schema check set aside (a value of the wrong kind) is there, not missing:
        # it was reported as what it is.
        given = set(body.input) | _raw_keys(self._checks.document.data, (*base, "input"))
        for key, schema in child_inputs.items():
            if isinstance(schema, dict) and "default" not in schema and key not in given:
                self._checks.report(
                    Code.TYPE_MISMATCH,
                    (*base, "input"),
                    f"workflow '{name}' needs the input '{key}'; add it under input",
                )

    # --- schemas, outputs, triggers --------------------------------------------------------

    def _input_schemas(self) -> None:
        for name, schema in self._workflow.inputs.items():
            where: DocPath = ("inputs", name)
            if not self._json_schema(schema, where):
                continue
            if "default" in schema:
                try:
                    jsonschema_rs.validate(schema, schema["default"])
                except jsonschema_rs.ValidationError as exc:
                    self._checks.report(
                        Code.SCHEMA,
                        (*where, "default"),
                        f"the default does not match the input's own schema: {exc.message}",
                    )

    def _json_schema(self, schema: Any, where: DocPath) -> bool:
        """A JSON Schema (draft 2020-12 unless it says otherwise) that is itself valid."""
        try:
            jsonschema_rs.meta.validate(schema)
        except jsonschema_rs.ValidationError as exc:
            location = ".".join(str(p) for p in exc.instance_path)
            at = f" at {location}" if location else ""
            self._checks.report(Code.SCHEMA, where, f"not a valid JSON Schema{at}: {exc.message}")
            return False
        except (jsonschema_rs.ReferencingError, ValueError) as exc:
            self._checks.report(Code.SCHEMA, where, f"not a usable JSON Schema: {exc}")
            return False
        return True

    def _outputs(self) -> None:
        if self._workflow.outputs is None:
            return
        scope = Scope(_CONTEXT, None)
        self._refs.templates(self._workflow.outputs, ("outputs",), scope)

    def _triggers(self) -> None:
        declared = self._workflow.inputs
        for index, trigger in enumerate(self._workflow.triggers):
            base: DocPath = ("triggers", index)
            assert isinstance(
                trigger, ScheduleTrigger | EventTrigger | WebhookTrigger | QueueTrigger
            )
            if isinstance(trigger, EventTrigger):
                try:
                    check_pattern(trigger.pattern)
                except PatternError as exc:
                    self._checks.report(
                        Code.SCHEMA,
                        (*base, "pattern"),
                        f"not an EventBridge event pattern: {exc}",
                    )
            scope = Scope(_TRIGGER_ROOTS[trigger.type] | {"run"}, None)
            self._refs.templates(trigger.input, (*base, "input"), scope)
            for key in trigger.input:
                if declared and key not in declared:
                    self._checks.report(
                        Code.TYPE_MISMATCH,
                        (*base, "input", key),
                        f"'{key}' is not a declared input (inputs: {', '.join(declared)})",
                    )


def _raw_keys(data: Any, path: DocPath) -> set[str]:
    """The keys of the mapping at `path` in the document as written (before the schema check)."""
    node = data
    for part in path:
        found = isinstance(node, dict) and part in node
        found = found or (
            isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        )
        if not found:
            return set()
        node = node[part]
    return {str(k) for k in node} if isinstance(node, dict) else set()
