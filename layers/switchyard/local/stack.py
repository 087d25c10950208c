"""Where the local stack is assembled: the engine with switchyard's hooks (`local_engine`,
`engine_process`, `serve_engine`), and the parts `switchyard dev` serves beside the REST API, each
a `switchyard.api.server.Feature`: the approval pages and Slack route (docs/approvals.md), the
dashboard (docs/dashboard.md), the builder (docs/builder.md) and the webhook and queue routes of
the local triggers (docs/triggers.md). The engine and the library's features know nothing of each
other; this module wires them together."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from switchyard.api.context import ApiContext
from switchyard.api.server import Feature
from switchyard.constants import PUBLIC_URL_ENV
from switchyard.engine import serve
from switchyard.engine.engine import Engine
from switchyard.engine.hooks import EngineHooks, HookChain
from switchyard.engine.serve import EngineProcess
from switchyard.local.engine_client import FunctionTokens
from switchyard.local.engine_hooks import CallsInProgress, ScriptedAnswers
from switchyard.records.engine_hooks import RunRecordHooks
from switchyard.runtime.wiring import serve_task_tokens

if TYPE_CHECKING:
    from fastapi import FastAPI


def switchyard_hooks() -> EngineHooks:
    """What switchyard adds to the engine: run records, model scripts, calls let go on
    recovery. The functions the engine runs in this process answer task tokens themselves (a
    reset run's replayed gate) through its command queue (`FunctionTokens`)."""
    serve_task_tokens(FunctionTokens())
    return HookChain(RunRecordHooks(), ScriptedAnswers(), CallsInProgress())


def local_engine(conninfo: str, **options: Any) -> Engine:
    """The engine with switchyard's hooks; `options` as `Engine` takes them."""
    return Engine(conninfo, hooks=switchyard_hooks(), **options)


def engine_process(conninfo: str, **options: Any) -> EngineProcess:
    """The engine process with switchyard's hooks; `options` as `EngineProcess` takes them."""
    return EngineProcess(conninfo, hooks=switchyard_hooks(), **options)


def _open_database() -> str:
    from switchyard.local.database import open_database

    return open_database().conninfo  # the embedded server lives while this process does


def serve_engine(
    argv: list[str] | None = None,
    *,
    extra_servers: list[Callable[[Engine], Any]] | None = None,
    prog: str = "python -m switchyard.local.serve",
) -> int:
    """The local engine as a process (`switchyard.engine.serve.main` with switchyard's hooks,
    and the embedded database when no other is given)."""
    return serve.main(
        argv,
        extra_servers=extra_servers,
        hooks=switchyard_hooks(),
        database=_open_database,
        prog=prog,
    )


def approvals(public_url: str | None) -> Feature:
    """`/approvals/<token>`, `GET /approvals` and `/slack/interactions`; links are based on
    `public_url`, else on the server's own URL. Link paths are kept out of the access log and
    out of the API's."""

    def mount(app: FastAPI, context: ApiContext, url: str) -> None:
        from switchyard.approvals import ApprovalSettings, LinkPathFilter, build_approvals_router
        from switchyard.local.engine_client import EngineCommands

        os.environ[PUBLIC_URL_ENV] = (public_url or url).rstrip("/")
        settings = ApprovalSettings.from_env(context.pool)
        app.include_router(
            build_approvals_router(context.pool, EngineCommands(context.engine), settings=settings)
        )
        for name in ("uvicorn.access", "switchyard.api"):  # the API logs failed requests' paths
            logging.getLogger(name).addFilter(LinkPathFilter())

    return mount


def dashboard(token: str | None) -> Feature:
    """`/ui/...`, its data API and live stream, and `/` redirecting to `/ui/`."""

    def mount(app: FastAPI, context: ApiContext, url: str) -> Callable[[], None]:
        from switchyard.dashboard import mount_dashboard

        return mount_dashboard(app, context, token=token).close

    return mount


def builder(workflows_dir: Path) -> Feature:
    """`/workflows/<name>/source`, `/validate`, `/compile` and install, over `workflows_dir`."""

    def mount(app: FastAPI, context: ApiContext, url: str) -> None:
        from switchyard.builder import builder_router

        app.include_router(builder_router(workflows_dir))

    return mount
