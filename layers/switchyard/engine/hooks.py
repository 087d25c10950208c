"""Hooks: what a program built on the engine adds to it without the engine knowing of it.

The engine runs state machines and keeps its own tables; switchyard keeps its run records beside
them and answers agent steps from a run's model script. Both come in through these hooks, in the
spirit of Temporal's interceptors: each call takes one typed `*Input`, and `HookChain` runs
several in order. Wired in where the local stack is assembled (`switchyard.local.stack`).

The `on_*` calls that carry `conn` run on the coordinator's connection, inside the transaction
that commits the transition: what they write commits with it or not at all. They must not
commit, and should cost no query the transition does not need (they are on the hot path).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import psycopg

from switchyard.engine.interpreter import Execution, TaskRequest, Transition

Connection = psycopg.Connection[Any]


@dataclass(frozen=True)
class TransitionInput:
    conn: Connection
    transition: Transition
    started: bool
    """The transition starts its execution (the execution's parent, if any, is its caller)."""


@dataclass(frozen=True)
class TaskResultInput:
    """A task's result was applied: a function returned or failed, or a task token answered."""

    conn: Connection
    execution: Execution
    request: TaskRequest
    ok: bool
    value: Any
    error: str | None = None
    cause: str | None = None
    answered: bool = False
    """Through the task-token API (SendTaskSuccess/SendTaskFailure), not by a function."""
    late: bool = False
    """The task's frame had been cancelled: the result changes nothing, but it was spent."""


@dataclass(frozen=True)
class EndedInput:
    """A task of an execution that has ended answered (before the result is looked at)."""

    conn: Connection
    execution: Execution


@dataclass(frozen=True)
class RedriveInput:
    conn: Connection
    execution: Execution


@dataclass(frozen=True)
class RecoverInput:
    """The engine took the database over and is about to re-dispatch the unfinished tasks."""

    conn: Connection


@dataclass(frozen=True)
class PayloadInput:
    """What a Lambda task is about to be sent (after commit, on the coordinator thread)."""

    execution: Execution
    function: str
    """The function's name in the registry."""
    payload: Any


class EngineHooks(Protocol):
    def on_transition(self, input: TransitionInput) -> None: ...

    def on_task_result(self, input: TaskResultInput) -> None: ...

    def on_ended_answered(self, input: EndedInput) -> None: ...

    def on_redrive(self, input: RedriveInput) -> None: ...

    def on_recover(self, input: RecoverInput) -> None: ...

    def task_payload(self, input: PayloadInput) -> Any:
        """The payload to send instead (return `input.payload` to change nothing)."""
        ...


class NoHooks:
    """Hooks that do nothing: the engine alone. Subclass it to implement only some."""

    def on_transition(self, input: TransitionInput) -> None:
        return None

    def on_task_result(self, input: TaskResultInput) -> None:
        return None

    def on_ended_answered(self, input: EndedInput) -> None:
        return None

    def on_redrive(self, input: RedriveInput) -> None:
        return None

    def on_recover(self, input: RecoverInput) -> None:
        return None

    def task_payload(self, input: PayloadInput) -> Any:
        return input.payload


class HookChain:
    """Several hooks, called in order; each payload hook sees the previous one's payload."""

    def __init__(self, *hooks: EngineHooks) -> None:
        self._hooks = hooks

    def on_transition(self, input: TransitionInput) -> None:
        for hook in self._hooks:
            hook.on_transition(input)

    def on_task_result(self, input: TaskResultInput) -> None:
        for hook in self._hooks:
            hook.on_task_result(input)

    def on_ended_answered(self, input: EndedInput) -> None:
        for hook in self._hooks:
            hook.on_ended_answered(input)

    def on_redrive(self, input: RedriveInput) -> None:
        for hook in self._hooks:
            hook.on_redrive(input)

    def on_recover(self, input: RecoverInput) -> None:
        for hook in self._hooks:
            hook.on_recover(input)

    def task_payload(self, input: PayloadInput) -> Any:
        payload = input.payload
        for hook in self._hooks:
            payload = hook.task_payload(PayloadInput(input.execution, input.function, payload))
        return payload
