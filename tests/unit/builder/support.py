"""The builder in front of a real engine: the REST API's test bed (engine on PostgreSQL, the
example workflows installed) and a REST app on the same context with the builder's routes and
the dashboard's web app mounted, as `switchyard dev` serves them, on a free port."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from switchyard.api.app import create_app
from switchyard.builder import builder_router
from switchyard.dashboard import mount_dashboard
from tests.conftest import WORKFLOWS
from tests.unit.api.support import Stack, start_stack
from tests.unit.dashboard.support import WEB_DIST, serve

TOKEN = "builder-test-token"
EXAMPLES = WORKFLOWS


@dataclass
class BuilderStack:
    stack: Stack
    url: str
    workflows: Path

    def client(self, *, token: str | None = TOKEN) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


@contextmanager
def start_builder(conninfo: str, root: Path) -> Iterator[BuilderStack]:
    with start_stack(conninfo, root, token=TOKEN) as stack:
        workflows = root / "workflows"
        for example in sorted(EXAMPLES.glob("*.yaml")):  # every example, as the builder opens them
            shutil.copy(example, workflows / example.name)
        context = stack.server.context
        app = create_app(context, token=TOKEN, routers=[builder_router(workflows)])
        dashboard = mount_dashboard(app, context, token=TOKEN, web_dir=WEB_DIST)
        with serve(app, dashboard) as url:
            yield BuilderStack(stack, url, workflows)
