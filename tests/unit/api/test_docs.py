"""docs/api.md lists exactly the endpoints the API routes."""

from __future__ import annotations

import re

from fastapi.routing import APIRoute

from switchyard.api import API_ROUTERS
from switchyard.api.app import health_router
from tests.conftest import REPO

_ROW = re.compile(r"^\| `(GET|POST|PUT|PATCH|DELETE) (/[^`\[? ]*)")


def test_the_endpoint_table_of_the_docs_is_the_router() -> None:
    text = (REPO / "docs" / "api.md").read_text()
    documented = {match.groups() for line in text.splitlines() if (match := _ROW.match(line))}
    routed = {
        (method, route.path)
        for router in (health_router, *API_ROUTERS)
        for route in router.routes
        if isinstance(route, APIRoute)
        for method in route.methods
    }
    assert documented == routed
