"""What happens when a step fails for good or must wait for an operator: one tail of states
shared by every step of a block (the machine's top level, a Parallel branch, a map's item).

A step's `Catch` writes Step Functions' `{Error, Cause}` where the step's record goes
(`$.steps.<id>`) and goes to `on error`, a Task on the render function's `caught` helper, which
finds that step, reads its error, writes its failed record and its dead letter, and says what
comes next in `$.error` (`step`, `action`). Then, in a block of several such steps, `after error`
(a Choice on `$.error.action` and `$.error.step`) dispatches: to a gate (`budget gate`, `needs a
human`, `paused`), which returns to `after error` and from there to the step that must run
again; to `dead letter`, after which the run fails (`fail`), goes on after the step, or runs its
fallback. A block with a single such step wires all of that directly, without `after error`.

ASL scoping keeps a tail inside its block: a state in a Parallel branch cannot go to a state
outside it, so each branch that needs one has its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from switchyard.compile.fragments import Block, Exit, Fragment, State, chain
from switchyard.compile.steps.gating import alive, may_be_dead
from switchyard.compile.steps.unit import (
    LAMBDA_CALLBACK,
    LAMBDA_INVOKE,
    LAMBDA_SERVICE_RETRY,
    SQS_SEND,
    Unit,
    function,
)
from switchyard.contract import DEAD_LETTER_QUEUE_URL, FunctionName, GateKind
from switchyard.contract.errors import ALL_ERRORS, StepErrorName
from switchyard.model import (
    HumanGateStep,
    LoopStep,
    MapStep,
    OnError,
    SubWorkflowBody,
    SubWorkflowStep,
)

ERROR_PATH = "$.error"
"""Where the tail keeps the error it read (`$.error.Error`, `.Cause`, `.step`, `.action`); a
scratch key, dropped when Parallel branches merge."""
SENT = f"{ERROR_PATH}.sent"
RESUMED = f"{ERROR_PATH}.resumed"

RUN_FAILS: State = {
    "Type": "Fail",
    "Comment": "a step failed for good and its on_error is fail: the run fails with its error",
    "ErrorPath": f"{ERROR_PATH}.Error",
    "CausePath": f"{ERROR_PATH}.Cause",
}


def catch(names: list[str], target: str) -> dict[str, Any]:
    return {"ErrorEquals": names, "ResultPath": ERROR_PATH, "Next": target}


def caught_into(unit: Unit, names: list[str], target: str) -> dict[str, Any]:
    """A `Catch` into the tail: the error goes where the step's record goes, which tells the
    tail which step failed."""
    return {"ErrorEquals": names, "ResultPath": unit.step_record, "Next": target}


def failure_entry(task: State) -> str:
    """The first state of the failure path that `task` (a step's Task compiled with an
    `on_error`) catches `States.ALL` into: its last catch, always."""
    rules = task.get("Catch") or []
    if not rules or rules[-1]["ErrorEquals"] != [ALL_ERRORS]:
        raise ValueError("the Task has no failure path")
    return str(rules[-1]["Next"])


@dataclass(frozen=True)
class Fallback:
    """The step that stands in when a step fails for good, compiled on demand in place."""

    step_id: str
    compile: Callable[[], Fragment]


def _rule(variable: str, value: str) -> dict[str, Any]:
    return {"Variable": variable, "StringEquals": value}


def _sent() -> dict[str, Any]:
    return {"Variable": SENT, "IsPresent": True}


@dataclass
class Tail:
    """The shared states of one block, made as its steps need them."""

    unit: Unit
    shared: bool
    table: dict[str, dict[str, Any]] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    resumes: list[dict[str, Any]] = field(default_factory=list)
    opens: list[dict[str, Any]] = field(default_factory=list)
    afters: list[dict[str, Any]] = field(default_factory=list)
    ends: list[dict[str, Any]] = field(default_factory=list)
    choice: State | None = None

    @property
    def block(self) -> Block:
        return self.unit.block

    # --- the states ------------------------------------------------------------------------

    def _state(self, key: str, make: Callable[[], State]) -> str:
        if key not in self.names:
            self.names[key] = self.block.add(key, make())
        return self.names[key]

    def on_error(self) -> str:
        return self._state("on error", self._read)

    def fail(self) -> str:
        return self._state("fail", lambda: dict(RUN_FAILS))

    def _read(self) -> State:
        workflow = self.unit.workflow
        state: State = {
            "Type": "Task",
            "Comment": "a step failed or must wait: finds which (its record holds the caught "
            "error), reads the error, records the failure and writes its dead letter",
            "Resource": LAMBDA_INVOKE,
            "Parameters": {
                "FunctionName": function(FunctionName.RENDER),
                "Payload": {
                    "helper": "caught",
                    "state.$": "$",
                    "workflow": {"name": workflow.name, "version": workflow.version},
                    "steps": self.table,
                },
            },
            "ResultPath": "$",
            "OutputPath": "$.Payload",
            "Retry": [LAMBDA_SERVICE_RETRY],
        }
        # No Catch: should the render function itself fail (after the Lambda service's retries),
        # the block fails with its error, which ends the run as the failure would have.
        if self.shared:
            state["Next"] = self._after()
        return state

    def _after(self) -> str:
        if "after error" in self.names:
            return self.names["after error"]
        self.choice = {
            "Type": "Choice",
            "Comment": "after a step failed or waited: back to the step a gate resumes, to the "
            "gate it needs, or after its dead letter to what its on_error says",
            "Choices": [],
        }
        self.names["after error"] = self.block.add("after error", self.choice)
        self.choice["Default"] = self.dead_letter()
        return self.names["after error"]

    def _order(self) -> None:
        if self.choice is not None:
            self.choice["Choices"] = [*self.resumes, *self.opens, *self.afters, *self.ends]

    def dead_letter(self) -> str:
        def make() -> State:
            return {
                "Type": "Task",
                "Comment": "the failed step's input goes to the dead-letter queue (a failed send "
                "does not stop the failure path)",
                "Resource": SQS_SEND,
                "Parameters": {
                    "QueueUrl": DEAD_LETTER_QUEUE_URL,
                    "MessageBody.$": f"{ERROR_PATH}.letter",
                },
                "ResultPath": SENT,
                "Retry": [{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1, "MaxAttempts": 2}],
                "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": SENT}],
            }

        name = self._state("dead letter", make)
        if self.shared:
            letter = self.block.states[name]
            letter["Next"] = letter["Catch"][0]["Next"] = self._after()
        return name

    def _gate(self, key: str, kind: GateKind, comment: str, resume: str | None) -> str:
        def make() -> State:
            payload: dict[str, Any] = {
                "kind": kind.value,
                "step_id.$": f"{ERROR_PATH}.step",
                "workflow": self.unit.workflow_info(budget=False),
                "context.$": f"{ERROR_PATH}.context",
                "error.$": f"{ERROR_PATH}.gate",
                "task_token.$": "$$.Task.Token",
                "execution_arn.$": "$$.Execution.Id",
            }
            state: State = {
                "Type": "Task",
                "Comment": comment,
                "Resource": LAMBDA_CALLBACK,
                "Parameters": {
                    "FunctionName": function(FunctionName.APPROVAL_NOTIFY),
                    "Payload": payload,
                },
                "ResultPath": RESUMED if self.shared else None,
            }
            state["Next"] = self._after() if self.shared else resume
            return state

        return self._state(key, make)

    def budget_gate(self, resume: str | None = None) -> str:
        return self._gate(
            "budget gate",
            GateKind.BUDGET,
            "a step did not fit the budget: the run is paused until an operator raises the "
            "budget and resumes (the step runs again), or cancels",
            resume,
        )

    def human_gate(self, resume: str | None = None) -> str:
        return self._gate(
            "needs a human",
            GateKind.HUMAN,
            "a step needs a person (a tool call to approve, a loop to judge, an unknown "
            "outcome); it runs again with the decision",
            resume,
        )

    def paused(self, resume: str | None = None) -> str:
        return self._gate(
            "paused",
            GateKind.PAUSE,
            "a step failed and its on_error is pause: resume runs it again, cancel ends the run",
            resume,
        )

    # --- the steps -------------------------------------------------------------------------

    def register(self, unit: Unit, **info: Any) -> None:
        """What `on error` must know of the step (the first registration of a step wins)."""
        entry = self.table.setdefault(unit.step_id, {})
        for key, value in info.items():
            entry.setdefault(key, value)
        if "reads" not in entry:
            context = unit.context(unit.step)
            if "steps.$" in context:
                entry["reads"] = ["*"]
            else:
                entry["reads"] = sorted(k.removesuffix(".$") for k in context.get("steps", {}))
            if unit.scope:
                entry["scope"] = True
            step = unit.step
            body = step.step if isinstance(step, LoopStep) else step
            if isinstance(step, MapStep) or isinstance(body, SubWorkflowBody | SubWorkflowStep):
                entry["parks"] = False
            if isinstance(step, HumanGateStep) and step.on_timeout in ("reject", "fail"):
                entry["on_timeout"] = step.on_timeout
            budget = unit.workflow.budget
            if budget is not None and budget.on_exceeded == "fail":
                entry["on_exceeded"] = "fail"

    def resume_to(self, unit: Unit, resume: str) -> None:
        """A gate returns to `resume` when it served this step."""
        if not self.shared:
            return
        self._after()
        step = unit.step_id
        if any(r["Next"] == resume for r in self.resumes):
            return
        self.resumes.append(
            {
                "And": [
                    _rule(f"{ERROR_PATH}.step", step),
                    {"Variable": RESUMED, "IsPresent": True},
                ],
                "Next": resume,
            }
        )
        self._order()

    def _open(self, action: str, target: str) -> None:
        if any(r["Next"] == target and r.get("Variable") for r in self.opens):
            return
        self.opens.append({**_rule(f"{ERROR_PATH}.action", action), "Next": target})
        self._order()

    def park_catches(self, unit: Unit, resume: str, *, can_need_human: bool) -> list[Any]:
        """Catches that park the run for a person: a refused budget, a step needing a human."""
        names = [StepErrorName.BUDGET.value]
        if can_need_human:
            names.append(StepErrorName.HUMAN_REQUIRED.value)
        self.register(unit)
        budget = unit.workflow.budget
        pauses = budget is None or budget.on_exceeded == "pause"
        if self.shared:
            self.resume_to(unit, resume)
            if pauses:
                self._open("budget", self.budget_gate())
            else:
                self._open("stop", self.fail())
            if can_need_human:
                self._open("human", self.human_gate())
            return [caught_into(unit, names, self.on_error())]
        parks = self._literal_gate(unit, "budget", resume) if pauses else self.fail()
        catches = [catch([StepErrorName.BUDGET.value], parks)]
        if can_need_human:
            catches.append(
                catch(
                    [StepErrorName.HUMAN_REQUIRED.value], self._literal_gate(unit, "human", resume)
                )
            )
        return catches

    def _literal_gate(self, unit: Unit, which: str, resume: str) -> str:
        """In a block with one such step, a gate that names it (the error as caught)."""
        key = "budget gate" if which == "budget" else "needs a human"
        kind = GateKind.BUDGET if which == "budget" else GateKind.HUMAN
        comment = (
            f"'{unit.step_id}' did not fit the budget: the run is paused until an operator "
            "raises the budget and resumes, or cancels"
            if which == "budget"
            else f"'{unit.step_id}' needs a person (a tool call to approve, a loop to judge, an "
            "unknown outcome); it runs again with the decision"
        )

        def make() -> State:
            context: dict[str, Any] = {"run.$": "$.run"}
            if unit.scope:
                context["scope.$"] = "$.scope"
            return {
                "Type": "Task",
                "Comment": comment,
                "Resource": LAMBDA_CALLBACK,
                "Parameters": {
                    "FunctionName": function(FunctionName.APPROVAL_NOTIFY),
                    "Payload": {
                        "kind": kind.value,
                        "step_id": unit.step_id,
                        "workflow": unit.workflow_info(budget=False),
                        "context": context,
                        "error.$": ERROR_PATH,
                        "task_token.$": "$$.Task.Token",
                        "execution_arn.$": "$$.Execution.Id",
                    },
                },
                "ResultPath": None,
                "Next": resume,
            }

        return self._state(key, make)

    def failure(
        self, unit: Unit, *, resume: str, on_error: OnError, fallback: Fallback | None
    ) -> Fragment:
        """The step's failure path: its entry is `on error`; its exits go on with the
        workflow (after `continue`, or the fallback)."""
        action = "fallback" if fallback is not None else on_error.value
        self.register(unit, on_error=on_error.value, fallback=fallback is not None)
        entry = self.on_error()
        exits: list[Exit] = []
        if self.shared:
            self._after()
            after = self.choice
            assert after is not None
            if on_error is OnError.PAUSE or action == "pause":
                self.resume_to(unit, resume)
            if action == "pause":
                pausing = [_rule(f"{ERROR_PATH}.action", "pause"), _sent()]
                if not any(r.get("And") == pausing for r in self.afters):
                    self.afters.append({"And": pausing, "Next": self.paused()})
            elif action == "fail":
                if not self.ends:
                    self.ends.append({**_sent(), "Next": self.fail()})
            else:
                rule: dict[str, Any] = {"And": [_rule(f"{ERROR_PATH}.step", unit.step_id), _sent()]}
                self.afters.append(rule)
                if action == "continue":
                    exits.append(Exit(after, rule=rule))
                else:
                    assert fallback is not None
                    rule["Next"] = ""
                    exits += self._fallback(unit, fallback, Exit(after, rule=rule))
            self._order()
            return Fragment(entry, exits)
        letter_name = self.dead_letter()
        self.block.states[entry]["Next"] = letter_name
        letter = self.block.states[letter_name]
        leave = [Exit(letter), Exit(letter, rule=letter["Catch"][0])]
        if action == "continue":
            return Fragment(entry, leave)
        if action == "fallback":
            assert fallback is not None
            return Fragment(entry, self._fallback(unit, fallback, *leave))
        target = self.paused(resume) if action == "pause" else self.fail()
        for exit_ in leave:
            exit_.wire(target)
        return Fragment(entry, [])

    def _fallback(self, unit: Unit, fallback: Fallback, *into: Exit) -> list[Exit]:
        """The fallback step's states, then the failed step's record with its output."""
        block = self.block
        compiled = fallback.compile()
        for exit_ in into:
            exit_.wire(compiled.start)
        fallback_id = fallback.step_id
        rescued: State = {
            "Type": "Pass",
            "Comment": f"the output of '{fallback_id}' stands in for '{unit.step_id}'",
            "Parameters": {
                "status": "failed",
                "error.$": f"{unit.step_record}.error",
                "output.$": f"$.steps.{fallback_id}.output",
                "fallback": fallback_id,
            },
            "ResultPath": unit.step_record,
        }
        rescued_name = block.add(unit.name("rescued"), rescued)
        if not may_be_dead(unit.workflow, fallback_id):
            joined = chain(compiled, Fragment(rescued_name, [Exit(rescued)]))
            assert joined is not None
            return joined.exits
        stand_in = Unit(unit.workflow, fallback_id, block)
        decide: State = {
            "Type": "Choice",
            "Comment": f"did '{fallback_id}' stand in for '{unit.step_id}'?",
            "Choices": [{**alive(stand_in, fallback_id), "Next": rescued_name}],
        }
        decide_name = block.add(unit.name("fallback done"), decide)
        joined = chain(compiled, Fragment(decide_name, [Exit(rescued), Exit(decide, default=True)]))
        assert joined is not None
        return joined.exits


def tail_of(unit: Unit) -> Tail:
    """The tail of the block `unit` compiles into."""
    block = unit.block
    if block.tail is None:
        block.tail = Tail(Unit(unit.workflow, unit.step_id, block), shared=block.failing_steps > 1)
    assert isinstance(block.tail, Tail)
    return block.tail


def failure_path(
    unit: Unit, *, resume: str, on_error: OnError, fallback: Fallback | None = None
) -> Fragment:
    """Everything after a step's last failed attempt; its exits continue the workflow."""
    return tail_of(unit).failure(unit, resume=resume, on_error=on_error, fallback=fallback)


def budget_and_human_catches(
    unit: Unit, resume: str, *, can_need_human: bool
) -> list[dict[str, Any]]:
    """Catch rules that park the run for a person: a refused budget, and (when the step can
    raise it) a step needing a human."""
    return tail_of(unit).park_catches(unit, resume, can_need_human=can_need_human)


def into_tail(catches: list[dict[str, Any]], unit: Unit, entry: str) -> list[dict[str, Any]]:
    """`catches` whose target is the tail's `on error` write the error where the step's record
    goes, which is how the tail tells which step failed."""
    for rule in catches:
        if rule["Next"] == entry:
            rule["ResultPath"] = unit.step_record
    return catches


def out_of_retries(unit: Unit, entry: str) -> str:
    """A linear wait loop's last caught error (in `$.error`) handed to the tail."""
    state: State = {
        "Type": "Pass",
        "Comment": f"'{unit.step_id}' has no retries left: its last error goes to the tail",
        "Parameters": {"Error.$": f"{ERROR_PATH}.Error", "Cause.$": f"{ERROR_PATH}.Cause"},
        "ResultPath": unit.step_record,
        "Next": entry,
    }
    return unit.block.add(unit.name("out of retries"), state)


def compact(catches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`catches` without the rules a later `States.ALL` rule makes redundant (same target, same
    ResultPath, and no rule in between that catches any of their errors)."""
    kept: list[dict[str, Any]] = []
    for index, rule in enumerate(catches):
        later = catches[index + 1 :]
        names = set(rule["ErrorEquals"])
        redundant = False
        for other in later:
            same = other["Next"] == rule["Next"] and other.get("ResultPath") == rule.get(
                "ResultPath"
            )
            if other["ErrorEquals"] == [ALL_ERRORS] and same:
                redundant = ALL_ERRORS not in names
                break
            if names & set(other["ErrorEquals"]) or ALL_ERRORS in other["ErrorEquals"]:
                break
        if not redundant:
            kept.append(rule)
    return kept
