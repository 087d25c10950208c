"""The REST API of the local stack, served by `switchyard dev` on `--port` (docs/api.md):
workflows, runs, gate decisions, resume and cancel, JSON in and out; `/openapi.json` describes it.

    engine = Engine(conninfo)
    engine.start()
    with rest_api_in_thread(engine, workflows_dir=Path("workflows")) as server:
        httpx.post(f"{server.url}/workflows/customer-support/runs", json={...})

`switchyard dev` binds it with `serve_rest_api(engine, host, port, ...)` as one of the engine
process's servers. `create_app(context, routers=[...])` is the FastAPI app apart from the server;
another feature's `APIRouter` joins it through `routers=` (docs/api.md, "Adding routes").

The names below are imported when first used: the operators' routes (`switchyard.api.operators`)
and the modules they use load on Lambda (approval_api), where the engine and the HTTP server
this package's other modules need are not installed.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from switchyard.api.app import API_ROUTERS, create_app
    from switchyard.api.catalog import WorkflowCatalog, install_directory
    from switchyard.api.context import ApiContext, Health
    from switchyard.api.errors import ApiError
    from switchyard.api.routing import PUBLIC, Context
    from switchyard.api.scripts import ScriptDirectory
    from switchyard.api.server import (
        DEFAULT_PORT,
        REST_LIMITS,
        RestApiServer,
        rest_api_in_thread,
        serve_rest_api,
    )

_WHERE = {
    "API_ROUTERS": "app",
    "create_app": "app",
    "WorkflowCatalog": "catalog",
    "install_directory": "catalog",
    "ApiContext": "context",
    "Health": "context",
    "ApiError": "errors",
    "PUBLIC": "routing",
    "Context": "routing",
    "ScriptDirectory": "scripts",
    "DEFAULT_PORT": "server",
    "REST_LIMITS": "server",
    "RestApiServer": "server",
    "rest_api_in_thread": "server",
    "serve_rest_api": "server",
}

__all__ = [
    "API_ROUTERS",
    "DEFAULT_PORT",
    "PUBLIC",
    "REST_LIMITS",
    "ApiContext",
    "ApiError",
    "Context",
    "Health",
    "RestApiServer",
    "ScriptDirectory",
    "WorkflowCatalog",
    "create_app",
    "install_directory",
    "rest_api_in_thread",
    "serve_rest_api",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
