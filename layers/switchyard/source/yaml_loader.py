"""Load YAML (or JSON, its subset) keeping line numbers and refusing duplicate keys.

PyYAML's own constructor silently keeps the last of two equal keys and resolves scalars by
YAML 1.1, where `on`, `yes` and `no` are booleans: a retry policy's `on:` key would become `True`.
We compose the node graph with libyaml (fast) and build plain Python values ourselves with the
YAML 1.2 core schema, recording the line of every node on the way.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from switchyard.diagnostics import Code, Diagnostic
from switchyard.source.locations import DocPath, Locations, format_path

_PLAIN_TAG = "tag:switchyard,2026:plain"

try:  # libyaml is several times faster; fall back to pure Python where it is missing.
    _BaseLoader: type[Any] = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _BaseLoader = yaml.SafeLoader


class _Loader(_BaseLoader):  # type: ignore[misc]
    """Tags every unquoted, untagged scalar as plain, so that we resolve it by YAML 1.2."""

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: Any) -> str:
        if kind is yaml.ScalarNode:
            return _PLAIN_TAG if implicit[0] else "tag:yaml.org,2002:str"
        if kind is yaml.SequenceNode:
            return "tag:yaml.org,2002:seq"
        return "tag:yaml.org,2002:map"

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        return None

    def ascend_resolver(self) -> None:
        return None


_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL_TRUE = re.compile(r"^(?:true|True|TRUE)$")
_BOOL_FALSE = re.compile(r"^(?:false|False|FALSE)$")
_INT = re.compile(r"^[-+]?[0-9]+$")
_INT_OCT = re.compile(r"^0o[0-7]+$")
_INT_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_INF = re.compile(r"^[-+]?(?:\.inf|\.Inf|\.INF)$")
_NAN = re.compile(r"^(?:\.nan|\.NaN|\.NAN)$")

# Mappings whose keys are identifiers: a repeated key there is a repeated id.
_ID_MAPPINGS: frozenset[DocPath] = frozenset({("steps",), ("tools",), ("inputs",)})

_EXPLICIT_TAGS = {
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
}


@dataclass
class LoadedDocument:
    """A parsed file: its data (None when unparsable), where each node is, what went wrong."""

    file: str
    data: Any
    locations: Locations
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def line_of(self, path: DocPath) -> int:
        return self.locations.line_of(path)


def load_file(path: str | Path) -> LoadedDocument:
    """Read and parse a workflow file; unreadable files become a `parse` diagnostic."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        problem = Diagnostic(
            Code.PARSE, "", f"cannot read the file: {reason}; check the path", 0, name
        )
        return LoadedDocument(name, None, Locations(), [problem])
    return load_document(text, file=name)


def load_document(text: str, *, file: str = "<input>") -> LoadedDocument:
    """Parse YAML or JSON text into plain Python values with a line for every node."""
    locations = Locations()
    document = LoadedDocument(file, None, locations)
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        what = exc.problem or exc.context or "invalid YAML"
        document.diagnostics.append(
            Diagnostic(Code.PARSE, "", f"{what}; fix the YAML syntax on this line", line, file)
        )
        return document
    except yaml.YAMLError as exc:
        problem = Diagnostic(Code.PARSE, "", f"invalid YAML: {exc}", 1, file)
        document.diagnostics.append(problem)
        return document
    if node is None:
        problem = Diagnostic(Code.PARSE, "", "the file is empty; a workflow is a mapping", 1, file)
        document.diagnostics.append(problem)
        return document
    builder = _Builder(file, locations, document.diagnostics)
    try:
        document.data = builder.build(node, ())
    except _TooManyValuesError:
        document.diagnostics.append(
            Diagnostic(
                Code.PARSE,
                "",
                f"the file expands to more than {MAX_VALUES:,} values through its YAML aliases;"
                " write the values out or use fewer aliases",
                1,
                file,
            )
        )
    return document


MAX_VALUES = 200_000
"""Values a document may build to. Aliases repeat the node they name, so nine lines of nested
aliases ("billion laughs") would otherwise build 10^9 values: a hang and unbounded memory."""


class _TooManyValuesError(Exception):
    pass


class _Builder:
    """Turns a composed node graph into dicts, lists and scalars."""

    def __init__(self, file: str, locations: Locations, diagnostics: list[Diagnostic]) -> None:
        self._file = file
        self._locations = locations
        self._diagnostics = diagnostics
        self._active: set[int] = set()
        self._built = 0

    def build(self, node: yaml.Node, path: DocPath) -> Any:
        self._built += 1
        if self._built > MAX_VALUES:
            raise _TooManyValuesError
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node, path)
        if id(node) in self._active:  # an alias that refers to its own ancestor
            self._problem(Code.PARSE, path, node, "a recursive YAML alias cannot be a workflow")
            return None
        self._active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return self._sequence(node, path)
            if isinstance(node, yaml.MappingNode):
                return self._mapping(node, path)
        finally:
            self._active.discard(id(node))
        return None  # pragma: no cover - PyYAML has only the three node kinds

    def _sequence(self, node: yaml.SequenceNode, path: DocPath) -> list[Any]:
        items: list[Any] = []
        record = self._locations.record
        for index, child in enumerate(node.value):
            child_path = (*path, index)
            record(child_path, child.start_mark.line + 1)
            items.append(self.build(child, child_path))
        return items

    def _mapping(self, node: yaml.MappingNode, path: DocPath) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        merged: dict[Any, Any] = {}
        record = self._locations.record
        for key_node, value_node in node.value:
            is_merge = key_node.tag == _PLAIN_TAG and key_node.value == "<<"
            if is_merge or key_node.tag == "tag:yaml.org,2002:merge":
                self._merge_into(merged, value_node, path)
                continue
            key = self.build(key_node, path)
            if isinstance(key, (dict, list)) or key is None:
                self._problem(Code.PARSE, path, key_node, "mapping keys must be plain values")
                continue
            if isinstance(key, bool | float):
                key = str(key).lower()
            key_text = key if isinstance(key, str) else str(key)
            child_path = (*path, key_text)
            if key_text in result:
                first = self._locations.line_of(child_path)
                code = Code.DUPLICATE_ID if path in _ID_MAPPINGS else Code.PARSE
                what = "id" if code is Code.DUPLICATE_ID else "key"
                message = (
                    f"duplicate {what} '{key_text}' (first defined on line {first}); "
                    "rename or remove one of them"
                )
                self._problem(code, child_path, key_node, message)
                continue
            record(child_path, key_node.start_mark.line + 1)
            result[key_text] = self.build(value_node, child_path)
        for key, value in merged.items():  # explicit keys win over merged ones
            result.setdefault(key, value)
        return result

    def _merge_into(self, result: dict[Any, Any], node: yaml.Node, path: DocPath) -> None:
        """YAML merge keys (`<<: *base`): explicit keys win over merged ones."""
        sources = node.value if isinstance(node, yaml.SequenceNode) else [node]
        for source in sources:
            merged = self.build(source, path)
            if not isinstance(merged, dict):
                self._problem(Code.PARSE, path, source, "a merge key (<<) needs a mapping")
                continue
            for key, value in merged.items():
                result.setdefault(key, value)

    def _scalar(self, node: yaml.ScalarNode, path: DocPath) -> Any:
        value: str = node.value
        if node.tag == _PLAIN_TAG or node.tag in _EXPLICIT_TAGS:
            return _resolve_plain(value)
        # Quoted, block, `!!str` or a foreign tag such as `!Ref`: the text itself.
        return value

    def _problem(self, code: Code, path: DocPath, node: yaml.Node, message: str) -> None:
        line = node.start_mark.line + 1
        self._diagnostics.append(Diagnostic(code, format_path(path), message, line, self._file))


_WORDS: dict[str, Any] = {
    "": None, "~": None, "null": None, "Null": None, "NULL": None,
    "true": True, "True": True, "TRUE": True,
    "false": False, "False": False, "FALSE": False,
}  # fmt: skip
_NUMBER_START = frozenset("0123456789+-.")


def _resolve_plain(value: str) -> Any:
    """Resolve an unquoted scalar by the YAML 1.2 core schema."""
    if value in _WORDS:
        return _WORDS[value]
    if value[0] not in _NUMBER_START:
        return value  # most scalars: words, ids, prompts
    if _NULL.match(value):
        return None
    if _BOOL_TRUE.match(value):
        return True
    if _BOOL_FALSE.match(value):
        return False
    if _INT.match(value):
        return int(value)
    if _INT_OCT.match(value):
        return int(value[2:], 8)
    if _INT_HEX.match(value):
        return int(value[2:], 16)
    if _FLOAT.match(value):
        return float(value)
    if _INF.match(value):
        return -math.inf if value.startswith("-") else math.inf
    if _NAN.match(value):
        return math.nan
    return value
