"""HTTP serving for every switchyard server (the REST API, the Step Functions port, and the pages
and dashboard that come as routers): ASGI apps served by uvicorn, with the limits a server facing
hostile clients needs, in one place (docs/api.md, "Limits").

    from switchyard.serving.server import HttpServer, serving_in_thread

    server = HttpServer(app, host="127.0.0.1", port=0, limits=Limits(max_body=1 << 20))
    with serving_in_thread(server, "my-server"):
        httpx.get(server.url + "/healthz")

The package itself exports only what the routes need (JSON that PostgreSQL can hold, the limits),
so the same routes import on Lambda, where uvicorn is not shipped; the server is
`switchyard.serving.server`.
"""

from switchyard.serving.jsontext import (
    MAX_JSON_DEPTH,
    UnholdableJsonError,
    check_holdable,
    holdable_text_problem,
    loads_bounded,
    loads_holdable,
)
from switchyard.serving.limits import Limits

__all__ = [
    "MAX_JSON_DEPTH",
    "Limits",
    "UnholdableJsonError",
    "check_holdable",
    "holdable_text_problem",
    "loads_bounded",
    "loads_holdable",
]
