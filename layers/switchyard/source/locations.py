"""Document paths (`steps.draft.after[1]`) and the source line of each."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

DocPath = tuple[str | int, ...]

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def format_path(path: Iterable[str | int]) -> str:
    """Render a document path the way users write it: `steps.draft.after[1]`."""
    out: list[str] = []
    for part in path:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _PLAIN_KEY.match(part):
            out.append(f".{part}" if out else part)
        else:
            quoted = part.replace("\\", "\\\\").replace('"', '\\"')
            out.append(f'["{quoted}"]')
    return "".join(out)


class Locations:
    """Maps every document path to the 1-based line where it starts."""

    __slots__ = ("_lines",)

    def __init__(self) -> None:
        self._lines: dict[DocPath, int] = {(): 1}

    def record(self, path: DocPath, line: int) -> None:
        self._lines[path] = line

    def line_of(self, path: Sequence[str | int]) -> int:
        """Line of `path`, or of its nearest ancestor that exists in the file."""
        key = tuple(path)
        while key:
            line = self._lines.get(key)
            if line is not None:
                return line
            key = key[:-1]
        return self._lines[()]

    def __contains__(self, path: object) -> bool:
        return path in self._lines
