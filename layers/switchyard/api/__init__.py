"""The REST API of the local stack, served by `switchyard dev` on `--port` (docs/api.md):
workflows, runs, gate decisions, resume and cancel, JSON in and out; `/openapi.json` describes it.

    engine = Engine(conninfo)
    engine.start()
    with rest_api_in_thread(engine, workflows_dir=Path("workflows")) as server:
        httpx.post(f"{server.url}/workflows/customer-support/runs", json={...})

`switchyard dev` binds it with `serve_rest_api(engine, host, port, ...)` as one of the engine
process's servers. `create_app(context, routers=[...])` is the FastAPI app apart from the server;
another feature's `APIRouter` joins it through `routers=` (docs/api.md, "Adding routes").
"""

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
