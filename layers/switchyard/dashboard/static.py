"""The built web app (`web/dist`, made by `npm ci && npm run build` in `web/`) served at `/ui/`:
hashed assets cached for good, `/ui` and every other `/ui/...` path answered with `index.html`
(the app's router draws the page), and `/` sent to `/ui/`. The routes are `PUBLIC` to the REST
app's token check: the pages hold no data."""

from __future__ import annotations

import os
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, PlainTextResponse, RedirectResponse, Response
from starlette.staticfiles import StaticFiles

from switchyard.api.routing import PUBLIC

WEB_DIR_ENV = "SWITCHYARD_WEB_DIR"
"""Where the built app is; default: `web/dist` of the source tree this library is in."""


def default_web_dir() -> Path:
    configured = os.environ.get(WEB_DIR_ENV)
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parents[3] / "web" / "dist"


def mount_static(app: FastAPI, web_dir: Path | None = None) -> None:
    root = (web_dir or default_web_dir()).resolve()
    index = root / "index.html"
    missing = (
        f"The dashboard is not built: run `make setup` (or `npm ci && npm run build` in web/);"
        f" looked for {index}.\n"
    )

    async def to_ui() -> Response:
        return RedirectResponse("/ui/", status_code=307)

    async def page(path: str = "") -> Response:
        if not index.is_file():
            return PlainTextResponse(missing, status_code=503)
        # a file at the top of dist (favicon.svg) as itself; any other path is a page of the app
        if path and "/" not in path and "\x00" not in path:
            candidate = (root / path).resolve()
            if candidate.parent == root and candidate.is_file():
                return FileResponse(candidate)
        return FileResponse(index, headers={"Cache-Control": "no-cache"})

    public = {"include_in_schema": False, "openapi_extra": PUBLIC, "methods": ["GET", "HEAD"]}
    app.add_api_route("/", to_ui, **public)  # type: ignore[arg-type]
    # `/ui` too: the REST app strips a trailing slash before routing (`/ui/` arrives as `/ui`)
    app.add_api_route("/ui", page, **public)  # type: ignore[arg-type]
    assets = root / "assets"
    app.mount(
        "/ui/assets",
        _ImmutableFiles(directory=assets, check_dir=False),
        name="dashboard-assets",
    )
    app.add_api_route("/ui/", page, **public)  # type: ignore[arg-type]
    app.add_api_route("/ui/{path:path}", page, **public)  # type: ignore[arg-type]


class _ImmutableFiles(StaticFiles):
    """Vite names each asset by its content's hash: a browser may keep it for good."""

    def file_response(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        response = super().file_response(*args, **kwargs)
        response.headers["Cache-Control"] = "public, max-age=31536000, immutable"
        return response
