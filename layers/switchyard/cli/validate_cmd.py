"""`switchyard validate FILE...`: every problem of every file, one line each."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from switchyard.cli.exit_codes import ExitCode
from switchyard.diagnostics import Code
from switchyard.validate import ValidationResult, WorkflowCatalog, validate_file


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "validate",
        help="load and validate workflow files; print every problem",
        description="Load and validate workflow files and print every problem, one per line: "
        "FILE:LINE: error[CODE] at PATH: MESSAGE.",
    )
    parser.add_argument(
        "files", nargs="+", metavar="FILE", help="workflow files (.yaml, .yml, .json)"
    )
    parser.add_argument("--json", action="store_true", help="print the problems as a JSON list")
    parser.set_defaults(handler=run)


def validate_paths(paths: list[Path]) -> list[ValidationResult]:
    catalogs: dict[Path, WorkflowCatalog] = {}
    results = []
    for path in paths:
        directory = path.resolve().parent
        if directory not in catalogs and directory.is_dir():
            catalogs[directory] = WorkflowCatalog.of_directory(directory)
        results.append(validate_file(path, catalog=catalogs.get(directory)))
    return results


def exit_code(results: list[ValidationResult]) -> ExitCode:
    problems = [d for r in results for d in r.errors]
    if any(d.code is Code.PARSE for d in problems):
        return ExitCode.USAGE
    return ExitCode.FAILED if problems else ExitCode.OK


def run(args: argparse.Namespace) -> int:
    results = validate_paths([Path(f) for f in args.files])
    diagnostics = [d for r in results for d in r.diagnostics]
    if args.json:
        print(json.dumps([d.as_json() for d in diagnostics], indent=2))
    else:
        for diagnostic in diagnostics:
            print(diagnostic.format())
    errors = sum(1 for d in diagnostics if d.is_error)
    valid = sum(1 for r in results if r.ok)
    summary = f"{valid} of {len(results)} file(s) valid, {errors} error(s)"
    warnings = len(diagnostics) - errors
    if warnings:
        summary += f", {warnings} warning(s)"
    print(summary, file=sys.stderr)
    return exit_code(results)
