"""docs/api.md lists exactly the endpoints the API routes."""

from __future__ import annotations

import re

from switchyard.api import ROUTES
from tests.conftest import REPO

_ROW = re.compile(r"^\| `(GET|POST|PUT|PATCH|DELETE) (/[^`\[? ]*)")


def test_the_endpoint_table_of_the_docs_is_the_router() -> None:
    text = (REPO / "docs" / "api.md").read_text()
    documented = {match.groups() for line in text.splitlines() if (match := _ROW.match(line))}
    assert documented == {(route.method, route.path) for route in ROUTES}
