"""Model scripts named by a request (`X-Switchyard-LLM-Script`): read only from the server's
scripts directory, never from anywhere else on the machine.

A name is a path relative to the directory (`customer-support.yaml`, `team/triage.yaml`), or an
absolute path inside it. It must resolve, symlinks followed, to a regular file inside the
directory, of at most `MAX_SCRIPT_BYTES`; the file is opened without following a link planted
after the check, read only as far as the limit, and parsed as YAML (JSON for `.json`) with a
bounded nesting depth and size.

A refusal names the problem and the name the request gave, never the file's content (no YAML
line, no mapping key, no value) and never whether a path outside the directory exists.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from switchyard.runtime.providers import load_script
from switchyard.runtime.providers.scripted import ScriptError

MAX_SCRIPT_BYTES = 1024 * 1024
"""A script is a few kilobytes; a file over this is refused before it is read."""
MAX_SCRIPT_DEPTH = 32
"""Nesting levels of mappings and sequences in a script (`{step: [{output: {...}}]}` is 4)."""
MAX_SCRIPT_NODES = 200_000
"""Values in a script once YAML aliases are expanded (it is stored with the run as JSON)."""

_YAML_SUFFIXES = (".yaml", ".yml")


class ScriptRefusedError(ValueError):
    """The named script is not one the server will read; the message says why."""


@dataclass(frozen=True)
class ScriptDirectory:
    """The directory that request-named scripts are read from."""

    root: Path
    max_bytes: int = MAX_SCRIPT_BYTES

    def names(self) -> list[str]:
        """The script files of the directory (not its subfolders), by name, for the document."""
        try:
            return sorted(
                entry.name
                for entry in os.scandir(self.root)
                if entry.is_file(follow_symlinks=False)
                and entry.name.lower().endswith((*_YAML_SUFFIXES, ".json"))
            )
        except OSError:
            return []

    def load(self, name: str) -> dict[str, Any]:
        """The parsed, checked script `name` names; ScriptRefusedError otherwise."""
        shown = _shown(name)
        relative = self._relative(name, shown)
        data = self._read(relative, shown)
        return _parse(data, relative.suffix.lower(), shown)

    def _relative(self, name: str, shown: str) -> Path:
        if not name or "\x00" in name:
            raise ScriptRefusedError(f"the model script name {shown} is not a file name")
        root = Path(os.path.realpath(self.root))
        candidate = Path(name)
        if not candidate.is_absolute():
            candidate = root / candidate
        # realpath follows every link; what it answers outside the directory is refused without
        # saying whether it exists
        resolved = Path(os.path.realpath(candidate))
        if resolved == root or not resolved.is_relative_to(root):
            raise ScriptRefusedError(
                f"the model script {shown} is not a file of the server's scripts directory"
                " (name one relative to it, e.g. customer-support.yaml)"
            )
        return resolved.relative_to(root)

    def _read(self, relative: Path, shown: str) -> bytes:
        """The file's bytes, opened component by component below the root without following a
        link, so a link swapped in after `realpath` is refused rather than followed."""
        try:
            directory = os.open(os.path.realpath(self.root), os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            raise ScriptRefusedError("the server's scripts directory cannot be read") from None
        try:
            fd = _open_below(directory, relative.parts)
        except FileNotFoundError:
            raise ScriptRefusedError(
                f"no model script {shown} in the server's scripts directory"
            ) from None
        except OSError:
            raise ScriptRefusedError(
                f"the model script {shown} is not a readable regular file"
            ) from None
        finally:
            os.close(directory)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ScriptRefusedError(f"the model script {shown} is not a regular file")
            if info.st_size > self.max_bytes:
                raise ScriptRefusedError(
                    f"the model script {shown} is {info.st_size} bytes; at most"
                    f" {self.max_bytes} are read"
                )
            data = _read_at_most(fd, self.max_bytes + 1)
        except OSError:
            raise ScriptRefusedError(f"the model script {shown} cannot be read") from None
        finally:
            os.close(fd)
        if len(data) > self.max_bytes:  # it grew after fstat
            raise ScriptRefusedError(f"the model script {shown} is over {self.max_bytes} bytes")
        return data


def _open_below(directory: int, parts: tuple[str, ...]) -> int:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK  # a FIFO must not block the open
    current = directory
    try:
        for part in parts[:-1]:
            parent = current
            current = os.open(part, flags | os.O_DIRECTORY, dir_fd=parent)
            if parent != directory:
                os.close(parent)
        return os.open(parts[-1], flags, dir_fd=current)
    finally:
        if current != directory:
            os.close(current)


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0:
        chunk = os.read(fd, min(remaining, 65536))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _parse(data: bytes, suffix: str, shown: str) -> dict[str, Any]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ScriptRefusedError(f"the model script {shown} is not UTF-8 text") from None
    if suffix == ".json":
        parsed = _json(text, shown)
    else:
        _check_yaml_shape(text, shown)
        try:
            parsed = yaml.safe_load(text)
        except yaml.YAMLError as exc:  # a constructor error past the event check
            raise ScriptRefusedError(f"the model script {shown} is not YAML{_where(exc)}") from None
    _check_size(parsed, shown)
    if not isinstance(parsed, dict):
        raise ScriptRefusedError(
            f"the model script {shown} is not a script: it must map step ids to lists of"
            " entries (docs/cli.md)"
        )
    try:
        return dict(load_script(parsed))
    except ScriptError:
        raise ScriptRefusedError(
            f"the model script {shown} is not a script: each step id maps to a list of entries,"
            " each a mapping of output, text, route, reason, error, message, retry_after, tokens"
            " or tool_use (docs/cli.md); check it with switchyard run --llm-script"
        ) from None


def _json(text: str, shown: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise ScriptRefusedError(f"the model script {shown} nests too deep") from None
    except ValueError as exc:
        where = ""
        if isinstance(exc, json.JSONDecodeError):
            where = f" (line {exc.lineno}, column {exc.colno})"
        raise ScriptRefusedError(f"the model script {shown} is not JSON{where}") from None


def _check_yaml_shape(text: str, shown: str) -> None:
    """Depth and size from the parser's events, before anything is built (the composer
    recurses once per level, and aliases could expand without bound)."""
    depth = events = 0
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            events += 1
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_SCRIPT_DEPTH:
                    raise ScriptRefusedError(
                        f"the model script {shown} nests deeper than {MAX_SCRIPT_DEPTH} levels"
                    )
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
            if events > MAX_SCRIPT_NODES:
                raise ScriptRefusedError(
                    f"the model script {shown} has more than {MAX_SCRIPT_NODES} values"
                )
    except yaml.YAMLError as exc:
        raise ScriptRefusedError(f"the model script {shown} is not YAML{_where(exc)}") from None


def _where(exc: yaml.YAMLError) -> str:
    """Line and column only: a YAML error's own message quotes the offending line."""
    mark = getattr(exc, "problem_mark", None)
    if mark is None:
        return ""
    return f" (line {mark.line + 1}, column {mark.column + 1})"


def _check_size(value: Any, shown: str) -> None:
    """Values once aliases are expanded, counted in linear time (shared objects once each)."""
    sizes: dict[int, int] = {}
    for node in _post_order(value):
        children: Iterator[Any] = iter(())
        if isinstance(node, dict):
            children = iter(node.values())
        elif isinstance(node, list):
            children = iter(node)
        total = 1
        for child in children:
            if isinstance(child, dict | list) and id(child) not in sizes:
                raise ScriptRefusedError(
                    f"the model script {shown} contains itself (an alias loop)"
                )
            total += sizes.get(id(child), 1)
        sizes[id(node)] = total
        if sizes[id(node)] > MAX_SCRIPT_NODES:
            raise ScriptRefusedError(
                f"the model script {shown} has more than {MAX_SCRIPT_NODES} values once its"
                " aliases are expanded"
            )


def _post_order(value: Any) -> Iterator[Any]:
    """Containers after their children, each once (YAML aliases share objects)."""
    seen: set[int] = set()
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        node, expanded = stack.pop()
        if not isinstance(node, dict | list):
            continue
        if expanded:
            yield node
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for child in node.values() if isinstance(node, dict) else node:
            stack.append((child, False))


def _shown(name: str) -> str:
    """The name as the request gave it, printable and short (it is the caller's own text)."""
    printable = "".join(c if c.isprintable() else "?" for c in name[:200])
    return repr(printable + ("…" if len(name) > 200 else ""))
