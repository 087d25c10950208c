"""The HTTP server of the REST API: the FastAPI app (`create_app`) served by uvicorn
(`switchyard.serving`), with the limits of `REST_LIMITS`, and its own connection pool.

The pool checks a connection before lending it (`ConnectionPool.check_connection`), so a
connection the database dropped (a restart, `pg_terminate_backend`) is replaced rather than
handed to a request. The log has the method, path, status and time of each request at DEBUG,
never a header, a query string or a body.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from fastapi import APIRouter, FastAPI
from psycopg_pool import ConnectionPool

from switchyard.api.app import create_app, error_body
from switchyard.api.catalog import WorkflowCatalog, install_directory
from switchyard.api.context import ApiContext, Health
from switchyard.api.scripts import ScriptDirectory
from switchyard.constants import SCRIPTS_DIR_ENV
from switchyard.engine.engine import Engine
from switchyard.serving import Limits
from switchyard.serving.server import HttpServer, serving_in_thread

log = logging.getLogger("switchyard.api")

DEFAULT_PORT = 8080
REST_LIMITS = Limits(max_body=1024 * 1024)
"""A run's input is at most 256 KiB on Step Functions; 1 MiB leaves room for the JSON around it."""
POOL_SIZE = 8
POOL_NAME = "switchyard-rest-api"
"""The pool's name, and its connections' `application_name` in `pg_stat_activity`."""

Feature = Callable[[FastAPI, ApiContext, str], "Callable[[], None] | None"]
"""A part of the local stack that mounts its routes once the API's context exists and the server
is bound (the argument after the context is the server's own URL); it returns what closes it, if
anything (the dashboard's live feed), run when the server closes, before the context."""


class RestApiServer(HttpServer):
    """The REST API bound to its address; `app` is the FastAPI app, `context` what it serves."""

    def __init__(
        self, address: tuple[str, int], app: FastAPI, context: ApiContext, limits: Limits
    ) -> None:
        self.context = context
        self.closers: list[Callable[[], None]] = []
        super().__init__(
            app,
            address[0],
            address[1],
            limits=limits,
            error_body=error_body,
            on_close=self._close_parts,
        )

    def _close_parts(self) -> None:
        try:
            for close in reversed(self.closers):
                close()
        finally:
            self.context.close()


def scripts_directory(
    workflows_dir: Path | None, scripts_dir: Path | None
) -> ScriptDirectory | None:
    """Where request-named model scripts are read from: `scripts_dir`, else SWITCHYARD_SCRIPTS_DIR,
    else the workflows directory's `scripts/`; None when there is none of these."""
    chosen = scripts_dir or (
        Path(os.environ[SCRIPTS_DIR_ENV]) if os.environ.get(SCRIPTS_DIR_ENV) else None
    )
    if chosen is None and workflows_dir is not None:
        chosen = workflows_dir / "scripts"
    return ScriptDirectory(chosen) if chosen is not None else None


def serve_rest_api(
    engine: Engine,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    *,
    workflows_dir: Path | None = None,
    scripts_dir: Path | None = None,
    token: str | None = None,
    report: Callable[[str], None] | None = None,
    routers: Iterable[APIRouter] = (),
    features: Iterable[Feature] = (),
    health: Health | None = None,
    limits: Limits = REST_LIMITS,
) -> RestApiServer:
    """Install the workflows of `workflows_dir` into a started engine and bind the REST API;
    the caller runs `serve_forever()` and, to stop, `shutdown()` then `server_close()`. Port 0
    takes a free port. `token`: the bearer token every request but `/healthz` must carry;
    `routers`: more routes on the same server; `features`: parts that mount themselves once the
    server is bound (`Feature`); `health`: what `/healthz` reports (default: the API's pool
    reaches the database)."""
    catalog = WorkflowCatalog()
    if workflows_dir is not None:
        with engine.read() as store:
            if report is None:
                catalog = install_directory(store, engine.arns, workflows_dir)
            else:
                catalog = install_directory(store, engine.arns, workflows_dir, report=report)
    pool = ConnectionPool(
        engine.conninfo,
        min_size=1,
        max_size=POOL_SIZE,
        open=True,
        kwargs={"autocommit": True, "application_name": POOL_NAME},
        check=ConnectionPool.check_connection,
        name=POOL_NAME,
    )
    context = ApiContext(
        engine, pool, catalog, scripts=scripts_directory(workflows_dir, scripts_dir), health=health
    )
    try:
        app = create_app(context, token=token, routers=routers)
        server = RestApiServer((host, port), app, context, limits)
    except BaseException:
        context.close()
        raise
    try:
        for feature in features:
            close = feature(app, context, server.url)
            if close is not None:
                server.closers.append(close)
    except BaseException:
        server.server_close()
        raise
    return server


@contextmanager
def rest_api_in_thread(
    engine: Engine,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    workflows_dir: Path | None = None,
    scripts_dir: Path | None = None,
    token: str | None = None,
    report: Callable[[str], None] | None = None,
    routers: Iterable[APIRouter] = (),
    features: Iterable[Feature] = (),
    health: Health | None = None,
    limits: Limits = REST_LIMITS,
) -> Iterator[RestApiServer]:
    """The API served from a background thread while the block runs (tests, notebooks)."""
    server = serve_rest_api(
        engine,
        host,
        port,
        workflows_dir=workflows_dir,
        scripts_dir=scripts_dir,
        token=token,
        report=report,
        routers=routers,
        features=features,
        health=health,
        limits=limits,
    )
    with serving_in_thread(server, "switchyard-rest-api") as serving:
        yield serving
