"""The dashboard in front of a real engine: the REST API's test bed (`tests.unit.api.support`:
engine, step functions, scripted models, REST API) plus a FastAPI app with the dashboard mounted,
served by uvicorn on a free port of 127.0.0.1."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import uvicorn
from fastapi import FastAPI

from switchyard.dashboard import Dashboard, mount_dashboard
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
def serve(app: FastAPI) -> Iterator[str]:
    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=0, log_level="warning", timeout_graceful_shutdown=2
        )
    )
    thread = threading.Thread(target=server.run, name="dashboard-test-server", daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        threading.Event().wait(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def start_dashboard(
    conninfo: str, root: Path, *, token: str | None = None
) -> Iterator[DashboardStack]:
    if not (WEB_DIST / "index.html").is_file():
        raise RuntimeError(
            f"{WEB_DIST} is not built: `make setup` builds it (npm ci && npm run build in web/)"
        )
    with start_stack(conninfo, root) as stack:
        app = FastAPI()
        dashboard = mount_dashboard(app, stack.server.api.context, token=token, web_dir=WEB_DIST)
        try:
            with serve(app) as url:
                yield DashboardStack(stack, dashboard, url)
        finally:
            dashboard.close()
