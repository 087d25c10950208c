"""The longest remaining path of a task: how many Tasks, at most, its run still has to run in a row
from it, read from the machine.

When a run has more ready tasks than it gets workers (a fan-out capped by `max_parallel`, the
engine's workers, a function's concurrency), the one with the longest path after it goes first:
the run's critical path starts early, and the short branches fill in around it, so the run ends
sooner (the longest-path-first rule of list scheduling).

The length counts Task states (each one is a dispatch, the unit the queue orders). From a state:
its own weight (1 for a Task; for a Parallel its longest branch; for a Map its item processor,
one item), plus the longest of what may follow it (`Next`, a Choice's branches and default; a
`Catch` is a failure's path, not counted). A branch or an item processor adds what follows the
Parallel or Map state it belongs to, up to the top of the machine. A loop (a Choice back to an
earlier state) is counted once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator

from switchyard.engine.asl import ChoiceState, Map, Parallel, State, StateMachine, Task
from switchyard.engine.asl.states import Transitioning

ProgramRef = tuple[tuple[str, int], ...]
"""Where a sub-machine lives (interpreter/model.py): (("Fork", 1),) is Parallel "Fork"'s second
branch, (("Each", -1),) Map "Each"'s item processor."""
MACHINES_REMEMBERED = 256


def _following(state: State) -> Iterator[str]:
    if isinstance(state, ChoiceState):
        yield from (choice.next for choice in state.choices)
        if state.default is not None:
            yield state.default
    elif isinstance(state, Transitioning) and state.next is not None and not state.end:
        yield state.next


class _Block:
    """Longest remaining paths within one (sub-)machine, all worked out at once.

    A depth-first walk from `StartAt` (then from any state it does not reach, in definition
    order) finds the edges that close a loop and drops them; what is left is acyclic, and the
    walk's post-order has every state after the states that follow it, so one pass over it gives
    each its longest path. Iterative: a compiled workflow may chain a thousand states.
    """

    def __init__(self, machine: StateMachine, paths: MachinePaths) -> None:
        self.machine = machine
        self._paths = paths
        self._from: dict[str, int] | None = None

    def weight(self, name: str) -> int:
        state = self.machine.states[name]
        if isinstance(state, Task):
            return 1
        if isinstance(state, Parallel):
            return max(
                (self._paths.block(b).from_state(b.start_at) for b in state.branches), default=0
            )
        if isinstance(state, Map):
            processor = state.item_processor
            return self._paths.block(processor).from_state(processor.start_at)
        return 0

    def from_state(self, name: str) -> int:
        """The longest path from `name` (itself included) to the end of this block."""
        if self._from is None:
            self._from = self._lengths()
        return self._from.get(name, 0)

    def _lengths(self) -> dict[str, int]:
        states = self.machine.states
        nexts = {n: [t for t in _following(s) if t in states] for n, s in states.items()}
        done: set[str] = set()
        lengths: dict[str, int] = {}
        for root in [self.machine.start_at, *states]:
            if root in done or root not in states:
                continue
            on_path = {root}
            stack = [(root, iter(nexts[root]))]
            while stack:
                name, pending = stack[-1]
                following = next(pending, None)
                if following is None:  # every state after it is done: post-order
                    stack.pop()
                    on_path.discard(name)
                    done.add(name)
                    forward = [lengths[t] for t in nexts[name] if t in lengths]
                    lengths[name] = self.weight(name) + max(forward, default=0)
                elif following not in done and following not in on_path:
                    on_path.add(following)
                    stack.append((following, iter(nexts[following])))
                # a state on the path is a loop back: that edge is not followed
        return lengths


class MachinePaths:
    """The longest remaining paths of one machine's states, computed as they are asked for."""

    def __init__(self, machine: StateMachine) -> None:
        self.machine = machine
        self._blocks: dict[int, _Block] = {}

    def block(self, machine: StateMachine) -> _Block:
        found = self._blocks.get(id(machine))
        if found is None:
            found = self._blocks[id(machine)] = _Block(machine, self)
        return found

    def remaining(self, program: ProgramRef, state: str) -> int:
        """The longest path from `state` of the sub-machine at `program` to the machine's end."""
        machine = self.machine
        length = 0
        for name, branch in program:  # what follows each enclosing Parallel or Map state
            outer = self.block(machine)
            length += outer.from_state(name) - outer.weight(name)
            enclosing = machine.states[name]
            if isinstance(enclosing, Map) and branch < 0:
                machine = enclosing.item_processor
            elif isinstance(enclosing, Parallel) and 0 <= branch < len(enclosing.branches):
                machine = enclosing.branches[branch]
            else:
                return length  # not a program of this machine: no preference
        return length + self.block(machine).from_state(state)


class RemainingPaths:
    """`MachinePaths` of the machines lately dispatched from (the engine keeps few machines)."""

    def __init__(self, *, size: int = MACHINES_REMEMBERED) -> None:
        self._size = size
        self._machines: OrderedDict[int, MachinePaths] = OrderedDict()
        self._lock = threading.Lock()

    def remaining(self, machine: StateMachine, program: ProgramRef, state: str) -> int:
        with self._lock:
            paths = self._machines.get(id(machine))
            if paths is None or paths.machine is not machine:
                paths = self._machines[id(machine)] = MachinePaths(machine)
                while len(self._machines) > self._size:
                    self._machines.popitem(last=False)
            self._machines.move_to_end(id(machine))
            return paths.remaining(program, state)
