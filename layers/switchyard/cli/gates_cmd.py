"""`switchyard approve|reject|resume|cancel`: decide an open gate, or act on a run."""

from __future__ import annotations

import argparse
import os
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from switchyard.cli.common import CommandError, read_json_argument, say
from switchyard.cli.exit_codes import ExitCode
from switchyard.gates import Decision, GateDecisionError, GateStore, Roles, decide
from switchyard.local.database import open_database
from switchyard.local.engine_client import ensure_engine
from switchyard.local.report import RunNotFoundError, find_run
from switchyard.stores.tool_calls import PostgresDecisionStore


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    reviewer = os.environ.get("USER", "cli")
    approve = commands.add_parser("approve", help="approve an open gate of a run")
    approve.add_argument("run_id", metavar="RUN_ID")
    approve.add_argument("step", metavar="STEP")
    approve.add_argument("--note")
    approve.add_argument(
        "--edit",
        metavar="JSON|@FILE",
        help="new values of shown fields (or a tool call's arguments)",
    )
    approve.add_argument("--reviewer", default=reviewer)
    approve.set_defaults(handler=lambda a: _gate(a, "approve"))
    reject = commands.add_parser("reject", help="reject an open gate of a run")
    reject.add_argument("run_id", metavar="RUN_ID")
    reject.add_argument("step", metavar="STEP")
    reject.add_argument("--note")
    reject.add_argument("--reviewer", default=reviewer)
    reject.set_defaults(handler=lambda a: _gate(a, "reject"))
    resume = commands.add_parser("resume", help="resume a paused run (the paused step runs again)")
    resume.add_argument("run_id", metavar="RUN_ID")
    resume.add_argument(
        "--raise-budget", type=float, metavar="USD", help="raise the run's budget by USD first"
    )
    resume.add_argument("--reviewer", default=reviewer)
    resume.set_defaults(handler=_resume)
    cancel = commands.add_parser("cancel", help="cancel a run")
    cancel.add_argument("run_id", metavar="RUN_ID")
    cancel.add_argument("--note")
    cancel.set_defaults(handler=_cancel)


def _open(args: argparse.Namespace) -> tuple[str, str]:
    database = open_database()
    with psycopg.connect(database.conninfo, autocommit=True) as conn:
        try:
            _, arn = find_run(conn, args.run_id)
        except RunNotFoundError as exc:
            raise CommandError(str(exc), ExitCode.FAILED) from None
    return database.conninfo, arn


def _decide(
    conninfo: str, run_id: str, step: str | None, decision: Decision, kinds: tuple[str, ...]
) -> None:
    with ConnectionPool(conninfo, min_size=1, max_size=2, kwargs={"autocommit": True}) as pool:
        store = GateStore(pool)
        with pool.connection() as conn:
            row = conn.execute(
                "SELECT run_id FROM workflow_runs r JOIN sfn_executions e ON e.id ="
                " r.execution_id WHERE r.run_id = %s OR e.arn = %s",
                (run_id, run_id),
            ).fetchone()
        name = str(row[0]) if row else run_id
        gates = [g for g in store.open_for(name, step) if g.kind in kinds]
        if not gates:
            where = f" at {step}" if step else ""
            raise CommandError(
                f"run {run_id} has no open {'/'.join(kinds)} gate{where}", ExitCode.FAILED
            )
        client = ensure_engine(conninfo)
        try:
            decide(
                gates[-1],
                decision,
                store=store,
                callbacks=client,
                roles=Roles.from_env(),
                decisions=PostgresDecisionStore(pool),
            )
        except GateDecisionError as exc:
            raise CommandError(str(exc), ExitCode.FAILED) from None


def _gate(args: argparse.Namespace, action: str) -> int:
    conninfo, _ = _open(args)
    edits: Any = read_json_argument(getattr(args, "edit", None), "--edit") or {}
    if not isinstance(edits, dict):
        raise CommandError("--edit takes a JSON object of field: new value")
    decision = Decision(action, args.reviewer, note=args.note, edits=edits)  # type: ignore[arg-type]
    _decide(conninfo, args.run_id, args.step, decision, ("approval", "human"))
    say(f"{'approved' if action == 'approve' else 'rejected'} {args.step} of {args.run_id}")
    return ExitCode.OK


def _resume(args: argparse.Namespace) -> int:
    conninfo, _ = _open(args)
    if args.raise_budget:
        _raise_budget(conninfo, args.run_id, args.raise_budget)
    _decide(conninfo, args.run_id, None, Decision("resume", args.reviewer), ("pause", "budget"))
    say(f"resumed {args.run_id}")
    return ExitCode.OK


def _raise_budget(conninfo: str, run_id: str, usd: float) -> None:
    from switchyard.runtime.models_catalog import to_micros

    with psycopg.connect(conninfo, autocommit=True) as conn:
        updated = conn.execute(
            "UPDATE budget_scopes SET limit_micros = COALESCE(limit_micros, 0) + %s WHERE scope ="
            " %s",
            (to_micros(str(usd)), f"run:{run_id}"),
        ).rowcount
    if not updated:
        say(f"  the run has no budget scope yet; nothing to raise (run:{run_id})")


def _cancel(args: argparse.Namespace) -> int:
    conninfo, arn = _open(args)
    client = ensure_engine(conninfo)
    client.stop(arn, "cancelled", args.note or "cancelled from the command line")
    say(f"cancelled {args.run_id}")
    return ExitCode.OK
