"""`switchyard approve|reject|resume|cancel`: decide an open gate, or act on a run (the work is
`switchyard.local.run_actions`, which the REST API calls too)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from psycopg_pool import ConnectionPool

from switchyard.cli.common import CommandError, read_json_argument, say
from switchyard.cli.exit_codes import ExitCode
from switchyard.gates import Decision, Gate, GateDecisionError
from switchyard.local.database import open_database
from switchyard.local.engine_client import ensure_engine
from switchyard.local.report import RunNotFoundError
from switchyard.local.run_actions import (
    NoOpenGateError,
    RunEndedError,
    RunRef,
    cancel_run,
    decide_gate,
    locate_run,
    open_gate_for,
    resume_run,
)


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


@contextmanager
def _run(run_id: str) -> Iterator[tuple[str, ConnectionPool, RunRef]]:
    database = open_database()
    with ConnectionPool(
        database.conninfo, min_size=1, max_size=2, kwargs={"autocommit": True}
    ) as pool:
        with pool.connection() as conn:
            try:
                run = locate_run(conn, run_id)
            except RunNotFoundError as exc:
                raise CommandError(str(exc), ExitCode.FAILED) from None
        yield database.conninfo, pool, run


def _open_gate(pool: ConnectionPool, run: RunRef, action: str, step: str | None) -> Gate:
    try:
        return open_gate_for(pool, run, action, step)
    except NoOpenGateError as exc:
        raise CommandError(str(exc), ExitCode.FAILED) from None


def _gate(args: argparse.Namespace, action: str) -> int:
    edits: Any = read_json_argument(getattr(args, "edit", None), "--edit") or {}
    if not isinstance(edits, dict):
        raise CommandError("--edit takes a JSON object of field: new value")
    decision = Decision(action, args.reviewer, note=args.note, edits=edits)  # type: ignore[arg-type]
    with _run(args.run_id) as (conninfo, pool, run):
        gate = _open_gate(pool, run, action, args.step)
        try:
            decide_gate(gate, decision, pool=pool, callbacks=ensure_engine(conninfo))
        except GateDecisionError as exc:
            raise CommandError(str(exc), ExitCode.FAILED) from None
    say(f"{'approved' if action == 'approve' else 'rejected'} {args.step} of {args.run_id}")
    return ExitCode.OK


def _resume(args: argparse.Namespace) -> int:
    with _run(args.run_id) as (conninfo, pool, run):
        gate = _open_gate(pool, run, "resume", None)
        try:
            raised = resume_run(
                run,
                gate,
                reviewer=args.reviewer,
                pool=pool,
                callbacks=ensure_engine(conninfo),
                raise_budget_usd=args.raise_budget,
            )
        except GateDecisionError as exc:
            raise CommandError(str(exc), ExitCode.FAILED) from None
    if raised is not None:
        say(
            f"  raised {raised.scope} by ${args.raise_budget}"
            if raised.scope
            else f"  {raised.why_not}"
        )
    say(f"resumed {args.run_id}")
    return ExitCode.OK


def _cancel(args: argparse.Namespace) -> int:
    with _run(args.run_id) as (conninfo, pool, run):
        try:
            cancel_run(
                run,
                pool=pool,
                callbacks=ensure_engine(conninfo),
                note=args.note or "cancelled from the command line",
                reviewer=os.environ.get("USER", "cli"),
            )
        except (RunEndedError, GateDecisionError) as exc:
            raise CommandError(str(exc), ExitCode.FAILED) from None
    say(f"cancelled {args.run_id}")
    return ExitCode.OK
