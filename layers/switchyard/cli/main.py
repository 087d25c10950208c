"""Entry point of the `switchyard` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from switchyard import __version__
from switchyard.cli import (
    compile_cmd,
    dev_cmd,
    engine_cmd,
    gates_cmd,
    run_cmd,
    runs_cmd,
    schema_cmd,
    triggers_cmd,
    validate_cmd,
)
from switchyard.cli.common import CommandError
from switchyard.cli.exit_codes import ExitCode


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(ExitCode.USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="switchyard",
        description="Typed AI workflows: validate, compile to AWS Step Functions, run locally.",
    )
    parser.add_argument("--version", action="version", version=f"switchyard {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=_Parser)
    for module in (
        validate_cmd,
        compile_cmd,
        schema_cmd,
        run_cmd,
        dev_cmd,
        runs_cmd,
        gates_cmd,
        engine_cmd,
        triggers_cmd,
    ):
        module.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return ExitCode.USAGE
    try:
        return int(handler(args))
    except CommandError as error:
        print(f"switchyard: error: {error.message}", file=sys.stderr)
        return int(error.code)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `switchyard runs list | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
