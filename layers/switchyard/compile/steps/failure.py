"""What happens when a step fails for good or must wait for an operator: one tail of states
shared by every step of a block (the machine's top level, a Parallel branch, a map's item).

A step's `Catch` writes Step Functions' `{Error, Cause}` where the step's record goes
(`$.steps.<id>`) and goes to `on error`, a Task on the render function's `caught` helper, which
finds that step, reads its error, writes its failed record and its dead letter, and says what
comes next in `$.error` (`step`, `action`). Then, in a block of several such steps, `after error`
(a Choice on `$.error.action` and `$.error.step`) dispatches: to the block's one gate (`budget
gate`, `needs a human` or `paused` when it serves one kind, `operator gate` when it serves
several), which returns to `after error` and from there to the step that must run again; to
`dead letter`, after which the run fails (`fail`), goes on after the step, or runs its fallback.
A block with a single such step wires all of that directly, without `after error`.

ASL scoping keeps a tail inside its block: a state in a Parallel branch cannot go to a state
outside it. So a branch whose one such step fails the run (`on_error: fail`) hands its failure
out instead: a `Fail` raises an error naming the step, the Parallel's `Catch` takes it to the
tail outside, and the branch keeps only the gate its step may wait in (`_hand_up`). Any other
branch that needs a tail has its own.
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
from switchyard.contract.errors import ALL_ERRORS, StepErrorName, branch_failure
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

GATE_NAMES = {
    GateKind.BUDGET: "budget gate",
    GateKind.HUMAN: "needs a human",
    GateKind.PAUSE: "paused",
}
OPERATOR_GATE = "operator gate"
"""A block has one gate: named after the one kind it serves, or this when it serves several."""
WAITS_WHEN = {
    GateKind.BUDGET: "it does not fit the budget (raise the budget, then resume)",
    GateKind.HUMAN: "it needs a decision (a tool call to approve, a loop to judge, an unknown "
    "outcome)",
    GateKind.PAUSE: "it failed and its on_error is pause",
}


def gate_comment(kinds: list[GateKind], who: str = "a step") -> str:
    reasons = " or when ".join(WAITS_WHEN[kind] for kind in kinds)
    return (
        f"{who} waits for a person when {reasons}; it runs again when resumed, and cancelling "
        "ends the run"
    )


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
    gate_kinds: list[GateKind] = field(default_factory=list)
    """What the block's one gate serves (budget, human, pause), in the order steps needed it."""

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
        if self.choice is None:
            return
        rules = [*self.resumes, *self.opens, *self.afters]
        # When every step of the block fails the run after its dead letter (no pause, continue
        # or fallback), the dead letter goes straight to `fail`: one transition less on every
        # failure, and `after error` only dispatches to and from the gate.
        straight = bool(rules) and not self.afters and bool(self.ends)
        self.choice["Choices"] = rules if straight else [*rules, *self.ends]
        letter = self.block.states.get(self.names.get("dead letter", ""))
        if letter is not None:
            after = self.fail() if straight else self.names["after error"]
            letter["Next"] = letter["Catch"][0]["Next"] = after

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

    def _gate_state(self, payload: dict[str, Any], comment: str, next_: str | None) -> State:
        return {
            "Type": "Task",
            "Comment": comment,
            "Resource": LAMBDA_CALLBACK,
            "Parameters": {
                "FunctionName": function(FunctionName.APPROVAL_NOTIFY),
                "Payload": {
                    **payload,
                    "workflow": self.unit.workflow_info(budget=False),
                    "task_token.$": "$$.Task.Token",
                    "execution_arn.$": "$$.Execution.Id",
                },
            },
            "ResultPath": RESUMED if self.shared else None,
            "Next": next_,
        }

    def _caught_payload(self, kind: GateKind) -> dict[str, Any]:
        """A gate's payload after `on error`: the step, its context and its error as read."""
        return {
            "kind": kind.value,
            "step_id.$": f"{ERROR_PATH}.step",
            "context.$": f"{ERROR_PATH}.context",
            "error.$": f"{ERROR_PATH}.gate",
        }

    def shared_gate(self, kind: GateKind) -> str:
        """The block's one gate, serving `kind` too. Serving several kinds, it reads the kind
        from the state (`$.error.action` is the kind's name) and is named `operator gate`."""
        if kind not in self.gate_kinds:
            self.gate_kinds.append(kind)
        expected = set(self.block.gate_kinds) | set(self.gate_kinds)
        name = self.names.get("gate")
        if name is None:
            payload = self._caught_payload(kind)
            hint = GATE_NAMES[kind]
            if len(expected) > 1:
                del payload["kind"]
                payload = {"kind.$": f"{ERROR_PATH}.action", **payload}
                hint = OPERATOR_GATE
            state = self._gate_state(payload, gate_comment(self._ordered(expected)), self._after())
            self.names["gate"] = self.block.add(hint, state)
            return self.names["gate"]
        state = self.block.states[name]
        state["Comment"] = gate_comment(self._ordered(expected))
        payload = state["Parameters"]["Payload"]
        if len(expected) > 1 and "kind" in payload:  # not foreseen: named again
            del payload["kind"]
            state["Parameters"]["Payload"] = {"kind.$": f"{ERROR_PATH}.action", **payload}
            renamed = self.block.rename(name, OPERATOR_GATE)
            for rule in [*self.opens, *self.afters]:
                if rule.get("Next") == name:
                    rule["Next"] = renamed
            self.names["gate"] = renamed
        return self.names["gate"]

    @staticmethod
    def _ordered(kinds: set[GateKind]) -> list[GateKind]:
        return [kind for kind in GATE_NAMES if kind in kinds]

    def _paused_alone(self, resume: str) -> str:
        """In a block with one step that can fail, its `on_error: pause` gate (after `on
        error` and the dead letter), going straight back to it."""
        kind = GateKind.PAUSE
        return self._state(
            "paused",
            lambda: self._gate_state(self._caught_payload(kind), gate_comment([kind]), resume),
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
        """`$.error.action` = `action` goes to `target`: one rule per target (an `Or` of the
        actions that go there)."""
        wanted = _rule(f"{ERROR_PATH}.action", action)
        for index, rule in enumerate(self.opens):
            if rule["Next"] != target:
                continue
            tests = rule.get("Or") or [{k: v for k, v in rule.items() if k != "Next"}]
            if wanted not in tests:
                self.opens[index] = {"Or": [*tests, wanted], "Next": target}
                self._order()
            return
        self.opens.append({**wanted, "Next": target})
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
                self._open("budget", self.shared_gate(GateKind.BUDGET))
            else:
                self._open("stop", self.fail())
            if can_need_human:
                self._open("human", self.shared_gate(GateKind.HUMAN))
            return [caught_into(unit, names, self.on_error())]
        kinds = [GateKind.BUDGET] if pauses else []
        if can_need_human:
            kinds.append(GateKind.HUMAN)
        if not kinds:
            return [catch(names, self.fail())]
        gate = self._literal_gate(unit, kinds, resume)
        if pauses:
            return [catch(names, gate)]
        return [catch([StepErrorName.BUDGET.value], self.fail()), catch(names[1:], gate)]

    def _literal_gate(self, unit: Unit, kinds: list[GateKind], resume: str) -> str:
        """In a block with one such step, its gate, which names it and takes the error as
        caught; serving both a budget and a human, it reads the kind from the error's name
        (`budget`, `human_required`: GateRequest reads either)."""
        context: dict[str, Any] = {"run.$": "$.run"}
        if unit.scope:
            context["scope.$"] = "$.scope"
        kind: dict[str, Any] = (
            {"kind": kinds[0].value} if len(kinds) == 1 else {"kind.$": f"{ERROR_PATH}.Error"}
        )
        payload = {**kind, "step_id": unit.step_id, "context": context, "error.$": ERROR_PATH}
        comment = gate_comment(kinds, f"'{unit.step_id}'")
        return self._state(
            GATE_NAMES[kinds[0]] if len(kinds) == 1 else OPERATOR_GATE,
            lambda: self._gate_state(payload, comment, resume),
        )

    def failure(
        self, unit: Unit, *, resume: str, on_error: OnError, fallback: Fallback | None
    ) -> Fragment:
        """The step's failure path: its entry is `on error`; its exits go on with the
        workflow (after `continue`, or the fallback)."""
        if self.block.hands_up == unit.step_id:
            return self._hand_up(unit, on_error)
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
                    self.afters.append({"And": pausing, "Next": self.shared_gate(GateKind.PAUSE)})
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
        target = self._paused_alone(resume) if action == "pause" else self.fail()
        for exit_ in leave:
            exit_.wire(target)
        return Fragment(entry, [])

    def _hand_up(self, unit: Unit, on_error: OnError) -> Fragment:
        """The failure of the one step of a Parallel branch that can fail, with `on_error:
        fail`: a `Fail` that fails the branch, and so the Parallel, with an error naming the
        step; the Parallel's `Catch` writes it where the step's record goes and goes to the
        tail outside, which reads it as the step's own (contract.errors.BRANCH_FAILED). The
        branch needs no tail of its own, and the run fails as it would have: the step's dead
        letter is sent, the other branches are stopped."""
        if "handed up" in self.names:
            return Fragment(self.names["handed up"], [])
        parent = self.block.parent
        assert parent is not None and not unit.scope
        record = unit.step_record
        fails: State = {
            "Type": "Fail",
            "Comment": f"'{unit.step_id}' failed: the branch fails, and the failure tail outside "
            "it records the failure, sends the dead letter and fails the run",
            "Error": branch_failure(unit.step_id),
            "CausePath": f"States.JsonToString({record})",
        }
        name = self.names["handed up"] = self.block.add(unit.name("failed"), fails)
        outside = Unit(unit.workflow, unit.step_id, parent)
        outside.extra_steps = set(unit.extra_steps)
        tail = tail_of(outside)
        tail.register(outside, parks=False)  # its gates stay in the branch
        entry = tail.failure(outside, resume="", on_error=on_error, fallback=None)
        handed = caught_into(outside, [branch_failure(unit.step_id)], entry.start)
        self.block.handed_up.append(handed)
        return Fragment(name, [])

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
