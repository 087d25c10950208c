"""HTTP serving for every switchyard server (the REST API, the Step Functions port, and the pages
and dashboard that come as routers): ASGI apps served by uvicorn, with the limits a server facing
hostile clients needs, in one place (docs/api.md, "Limits").

    server = HttpServer(app, host="127.0.0.1", port=0, limits=Limits(max_body=1 << 20))
    with serving_in_thread(server, "my-server"):
        httpx.get(server.url + "/healthz")
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
from switchyard.serving.server import HttpServer, serving_in_thread

__all__ = [
    "MAX_JSON_DEPTH",
    "HttpServer",
    "Limits",
    "UnholdableJsonError",
    "check_holdable",
    "holdable_text_problem",
    "loads_bounded",
    "loads_holdable",
    "serving_in_thread",
]
