"""The API token: when one is set (SWITCHYARD_API_TOKEN), a request must carry
`Authorization: Bearer <token>`; the comparison takes the same time whatever the guess."""

from __future__ import annotations

import hmac

from switchyard.api.errors import UnauthorizedError


class BearerToken:
    def __init__(self, token: str | None) -> None:
        self._token = token.encode() if token else None

    @property
    def required(self) -> bool:
        return self._token is not None

    def allows(self, authorization: str | None) -> bool:
        if self._token is None:
            return True
        scheme, _, given = (authorization or "").strip().partition(" ")
        # compare_digest also when the scheme is wrong, so timing says nothing about the token
        matches = hmac.compare_digest(given.strip().encode(), self._token)
        return scheme.lower() == "bearer" and matches

    def check(self, authorization: str | None) -> None:
        if not self.allows(authorization):
            raise UnauthorizedError(
                "this API needs Authorization: Bearer <token> (the server's SWITCHYARD_API_TOKEN)",
                headers={"WWW-Authenticate": 'Bearer realm="switchyard"'},
            )
