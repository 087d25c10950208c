"""Problems found in a workflow file, in the one line format that people and scripts read.

`FILE:LINE: error[CODE] at PATH: MESSAGE` (see docs/cli.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Code(StrEnum):
    """Problem codes. Scripts match on these; add new ones, never rename."""

    PARSE = "parse"
    SCHEMA = "schema"
    UNKNOWN_STEP = "unknown_step"
    CYCLE = "cycle"
    UNREACHABLE = "unreachable"
    DUPLICATE_ID = "duplicate_id"
    TYPE_MISMATCH = "type_mismatch"
    BAD_CONDITION = "bad_condition"
    BAD_TEMPLATE = "bad_template"
    BAD_ROUTE = "bad_route"
    BAD_FALLBACK = "bad_fallback"
    UNKNOWN_TOOL = "unknown_tool"
    UNKNOWN_WORKFLOW = "unknown_workflow"
    BAD_DURATION = "bad_duration"
    BAD_INPUT = "bad_input"
    HISTORY_LIMIT = "history_limit"
    SYNC_EDGE = "sync_edge"
    DEFINITION_SIZE = "definition_size"
    BAD_TIMEOUT = "bad_timeout"
    PAYLOAD_SIZE = "payload_size"


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem, located in a file by line and by document path."""

    code: Code
    path: str
    message: str
    line: int = 0
    file: str = "<input>"
    severity: Severity = Severity.ERROR

    def format(self) -> str:
        where = f" at {self.path}" if self.path else ""
        return f"{self.file}:{self.line}: {self.severity}[{self.code}]{where}: {self.message}"

    def as_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.line,
            "severity": str(self.severity),
            "code": str(self.code),
            "path": self.path,
            "message": self.message,
        }

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR


def sort_key(diagnostic: Diagnostic) -> tuple[str, int, str, str]:
    return (diagnostic.file, diagnostic.line, diagnostic.path, diagnostic.code)
