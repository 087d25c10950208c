"""The live dashboard: a web app at `/ui/` over a JSON data API at `/api/dashboard`, pushed
changes as they commit (server-sent events fed by PostgreSQL LISTEN/NOTIFY).

    dashboard = mount_dashboard(app, context)   # a FastAPI app and the REST API's ApiContext
    ...
    dashboard.close()                           # before the pool closes: ends the live streams
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from switchyard.dashboard.live import LiveFeed
from switchyard.dashboard.routes import PREFIX, dashboard_router
from switchyard.dashboard.static import WEB_DIR_ENV, mount_static

if TYPE_CHECKING:
    from fastapi import FastAPI

    from switchyard.api.context import ApiContext

__all__ = ["PREFIX", "WEB_DIR_ENV", "Dashboard", "LiveFeed", "mount_dashboard"]


@dataclass
class Dashboard:
    feed: LiveFeed

    def close(self) -> None:
        self.feed.close()


def mount_dashboard(
    app: FastAPI,
    context: ApiContext,
    *,
    token: str | None = None,
    web_dir: Path | None = None,
) -> Dashboard:
    """Add the data API, the live stream, the web app's pages and the `/` redirect to `app`.
    `token`: the server's API token (SWITCHYARD_API_TOKEN), required by the data API when set."""
    feed = LiveFeed(context.engine.conninfo)
    app.include_router(dashboard_router(context, feed, token=token))
    mount_static(app, web_dir)
    return Dashboard(feed)
