"""`switchyard engine start|stop|status` and `switchyard db migrate`.

The background engine runs the runs and the local triggers that need no HTTP server: it fires the
schedules and reads the queues of the workflows installed in its database (docs/triggers.md).
`engine start --workflows DIR` installs the workflow files of DIR first, as `switchyard dev`
does."""

from __future__ import annotations

import argparse
import os
import signal
import time
from pathlib import Path

import psycopg

from switchyard.cli.common import CommandError, say
from switchyard.cli.exit_codes import ExitCode
from switchyard.engine.ownership import Ownership
from switchyard.local.database import data_dir, open_database
from switchyard.local.engine_client import engine_running, start_background_engine
from switchyard.stores.migrate import apply_migrations


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    engine = commands.add_parser(
        "engine", help="run the engine in the background, stop it, or see it"
    )
    sub = engine.add_subparsers(title="subcommands", metavar="SUBCOMMAND", required=True)
    start = sub.add_parser(
        "start",
        help="start a background engine",
        description="Start the engine in the background. It runs the runs, fires the schedules "
        "and reads the queues of the workflows installed in its database; webhooks and "
        "EventBridge events need switchyard dev, which serves HTTP.",
    )
    start.add_argument(
        "--workflows",
        type=Path,
        metavar="DIR",
        help="install the workflow files of DIR first (their triggers go live)",
    )
    start.set_defaults(handler=_start)
    sub.add_parser("stop", help="stop the background engine").set_defaults(handler=_stop)
    sub.add_parser("status", help="whether an engine runs, and where").set_defaults(handler=_status)
    db = commands.add_parser("db", help="the state database")
    db_sub = db.add_subparsers(title="subcommands", metavar="SUBCOMMAND", required=True)
    db_sub.add_parser("migrate", help="bring the schema up to date").set_defaults(handler=_migrate)


def _start(args: argparse.Namespace) -> int:
    if args.workflows is not None and not args.workflows.is_dir():
        raise CommandError(f"--workflows {args.workflows}: no such directory")
    database = open_database()
    if args.workflows is not None:
        _install(database.conninfo, args.workflows)
    if engine_running(database.conninfo):
        say(
            "an engine already runs for this database (switchyard engine status); it serves "
            "the installed workflows' triggers"
        )
        return ExitCode.OK
    try:
        pid = start_background_engine(database.conninfo)
    except RuntimeError as exc:
        raise CommandError(str(exc), ExitCode.FAILED) from None
    say(f"engine started (pid {pid}); log: {data_dir() / 'engine.log'}")
    say("it fires schedules and reads queues: switchyard triggers list")
    return ExitCode.OK


def _install(conninfo: str, directory: Path) -> None:
    """Install the workflow files of `directory`, as `switchyard dev --workflows` does; a file
    that does not install is reported and skipped."""
    from switchyard.api.catalog import install_directory
    from switchyard.engine.arns import Arns
    from switchyard.engine.store import EngineStore

    with psycopg.connect(conninfo, autocommit=True) as conn:
        catalog = install_directory(EngineStore(conn), Arns(), directory, report=say)
    names = ", ".join(f"{e.name} v{e.version}" for e in catalog.entries())
    say(f"installed {len(catalog)} workflow(s) from {directory}" + (f": {names}" if names else ""))


def _instances(conninfo: str) -> list[tuple[int, str, str | None]]:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid, host, sfn_url FROM engine_instances ORDER BY started_at"
        ).fetchall()
    return [(int(r[0]), str(r[1]), r[2]) for r in rows]


def _stop(args: argparse.Namespace) -> int:
    database = open_database()
    stopped = False
    import socket

    for pid, host, _ in _instances(database.conninfo):
        if host != socket.gethostname():
            say(f"an engine runs on {host} (pid {pid}); stop it there")
            continue
        try:
            os.kill(pid, signal.SIGTERM)
            stopped = True
        except ProcessLookupError:
            continue
    deadline = time.monotonic() + 10
    while stopped and engine_running(database.conninfo) and time.monotonic() < deadline:
        time.sleep(0.1)
    say("engine stopped" if stopped else "no engine was running")
    return ExitCode.OK


def _status(args: argparse.Namespace) -> int:
    database = open_database()
    owner = Ownership.owner_pid(database.conninfo)
    if owner is None:
        print(f"no engine is running · database: {database.description}")
        return ExitCode.FAILED
    for pid, host, sfn_url in _instances(database.conninfo):
        where = f" · Step Functions API at {sfn_url}" if sfn_url else ""
        print(f"engine running: pid {pid} on {host}{where} · database: {database.description}")
    return ExitCode.OK


def _migrate(args: argparse.Namespace) -> int:
    database = open_database(migrate=False)
    with psycopg.connect(database.conninfo) as conn:
        applied = apply_migrations(conn)
    say(f"applied migrations {applied}" if applied else "the schema is up to date")
    return ExitCode.OK
