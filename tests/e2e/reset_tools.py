"""A Python tool with a side effect the reset tests count: a line appended to a file."""

from __future__ import annotations

from pathlib import Path


def append(path: str, line: str) -> dict[str, object]:
    """Append `line` to the file at `path`; the file's line count after it, and the line."""
    with Path(path).open("a", encoding="utf-8") as file:
        file.write(line + "\n")
    count = len(Path(path).read_text(encoding="utf-8").splitlines())
    return {"count": count, "line": line}
