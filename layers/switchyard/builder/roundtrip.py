"""Round-trip YAML edits: a workflow file changed to a new document keeps its comments, key
order, quoting and flow style everywhere the document did not change (ruamel.yaml).

    text = apply_document(source, new_document)

Unchanged data gives the source's bytes back, always. A change is applied as the smallest edit
of the loaded tree (a changed scalar keeps its quoting style, a new key goes at the end of its
mapping, a removed key takes its comments with it) and the tree is written with the indentation
that reproduces the source best (sequences indented or not, as the file has them).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarstring import LiteralScalarString

_INDENTS: tuple[tuple[int, int, int], ...] = ((2, 2, 0), (2, 4, 2), (4, 4, 0), (4, 6, 2))
"""(mapping, sequence, offset) settings tried, the first that reproduces the file wins."""


class RoundTripError(ValueError):
    """The source is not YAML this module can edit (its message says where)."""


@dataclass
class _Loaded:
    data: Any
    yaml: YAML


def _yaml(indent: tuple[int, int, int]) -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    mapping, sequence, offset = indent
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    return yaml


def _dump(yaml: YAML, data: Any) -> str:
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def _load(source: str) -> _Loaded:
    best: tuple[int, _Loaded] | None = None
    for indent in _INDENTS:
        yaml = _yaml(indent)
        try:
            data = yaml.load(source)
        except YAMLError as exc:
            raise RoundTripError(f"the source is not valid YAML: {exc}") from None
        if data is None:
            return _Loaded(data, yaml)
        differing = _differing_lines(source, _dump(yaml, data))
        if differing == 0:
            return _Loaded(data, yaml)
        if best is None or differing < best[0]:
            best = (differing, _Loaded(data, yaml))
    assert best is not None
    return best[1]


def _differing_lines(a: str, b: str) -> int:
    left, right = a.splitlines(), b.splitlines()
    return sum(x != y for x, y in zip(left, right, strict=False)) + abs(len(left) - len(right))


MAX_NODES = 200_000
"""Values a document may expand to (aliases repeat what they point at): a 'billion laughs'
source is refused instead of filling the server's memory."""


def plain(value: Any, _count: list[int] | None = None) -> Any:
    """A loaded tree as plain JSON-like data (dicts, lists, scalars)."""
    count = _count if _count is not None else [0]
    count[0] += 1
    if count[0] > MAX_NODES:
        raise RoundTripError(f"the source expands to more than {MAX_NODES} values (aliases?)")
    if isinstance(value, Mapping):
        return {str(k): plain(v, count) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v, count) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return str(value)  # a timestamp: as written


def load_plain(source: str) -> Any:
    return plain(_load(source).data)


def apply_document(source: str, document: Any) -> str:
    """`source` edited to hold `document`; `source` itself when the data is the same."""
    loaded = _load(source) if source.strip() else _Loaded(None, _yaml(_INDENTS[0]))
    if loaded.data is not None and _same(plain(loaded.data), document):
        return source
    if isinstance(loaded.data, CommentedMap) and isinstance(document, Mapping):
        _merge_map(loaded.data, document)
        return _dump(loaded.yaml, loaded.data)
    return _dump(loaded.yaml, _fresh(document))


def _same(a: Any, b: Any) -> bool:
    return (type(a) is type(b) and a == b) or (_number(a) and _number(b) and a == b)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _merge_map(node: CommentedMap, new: Mapping[str, Any]) -> None:
    for key in [k for k in node if k not in new]:
        del node[key]
    for key, value in new.items():
        if key in node:
            node[key] = _merged(node[key], value)
        else:
            node[key] = _fresh(value)


def _merge_seq(node: CommentedSeq, new: Sequence[Any]) -> None:
    del node[len(new) :]
    for index, value in enumerate(new):
        if index < len(node):
            node[index] = _merged(node[index], value)
        else:
            node.append(_fresh(value))


def _merged(old: Any, new: Any) -> Any:
    if isinstance(old, CommentedMap) and isinstance(new, Mapping):
        _merge_map(old, new)
        return old
    if isinstance(old, CommentedSeq) and isinstance(new, list):
        _merge_seq(old, new)
        return old
    if _same(plain(old), new):
        return old
    if isinstance(old, str) and isinstance(new, str) and type(old) is not str:
        if "\n" in new and not isinstance(old, LiteralScalarString):
            return LiteralScalarString(new)
        return type(old)(new)  # the same quoting or block style
    return _fresh(new)


def _fresh(value: Any) -> Any:
    """A new value in block style (a multi-line string as a literal block)."""
    if isinstance(value, Mapping):
        node = CommentedMap()
        for key, item in value.items():
            node[str(key)] = _fresh(item)
        return node
    if isinstance(value, list):
        seq = CommentedSeq()
        seq.extend(_fresh(item) for item in value)
        return seq
    if isinstance(value, str) and "\n" in value:
        return LiteralScalarString(value)
    return value
