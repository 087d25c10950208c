"""The parts `switchyard dev` serves beside the REST API, each a `switchyard.api.server.Feature`:
the approval pages and Slack route (docs/approvals.md), the dashboard (docs/dashboard.md), the
builder (docs/builder.md) and the webhook and queue routes of the local triggers
(docs/triggers.md). The library's features know nothing of each other; this module is where the
local stack is assembled."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from fastapi import FastAPI

from switchyard.api.context import ApiContext
from switchyard.api.server import Feature
from switchyard.constants import PUBLIC_URL_ENV


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
