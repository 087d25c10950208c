"""The router: routes are `METHOD /path/{param}/...`; a path that no route has is 404, a path
some route has under another method is 405 with an `Allow` header."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import unquote

from switchyard.api.errors import MethodNotAllowedError, NotFoundError
from switchyard.api.messages import Request, Response

if TYPE_CHECKING:
    from switchyard.api.context import ApiContext

Handler = Callable[["ApiContext", Request], Response]
_PARAM = re.compile(r"^\{([a-z_]+)\}$")


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    handler: Handler
    public: bool = False
    """Served without the API token (health checks; later, the signed approval pages)."""
    _pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        parts = []
        for segment in self.path.strip("/").split("/"):
            param = _PARAM.match(segment)
            parts.append(f"(?P<{param.group(1)}>[^/]+)" if param else re.escape(segment))
        object.__setattr__(self, "_pattern", re.compile("^/" + "/".join(parts) + "$"))

    def match(self, path: str) -> dict[str, str] | None:
        found = self._pattern.match(path)
        if found is None:
            return None
        return {name: unquote(value) for name, value in found.groupdict().items()}


class Router:
    def __init__(self, routes: Iterable[Route] = ()) -> None:
        self._routes: list[Route] = []
        for route in routes:
            self.add(route)

    def add(self, route: Route) -> None:
        if any(r.method == route.method and r.path == route.path for r in self._routes):
            raise ValueError(f"{route.method} {route.path} is routed twice")
        self._routes.append(route)

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]]:
        """The route of a request and its path parameters, or NotFoundError or
        MethodNotAllowedError."""
        path = path.rstrip("/") or "/"
        allowed: list[str] = []
        for route in self._routes:
            params = route.match(path)
            if params is None:
                continue
            if route.method == method or (method == "HEAD" and route.method == "GET"):
                return route, params  # HEAD: the server sends the GET answer's headers only
            allowed.append(route.method)
        if allowed:
            allow = ", ".join(sorted(set(allowed)))
            raise MethodNotAllowedError(
                f"{method} is not allowed on {path} (allowed: {allow})", headers={"Allow": allow}
            )
        raise NotFoundError(f"no such endpoint: {path} (docs/api.md lists them)")

    def public(self, path: str) -> bool:
        """True when every route of this path is public (it is then served without a token)."""
        path = path.rstrip("/") or "/"
        matching = [route for route in self._routes if route.match(path) is not None]
        return bool(matching) and all(route.public for route in matching)
