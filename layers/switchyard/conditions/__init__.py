"""The condition language of `when`, router rules, loop `until` and tool policies."""

from switchyard.conditions.ast import (
    And,
    Compare,
    Exists,
    Expr,
    In,
    IsNull,
    Literal,
    Matches,
    Not,
    Or,
    Path,
    paths_in,
    type_name,
)
from switchyard.conditions.parser import ConditionError, parse_condition, parse_path

__all__ = [
    "And",
    "Compare",
    "ConditionError",
    "Exists",
    "Expr",
    "In",
    "IsNull",
    "Literal",
    "Matches",
    "Not",
    "Or",
    "Path",
    "parse_condition",
    "parse_path",
    "paths_in",
    "type_name",
]
