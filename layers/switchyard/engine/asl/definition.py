"""Parse and statically validate a state machine definition into typed states (`states.py`).

Problems are reported the way Step Functions reports an invalid definition:
`Invalid State Machine Definition: 'CODE: message at /States/Name/Field', ...`, every problem found
(one per state at most), each naming the state by its location. JSONata states are rejected: this
engine implements the JSONPath query language only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NoReturn

from switchyard.engine.asl import states as st
from switchyard.engine.asl.choice_rules import ChoiceRuleError, parse_choice
from switchyard.engine.asl.errors import InvalidPathError, StatesError
from switchyard.engine.asl.json_values import is_integral, is_number
from switchyard.engine.asl.jsonpath import (
    JsonPath,
    ReferencePath,
    compile_path,
    compile_reference_path,
)
from switchyard.engine.asl.payload_template import (
    PayloadTemplate,
    TemplateError,
    compile_value_expression,
)
from switchyard.engine.asl.retry_catch import Catcher, JitterStrategy, Retrier
from switchyard.engine.asl.timestamps import parse_timestamp
from switchyard.engine.asl.wait_time import MAX_WAIT_SECONDS, WaitSpec

_MAX_INT = 99_999_999
_COMMON = {"Type", "Comment", "QueryLanguage"}
_IO = {"InputPath", "OutputPath"}
_FLOW = {"Next", "End"}
_RECOVERY = {"Retry", "Catch"}
FIELDS: dict[str, frozenset[str]] = {
    "Pass": frozenset(_COMMON | _IO | _FLOW | {"Parameters", "Result", "ResultPath"}),
    "Task": frozenset(
        _COMMON
        | _IO
        | _FLOW
        | _RECOVERY
        | {"Resource", "Parameters", "ResultSelector", "ResultPath", "Credentials"}
        | {"TimeoutSeconds", "TimeoutSecondsPath", "HeartbeatSeconds", "HeartbeatSecondsPath"}
    ),
    "Choice": frozenset(_COMMON | _IO | {"Choices", "Default"}),
    "Wait": frozenset(
        _COMMON | _IO | _FLOW | {"Seconds", "SecondsPath", "Timestamp", "TimestampPath"}
    ),
    "Succeed": frozenset(_COMMON | _IO),
    "Fail": frozenset(_COMMON | {"Error", "ErrorPath", "Cause", "CausePath"}),
    "Parallel": frozenset(
        _COMMON
        | _IO
        | _FLOW
        | _RECOVERY
        | {"Branches", "Parameters", "ResultSelector", "ResultPath"}
    ),
    "Map": frozenset(
        _COMMON
        | _IO
        | _FLOW
        | _RECOVERY
        | {"ItemProcessor", "Iterator", "ItemsPath", "ItemSelector", "Parameters"}
        | {"MaxConcurrency", "MaxConcurrencyPath", "ToleratedFailureCount"}
        | {"ToleratedFailureCountPath", "ToleratedFailurePercentage"}
        | {"ToleratedFailurePercentagePath", "ResultSelector", "ResultPath"}
        | {"ItemReader", "ItemBatcher", "ResultWriter", "Label"}
    ),
}
"""The fields each state type accepts in the JSONPath query language."""


@dataclass(frozen=True, slots=True)
class DefinitionProblem:
    code: str
    message: str
    location: str

    def __str__(self) -> str:
        return f"{self.code}: {self.message} at {self.location or '/'}"


class InvalidDefinitionError(ValueError):
    """The definition is not a valid state machine; `problems` lists what is wrong, and where."""

    def __init__(self, problems: list[DefinitionProblem]) -> None:
        self.problems = tuple(problems)
        joined = ", ".join(f"'{problem}'" for problem in problems)
        super().__init__(f"Invalid State Machine Definition: {joined}")


class _Problem(Exception):  # noqa: N818 - internal: aborts parsing of one state
    def __init__(self, problem: DefinitionProblem) -> None:
        self.problem = problem


def _fail(message: str, location: str, code: str = "SCHEMA_VALIDATION_FAILED") -> NoReturn:
    raise _Problem(DefinitionProblem(code, message, location))


def parse_definition(source: str | Mapping[str, Any]) -> st.StateMachine:
    """Parse a definition (JSON text or already-decoded JSON) into a `StateMachine`."""
    if isinstance(source, str):
        try:
            source = json.loads(source)
        except json.JSONDecodeError as error:
            raise InvalidDefinitionError(
                [DefinitionProblem("INVALID_JSON_DESCRIPTION", str(error), "")]
            ) from None
    parser = _Parser()
    try:
        machine = parser.machine(source, "", top_level=True)
    except _Problem as stop:
        parser.problems.append(stop.problem)
        machine = None
    if parser.problems or machine is None:
        raise InvalidDefinitionError(parser.problems)
    return machine


class _Parser:
    def __init__(self) -> None:
        self.problems: list[DefinitionProblem] = []
        self.names: set[str] = set()

    # -- machines -------------------------------------------------------------------------

    def machine(self, source: Any, where: str, *, top_level: bool = False) -> st.StateMachine:
        if not isinstance(source, Mapping):
            _fail("A state machine must be a JSON object", where)
        allowed = {"StartAt", "States", "Comment"}
        if top_level:
            allowed |= {"Version", "TimeoutSeconds", "QueryLanguage"}
        else:
            allowed |= {"ProcessorConfig"}
        _check_query_language(source, where)
        for key in source:
            if key not in allowed:
                _fail(f"Field '{key}' is not supported", f"{where}/{key}")
        start_at = source.get("StartAt")
        states_source = source.get("States")
        if not isinstance(start_at, str):
            _fail("'StartAt' must be a string naming the first state", f"{where}/StartAt")
        if not isinstance(states_source, Mapping) or not states_source:
            _fail("'States' must be a non-empty object", f"{where}/States")
        parsed: dict[str, st.State] = {}
        for name, state_source in states_source.items():
            location = f"{where}/States/{name}"
            try:
                parsed[name] = self.state(name, state_source, location)
            except _Problem as stop:
                self.problems.append(stop.problem)
        timeout = source.get("TimeoutSeconds")
        if timeout is not None and not _positive_int(timeout):
            _fail("'TimeoutSeconds' must be a positive integer", f"{where}/TimeoutSeconds")
        if start_at not in states_source:
            self.problems.append(
                DefinitionProblem(
                    "MISSING_TRANSITION_TARGET",
                    f"Missing 'StartAt' target: {start_at}",
                    f"{where}/StartAt",
                )
            )
        self.transitions(parsed, start_at, where)
        return st.StateMachine(
            start_at,
            MappingProxyType(parsed),
            comment=source.get("Comment"),
            timeout_seconds=timeout,
            version=source.get("Version"),
        )

    def transitions(self, states: dict[str, st.State], start_at: str, where: str) -> None:
        edges: dict[str, list[str]] = {}
        for name, state in states.items():
            targets: list[tuple[str, str]] = []
            if isinstance(state, st.Transitioning) and state.next is not None:
                targets.append((state.next, "Next"))
            if isinstance(state, st.Choice):
                targets += [(c.next, "Choices") for c in state.choices]
                if state.default is not None:
                    targets.append((state.default, "Default"))
            for catcher in getattr(state, "catch", ()):
                targets.append((catcher.next, "Catch"))
            edges[name] = [target for target, _ in targets]
            for target, field in targets:
                if target not in states:
                    self.problems.append(
                        DefinitionProblem(
                            "MISSING_TRANSITION_TARGET",
                            f"Missing '{field}' target: {target}",
                            f"{where}/States/{name}/{field}",
                        )
                    )
        seen, todo = set(), [start_at]
        while todo:
            name = todo.pop()
            if name in seen or name not in edges:
                continue
            seen.add(name)
            todo.extend(edges[name])
        for name in states:
            if name not in seen:
                self.problems.append(
                    DefinitionProblem(
                        "UNREACHABLE_STATE",
                        f"State '{name}' is not reachable",
                        f"{where}/States/{name}",
                    )
                )

    # -- states ---------------------------------------------------------------------------

    def state(self, name: str, source: Any, where: str) -> st.State:
        if not isinstance(source, Mapping):
            _fail("A state must be a JSON object", where)
        if not 1 <= len(name) <= 80:
            _fail(f"State name '{name}' must be 1 to 80 characters long", where)
        if name in self.names:
            _fail(f"State name '{name}' is used more than once", where, "DUPLICATE_STATE_NAME")
        self.names.add(name)
        kind = source.get("Type")
        if kind not in FIELDS:
            _fail(f"'Type' must be one of {', '.join(FIELDS)}, got {kind!r}", f"{where}/Type")
        _check_query_language(source, where)
        if "Assign" in source or "Output" in source or "Arguments" in source:
            field = next(f for f in ("Assign", "Output", "Arguments") if f in source)
            _fail(f"Field '{field}' is not supported by this engine (JSONPath mode only)", where)
        for key in source:
            if key not in FIELDS[kind]:
                _fail(f"Field '{key}' is not supported for a {kind} state", f"{where}/{key}")
        common: dict[str, Any] = {
            "name": name,
            "comment": source.get("Comment"),
        }
        if kind != "Fail":
            common["input_path"] = _path_field(source, "InputPath", where)
            common["output_path"] = _path_field(source, "OutputPath", where)
        if kind in ("Pass", "Task", "Wait", "Parallel", "Map"):
            common.update(_flow(source, where))
        builder: Callable[[Mapping[str, Any], str, dict[str, Any]], st.State] = getattr(
            self, f"_{kind.lower()}"
        )
        return builder(source, where, common)

    def _pass(self, source: Mapping[str, Any], where: str, common: dict[str, Any]) -> st.State:
        return st.Pass(
            **common,
            parameters=_template(source, "Parameters", where),
            result=source.get("Result"),
            has_result="Result" in source,
            result_path=_result_path(source, where),
        )

    def _task(self, source: Mapping[str, Any], where: str, common: dict[str, Any]) -> st.State:
        resource = source.get("Resource")
        if not isinstance(resource, str) or not resource:
            _fail("A Task state needs a string 'Resource'", f"{where}/Resource")
        timeout, timeout_path = _seconds(source, "TimeoutSeconds", where)
        heartbeat, heartbeat_path = _seconds(source, "HeartbeatSeconds", where)
        if timeout is not None and heartbeat is not None and heartbeat >= timeout:
            _fail("'HeartbeatSeconds' must be smaller than 'TimeoutSeconds'", where)
        return st.Task(
            **common,
            resource=resource,
            parameters=_template(source, "Parameters", where),
            result_selector=_template(source, "ResultSelector", where),
            result_path=_result_path(source, where),
            timeout_seconds=timeout,
            timeout_seconds_path=timeout_path,
            heartbeat_seconds=heartbeat,
            heartbeat_seconds_path=heartbeat_path,
            retry=_retriers(source.get("Retry"), f"{where}/Retry"),
            catch=_catchers(source.get("Catch"), f"{where}/Catch"),
            credentials=source.get("Credentials"),
        )

    def _choice(self, source: Mapping[str, Any], where: str, common: dict[str, Any]) -> st.State:
        choices = source.get("Choices")
        if not isinstance(choices, list) or not choices:
            _fail("A Choice state needs a non-empty 'Choices' array", f"{where}/Choices")
        default = source.get("Default")
        if default is not None and not isinstance(default, str):
            _fail("'Default' must be a state name", f"{where}/Default")
        try:
            parsed = tuple(parse_choice(c, f"{where}/Choices/{i}") for i, c in enumerate(choices))
        except ChoiceRuleError as error:
            _fail(str(error), error.location)
        return st.Choice(**common, choices=parsed, default=default)

    def _wait(self, source: Mapping[str, Any], where: str, common: dict[str, Any]) -> st.State:
        given = [f for f in ("Seconds", "SecondsPath", "Timestamp", "TimestampPath") if f in source]
        if len(given) != 1:
            _fail(
                "A Wait state needs exactly one of Seconds, SecondsPath, Timestamp, TimestampPath",
                where,
            )
        field = given[0]
        value = source[field]
        at = f"{where}/{field}"
        if field == "Seconds":
            if not is_integral(value) or not 0 <= value <= MAX_WAIT_SECONDS:
                _fail(f"'Seconds' must be an integer from 0 to {MAX_WAIT_SECONDS}", at)
            spec = WaitSpec(seconds=int(value))
        elif field == "Timestamp":
            if parse_timestamp(value) is None:
                _fail("'Timestamp' must be an RFC3339 timestamp such as 2026-01-31T12:00:00Z", at)
            spec = WaitSpec(timestamp=value)
        elif field == "SecondsPath":
            spec = WaitSpec(seconds_path=_required_path(value, at))
        else:
            spec = WaitSpec(timestamp_path=_required_path(value, at))
        return st.Wait(**common, wait=spec)

    def _succeed(self, source: Mapping[str, Any], where: str, common: dict[str, Any]) -> st.State:
        return st.Succeed(**common)

    def _fail(self, source: Mapping[str, Any], where: str, common: dict[str, Any]) -> st.State:
        values: dict[str, Any] = {}
        for field, path_field in (("Error", "ErrorPath"), ("Cause", "CausePath")):
            if field in source and path_field in source:
                _fail(f"Only one of '{field}' and '{path_field}' may be given", where)
            if field in source and not isinstance(source[field], str):
                _fail(f"'{field}' must be a string", f"{where}/{field}")
            values[field.lower()] = source.get(field)
            if path_field in source:
                try:
                    values[f"{field.lower()}_path"] = compile_value_expression(
                        source[path_field], path_field, f"{where}/{path_field}"
                    )
                except TemplateError as error:
                    _fail(str(error), error.location)
        return st.Fail(**common, **values)

    def _parallel(self, source: Mapping[str, Any], where: str, common: dict[str, Any]) -> st.State:
        branches = source.get("Branches")
        if not isinstance(branches, list) or not branches:
            _fail("A Parallel state needs a non-empty 'Branches' array", f"{where}/Branches")
        machines = tuple(self.machine(b, f"{where}/Branches/{i}") for i, b in enumerate(branches))
        return st.Parallel(
            **common,
            branches=machines,
            parameters=_template(source, "Parameters", where),
            result_selector=_template(source, "ResultSelector", where),
            result_path=_result_path(source, where),
            retry=_retriers(source.get("Retry"), f"{where}/Retry"),
            catch=_catchers(source.get("Catch"), f"{where}/Catch"),
        )

    def _map(self, source: Mapping[str, Any], where: str, common: dict[str, Any]) -> st.State:
        if ("ItemProcessor" in source) == ("Iterator" in source):
            _fail("A Map state needs exactly one of 'ItemProcessor' and 'Iterator'", where)
        if "ItemSelector" in source and "Parameters" in source:
            _fail("Only one of 'ItemSelector' and 'Parameters' may be given", where)
        processor_field = "ItemProcessor" if "ItemProcessor" in source else "Iterator"
        processor = source[processor_field]
        at = f"{where}/{processor_field}"
        config = processor.get("ProcessorConfig", {}) if isinstance(processor, Mapping) else {}
        mode = config.get("Mode", "INLINE") if isinstance(config, Mapping) else None
        if mode not in ("INLINE", "DISTRIBUTED"):
            _fail("'ProcessorConfig.Mode' must be INLINE or DISTRIBUTED", f"{at}/ProcessorConfig")
        selector_field = "ItemSelector" if "ItemSelector" in source else "Parameters"
        items_path = _result_path(source, where, "ItemsPath")
        concurrency, concurrency_path = _count(source, "MaxConcurrency", where, minimum=0)
        tolerated, tolerated_path = _count(source, "ToleratedFailureCount", where, minimum=0)
        percentage = source.get("ToleratedFailurePercentage")
        if percentage is not None and not (is_number(percentage) and 0 <= percentage <= 100):
            _fail("'ToleratedFailurePercentage' must be a number from 0 to 100", where)
        return st.Map(
            **common,
            item_processor=self.machine(processor, at),
            processor_mode=mode,
            execution_type=config.get("ExecutionType"),
            items_path=items_path,
            item_selector=_template(source, selector_field, where),
            max_concurrency=concurrency,
            max_concurrency_path=concurrency_path,
            tolerated_failure_count=tolerated,
            tolerated_failure_count_path=tolerated_path,
            tolerated_failure_percentage=percentage,
            tolerated_failure_percentage_path=_optional_path(
                source, "ToleratedFailurePercentagePath", where
            ),
            result_selector=_template(source, "ResultSelector", where),
            result_path=_result_path(source, where),
            retry=_retriers(source.get("Retry"), f"{where}/Retry"),
            catch=_catchers(source.get("Catch"), f"{where}/Catch"),
            item_reader=source.get("ItemReader"),
            item_batcher=source.get("ItemBatcher"),
            result_writer=source.get("ResultWriter"),
            label=source.get("Label"),
        )


# -- fields ------------------------------------------------------------------------------------


def _check_query_language(source: Mapping[str, Any], where: str) -> None:
    language = source.get("QueryLanguage", "JSONPath")
    if language == "JSONata":
        _fail(
            "QueryLanguage 'JSONata' is not supported: switchyard's engine runs JSONPath state "
            "machines only",
            f"{where}/QueryLanguage",
        )
    if language != "JSONPath":
        _fail("'QueryLanguage' must be 'JSONPath' or 'JSONata'", f"{where}/QueryLanguage")


def _flow(source: Mapping[str, Any], where: str) -> dict[str, Any]:
    has_next, end = "Next" in source, source.get("End")
    if has_next and end is not None:
        _fail("A state cannot have both 'Next' and 'End'", where)
    if has_next:
        if not isinstance(source["Next"], str):
            _fail("'Next' must be a state name", f"{where}/Next")
        return {"next": source["Next"]}
    if end is not True:
        _fail("A state needs either 'Next' or \"End\": true", where, "MISSING_TRANSITION_TARGET")
    return {"end": True}


def _compile(text: Any, where: str, compiler: Callable[[str], Any]) -> Any:
    if not isinstance(text, str):
        _fail("A path must be a string starting with '$'", where)
    try:
        return compiler(text)
    except InvalidPathError as error:
        _fail(str(error), where)


def _path_field(source: Mapping[str, Any], field: str, where: str) -> JsonPath | None:
    if field not in source:
        return compile_path("$")
    value = source[field]
    if value is None:
        return None
    return _required_path(value, f"{where}/{field}")


def _result_path(
    source: Mapping[str, Any], where: str, field: str = "ResultPath"
) -> ReferencePath | None:
    if field not in source:
        return compile_reference_path("$")
    value = source[field]
    if value is None:
        if field == "ItemsPath":
            _fail("'ItemsPath' cannot be null", f"{where}/{field}")
        return None
    return _compile(value, f"{where}/{field}", compile_reference_path)  # type: ignore[no-any-return]


def _required_path(value: Any, where: str) -> JsonPath:
    return _compile(value, where, compile_path)  # type: ignore[no-any-return]


def _optional_path(source: Mapping[str, Any], field: str, where: str) -> JsonPath | None:
    if field not in source:
        return None
    return _required_path(source[field], f"{where}/{field}")


def _template(source: Mapping[str, Any], field: str, where: str) -> PayloadTemplate | None:
    if field not in source:
        return None
    value = source[field]
    if not isinstance(value, Mapping):
        _fail(f"'{field}' must be a JSON object", f"{where}/{field}")
    try:
        return PayloadTemplate.compile(value, f"{where}/{field}")
    except TemplateError as error:
        _fail(str(error), error.location)


def _positive_int(value: Any) -> bool:
    return is_integral(value) and 1 <= value <= _MAX_INT


def _seconds(source: Mapping[str, Any], field: str, where: str) -> tuple[int | None, Any]:
    path_field = f"{field}Path"
    if field in source and path_field in source:
        _fail(f"Only one of '{field}' and '{path_field}' may be given", where)
    if field in source:
        if not _positive_int(source[field]):
            _fail(f"'{field}' must be a positive integer", f"{where}/{field}")
        return int(source[field]), None
    return None, _optional_path(source, path_field, where)


def _count(
    source: Mapping[str, Any], field: str, where: str, *, minimum: int
) -> tuple[int | None, Any]:
    path_field = f"{field}Path"
    if field in source and path_field in source:
        _fail(f"Only one of '{field}' and '{path_field}' may be given", where)
    if field in source:
        value = source[field]
        if not is_integral(value) or not minimum <= value <= _MAX_INT:
            _fail(f"'{field}' must be an integer of at least {minimum}", f"{where}/{field}")
        return int(value), None
    return None, _optional_path(source, path_field, where)


def _error_equals(source: Mapping[str, Any], where: str, is_last: bool) -> tuple[str, ...]:
    names = source.get("ErrorEquals")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        _fail("'ErrorEquals' must be a non-empty array of error names", f"{where}/ErrorEquals")
    if StatesError.ALL in names and (len(names) != 1 or not is_last):
        _fail(
            "'States.ALL' must appear alone in 'ErrorEquals', in the last retrier or catcher",
            f"{where}/ErrorEquals",
        )
    return tuple(names)


def _retriers(source: Any, where: str) -> tuple[Retrier, ...]:
    if source is None:
        return ()
    if not isinstance(source, list):
        _fail("'Retry' must be an array", where)
    retriers = []
    allowed = {"ErrorEquals", "IntervalSeconds", "MaxAttempts", "BackoffRate", "Comment"}
    allowed |= {"MaxDelaySeconds", "JitterStrategy"}
    for i, item in enumerate(source):
        at = f"{where}/{i}"
        if not isinstance(item, Mapping):
            _fail("A retrier must be an object", at)
        for key in item:
            if key not in allowed:
                _fail(f"Field '{key}' is not supported in a retrier", f"{at}/{key}")
        interval = item.get("IntervalSeconds", 1)
        attempts = item.get("MaxAttempts", 3)
        rate = item.get("BackoffRate", 2.0)
        max_delay = item.get("MaxDelaySeconds")
        jitter = item.get("JitterStrategy", "NONE")
        if not _positive_int(interval):
            _fail("'IntervalSeconds' must be a positive integer", f"{at}/IntervalSeconds")
        if not is_integral(attempts) or not 0 <= attempts <= _MAX_INT:
            _fail("'MaxAttempts' must be a non-negative integer", f"{at}/MaxAttempts")
        if not is_number(rate) or rate < 1.0:
            _fail("'BackoffRate' must be a number of at least 1.0", f"{at}/BackoffRate")
        if max_delay is not None and not _positive_int(max_delay):
            _fail("'MaxDelaySeconds' must be a positive integer", f"{at}/MaxDelaySeconds")
        if jitter not in ("FULL", "NONE"):
            _fail("'JitterStrategy' must be FULL or NONE", f"{at}/JitterStrategy")
        retriers.append(
            Retrier(
                _error_equals(item, at, i == len(source) - 1),
                int(interval),
                int(attempts),
                float(rate),
                None if max_delay is None else int(max_delay),
                JitterStrategy(jitter),
            )
        )
    return tuple(retriers)


def _catchers(source: Any, where: str) -> tuple[Catcher, ...]:
    if source is None:
        return ()
    if not isinstance(source, list):
        _fail("'Catch' must be an array", where)
    catchers = []
    for i, item in enumerate(source):
        at = f"{where}/{i}"
        if not isinstance(item, Mapping):
            _fail("A catcher must be an object", at)
        for key in item:
            if key not in ("ErrorEquals", "Next", "ResultPath", "Comment"):
                _fail(f"Field '{key}' is not supported in a catcher", f"{at}/{key}")
        if not isinstance(item.get("Next"), str):
            _fail("A catcher needs a string 'Next'", f"{at}/Next")
        catchers.append(
            Catcher(
                _error_equals(item, at, i == len(source) - 1),
                item["Next"],
                _result_path(item, at),
            )
        )
    return tuple(catchers)
