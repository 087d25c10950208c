"""InputPath, ResultPath and OutputPath: how a state selects its input and shapes its output.

A path field holds a compiled path, or `None` when the definition sets it to JSON `null`
(InputPath/OutputPath `null` give `{}`, ResultPath `null` discards the result). An absent field
means `$`. None of these functions mutates its arguments: ResultPath copies the objects along
the path it writes and shares everything else.
"""

from __future__ import annotations

from typing import Any, NoReturn

from switchyard.engine.asl.errors import AslFailure, StatesError, to_json_text
from switchyard.engine.asl.jsonpath import JsonPath, PathNotFoundError, ReferencePath, Step


def _jayway_path(path: JsonPath) -> str:
    """The bracket form Jayway writes in its messages: `$['a']['b'][0]`."""
    if isinstance(path, ReferencePath):
        return "$" + "".join(f"['{s}']" if isinstance(s, str) else f"[{s}]" for s in path.steps)
    return path.text


def select_path(path: JsonPath | None, data: Any) -> Any:
    """Apply an InputPath or OutputPath: `None` gives `{}`, a miss fails with `States.Runtime`."""
    if path is None:
        return {}
    try:
        return path.evaluate(data)
    except PathNotFoundError:
        raise AslFailure(
            StatesError.RUNTIME,
            f"Invalid path '{path.text}' : No results for path: {_jayway_path(path)}",
        ) from None


apply_input_path = select_path
apply_output_path = select_path


def apply_result_path(result_path: ReferencePath | None, state_input: Any, result: Any) -> Any:
    """Combine a state's (raw) input and its result as ResultPath says.

    `None` keeps the input and drops the result; `$` replaces the input with the result; any
    other path writes the result into a copy of the input, creating missing objects on the way.
    Writing through a value that is not an object (`null` included), or through an index that is
    not inside an existing array, fails with `States.ResultPathMatchFailure`.
    """
    if result_path is None:
        return state_input
    if not result_path.steps:
        return result
    return _put(result_path, result_path.steps, 0, state_input, result, state_input)


def _put(
    path: ReferencePath, steps: tuple[Step, ...], i: int, node: Any, result: Any, root: Any
) -> Any:
    step = steps[i]
    last = i == len(steps) - 1
    if isinstance(step, str):
        if not isinstance(node, dict):
            _mismatch(path, root)
        copy = dict(node)
        if last:
            copy[step] = result
        else:
            child = node.get(step, {})
            copy[step] = _put(path, steps, i + 1, child, result, root)
        return copy
    if not isinstance(node, list):
        _mismatch(path, root)
    index = step if step >= 0 else len(node) + step
    if not 0 <= index < len(node):
        _mismatch(path, root)
    items = list(node)
    items[index] = result if last else _put(path, steps, i + 1, node[index], result, root)
    return items


def _mismatch(path: ReferencePath, root: Any) -> NoReturn:
    raise AslFailure(
        StatesError.RESULT_PATH_MATCH_FAILURE,
        f"Unable to apply ReferencePath {path.text} to input {to_json_text(root)}",
    )
