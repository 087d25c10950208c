"""`switchyard runs list|show|reset`: the runs in the local database; `runs list --stuck` the
stuck ones (`switchyard.local.stuck`); `runs reset` in `switchyard.cli.reset_cmd`."""

from __future__ import annotations

import argparse
import json
from datetime import UTC

import psycopg

from switchyard.cli import reset_cmd
from switchyard.cli.common import CommandError, money
from switchyard.cli.exit_codes import ExitCode
from switchyard.constants import DEFAULT_STUCK_AFTER_SECONDS, STUCK_AFTER_ENV
from switchyard.local.database import open_database
from switchyard.local.report import RunNotFoundError, find_run, list_runs, run_view
from switchyard.local.stuck import StuckAfterError, Wait, stuck_after, stuck_runs
from switchyard.local.triggers.store import trigger_dead_letters

STATUSES = ("running", "waiting", "paused", "succeeded", "failed", "cancelled", "timed_out")


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "runs", help="list runs, show one, or reset one", description="Inspect runs."
    )
    sub = parser.add_subparsers(title="subcommands", metavar="SUBCOMMAND", required=True)
    listing = sub.add_parser("list", help="the latest runs")
    listing.add_argument("--status", choices=STATUSES)
    listing.add_argument("--limit", type=int, default=50)
    listing.add_argument(
        "--stuck",
        action="store_true",
        help="only runs with no transition for a while that wait on no gate or timer"
        f" (docs/runbooks.md); the threshold is {STUCK_AFTER_ENV} (default"
        f" {DEFAULT_STUCK_AFTER_SECONDS} s)",
    )
    listing.add_argument(
        "--stuck-after",
        metavar="DURATION",
        help="the threshold for --stuck (implies it): seconds, or 90s, 10m, 1h",
    )
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=run_list)
    show = sub.add_parser("show", help="one run: steps, costs, open gates")
    show.add_argument("run_id", metavar="RUN_ID", help="the run id (or the execution ARN)")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=run_show)
    reset_cmd.add_subparser(sub)


def run_list(args: argparse.Namespace) -> int:
    if args.stuck or args.stuck_after is not None:
        return _stuck_list(args)
    database = open_database()
    with psycopg.connect(database.conninfo, autocommit=True) as conn:
        runs = list_runs(conn, status=args.status, limit=args.limit)
        letters = trigger_dead_letters(conn)
    if args.json:
        print(json.dumps(runs, indent=2))
        return ExitCode.OK
    _print_dead_letters(letters)
    if not runs:
        print("no runs" + (f" with status {args.status}" if args.status else ""))
        return ExitCode.OK
    print(f"{'RUN':<32} {'WORKFLOW':<24} {'STATUS':<10} {'COST':>10}  STARTED")
    for run in runs:
        of = f"  (segment {run['segment']} of {run['logical_run_id']})" if "segment" in run else ""
        print(
            f"{run['run_id']:<32} {run['workflow'] + ' v' + str(run['version']):<24} "
            f"{run['status']:<10} {money(run['cost_usd']):>10}  {run['started_at']}{of}"
        )
    return ExitCode.OK


def _stuck_list(args: argparse.Namespace) -> int:
    try:
        after = stuck_after(args.stuck_after)
    except StuckAfterError as exc:
        raise CommandError(str(exc)) from None
    database = open_database()
    with psycopg.connect(database.conninfo, autocommit=True) as conn:
        runs = stuck_runs(conn, after_seconds=after, status=args.status, limit=args.limit)
    if args.json:
        print(json.dumps([run.to_json() for run in runs], indent=2))
        return ExitCode.OK
    if not runs:
        print(f"no stuck runs (threshold {after} s)")
        return ExitCode.OK
    print(f"{'RUN':<32} {'WORKFLOW':<24} {'STATUS':<10} {'IDLE':>9}  WAITING ON")
    for run in runs:
        workflow = f"{run.run['workflow']} v{run.run['version']}"
        print(
            f"{run.run['run_id']:<32} {workflow:<24} {run.run['status']:<10}"
            f" {_idle(run.idle_seconds):>9}  {', '.join(_wait(w) for w in run.waiting_on)}"
        )
    return ExitCode.OK


def _idle(seconds: float) -> str:
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {whole % 3600 // 60:02d}m"


def _wait(wait: Wait) -> str:
    where = wait.step or wait.state or ""
    if wait.kind == "sub_workflow":
        return f"sub-workflow {where} (run {wait.run_id})"
    if wait.kind == "timer":
        due = wait.due_at.astimezone(UTC) if wait.due_at else None
        return f"timer {where} (due {due:%Y-%m-%d %H:%M:%S} UTC)" if due else f"timer {where}"
    if wait.kind == "none":
        return "nothing in flight"
    return f"{wait.kind} {where}".rstrip()


def _print_dead_letters(letters: list[dict[str, object]]) -> None:
    """Trigger deliveries that started no run: they have no run row of their own."""
    for letter in letters:
        error = letter.get("error") or {}
        message = error.get("message", "") if isinstance(error, dict) else ""
        print(
            f"dead letter  {letter['trigger_key']} delivery {letter['delivery_id']}: "
            f"no run started ({message}); see switchyard triggers list --json"
        )


def run_show(args: argparse.Namespace) -> int:
    database = open_database()
    with psycopg.connect(database.conninfo, autocommit=True) as conn:
        try:
            execution_id, _ = find_run(conn, args.run_id)
        except RunNotFoundError as exc:
            raise CommandError(str(exc), ExitCode.FAILED) from None
        view = run_view(conn, execution_id)
    data = view.data
    if args.json:
        print(json.dumps(data, indent=2, default=str))
        return ExitCode.OK
    print(f"run {data['run_id']}: {data['workflow']} v{data['version']} · {data['status']}")
    print(
        f"  cost {money(data['cost_usd'])} · tokens"
        f" {data['tokens']['input']:,}→{data['tokens']['output']:,}"
    )
    segments = data.get("segments") or []
    if segments:
        print(f"  {len(segments)} segments (the run continued as new):")
    for segment in segments:
        print(
            f"    #{segment['segment']:<3} {segment['run_id']:<28} {segment['status']:<10}"
            f" {money(segment['cost_usd']):>9}"
        )
    for step_id, step in data["steps"].items():
        replayed = f"  replayed from {step['replayed_from']}" if step.get("replayed_from") else ""
        print(
            f"  {step_id:<18} {step['status']:<10} attempts {step['attempts']:<2} "
            f"{money(step['cost_usd']):>9} "
            f" {step['tokens']['input']:,}→{step['tokens']['output']:,}{replayed}"
        )
    for waiting in data["waiting_for"]:
        print(
            f"  waiting: {waiting['step']} ({waiting['kind']})"
            f" for {waiting['assignee'] or 'an operator'}:"
            f" {waiting['message']}"
        )
    if data.get("error"):
        print(f"  error: {json.dumps(data['error'], default=str)}")
    if data.get("output") is not None:
        print(f"  output: {json.dumps(data['output'], default=str)}")
    return ExitCode.OK
