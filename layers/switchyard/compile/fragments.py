"""Building blocks for emitting states: a block of named states and fragments that chain.

A fragment is a piece of the machine with one entry state and the exits where control leaves it
(a state's `Next`, or a branch of a Choice). Fragments chain by wiring every exit of one to the
entry of the next; at the end of a Parallel branch the exits become `End`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

State = dict[str, Any]
MAX_STATE_NAME = 80
Status = Literal["completed", "skipped"]
Decision = Literal["run", "skip"]


class Names:
    """State names, unique across the whole machine (as Step Functions requires)."""

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._next: dict[str, int] = {}
        """Per hint, the counter to try next: every smaller one is taken (names are never
        given back), so a hint used by every block (`fail`) is not counted up from 2 each time."""

    def claim(self, hint: str) -> str:
        name = _fit(hint)
        if name in self._used:
            counter = self._next.get(hint, 2)
            name = _fit(f"{hint} ({counter})")
            while name in self._used:
                counter += 1
                name = _fit(f"{hint} ({counter})")
            self._next[hint] = counter + 1
        self._used.add(name)
        return name


def _fit(name: str) -> str:
    if len(name) <= MAX_STATE_NAME:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:6]
    return f"{name[: MAX_STATE_NAME - 8]}..{digest}"


@dataclass
class Exit:
    """Where control leaves a fragment."""

    state: State
    rule: State | None = None
    """A Choice rule whose `Next` this exit sets."""
    default: bool = False
    """The `Default` of a Choice state."""
    routed: bool = False
    """A rule or score router's exit, after the Pass that records `route`."""
    route: str | None = None
    """That route: the step the router chose (None: no step)."""
    step: str | None = None
    status: Status | None = None
    """What control leaving here knows for sure: `step`'s record says `status` (a step's Task,
    gate tier or last state when it completed; its skip Pass)."""
    skipped_ahead: frozenset[str] = frozenset()
    """Steps further on in the same sequence whose records already say `skipped` (a route Pass
    wrote them): control goes around their states."""

    def wire(self, target: str) -> None:
        if self.rule is not None:
            self.rule["Next"] = target
        elif self.default:
            self.state["Default"] = target
        else:
            self.state.pop("End", None)
            self.state["Next"] = target

    @property
    def can_end(self) -> bool:
        """Only non-Choice states may end a branch."""
        return self.rule is None and not self.default


@dataclass
class Fragment:
    start: str
    exits: list[Exit] = field(default_factory=list)
    router: str | None = None
    """The rule or score router whose route exits `exits` are."""
    chosen_by: Choosing | None = None
    """The fragment's check, which what an exit knows may decide before it."""
    step: str | None = None
    """The one DAG step the fragment is, which an exit may go around (`Exit.skipped_ahead`)."""


@dataclass
class Choosing:
    """A step's check, and how to go around it. Right after `router` (when its choice alone
    decides the step), the router's route Passes go straight to the step (`run`) or its skip,
    and the check is dropped (`removable`). After a step whose exit says how it ended, `decide`
    may know the answer too (a dependency completed: the step runs; its one dependency was
    skipped: it is skipped); the exits it decides go around the check, which stays for the
    others."""

    router: str | None
    step: str
    run: str
    skip: str
    check: str
    block: Block
    decide: Callable[[Exit], Decision | None] = lambda exit_: None
    removable: bool = False
    """The check may be dropped when no exit needs it (its step's Task names its `after`)."""


@dataclass
class Block:
    """One `States` map: the machine's top level, a Parallel branch or a Map item processor."""

    names: Names
    states: dict[str, State] = field(default_factory=dict)
    failing_steps: int = 0
    """How many steps of this block can fail or wait for an operator: with more than one, they
    share one tail that dispatches on the step (steps/failure.py)."""
    tail: Any = None
    """That tail, made when the first step needs it."""
    gate_kinds: frozenset[Any] = frozenset()
    """What the tail's one gate will serve (GateKind), known before the steps are compiled so
    that the gate is named once."""
    parent: Block | None = None
    """The block a Parallel branch's states run in (None for the top level, a map's item)."""
    hands_up: str | None = None
    """A Parallel branch whose one step that can fail hands its failure to the parent's tail
    (steps/failure.py): that step."""
    handed_up: list[State] = field(default_factory=list)
    """The `Catch` rules the Parallel needs for it."""

    def add(self, hint: str, state: State) -> str:
        name = self.names.claim(hint)
        self.states[name] = state
        return name

    def child(self, failing_steps: int = 0, *, branch: bool = False) -> Block:
        """A block inside this one: a Parallel branch (`branch`), or a map's item processor."""
        return Block(self.names, failing_steps=failing_steps, parent=self if branch else None)

    def shared(self, hint: str, state: State) -> str:
        """One state of this block that many fragments go to (e.g. the run's Fail)."""
        for name, existing in self.states.items():
            if existing == state and name.startswith(hint):
                return name
        return self.add(hint, state)

    def rename(self, name: str, hint: str) -> str:
        """Give the state `name` a new name, in the same place; the caller rewires whatever
        goes to it."""
        new = self.names.claim(hint)
        self.states = {new if key == name else key: state for key, state in self.states.items()}
        return new

    def single(self, hint: str, state: State) -> Fragment:
        """A one-state fragment whose exit is the state's own Next."""
        name = self.add(hint, state)
        return Fragment(name, [Exit(state)])

    def as_definition(self, start: str) -> dict[str, Any]:
        return {"StartAt": start, "States": self.states}


def chain(*fragments: Fragment | None) -> Fragment | None:
    """Fragments one after another. An exit goes to the next fragment, or past those whose
    step it knows to be recorded as skipped already (`Exit.skipped_ahead`), and around that
    one's check where it knows the answer (`Choosing`). What every way into a fragment knows
    to be skipped ahead, its exits know too."""
    present = [f for f in fragments if f is not None]
    if not present:
        return None
    incoming: list[list[tuple[Fragment, Exit]]] = [[] for _ in present]
    leaving: list[Exit] = []
    for index, current in enumerate(present):
        if index:
            known = _enter(current, incoming[index])
            for exit_ in current.exits:
                exit_.skipped_ahead |= known
        for exit_ in current.exits:
            target = index + 1
            while target < len(present) and present[target].step in exit_.skipped_ahead:
                target += 1
            if target < len(present):
                incoming[target].append((current, exit_))
            else:
                leaving.append(exit_)
    return Fragment(present[0].start, leaving)


def _enter(following: Fragment, ways_in: list[tuple[Fragment, Exit]]) -> frozenset[str]:
    """Wire the ways into `following`; returns the steps every one of them knows to be skipped
    ahead."""
    known = (
        frozenset.intersection(*(exit_.skipped_ahead for _, exit_ in ways_in))
        if ways_in
        else frozenset()
    )
    guard = following.chosen_by
    if guard is None:
        for _, exit_ in ways_in:
            exit_.wire(following.start)
        return known
    targets = [_around(guard, current, exit_) for current, exit_ in ways_in]
    if following.start not in targets and not guard.removable:
        targets = [following.start] * len(targets)  # the check must stay reachable
    for (_, exit_), target in zip(ways_in, targets, strict=True):
        exit_.wire(target)
    if following.start not in targets:
        del guard.block.states[guard.check]
        if guard.skip not in targets:  # nothing skips the step any more
            del guard.block.states[guard.skip]
            skipped = (guard.step, "skipped")
            following.exits[:] = [e for e in following.exits if (e.step, e.status) != skipped]
    return known


def _around(guard: Choosing, current: Fragment, exit_: Exit) -> str:
    """Where `exit_` goes: the check of the following step, or around it when the exit already
    knows the answer."""
    if exit_.routed and guard.router is not None and current.router == guard.router:
        return guard.run if exit_.route == guard.step else guard.skip
    if exit_.step is not None and exit_.status is not None:
        decision = guard.decide(exit_)
        if decision is not None:
            return guard.run if decision == "run" else guard.skip
    return guard.check


def close(fragment: Fragment, block: Block, *, output_path: str | None = None) -> None:
    """End every exit of `fragment`: the end of a branch, an item processor or the machine."""
    terminal: str | None = None
    for exit_ in fragment.exits:
        if exit_.can_end:
            exit_.state.pop("Next", None)
            exit_.state["End"] = True
            if output_path is not None:
                exit_.state["OutputPath"] = output_path
            continue
        if terminal is None:  # a Choice cannot end a branch: send it to a last Pass
            ending: State = {"Type": "Pass", "Comment": "the end of this branch", "End": True}
            if output_path is not None:
                ending["OutputPath"] = output_path
            terminal = block.add("end", ending)
        exit_.wire(terminal)
