"""`switchyard triggers list` and `switchyard send QUEUE BODY` (docs/triggers.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from psycopg_pool import ConnectionPool

from switchyard.cli.common import CommandError
from switchyard.cli.exit_codes import ExitCode
from switchyard.local.database import open_database
from switchyard.local.engine_client import engine_running
from switchyard.local.triggers.queue import MAX_BODY_BYTES
from switchyard.local.triggers.service import TriggerService
from switchyard.local.triggers.starter import TriggerSpec, trigger_specs
from switchyard.local.triggers.store import TriggerStore
from switchyard.validate import validate_file
from switchyard.validate.catalog import WORKFLOW_SUFFIXES

DEFAULT_BASE_URL = "http://127.0.0.1:8080"


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "triggers",
        help="list triggers",
        description="The triggers of the workflows installed in the database: what an engine "
        "fires.",
    )
    sub = parser.add_subparsers(title="subcommands", metavar="SUBCOMMAND", required=True)
    listing = sub.add_parser(
        "list",
        help="each trigger: its next fire time or URL, and its last deliveries",
        description="Each trigger of the workflows installed in the database (the newest "
        "version of each), its next fire time or URL, and its last deliveries.",
    )
    listing.add_argument(
        "--workflows", type=Path, metavar="DIR",
        help="the triggers of the workflow files of DIR instead, each marked installed or not",
    )  # fmt: skip
    listing.add_argument(
        "--base-url", default=DEFAULT_BASE_URL, help="the REST server's URL (switchyard dev)"
    )
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=run_list)
    send = commands.add_parser(
        "send",
        help="put a message on a local queue",
        description="Put BODY (text; '-' reads stdin) on QUEUE; the engine (switchyard dev, or "
        "the background engine) starts a run per message for each queue trigger on it.",
    )
    send.add_argument("queue", metavar="QUEUE")
    send.add_argument("body", metavar="BODY")
    send.set_defaults(handler=run_send)


def run_list(args: argparse.Namespace) -> int:
    files = _file_specs(args.workflows) if args.workflows is not None else None
    database = open_database()
    with ConnectionPool(
        database.conninfo, min_size=1, max_size=2, open=True, kwargs={"autocommit": True}
    ) as pool:
        service = TriggerService(pool, _NoEngine(), files, base_url=args.base_url.rstrip("/"))
        triggers = service.describe()
        if files is not None:
            newest = {i.workflow: i.version for i in service.store.installed()}
            for trigger in triggers:
                trigger["installed"] = newest.get(trigger["workflow"]) == trigger["version"]
        dead = service.store.dead_letters(limit=20)
    running = engine_running(database.conninfo)
    if args.json:
        answer = {"triggers": triggers, "dead_letters": dead, "engine_running": running}
        print(json.dumps(answer, indent=2, default=str))
        return ExitCode.OK
    if not triggers:
        print(
            f"no triggers in the workflows of {args.workflows}"
            if files is not None
            else "no triggers installed: switchyard engine start --workflows DIR (or switchyard "
            "dev --workflows DIR) installs the workflows of DIR"
        )
    for trigger in triggers:
        where = trigger.get("next_fire") or trigger.get("url") or json.dumps(trigger["pattern"])
        label = "next" if "next_fire" in trigger else "at" if "url" in trigger else "pattern"
        missing = "" if trigger.get("installed", True) else "  (not installed)"
        print(f"{trigger['key']:<36} {trigger['type']:<9} {label} {where}{missing}")
        for delivery in trigger["deliveries"]:
            print(f"    {delivery['at']}  {delivery['status']:<11} {delivery['run_id']}")
    if dead:
        print(f"dead letters ({len(dead)}): switchyard triggers list --json shows them")
    print(
        "an engine runs: it fires the schedules and reads the queues"
        if running
        else "no engine runs: schedules fire and queues are read once one does "
        "(switchyard engine start, or switchyard dev)"
    )
    print("webhooks and events are served by switchyard dev only")
    return ExitCode.OK


def _file_specs(directory: Path) -> list[TriggerSpec]:
    if not directory.is_dir():
        raise CommandError(f"no workflow folder {directory}: pass --workflows DIR", ExitCode.USAGE)
    workflows = []
    for path in sorted(p for p in directory.iterdir() if p.suffix in WORKFLOW_SUFFIXES):
        result = validate_file(path)
        if result.workflow is not None:
            workflows.append((result.workflow, ""))
    return trigger_specs(workflows)


def run_send(args: argparse.Namespace) -> int:
    body = sys.stdin.read() if args.body == "-" else args.body
    if len(body.encode("utf-8")) > MAX_BODY_BYTES:
        raise CommandError("a message is at most 256 KiB", ExitCode.USAGE)
    database = open_database()
    with ConnectionPool(database.conninfo, min_size=1, max_size=1, open=True) as pool:
        try:
            message_id = TriggerStore(pool).send(args.queue, body)
        except ValueError as exc:
            raise CommandError(str(exc), ExitCode.USAGE) from None
    print(json.dumps({"message_id": message_id, "queue": args.queue}))
    return ExitCode.OK


class _NoEngine:
    """`triggers list` starts nothing."""

    def start_execution(
        self, machine_arn: str, name: str, data: object, options: dict[str, object]
    ) -> str:
        raise RuntimeError("triggers list starts no runs")
