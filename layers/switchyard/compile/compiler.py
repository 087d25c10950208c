"""Compile a workflow into an Amazon States Language definition (JSONPath mode).

The machine: `start` (run_start validates the input and builds the state) → the steps, nested in
Parallel blocks by the DAG's series-parallel shape → `outputs`. docs/compiler.md shows the states
each kind of step becomes; docs/contract.md the JSON they pass around.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import orjson

from switchyard.compile.context import ALL_STEPS, referenced_steps, templates_of
from switchyard.compile.fragments import Block, Exit, Fragment, Names, State, chain, close
from switchyard.compile.history import LIMIT, WARN_AT, worst_case_events
from switchyard.compile.shape import Leaf, Node, Par, Seq, decompose, limit_width
from switchyard.compile.shape.exclusive import serialize_exclusive
from switchyard.compile.shape.tree import steps_of
from switchyard.compile.steps.agent_segments import agent_in_segments
from switchyard.compile.steps.continue_as_new import RESUME_PATH, continuable_steps
from switchyard.compile.steps.failure import Fallback
from switchyard.compile.steps.gate import human_gate
from switchyard.compile.steps.gating import guarded
from switchyard.compile.steps.loop_step import loop_step
from switchyard.compile.steps.map_step import map_step
from switchyard.compile.steps.router import Skipping, rule_or_score_router
from switchyard.compile.steps.sub_workflow import sub_workflow
from switchyard.compile.steps.task import can_need_human, lambda_step
from switchyard.compile.steps.unit import LAMBDA_INVOKE, LAMBDA_SERVICE_RETRY, Unit, function
from switchyard.compile.template_paths import parameters_for, render_task
from switchyard.contract import LARGE_OUTPUT_BYTES, FunctionName, GateKind
from switchyard.diagnostics import Code, Diagnostic, Severity
from switchyard.model import (
    AgentBody,
    AgentStep,
    HumanGateStep,
    LlmRouter,
    LoopStep,
    MapStep,
    OnError,
    RuleRouter,
    ScoreRouter,
    SubWorkflowStep,
    ToolBody,
    ToolStep,
    Workflow,
)
from switchyard.source import LoadedDocument, format_path
from switchyard.validate.payload_size import payload_plan

MAX_DEFINITION_BYTES = 1024 * 1024
"""Step Functions' limit on a definition (minified, as CDK deploys it)."""
MAX_BRANCHES_PER_MERGE = 10
"""Step Functions nests at most 10 intrinsic functions in a field; N branches take N-1 merges."""
MAX_GATHERED_RECORDS = 50
"""A Parallel gathers at most this many records by name in its `ResultSelector` (about 35 bytes
each); past it a merge Pass (a few hundred bytes, whatever the number of steps) joins the
branches, so that a long workflow's definition does not grow with the square of its steps."""


@dataclass
class CompileResult:
    workflow: Workflow
    definition: dict[str, Any]
    notes: list[Diagnostic] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The definition as written to `statemachines/<name>.asl.json`: stable, byte for byte.

        orjson writes the same bytes as `json.dumps(indent=2, ensure_ascii=False)` in a tenth of
        the time (the standard library's indenting encoder is pure Python); what orjson cannot
        write (integers beyond 64 bits) goes through `json`."""
        try:
            return orjson.dumps(self.definition, option=orjson.OPT_INDENT_2).decode() + "\n"
        except (TypeError, orjson.JSONEncodeError):
            return json.dumps(self.definition, indent=2, ensure_ascii=False) + "\n"


def compile_workflow(
    workflow: Workflow, *, document: LoadedDocument | None = None
) -> CompileResult:
    """Compile a validated workflow; `document` (optional) locates the notes in its file."""
    return _Compiler(workflow, document).run()


class _Compiler:
    def __init__(self, workflow: Workflow, document: LoadedDocument | None) -> None:
        self.workflow = workflow
        self.document = document
        self.names = Names()
        self.notes: list[Diagnostic] = []
        self.fallback_only = workflow.fallback_steps()
        self.primary_of = {s.fallback: sid for sid, s in workflow.steps.items() if s.fallback}
        self.payloads = payload_plan(workflow)
        self._handing: dict[Node, str | None] = {}
        self.continuable = continuable_steps(workflow)
        self.resumes: dict[str, str] = {}
        """Step that continues as new -> the state a continued segment enters it by."""

    def run(self) -> CompileResult:
        tree = self._shape()
        top = Block(self.names)
        if tree is not None:
            top.failing_steps, top.gate_kinds = self._failing(tree), self._gate_kinds(tree)
        start = self._start(top)
        body = self._emit(tree, top, frozenset()) if tree is not None else None
        outputs = self._outputs(top)
        machine = chain(start, self._resume(top, body, outputs), body, outputs)
        assert machine is not None
        close(machine, top)
        definition: dict[str, Any] = {
            "Comment": self._comment(),
            "QueryLanguage": "JSONPath",
            "StartAt": machine.start,
            "States": top.states,
        }
        budget = self.workflow.budget
        if budget is not None and budget.max_duration:
            definition["TimeoutSeconds"] = budget.max_duration
        self._history_note()
        self._size_note(definition)
        return CompileResult(self.workflow, definition, self.notes)

    def _comment(self) -> str:
        head = f"switchyard workflow {self.workflow.name} version {self.workflow.version}"
        if self.workflow.description:
            return f"{head}: {self.workflow.description.strip()}"
        return head

    # --- shape -----------------------------------------------------------------------------

    def _shape(self) -> Node | None:
        order = [s for s in self.workflow.steps if s not in self.fallback_only]
        after = {s: list(self.workflow.steps[s].after) for s in order}
        tree, added = decompose(after, order)
        for edge in added:
            self._note(
                Code.SYNC_EDGE,
                ("steps", edge.step, "after"),
                f"the DAG is not series-parallel, so {edge.describe()} (an added synchronisation "
                "edge; Step Functions nests Parallel states)",
            )
        if tree is None:
            return None
        tree = self._one_route_at_a_time(tree, order)
        limited, batches = limit_width(tree, self.workflow.max_parallel, self._width)
        if len(batches) > 1:
            listed = "; ".join(", ".join(batch) for batch in batches)
            self._note(
                Code.SYNC_EDGE,
                ("max_parallel",),
                f"at most {self.workflow.max_parallel} steps run at once, so parallel steps run in "
                f"batches: {listed}",
            )
        return limited

    def _one_route_at_a_time(self, tree: Node, order: list[str]) -> Node:
        """Parallel branches that wait on one router run one after another (at most one of
        them runs a step: shape/exclusive.py)."""
        steps = self.workflow.steps
        after: dict[str, list[str]] = {}
        for step_id in order:
            deps = list(steps[step_id].after)
            fallback = steps[step_id].fallback
            while fallback is not None:  # compiled in the step's place: its waits count too
                deps += [d for d in steps[fallback].after if d != step_id]
                fallback = steps[fallback].fallback
            after[step_id] = deps
        routers = {s for s in order if isinstance(steps[s], RuleRouter | ScoreRouter | LlmRouter)}
        position = {s: i for i, s in enumerate(steps)}
        return serialize_exclusive(tree, after, routers, position)

    def _width(self, step_id: str) -> int:
        step = self.workflow.steps[step_id]
        if isinstance(step, MapStep):
            return min(step.max_concurrency, self.workflow.max_parallel)
        return 1

    # --- emission --------------------------------------------------------------------------

    def _emit(self, node: Node, block: Block, recorded: frozenset[str] | None) -> Fragment:
        """`recorded`: the steps whose records the state surely holds when `node` starts; None
        when that is not known (a fallback's record is there only if it stood in)."""
        if isinstance(node, Leaf):
            return self._step(node.step, block)
        if isinstance(node, Seq):
            fragments = []
            ahead: frozenset[str] = frozenset()  # steps a route Pass may have skipped already
            for index, item in enumerate(node.items):
                ahead -= frozenset(steps_of(item))
                skipping = None
                if isinstance(item, Leaf) and recorded is not None and not ahead:
                    skipping = self._skipping(item.step, node.items[index + 1 :], recorded)
                if isinstance(item, Leaf) and skipping is not None:
                    fragments.append(self._step(item.step, block, skipping=skipping))
                    ahead = frozenset().union(*skipping.skipped.values())
                else:
                    fragments.append(self._emit(item, block, recorded))
                recorded = self._recorded_after(item, recorded)
            joined = chain(*fragments)
            assert joined is not None
            return joined
        return self._parallel(node, block, recorded)

    def _skipping(
        self, step_id: str, later: tuple[Node, ...], recorded: frozenset[str]
    ) -> Skipping | None:
        """For a rule or score router: per route, the steps further on in its sequence (before
        any Parallel, whose gathered records would not name them) that the route leaves with
        no live dependency, so that its route Pass records them as skipped and control goes
        around them. A step every route skips keeps its own skip (its states must stay
        reachable). None when there is nothing to skip, or when the route Pass could not name
        every record already in the state (`recorded` is all there is only if no route Pass
        before wrote records of steps still ahead: the caller checks that)."""
        steps = self.workflow.steps
        router = steps[step_id]
        if not isinstance(router, RuleRouter | ScoreRouter):
            return None
        leaves: list[str] = []
        for item in later:
            if not isinstance(item, Leaf):
                break
            leaves.append(item.step)
        if isinstance(router, RuleRouter):
            targets: list[str | None] = [r.to for r in router.routes]
        else:
            targets = [t.to for t in router.thresholds]
        targets.append(router.default)
        skipped: dict[str | None, tuple[str, ...]] = {}
        for target in dict.fromkeys(targets):
            found: list[str] = []  # dead: every dependency is the router elsewhere, or dead
            for leaf in leaves:
                deps = steps[leaf].after
                if deps and all((d == step_id and leaf != target) or d in found for d in deps):
                    found.append(leaf)
            skipped[target] = tuple(found)
        everywhere = set.intersection(*(set(found) for found in skipped.values()))
        skipped = {
            t: tuple(s for s in found if s not in everywhere) for t, found in skipped.items()
        }
        if not any(skipped.values()) or len(recorded) + 1 + len(leaves) > MAX_GATHERED_RECORDS:
            return None
        return Skipping(recorded, skipped)

    def _recorded_after(self, node: Node, recorded: frozenset[str] | None) -> frozenset[str] | None:
        """The steps whose records the state surely holds after `node`: each of its steps
        writes one (completed, skipped, failed or rescued), but a fallback's record is there
        only when it stood in. None as well past `MAX_GATHERED_RECORDS`."""
        steps = list(steps_of(node))
        if recorded is None or any(self.workflow.steps[s].fallback for s in steps):
            return None
        after = recorded | frozenset(steps)
        return after if len(after) <= MAX_GATHERED_RECORDS else None

    def _parallel(self, node: Par, block: Block, recorded: frozenset[str] | None) -> Fragment:
        items = list(node.items)
        while len(items) > MAX_BRANCHES_PER_MERGE:  # group branches so each merge fits
            items = [
                Par(tuple(items[i : i + MAX_BRANCHES_PER_MERGE]))
                if len(items[i : i + MAX_BRANCHES_PER_MERGE]) > 1
                else items[i]
                for i in range(0, len(items), MAX_BRANCHES_PER_MERGE)
            ]
        branches: list[dict[str, Any]] = []
        firsts: list[str] = []
        handed_up: list[State] = []
        for item in items:
            hands_up = self._hands_up(item)
            branch = block.child(failing_steps=self._failing(item, own=True), branch=True)
            branch.gate_kinds = self._gate_kinds(item)
            branch.hands_up = hands_up
            fragment = self._emit(item, branch, recorded)
            close(fragment, branch, output_path="$.steps")
            branches.append(branch.as_definition(fragment.start))
            handed_up += branch.handed_up
            firsts.append(_first_step(item))
        label = ", ".join(firsts)
        parallel: State = {
            "Type": "Parallel",
            "Comment": f"runs side by side: {label}",
            "Branches": branches,
            "ResultPath": "$.branches",
        }
        if handed_up:
            parallel["Catch"] = handed_up
        gathered = self._gathered(items, recorded)
        if gathered is not None:
            parallel["Comment"] += "; then the branches' step records, back in one state"
            parallel["ResultSelector"] = gathered
            parallel["ResultPath"] = "$.steps"
            return Fragment(block.add(f"parallel: {label}", parallel), [Exit(parallel)])
        merged = "$.branches[0]"
        for index in range(1, len(items)):
            merged = f"States.JsonMerge({merged}, $.branches[{index}], false)"
        merge: State = {
            "Type": "Pass",
            "Comment": "merges the step records of the branches back into one state",
            "Parameters": {"inputs.$": "$.inputs", "run.$": "$.run", "steps.$": merged},
        }
        parallel_name = block.add(f"parallel: {label}", parallel)
        parallel["Next"] = block.add(f"merge: {label}", merge)
        return Fragment(parallel_name, [Exit(merge)])

    def _gathered(
        self, items: list[Node], recorded: frozenset[str] | None
    ) -> dict[str, str] | None:
        """The `ResultSelector` that puts the branches' records back into `$.steps` (each branch
        returns its `$.steps`): each record by name from the branch that wrote it, those from
        before the Parallel from the first branch. Only when every record is surely there, as
        a missing path fails the state; otherwise a merge Pass joins the branches."""
        if recorded is None or self._recorded_after(Par(tuple(items)), recorded) is None:
            return None
        selector = {f"{s}.$": f"$[0].{s}" for s in sorted(recorded)}
        for index, item in enumerate(items):
            selector |= {f"{s}.$": f"$[{index}].{s}" for s in steps_of(item)}
        return selector

    def _failing(self, node: Node, *, own: bool = False) -> int:
        """Steps whose failures or waits the tail of the block `node` compiles into serves. A
        nested Parallel's branches are blocks of their own, but a branch whose one such step
        hands its failure up counts it here. `own`: `node` is a whole branch, whose handed-up
        step its own tail does not serve."""
        if own and self._hands_up(node) is not None:
            return 0
        if isinstance(node, Leaf):
            return self._failing_step(node.step)
        if isinstance(node, Seq):
            return sum(self._failing(item) for item in node.items)
        return sum(1 for item in node.items if self._hands_up(item) is not None)

    def _hands_up(self, branch: Node) -> str | None:
        """The step of a Parallel branch that hands its failure to the tail outside the branch
        (steps/failure.py), if the branch has one: the only step of the branch that can fail or
        wait is an agent, tool, LLM router, human gate or sub-workflow (a map's or a loop's
        failure path reads state its branch would lose) with `on_error: fail` and no fallback,
        and its dead letter needs no record written in the branch."""
        if branch not in self._handing:
            self._handing[branch] = self._find_hands_up(branch)
        return self._handing[branch]

    def _find_hands_up(self, branch: Node) -> str | None:
        workflow = self.workflow
        members = list(_top_steps(branch))
        failing = [s for s in members if self._failing_step(s)]
        if len(failing) != 1 or any(isinstance(m, Par) for m in _items(branch)):
            return None
        (step_id,) = failing
        step = workflow.steps[step_id]
        simple = AgentStep | ToolStep | LlmRouter | HumanGateStep | SubWorkflowStep
        if not isinstance(step, simple) or step.fallback is not None:
            return None
        if (step.on_error or workflow.on_error) is not OnError.FAIL:
            return None
        reads = referenced_steps(templates_of(step)) | set(step.after)
        inside = set(steps_of(branch))
        if reads & inside or (ALL_STEPS in reads and inside != {step_id}):
            return None
        return step_id

    def _gate_kinds(self, node: Node) -> frozenset[GateKind]:
        """What the shared gate of the block `node` compiles into will serve, which names it
        (steps/failure.py); only its name depends on this."""
        if isinstance(node, Leaf):
            return self._step_gate_kinds(node.step)
        if isinstance(node, Seq):
            return frozenset().union(*(self._gate_kinds(item) for item in node.items))
        return frozenset()

    def _step_gate_kinds(self, step_id: str) -> frozenset[GateKind]:
        workflow = self.workflow
        step = workflow.steps[step_id]
        body = step.step if isinstance(step, LoopStep) else step
        kinds: set[GateKind] = set()
        if isinstance(body, AgentBody | ToolBody | LlmRouter):
            budget = workflow.budget
            if budget is None or budget.on_exceeded == "pause":
                kinds.add(GateKind.BUDGET)
            if can_need_human(body):
                kinds.add(GateKind.HUMAN)
        if step.fallback is not None:
            kinds |= self._step_gate_kinds(step.fallback)
        elif (step.on_error or workflow.on_error) is OnError.PAUSE and not isinstance(
            step, RuleRouter | ScoreRouter
        ):
            kinds.add(GateKind.PAUSE)
        return frozenset(kinds)

    def _failing_step(self, step_id: str) -> int:
        step = self.workflow.steps[step_id]
        own = 0 if isinstance(step, RuleRouter | ScoreRouter) else 1
        return own + (self._failing_step(step.fallback) if step.fallback else 0)

    def _step(
        self,
        step_id: str,
        block: Block,
        extra: set[str] | None = None,
        *,
        skipping: Skipping | None = None,
    ) -> Fragment:
        workflow = self.workflow
        step = workflow.steps[step_id]
        unit = Unit(workflow, step_id, block)
        limit = self.payloads.limit(step_id)
        if limit != LARGE_OUTPUT_BYTES:
            unit.output_limit = limit
        if extra:
            unit.extra_steps = extra
        on_error = step.on_error or workflow.on_error
        fallback = None
        if step.fallback is not None:
            fb_id = step.fallback
            fallback = Fallback(fb_id, lambda: self._step(fb_id, block, extra={step_id}))
        if isinstance(step, AgentStep) and step.continue_as_new is not None:
            body = agent_in_segments(
                unit, step, on_error=on_error, fallback=fallback, resumes=self.resumes
            )
        elif isinstance(step, AgentStep | ToolStep | LlmRouter):
            body = lambda_step(unit, step, on_error=on_error, fallback=fallback)
        elif isinstance(step, RuleRouter | ScoreRouter):
            body = rule_or_score_router(unit, step, skipping)
        elif isinstance(step, HumanGateStep):
            body = human_gate(unit, step, on_error=on_error, fallback=fallback)
        elif isinstance(step, SubWorkflowStep):
            body = sub_workflow(unit, step, on_error=on_error, fallback=fallback)
        elif isinstance(step, MapStep):
            body = map_step(
                unit, step, on_error=on_error, fallback=fallback, max_parallel=workflow.max_parallel
            )
        else:
            assert isinstance(step, LoopStep)
            body = loop_step(unit, step, on_error=on_error, fallback=fallback, resumes=self.resumes)
        return guarded(unit, body)

    # --- start and outputs -----------------------------------------------------------------

    def _start(self, block: Block) -> Fragment:
        workflow = self.workflow
        unit = Unit(workflow, "start", block)
        state: State = {
            "Type": "Task",
            "Comment": "checks the run's input against the workflow's inputs and fills defaults",
            "Resource": LAMBDA_INVOKE,
            "Parameters": {
                "FunctionName": function(FunctionName.RUN_START),
                "Payload": {
                    "workflow": unit.workflow_info(),
                    "inputs_schema": workflow.inputs,
                    "input.$": "$",
                    "execution_id.$": "$$.Execution.Id",
                    "execution_name.$": "$$.Execution.Name",
                    "start_time.$": "$$.Execution.StartTime",
                },
            },
            "ResultSelector": {
                "inputs.$": "$.Payload.inputs",
                "run.$": "$.Payload.run",
                "steps": {},
            },
            "ResultPath": "$",
            "Retry": [LAMBDA_SERVICE_RETRY],
        }
        if self.continuable:  # run_start hands a continued segment's state back
            state["Parameters"]["Payload"]["continuable"] = True
            state["ResultSelector"]["steps.$"] = "$.Payload.steps"
            del state["ResultSelector"]["steps"]
            state["ResultSelector"]["resume.$"] = "$.Payload.resume"
        return block.single("start", state)

    def _resume(self, block: Block, body: Fragment | None, outputs: Fragment) -> Fragment | None:
        """For a workflow whose loops (or agents) continue as new: a Choice after `start` that
        sends a continued segment straight to its loop's next iteration
        (steps/continue_as_new.py)."""
        if not self.resumes:
            return None
        rules = [
            {
                "And": [
                    {"Variable": f"{RESUME_PATH}.loop", "IsPresent": True},
                    {"Variable": f"{RESUME_PATH}.loop", "StringEquals": loop},
                ],
                "Next": state,
            }
            for loop, state in self.resumes.items()
        ]
        choice: State = {
            "Type": "Choice",
            "Comment": "a continued segment goes on at its loop; a new run starts at the top",
            "Choices": rules,
            "Default": (body or outputs).start,
        }
        return Fragment(block.add("resume?", choice), [])

    def _outputs(self, block: Block) -> Fragment:
        workflow = self.workflow
        if workflow.outputs is None:
            dependents = workflow.dependents()
            sinks = [s for s in workflow.steps if not dependents[s] and s not in self.fallback_only]
            state: State = {
                "Type": "Pass",
                "Comment": "the run's output: the outputs of the steps nothing depends on",
                "Parameters": {f"{s}.$": f"$.steps.{s}.output" for s in sinks},
            }
            return block.single("outputs", state)
        pure, parameters = parameters_for(workflow.outputs, workflow)
        if pure:
            return block.single(
                "outputs",
                {"Type": "Pass", "Comment": "the run's output", "Parameters": parameters},
            )
        unit = Unit(workflow, "outputs", block)
        from switchyard.compile.context import (
            context_parameters,
            referenced_steps,
            template_strings,
        )

        steps = referenced_steps(template_strings(workflow.outputs))
        render = render_task(
            workflow.outputs,
            context_parameters(steps, scope=False),
            step_id=None,
            result_path="$.rendered",
        )
        render["Comment"] = "renders the run's output from the workflow's outputs templates"
        render["OutputPath"] = "$.rendered.value"
        del unit
        return block.single("outputs", render)

    # --- notes -----------------------------------------------------------------------------

    def _history_note(self) -> None:
        events, assumptions = worst_case_events(self.workflow)
        if events <= WARN_AT:
            return
        assumed = f" ({'; '.join(assumptions)})" if assumptions else ""
        self._note(
            Code.HISTORY_LIMIT,
            ("steps",),
            f"a run could write up to {events:,} history events{assumed}; Step Functions stops an "
            f"execution at {LIMIT:,}. Lower max_iterations or map sizes, or move work into a "
            "sub-workflow (its events count separately)",
            severity=Severity.WARNING,
        )

    def _size_note(self, definition: dict[str, Any]) -> None:
        size = len(orjson.dumps(definition))  # minified UTF-8, as deployed
        if size <= MAX_DEFINITION_BYTES:
            return
        self._note(
            Code.DEFINITION_SIZE,
            ("steps",),
            f"the compiled state machine is {size // 1024:,} KiB; Step Functions accepts at most "
            f"{MAX_DEFINITION_BYTES // 1024:,} KiB. Move groups of steps into sub-workflows",
            severity=Severity.WARNING,
        )

    def _note(
        self,
        code: Code,
        path: tuple[str | int, ...],
        message: str,
        *,
        severity: Severity = Severity.NOTE,
    ) -> None:
        line = self.document.line_of(path) if self.document else 0
        file = self.document.file if self.document else "<workflow>"
        self.notes.append(Diagnostic(code, format_path(path), message, line, file, severity))


def _items(node: Node) -> tuple[Node, ...]:
    return (node,) if isinstance(node, Leaf) else node.items


def _top_steps(node: Node) -> list[str]:
    """The steps of a branch that are not inside a nested Parallel."""
    if isinstance(node, Leaf):
        return [node.step]
    if isinstance(node, Seq):
        return [s for item in node.items for s in _top_steps(item)]
    return []


def _first_step(node: Node) -> str:
    while not isinstance(node, Leaf):
        node = node.items[0]
    return node.step
