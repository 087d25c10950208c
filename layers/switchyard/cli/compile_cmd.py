"""`switchyard compile FILE... [-o DIR] [--check] [--stats]`: write `DIR/<name>.asl.json` per
workflow; `--stats` also prints each machine's size and the price of its happy path."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from switchyard.cli.exit_codes import ExitCode
from switchyard.cli.validate_cmd import exit_code, validate_paths
from switchyard.compile import CompileResult, compile_workflow
from switchyard.compile.stats import machine_stats
from switchyard.source import load_file

DEFAULT_DIR = "statemachines"


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "compile",
        help="compile workflows to AWS Step Functions state machines (DIR/<name>.asl.json)",
        description="Validate and compile workflow files into Amazon States Language definitions. "
        "The output is deterministic: the same file always gives the same bytes.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="workflow files")
    parser.add_argument(
        "-o",
        "--output",
        default=DEFAULT_DIR,
        metavar="DIR",
        help=f"where to write (default {DEFAULT_DIR}/)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 when a file in DIR differs from a fresh compile",
    )
    parser.add_argument(
        "--stats",
        action="store_true",
        help="also print per workflow: states, states per step, transitions on the happy path "
        "and its price on a Standard workflow",
    )
    parser.set_defaults(handler=run)


def compile_paths(paths: list[Path]) -> tuple[list[CompileResult], int]:
    """Compile every valid file; print problems and notes; return the results and an exit code."""
    results = validate_paths(paths)
    for result in results:
        for diagnostic in result.diagnostics:
            print(diagnostic.format())
    code = exit_code(results)
    if code != ExitCode.OK:
        return [], code
    compiled: list[CompileResult] = []
    seen: dict[str, str] = {}
    for path, result in zip(paths, results, strict=True):
        assert result.workflow is not None
        name = result.workflow.name
        if name in seen:
            print(
                f"{path}:0: error[schema] at name: workflow '{name}' is also in {seen[name]}; "
                "compile one version of a workflow at a time",
                file=sys.stdout,
            )
            return [], ExitCode.FAILED
        seen[name] = str(path)
        outcome = compile_workflow(result.workflow, document=load_file(path))
        for note in outcome.notes:
            print(note.format(), file=sys.stderr)
        compiled.append(outcome)
    return compiled, ExitCode.OK


def run(args: argparse.Namespace) -> int:
    compiled, code = compile_paths([Path(f) for f in args.files])
    if code != ExitCode.OK:
        return code
    directory = Path(args.output)
    if args.stats:
        for outcome in compiled:
            stats = machine_stats(
                outcome.workflow.name, len(outcome.workflow.steps), outcome.definition
            )
            print(stats.line())
    stale: list[str] = []
    for outcome in compiled:
        target = directory / f"{outcome.workflow.name}.asl.json"
        if args.check:
            if not target.exists() or target.read_text(encoding="utf-8") != outcome.text:
                stale.append(str(target))
            continue
        directory.mkdir(parents=True, exist_ok=True)
        target.write_text(outcome.text, encoding="utf-8")
        print(f"wrote {target}", file=sys.stderr)
    if stale:
        for name in stale:
            print(f"{name} differs from a fresh compile; run switchyard compile and commit it")
        return ExitCode.FAILED
    return ExitCode.OK
