"""Typed, immutable states of a parsed state machine (JSONPath query language).

`definition.parse_definition` builds these; the interpreter executes them. Path fields hold
compiled paths; `None` means the definition set the field to JSON `null` (an absent path field is
compiled as `$`). Templates are compiled `PayloadTemplate`s. Static JSON taken from the definition
(`Pass.Result`, `ItemReader`...) is shared: do not mutate it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from switchyard.engine.asl.choice_rules import Choice as ChoiceBranch
from switchyard.engine.asl.errors import AslFailure, StatesError
from switchyard.engine.asl.intrinsics import DEFAULT_ENTROPY, Entropy
from switchyard.engine.asl.jsonpath import JsonPath, ReferencePath
from switchyard.engine.asl.payload_template import Evaluator, PayloadTemplate
from switchyard.engine.asl.retry_catch import Catcher, Retrier
from switchyard.engine.asl.wait_time import WaitSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class State:
    name: str
    comment: str | None = None
    input_path: JsonPath | None = None
    output_path: JsonPath | None = None

    @property
    def type(self) -> str:
        return type(self).__name__

    @property
    def is_terminal(self) -> bool:
        """Whether the state ends its (sub-)machine when it succeeds."""
        return False


@dataclass(frozen=True, slots=True, kw_only=True)
class Transitioning(State):
    """A state that goes on to `next`, or ends its machine when `end` is true."""

    next: str | None = None
    end: bool = False

    @property
    def is_terminal(self) -> bool:
        return self.end


@dataclass(frozen=True, slots=True, kw_only=True)
class Pass(Transitioning):
    parameters: PayloadTemplate | None = None
    result: Any = None
    has_result: bool = False
    result_path: ReferencePath | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Task(Transitioning):
    resource: str
    parameters: PayloadTemplate | None = None
    result_selector: PayloadTemplate | None = None
    result_path: ReferencePath | None = None
    timeout_seconds: int | None = None
    timeout_seconds_path: JsonPath | None = None
    heartbeat_seconds: int | None = None
    heartbeat_seconds_path: JsonPath | None = None
    retry: tuple[Retrier, ...] = ()
    catch: tuple[Catcher, ...] = ()
    credentials: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Choice(State):
    choices: tuple[ChoiceBranch, ...]
    default: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Wait(Transitioning):
    wait: WaitSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class Succeed(State):
    @property
    def is_terminal(self) -> bool:
        return True


@dataclass(frozen=True, slots=True, kw_only=True)
class Fail(State):
    error: str | None = None
    error_path: Evaluator | None = None
    cause: str | None = None
    cause_path: Evaluator | None = None

    @property
    def is_terminal(self) -> bool:
        return True

    def failure(self, data: Any, context: Any, entropy: Entropy = DEFAULT_ENTROPY) -> AslFailure:
        """The failure this state ends with, for its (raw) input `data`."""
        error = self.error_path(data, context, entropy) if self.error_path else self.error
        cause = self.cause_path(data, context, entropy) if self.cause_path else self.cause
        for field, value in (("ErrorPath", error), ("CausePath", cause)):
            if value is not None and not isinstance(value, str):
                raise AslFailure(
                    StatesError.RUNTIME,
                    f"The {field} field of the Fail state must resolve to a string",
                )
        return AslFailure(error or "", cause or "")


@dataclass(frozen=True, slots=True, kw_only=True)
class Parallel(Transitioning):
    branches: tuple[StateMachine, ...]
    parameters: PayloadTemplate | None = None
    result_selector: PayloadTemplate | None = None
    result_path: ReferencePath | None = None
    retry: tuple[Retrier, ...] = ()
    catch: tuple[Catcher, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Map(Transitioning):
    item_processor: StateMachine
    processor_mode: str = "INLINE"
    execution_type: str | None = None
    items_path: ReferencePath | None = None
    item_selector: PayloadTemplate | None = None
    """`ItemSelector`, or the legacy `Parameters` of a Map state."""
    max_concurrency: int | None = None
    max_concurrency_path: JsonPath | None = None
    tolerated_failure_count: int | None = None
    tolerated_failure_count_path: JsonPath | None = None
    tolerated_failure_percentage: float | None = None
    tolerated_failure_percentage_path: JsonPath | None = None
    result_selector: PayloadTemplate | None = None
    result_path: ReferencePath | None = None
    retry: tuple[Retrier, ...] = ()
    catch: tuple[Catcher, ...] = ()
    item_reader: Any = None
    item_batcher: Any = None
    result_writer: Any = None
    label: str | None = None


@dataclass(frozen=True, slots=True)
class StateMachine:
    """A machine or a sub-machine (a Parallel branch, a Map's item processor)."""

    start_at: str
    states: Mapping[str, State]
    comment: str | None = None
    timeout_seconds: int | None = None
    version: str | None = None

    def __getitem__(self, name: str) -> State:
        return self.states[name]
