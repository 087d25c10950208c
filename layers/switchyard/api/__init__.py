"""The REST API of the local stack, served by `switchyard dev` on `--port` (docs/api.md):
workflows, runs, gate decisions, resume and cancel, JSON in and out.

    engine = Engine(conninfo)
    engine.start()
    with rest_api_in_thread(engine, workflows_dir=Path("workflows")) as server:
        httpx.post(f"{server.url}/workflows/customer-support/runs", json={...})

`switchyard dev` binds it with `serve_rest_api(engine, host, port, ...)` as one of the engine
process's servers. `RestApi` is the API apart from HTTP; `RestApi.add_route` puts more pages on
the same server.
"""

from switchyard.api.app import ROUTES, RestApi
from switchyard.api.errors import ApiError
from switchyard.api.messages import Request, Response
from switchyard.api.routing import Route, Router
from switchyard.api.server import (
    DEFAULT_PORT,
    RestApiServer,
    rest_api_in_thread,
    serve_rest_api,
)
from switchyard.api.workflows import WorkflowCatalog, install_directory

__all__ = [
    "DEFAULT_PORT",
    "ROUTES",
    "ApiError",
    "Request",
    "Response",
    "RestApi",
    "RestApiServer",
    "Route",
    "Router",
    "WorkflowCatalog",
    "install_directory",
    "rest_api_in_thread",
    "serve_rest_api",
]
