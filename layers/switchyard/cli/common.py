"""Pieces the run-facing commands share: the database, the JSON input, printing."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from switchyard.cli.exit_codes import ExitCode


class CommandError(Exception):
    """A usage problem: printed as `switchyard: error: ...` with its exit code."""

    def __init__(self, message: str, code: ExitCode = ExitCode.USAGE) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def read_json_argument(value: str | None, what: str) -> Any:
    """`JSON` or `@file`, as `--input` and `--edit` take them."""
    if value is None:
        return None
    text = value
    if value.startswith("@"):
        path = Path(value[1:])
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"cannot read {what} file {path}: {exc.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        source = value[1:] if value.startswith("@") else "the argument"
        raise CommandError(
            f"{what} in {source} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def money(value: float) -> str:
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"
