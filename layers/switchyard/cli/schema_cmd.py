"""`switchyard schema`: the JSON Schema of the workflow format, for editors."""

from __future__ import annotations

import argparse
import json

from switchyard.model.json_schema import workflow_json_schema


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "schema",
        help="print the JSON Schema of the workflow format (for editors' YAML language servers)",
        description="Print the JSON Schema of the workflow format. Save it and put "
        "'# yaml-language-server: $schema=PATH' at the top of a workflow file.",
    )
    parser.set_defaults(handler=run)


def schema_text() -> str:
    return json.dumps(workflow_json_schema(), indent=2, sort_keys=True) + "\n"


def run(args: argparse.Namespace) -> int:
    print(schema_text(), end="")
    return 0
