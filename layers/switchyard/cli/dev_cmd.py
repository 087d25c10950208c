"""`switchyard dev`: the local stack in the foreground: the engine, the Step Functions API on
--sfn-port, and the REST API on --port (docs/api.md), with the workflows of --workflows DIR
installed."""

from __future__ import annotations

import argparse
import os
import signal
import threading
from pathlib import Path
from typing import Any

from switchyard.cli.common import CommandError, say
from switchyard.cli.exit_codes import ExitCode
from switchyard.constants import API_TOKEN_ENV, PUBLIC_URL_ENV, SCRIPTS_DIR_ENV, SMTP_URL_ENV
from switchyard.engine.engine import Engine
from switchyard.local.database import open_database
from switchyard.local.triggers.runtime import LocalTriggers

DEFAULT_WORKFLOWS = Path("workflows")


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "dev",
        help="run the local stack: engine, REST API and the Step Functions API",
        description="Run the engine in the foreground, with the REST API on --port (docs/api.md) "
        "and the Step Functions JSON API on --sfn-port (for boto3 endpoint_url= and the AWS "
        f"CLI). With {API_TOKEN_ENV} set, REST requests must carry "
        "'Authorization: Bearer <token>'.",
    )
    parser.add_argument(
        "--port", type=int, default=8080, help="REST API (default 8080; 0 takes a free port)"
    )
    parser.add_argument(
        "--sfn-port", type=int, default=8083, help="Step Functions API (default 8083)"
    )
    parser.add_argument(
        "--events-port",
        type=int,
        default=8084,
        help="EventBridge PutEvents for event triggers, on 127.0.0.1 (default 8084)",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address of the REST API (default 127.0.0.1: this machine only); the Step "
        "Functions API stays on 127.0.0.1 (SigV4-checked when SWITCHYARD_SFN_ACCESS_KEY_ID and "
        "SWITCHYARD_SFN_SECRET_ACCESS_KEY are set)",
    )
    parser.add_argument(
        "--workflows",
        type=Path,
        metavar="DIR",
        help="install the workflow files of DIR and serve them (default ./workflows if it exists)",
    )
    parser.add_argument(
        "--scripts",
        type=Path,
        metavar="DIR",
        help="the only directory X-Switchyard-LLM-Script may name model scripts in (default "
        f"{SCRIPTS_DIR_ENV}, else the workflows directory's scripts/)",
    )
    # --- approvals (docs/approvals.md) ---
    parser.add_argument(
        "--public-url",
        default=os.environ.get(PUBLIC_URL_ENV) or None,
        metavar="URL",
        help=f"base of the approval links people receive (default ${PUBLIC_URL_ENV}, else this "
        "server's own address)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    workflows_dir = _workflows_dir(args.workflows)
    if args.scripts is not None and not args.scripts.is_dir():
        raise CommandError(f"--scripts {args.scripts}: no such directory")
    token = os.environ.get(API_TOKEN_ENV) or None
    database = open_database()
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())

    triggers: LocalTriggers | None = None

    def rest_api(engine: Engine) -> Any:
        from switchyard.api import serve_rest_api

        nonlocal triggers
        triggers = LocalTriggers(engine)  # docs/triggers.md
        features = [stack.approvals(args.public_url), stack.dashboard(token)]
        if workflows_dir is not None:
            features.append(stack.builder(workflows_dir))
        return serve_rest_api(
            engine,
            args.host,
            args.port,
            workflows_dir=workflows_dir,
            scripts_dir=args.scripts,
            token=token,
            routers=[triggers.router],
            features=features,
            health=lambda: engine.healthy,
        )

    from switchyard.local import stack

    process = stack.engine_process(
        database.conninfo, sfn_port=args.sfn_port, extra_servers=[rest_api]
    )
    say(f"waiting for the engine lock of {database.description} …")
    try:
        started = process.start(wait=True, stop=stop)
    except OSError as exc:  # a port in use
        process.close()
        raise CommandError(f"cannot serve: {exc.strerror or exc}", ExitCode.FAILED) from None
    if not started:
        return ExitCode.OK
    api = process.servers[-1]
    _approval_links(args.public_url or api.url)
    assert triggers is not None
    try:
        triggers.start(base_url=api.url, events_port=args.events_port)
    except OSError as exc:
        triggers.close()
        process.close()
        raise CommandError(f"cannot serve events: {exc}", ExitCode.FAILED) from None
    served = (
        f"{len(api.context.catalog)} workflow(s) from {workflows_dir}"
        if workflows_dir
        else "no workflows directory"
    )
    say(f"REST API: {api.url} · {served}" + (" · bearer token required" if token else ""))
    scripts = api.context.scripts
    if scripts is not None:
        say(f"model scripts (X-Switchyard-LLM-Script): {scripts.root}")
    say(f"dashboard: {api.url}/ui/ · builder: {api.url}/ui/builder")
    say(f"Step Functions API: {process.sfn_url}")
    say(f"EventBridge PutEvents: {triggers.events_url}")
    say("engine running · Ctrl-C stops")
    try:
        stop.wait()
    finally:
        triggers.close()
        process.close()
    return ExitCode.OK


def _workflows_dir(given: Path | None) -> Path | None:
    if given is None:
        return DEFAULT_WORKFLOWS if DEFAULT_WORKFLOWS.is_dir() else None
    if not given.is_dir():
        raise CommandError(f"--workflows {given}: no such directory")
    return given


def _approval_links(public_url: str) -> None:
    """Links (`waiting_for[].approve_url`, e-mail, Slack) point at `public_url`; without SMTP,
    each person's link is printed here, as nobody would receive it otherwise."""
    from switchyard.approvals import print_links_to

    os.environ[PUBLIC_URL_ENV] = public_url.rstrip("/")
    if not os.environ.get(SMTP_URL_ENV):
        print_links_to(say)
        say(f"approval links: {public_url} (no {SMTP_URL_ENV}: each link is printed here)")
