"""The dashboard's data API on AWS: the very routes `switchyard dev` serves (`data_router`), in
an app the `dashboard_api` function runs through Mangum, behind the HTTP API's JWT authorizer
(the dashboard's Cognito user pool; docs/dashboard.md, "On AWS").

- Who asks: the gateway has checked the ID token; its claims arrive in the event
  (`requestContext.authorizer.jwt.claims`). A request without them (a route left without its
  authorizer, a direct invoke) is refused 401: the function never takes a header's word.
- Who decides a gate: the signed-in person, never the `X-Switchyard-User` header (anyone can
  send one). A verified e-mail that belongs to a person of SWITCHYARD_ROLES decides as that
  person's name; any other verified e-mail decides as itself (the roles then refuse it unless
  a role lists it by name); without a verified e-mail, the Cognito user name.
- No live feed: `/live` answers 501 `live_unavailable`, and the page reads again every second.
  A run read while its execution is RUNNING is first caught up with Step Functions' history
  (`catch_up`, `switchyard.records.catch_up`): the recorder only hears of a run's start and end.
- Large values (`/blobs`) come from the output bucket (`outputs`, S3), at most `BLOB_BYTES` of
  each: the page shows 512 KiB of a value, and a function's answer through API Gateway is at
  most 6 MB, JSON-escaped (a value's text can triple in it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from psycopg_pool import ConnectionPool

from switchyard.api.answers import with_api_errors
from switchyard.api.errors import UnauthorizedError
from switchyard.approvals.people import People
from switchyard.dashboard.routes import CatchUpRun, data_router
from switchyard.gates import TaskCallbacks
from switchyard.runtime.large_outputs import OutputStore

EVENT_SCOPE = "aws.event"
"""Where Mangum leaves the Lambda event in the ASGI scope."""
BLOB_BYTES = 1024 * 1024
"""The most of a large value `/blobs` answers on AWS (the rest is not read from S3)."""
SIGN_IN = (
    "sign in to the dashboard: this API takes the ID token of its Cognito user pool"
    " (Authorization: Bearer <token>)"
)


def jwt_claims(request: Request) -> Mapping[str, Any] | None:
    """The claims the HTTP API's JWT authorizer verified; None when there are none."""
    event = request.scope.get(EVENT_SCOPE)
    if not isinstance(event, dict):
        return None
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    claims = (authorizer.get("jwt") or {}).get("claims")
    return claims if isinstance(claims, dict) and claims else None


def reviewer_of(claims: Mapping[str, Any], people: People) -> str | None:
    """The name a signed-in person decides gates under."""
    email = claims.get("email")
    # the authorizer passes every claim as a string ("true"), a Lambda test event may not
    verified = str(claims.get("email_verified", "")).lower() == "true"
    if isinstance(email, str) and email.strip() and verified:
        person = people.by_email(email)
        return person.name if person is not None else email.strip()
    username = claims.get("cognito:username")
    return str(username) if username else None


def lambda_app(
    pool: ConnectionPool,
    callbacks: TaskCallbacks,
    people: People,
    *,
    outputs: OutputStore | None = None,
    catch_up: CatchUpRun | None = None,
) -> FastAPI:
    """The data API on `pool` (Aurora), deciding through `callbacks` (Step Functions), reading
    large values from `outputs` (the output bucket) and catching running runs up with
    `catch_up`."""

    def signed_in(request: Request) -> None:
        if jwt_claims(request) is None:
            raise UnauthorizedError(
                SIGN_IN, headers={"WWW-Authenticate": 'Bearer realm="switchyard"'}
            )

    def reviewer(request: Request) -> str | None:
        claims = jwt_claims(request)
        return reviewer_of(claims, people) if claims is not None else None

    app = FastAPI(
        title="switchyard dashboard data API",
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        redirect_slashes=False,
    )
    app.include_router(
        data_router(
            pool=pool,
            callbacks=callbacks,
            feed=None,
            guard=signed_in,
            reviewer=reviewer,
            outputs=outputs,
            blob_limit=BLOB_BYTES,
            catch_up=catch_up,
        )
    )
    return with_api_errors(app)
