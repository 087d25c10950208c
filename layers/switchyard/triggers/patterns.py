"""EventBridge event patterns, matched as EventBridge documents them
(https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-event-patterns.html and
eb-create-pattern-operators.html):

- a pattern is a JSON object; a key whose value is an object matches the event's field of that
  name against that object, a key whose value is a list matches when any entry of the list
  matches the field (the event's field may itself be a list: then any of its elements);
- literal entries match exactly (strings by case, numbers by value, `true`, `false`, `null`);
- operators: `prefix`, `suffix` (each also `{"equals-ignore-case": ...}`), `equals-ignore-case`,
  `anything-but` (a value, a list of values, or a `prefix`/`suffix`/`equals-ignore-case`/
  `wildcard` object), `numeric` (`[">", 0, "<=", 5]`), `exists` (`true`/`false`), `cidr`,
  `wildcard` (`*` matches any run of characters, `\\*` a star);
- `"$or": [pattern, ...]` at any level: one of the patterns matches.

A field the event does not have matches only `{"exists": false}`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from switchyard.conditions.string_matches import string_matches


class PatternError(ValueError):
    """A pattern EventBridge would refuse (`InvalidEventPatternException`)."""


_MISSING = object()
_NUMERIC_OPS = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    "=": lambda a, b: a == b,
    ">=": lambda a, b: a >= b,
    ">": lambda a, b: a > b,
}


def matches(pattern: Mapping[str, Any], event: Mapping[str, Any]) -> bool:
    """Whether `event` (a whole EventBridge event) matches `pattern` (`PatternError` when the
    pattern is one EventBridge refuses, whatever the event)."""
    check_pattern(pattern)
    return _object(pattern, event)


def check_pattern(pattern: Any) -> None:
    """`PatternError` unless `pattern` is a pattern EventBridge accepts."""
    if not isinstance(pattern, Mapping):
        raise PatternError("an event pattern is a JSON object")
    for key, rule in pattern.items():
        if key == "$or":
            if not isinstance(rule, list) or len(rule) < 2:
                raise PatternError("$or takes a list of at least two patterns")
            for each in rule:
                check_pattern(each)
        elif isinstance(rule, Mapping):
            check_pattern(rule)
        elif isinstance(rule, list):
            for entry in rule:
                if isinstance(entry, Mapping) and "exists" in entry:
                    if len(entry) != 1 or not isinstance(entry["exists"], bool):
                        raise PatternError("exists takes true or false")
                    continue
                for probe in ("", 0):  # every operator checks its argument on some value
                    _value(entry, probe)
        else:
            raise PatternError(f"'{key}': a pattern's values are lists or objects, not {rule!r}")


def _object(pattern: Mapping[str, Any], value: Any) -> bool:
    for key, rule in pattern.items():
        if key == "$or":
            if not isinstance(rule, list) or len(rule) < 2:
                raise PatternError("$or takes a list of at least two patterns")
            if not any(_object(_mapping(p), value) for p in rule):
                return False
            continue
        field = value.get(key, _MISSING) if isinstance(value, Mapping) else _MISSING
        if isinstance(rule, Mapping):
            inner = field if isinstance(field, Mapping) else {}
            if field is not _MISSING and not isinstance(field, Mapping):
                return False
            if not _object(rule, inner):
                return False
        elif isinstance(rule, list):
            if not _field(rule, field):
                return False
        else:
            raise PatternError(f"'{key}': a pattern's values are lists or objects, not {rule!r}")
    return True


def _mapping(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise PatternError("each pattern in $or is a JSON object")
    return value


def _field(rules: list[Any], field: Any) -> bool:
    present = field is not _MISSING
    values = field if isinstance(field, list) else [field]
    for rule in rules:
        if isinstance(rule, Mapping) and "exists" in rule:
            wanted = rule["exists"]
            if not isinstance(wanted, bool):
                raise PatternError("exists takes true or false")
            if wanted == (present and not (isinstance(field, list) and not field)):
                return True
            continue
        if present and any(_value(rule, v) for v in values):
            return True
    return False


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _literal(rule: Any, value: Any) -> bool:
    if rule is None or isinstance(rule, bool):
        return value is rule
    if _is_number(rule):
        return _is_number(value) and float(value) == float(rule)
    if isinstance(rule, str):
        return isinstance(value, str) and value == rule
    raise PatternError(f"unsupported value in a pattern: {rule!r}")


def _value(rule: Any, value: Any) -> bool:
    if not isinstance(rule, Mapping):
        return _literal(rule, value)
    if len(rule) != 1:
        raise PatternError(f"an operator object has one key, not {sorted(rule)}")
    ((op, arg),) = rule.items()
    if op == "prefix":
        return _affix(arg, value, str.startswith)
    if op == "suffix":
        return _affix(arg, value, str.endswith)
    if op == "equals-ignore-case":
        return isinstance(value, str) and value.casefold() == str(arg).casefold()
    if op == "wildcard":
        return isinstance(value, str) and string_matches(str(arg), value)  # the same glob
    if op == "anything-but":
        return _anything_but(arg, value)
    if op == "numeric":
        return _numeric(arg, value)
    if op == "cidr":
        return _cidr(arg, value)
    raise PatternError(f"unknown operator {op!r}")


def _affix(arg: Any, value: Any, test: Any) -> bool:
    if not isinstance(value, str):
        return False
    if isinstance(arg, Mapping) and set(arg) == {"equals-ignore-case"}:
        return bool(test(value.casefold(), str(arg["equals-ignore-case"]).casefold()))
    if not isinstance(arg, str):
        raise PatternError("prefix and suffix take a string or {equals-ignore-case: ...}")
    return bool(test(value, arg))


def _anything_but(arg: Any, value: Any) -> bool:
    if isinstance(arg, list):
        return not any(_literal(a, value) for a in arg)
    if isinstance(arg, Mapping):
        ((op, inner),) = arg.items()
        if op == "equals-ignore-case" and isinstance(inner, list):
            return not any(_value({op: i}, value) for i in inner)
        if op in ("prefix", "suffix", "equals-ignore-case", "wildcard"):
            if isinstance(inner, list):
                return not any(_value({op: i}, value) for i in inner)
            return isinstance(value, str) and not _value(arg, value)
        raise PatternError(f"anything-but does not take {op!r}")
    return not _literal(arg, value)


def _numeric(arg: Any, value: Any) -> bool:
    if not isinstance(arg, list) or len(arg) not in (2, 4) or len(arg) % 2:
        raise PatternError('numeric takes ["<op>", n] or ["<op>", n, "<op>", m]')
    if not _is_number(value):
        return False
    for op, bound in zip(arg[::2], arg[1::2], strict=True):
        if op not in _NUMERIC_OPS or not _is_number(bound):
            raise PatternError(f"numeric: {op!r} {bound!r} is not an operator and a number")
        if not _NUMERIC_OPS[op](float(value), float(bound)):
            return False
    return True


def _cidr(arg: Any, value: Any) -> bool:
    try:
        network = ipaddress.ip_network(str(arg), strict=False)
    except ValueError:
        raise PatternError(f"cidr: {arg!r} is not a network") from None
    try:
        return isinstance(value, str) and ipaddress.ip_address(value) in network
    except ValueError:
        return False
