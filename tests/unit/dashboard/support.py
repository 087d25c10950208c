"""The dashboard in front of a real engine: the REST API's test bed (`tests.unit.api.support`:
engine, step functions, scripted models, REST API) plus a second REST app on the same context
(`create_app`, as `switchyard dev` makes it) with the dashboard mounted, served by the project's
HTTP server on a free port of 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from fastapi import FastAPI

from switchyard.api.app import create_app, error_body
from switchyard.api.server import REST_LIMITS
from switchyard.dashboard import Dashboard, mount_dashboard
from switchyard.serving.server import HttpServer, serving_in_thread
from tests.unit.api.support import Stack, start_stack

WEB_DIST = Path(__file__).resolve().parents[3] / "web" / "dist"


@dataclass
class DashboardStack:
    stack: Stack
    dashboard: Dashboard
    url: str

    def client(self, **headers: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def rest(self) -> httpx.Client:
        return self.stack.client()


@contextmanager
def serve(app: FastAPI, dashboard: Dashboard) -> Iterator[str]:
    """`app` on a free port; the dashboard's streams end first, so that the server stops at once."""
    server = HttpServer(app, "127.0.0.1", 0, limits=REST_LIMITS, error_body=error_body)
    with serving_in_thread(server, "dashboard-test-server"):
        try:
            yield server.url
        finally:
            dashboard.close()


@contextmanager
def start_dashboard(
    conninfo: str, root: Path, *, token: str | None = None
) -> Iterator[DashboardStack]:
    if not (WEB_DIST / "index.html").is_file():
        raise RuntimeError(
            f"{WEB_DIST} is not built: `make setup` builds it (npm ci && npm run build in web/)"
        )
    with start_stack(conninfo, root) as stack:
        app = create_app(stack.server.context, token=token)
        dashboard = mount_dashboard(app, stack.server.context, token=token, web_dir=WEB_DIST)
        with serve(app, dashboard) as url:
            yield DashboardStack(stack, dashboard, url)
