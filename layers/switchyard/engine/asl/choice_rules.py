"""Choice rules: parse them from a definition and evaluate them against a state's input.

Semantics, as Step Functions has them:
- a comparison whose operands have the wrong type is false (`"StringEquals"` on a number);
- a `Variable` (or a `...Path` operand) that matches nothing fails with `States.Runtime`, except
  under `IsPresent`, which is exactly the test for it;
- `And` and `Or` short-circuit: a later operand is not evaluated, so it cannot fail;
- `choose` returns the `Next` of the first matching choice, else `Default`, else fails with
  `States.NoChoiceMatched`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from switchyard.conditions.string_matches import string_matches
from switchyard.engine.asl.errors import AslFailure, InvalidPathError, StatesError, to_json_text
from switchyard.engine.asl.json_values import is_number
from switchyard.engine.asl.jsonpath import (
    JsonPath,
    PathNotFoundError,
    compile_context_path,
    compile_path,
)
from switchyard.engine.asl.timestamps import Timestamp, parse_timestamp

_TYPES = ("String", "Numeric", "Boolean", "Timestamp")
_ORDERINGS = ("Equals", "LessThan", "GreaterThan", "LessThanEquals", "GreaterThanEquals")
COMPARISON_OPERATORS: frozenset[str] = frozenset(
    f"{kind}{order}"
    for kind in _TYPES
    for order in _ORDERINGS
    if kind != "Boolean" or order == "Equals"
) | {"StringMatches"}
PATH_OPERATORS: frozenset[str] = frozenset(
    f"{op}Path" for op in COMPARISON_OPERATORS if op != "StringMatches"
)
TYPE_TESTS: frozenset[str] = frozenset(
    {"IsNull", "IsPresent", "IsString", "IsNumeric", "IsBoolean", "IsTimestamp"}
)
ALL_OPERATORS: frozenset[str] = COMPARISON_OPERATORS | PATH_OPERATORS | TYPE_TESTS


class ChoiceRuleError(ValueError):
    """A choice rule is not valid; `location` points at it."""

    def __init__(self, message: str, location: str) -> None:
        super().__init__(message)
        self.location = location


class Rule:
    """A boolean condition on a state's input."""

    def matches(self, data: Any, context: Any) -> bool:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class And(Rule):
    rules: tuple[Rule, ...]

    def matches(self, data: Any, context: Any) -> bool:
        return all(rule.matches(data, context) for rule in self.rules)


@dataclass(frozen=True, slots=True)
class Or(Rule):
    rules: tuple[Rule, ...]

    def matches(self, data: Any, context: Any) -> bool:
        return any(rule.matches(data, context) for rule in self.rules)


@dataclass(frozen=True, slots=True)
class Not(Rule):
    rule: Rule

    def matches(self, data: Any, context: Any) -> bool:
        return not self.rule.matches(data, context)


@dataclass(frozen=True, slots=True)
class PathOperand:
    """A path in a rule: applied to the state input, or to the context object for `$$...`."""

    path: JsonPath
    text: str
    in_context: bool = False

    def root(self, data: Any, context: Any) -> Any:
        return context if self.in_context else data

    def resolve(self, data: Any, context: Any) -> Any:
        try:
            return self.path.evaluate(self.root(data, context))
        except PathNotFoundError:
            raise AslFailure(
                StatesError.RUNTIME,
                f"Invalid path '{self.text}': The choice state's condition path references an "
                "invalid value.",
            ) from None


@dataclass(frozen=True, slots=True)
class Comparison(Rule):
    """`Variable <operator> value` (or `<operator>Path` with `value_path`)."""

    variable: PathOperand
    operator: str
    value: Any
    value_path: PathOperand | None = None

    def matches(self, data: Any, context: Any) -> bool:
        if self.operator == "IsPresent":
            present = self.variable.path.exists(self.variable.root(data, context))
            return present is self.value
        left = self.variable.resolve(data, context)
        if self.operator in TYPE_TESTS:
            return _TYPE_TESTS[self.operator](left) is self.value
        if self.value_path is not None:
            right = self.value_path.resolve(data, context)
            return _compare(self.operator[:-4], left, right)
        return _compare(self.operator, left, self.value)


@dataclass(frozen=True, slots=True)
class Choice:
    """A top-level choice: a rule and the state to go to when it matches."""

    rule: Rule
    next: str


def choose(choices: Sequence[Choice], default: str | None, data: Any, context: Any) -> str:
    """The `Next` of the first matching choice, else `default`; else `States.NoChoiceMatched`."""
    for choice in choices:
        if choice.rule.matches(data, context):
            return choice.next
    if default is None:
        raise AslFailure(
            StatesError.NO_CHOICE_MATCHED,
            f"No Matches! (input: {to_json_text(data)})",
        )
    return default


# -- evaluation --------------------------------------------------------------------------------


def _is_string(value: Any) -> bool:
    return isinstance(value, str)


def _is_boolean(value: Any) -> bool:
    return isinstance(value, bool)


def _is_timestamp(value: Any) -> bool:
    return parse_timestamp(value) is not None


def _is_null(value: Any) -> bool:
    return value is None


_TYPE_TESTS: dict[str, Callable[[Any], bool]] = {
    "IsNull": _is_null,
    "IsString": _is_string,
    "IsNumeric": is_number,
    "IsBoolean": _is_boolean,
    "IsTimestamp": _is_timestamp,
}


def _utf16(text: str) -> bytes:
    """Java compares strings by UTF-16 code units; so does Step Functions."""
    return text.encode("utf-16-be", "surrogatepass")


def _order(operator: str, left: Any, right: Any) -> bool:
    if operator.endswith("GreaterThanEquals"):
        return bool(left >= right)
    if operator.endswith("LessThanEquals"):
        return bool(left <= right)
    if operator.endswith("GreaterThan"):
        return bool(left > right)
    if operator.endswith("LessThan"):
        return bool(left < right)
    return bool(left == right)


def _compare(operator: str, left: Any, right: Any) -> bool:
    if operator == "StringMatches":
        return isinstance(left, str) and isinstance(right, str) and string_matches(right, left)
    if operator.startswith("String"):
        if not (isinstance(left, str) and isinstance(right, str)):
            return False
        if operator == "StringEquals":
            return left == right
        return _order(operator, _utf16(left), _utf16(right))
    if operator.startswith("Numeric"):
        return is_number(left) and is_number(right) and _order(operator, left, right)
    if operator.startswith("Boolean"):
        return isinstance(left, bool) and isinstance(right, bool) and left is right
    left_time: Timestamp | None = parse_timestamp(left)
    right_time: Timestamp | None = parse_timestamp(right)
    if left_time is None or right_time is None:
        return False
    return _order(operator, left_time, right_time)


# -- parsing -----------------------------------------------------------------------------------


def parse_choice(source: Any, location: str) -> Choice:
    """Parse one element of a Choice state's `Choices`."""
    if not isinstance(source, dict):
        raise ChoiceRuleError("A choice rule must be an object", location)
    target = source.get("Next")
    if not isinstance(target, str):
        raise ChoiceRuleError("A top-level choice rule must have a string 'Next'", location)
    return Choice(parse_rule(source, location, top_level=True), target)


def parse_rule(source: Any, location: str, *, top_level: bool = False) -> Rule:
    if not isinstance(source, dict):
        raise ChoiceRuleError("A choice rule must be an object", location)
    allowed = {"Next"} if top_level else set()
    allowed.add("Comment")
    if not top_level and "Next" in source:
        raise ChoiceRuleError("A nested choice rule must not have 'Next'", location)
    for combinator in ("And", "Or"):
        if combinator in source:
            _only(source, allowed | {combinator}, location)
            operands = source[combinator]
            if not isinstance(operands, list) or not operands:
                raise ChoiceRuleError(f"'{combinator}' must be a non-empty array", location)
            rules = tuple(
                parse_rule(rule, f"{location}/{combinator}/{i}") for i, rule in enumerate(operands)
            )
            return And(rules) if combinator == "And" else Or(rules)
    if "Not" in source:
        _only(source, allowed | {"Not"}, location)
        return Not(parse_rule(source["Not"], f"{location}/Not"))
    return _parse_comparison(source, allowed, location)


def _parse_comparison(source: dict[str, Any], allowed: set[str], location: str) -> Comparison:
    operators = [key for key in source if key in ALL_OPERATORS]
    unknown = [key for key in source if key not in ALL_OPERATORS | allowed | {"Variable"}]
    if unknown:
        raise ChoiceRuleError(f"Field '{unknown[0]}' is not supported in a choice rule", location)
    if len(operators) != 1:
        raise ChoiceRuleError(
            "A choice rule must have exactly one comparison operator "
            f"(found {len(operators)}: {', '.join(operators) or 'none'})",
            location,
        )
    if "Variable" not in source:
        raise ChoiceRuleError("A comparison must have a 'Variable'", location)
    operator = operators[0]
    value = source[operator]
    variable = _compile_variable(source["Variable"], f"{location}/Variable")
    if operator in PATH_OPERATORS:
        return Comparison(
            variable, operator, value, _compile_variable(value, f"{location}/{operator}")
        )
    _check_operand(operator, value, f"{location}/{operator}")
    return Comparison(variable, operator, value)


def _compile_variable(text: Any, location: str) -> PathOperand:
    if not isinstance(text, str) or not text.startswith("$"):
        raise ChoiceRuleError("A choice rule path must be a string starting with '$'", location)
    try:
        if text.startswith("$$"):
            return PathOperand(compile_context_path(text), text, in_context=True)
        return PathOperand(compile_path(text), text)
    except InvalidPathError as error:
        raise ChoiceRuleError(str(error), location) from error


def _check_operand(operator: str, value: Any, location: str) -> None:
    if operator in TYPE_TESTS or operator.startswith("Boolean"):
        valid = isinstance(value, bool)
    elif operator.startswith("String"):
        valid = isinstance(value, str)
    elif operator.startswith("Numeric"):
        valid = is_number(value)
    else:
        valid = parse_timestamp(value) is not None
    if not valid:
        raise ChoiceRuleError(
            f"The value of '{operator}' has the wrong type: {to_json_text(value)}", location
        )


def _only(source: dict[str, Any], allowed: set[str], location: str) -> None:
    extra = [key for key in source if key not in allowed]
    if extra:
        raise ChoiceRuleError(f"Field '{extra[0]}' is not supported here", location)
