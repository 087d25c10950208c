"""`switchyard dev`: the local stack in the foreground: the engine, the Step Functions API on
--sfn-port, and the REST API on --port."""

from __future__ import annotations

import argparse
import signal
import threading

from switchyard.cli.common import say
from switchyard.cli.exit_codes import ExitCode
from switchyard.engine.serve import EngineProcess
from switchyard.local.database import open_database


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "dev",
        help="run the local stack: engine, REST API and the Step Functions API",
        description="Run the engine in the foreground, with the Step Functions JSON API on "
        "--sfn-port (for boto3 endpoint_url= and the AWS CLI).",
    )
    parser.add_argument("--port", type=int, default=8080, help="REST API (default 8080)")
    parser.add_argument(
        "--sfn-port", type=int, default=8083, help="Step Functions API (default 8083)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    database = open_database()
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    process = EngineProcess(database.conninfo, sfn_port=args.sfn_port)
    say(f"waiting for the engine lock of {database.description} …")
    if not process.start(wait=True, stop=stop):
        return ExitCode.OK
    say(f"engine running · Step Functions API: {process.sfn_url} · Ctrl-C stops")
    try:
        stop.wait()
    finally:
        process.close()
    return ExitCode.OK
