"""`switchyard runs reset RUN_ID --to STEP [--version N] [--cancel] [--json]`: start a run again
from before STEP (`switchyard.local.reset`); the new run goes on in the background engine."""

from __future__ import annotations

import argparse
import json
import os

from psycopg_pool import ConnectionPool

from switchyard.cli.common import CommandError, say
from switchyard.cli.exit_codes import ExitCode
from switchyard.gates import GateDecisionError, TaskCallbacks
from switchyard.local.database import open_database
from switchyard.local.engine_client import EngineClient, ensure_engine
from switchyard.local.report import RunNotFoundError
from switchyard.local.reset import (
    ResetDone,
    ResetRequest,
    RunNotEndedError,
    UnknownStepError,
    UnknownVersionError,
    reset_run,
)
from switchyard.local.reset_sources import EngineResetSource
from switchyard.local.run_actions import FINAL_STATUSES, RunEndedError, locate_run


def add_subparser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    reset = sub.add_parser(
        "reset",
        help="start a run again from before one of its steps (docs/operations.md)",
        description="Start the run again as a new run, from before STEP: the steps before it"
        " replay their recorded results (their side effects do not run again), STEP and the"
        " steps after it run afresh, on the run's version or --version N.",
    )
    reset.add_argument("run_id", metavar="RUN_ID", help="the run id (or the execution ARN)")
    reset.add_argument("--to", required=True, metavar="STEP", help="the step to run afresh")
    reset.add_argument(
        "--version", type=int, metavar="N", help="the workflow version to run (default: the run's)"
    )
    reset.add_argument(
        "--cancel", action="store_true", help="cancel the run first if it has not ended"
    )
    reset.add_argument("--note")
    reset.add_argument("--json", action="store_true")
    reset.set_defaults(handler=run_reset)


def run_reset(args: argparse.Namespace) -> int:
    if args.version is not None and args.version < 1:
        raise CommandError(f"--version must be 1 or more, not {args.version}")
    database = open_database()
    engine: list[EngineClient] = []

    def started_engine() -> EngineClient:
        if not engine:
            engine.append(ensure_engine(database.conninfo))
        return engine[0]

    with ConnectionPool(
        database.conninfo, min_size=1, max_size=2, kwargs={"autocommit": True}
    ) as pool:
        with pool.connection() as conn:
            try:
                run = locate_run(conn, args.run_id)
            except RunNotFoundError as exc:
                raise CommandError(str(exc), ExitCode.FAILED) from None
        callbacks: TaskCallbacks | None = None
        if args.cancel and run.status not in FINAL_STATUSES:
            callbacks = started_engine()
        request = ResetRequest(
            args.to,
            version=args.version,
            cancel=args.cancel,
            reviewer=os.environ.get("USER", "cli"),
            note=args.note,
        )
        try:
            done = reset_run(
                run,
                request,
                source=EngineResetSource(pool, started_engine),
                pool=pool,
                callbacks=callbacks,
            )
        except (UnknownStepError, UnknownVersionError) as exc:
            raise CommandError(str(exc), ExitCode.USAGE) from None
        except (RunNotEndedError, RunEndedError, GateDecisionError) as exc:
            raise CommandError(str(exc), ExitCode.FAILED) from None
    _print(done, as_json=args.json)
    return ExitCode.OK


def _print(done: ResetDone, *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(done.to_json(), indent=2))
        return
    if done.cancelled_original:
        say(f"cancelled {done.reset_from}")
    say(f"reset {done.reset_from} to {done.to} as run {done.run_id} (v{done.version})")
    say(f"  replayed: {', '.join(done.reused) or 'nothing'}")
    say(f"  afresh:   {', '.join(done.fresh)}")
    say(f"  follow it: switchyard runs show {done.run_id}")
    print(done.run_id)
