"""The dashboard as it runs on AWS, on this machine: the built app and its `config.json` behind
the distribution's security headers, the data API as `dashboard_api` serves it
(`switchyard.dashboard.aws.lambda_app`, no live feed) behind a JWT check that passes the token's
claims on as API Gateway's authorizer does, and a stand-in for Cognito's hosted sign-in (the
OAuth 2.0 authorization code flow with PKCE, RFC 7636), which no test can reach.

The stand-in signs in one person without asking (as the hosted pages do for someone already
signed in), checks what a real authorization server checks of the app's requests (client id,
redirect URI, state echoed, S256 challenge and verifier), and records what it saw."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from infra.constructs.dashboard import CALLBACK_PATH, SIGN_OUT_PATH, content_security_policy
from switchyard.api.server import REST_LIMITS
from switchyard.approvals.people import People
from switchyard.dashboard.aws import EVENT_SCOPE, lambda_app
from switchyard.dashboard.routes import PREFIX
from switchyard.dashboard.static import mount_static
from switchyard.serving.server import HttpServer, serving_in_thread
from tests.unit.dashboard.support import WEB_DIST, DashboardStack

CLIENT_ID = "test-web-client"
PERSON = {"email": "dana@example.com", "email_verified": "true", "cognito:username": "d-1"}
PEOPLE = People.from_json({"support_lead": [{"name": "dana", "email": "dana@example.com"}]})


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass
class SignIn:
    """The stand-in for the user pool's hosted sign-in."""

    app_origin: str = ""
    codes: dict[str, dict[str, str]] = field(default_factory=dict)
    tokens: dict[str, dict[str, str]] = field(default_factory=dict)
    expires: dict[str, float] = field(default_factory=dict)
    """ID token -> when it expires (`time.monotonic()`): the authorizer refuses it after."""
    refresh_tokens: set[str] = field(default_factory=set)
    lifetime: float = 3600.0
    """Seconds an ID token is valid (`expires_in`)."""
    seen: list[str] = field(default_factory=list)
    """What happened, in order: authorize, token, refresh, refused: <why>."""

    def app(self) -> FastAPI:
        app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)

        @app.get("/oauth2/authorize")
        def authorize(request: Request) -> Response:
            q = request.query_params
            problem = (
                "client_id" if q.get("client_id") != CLIENT_ID
                else "redirect_uri" if q.get("redirect_uri") != self.app_origin + CALLBACK_PATH
                else "response_type" if q.get("response_type") != "code"
                else "code_challenge_method" if q.get("code_challenge_method") != "S256"
                else "scope" if "openid" not in (q.get("scope") or "").split()
                else "state" if not q.get("state")
                else None
            )  # fmt: skip
            if problem:
                self.seen.append(f"refused: {problem}")
                return JSONResponse({"error": "invalid_request", "field": problem}, 400)
            code = secrets.token_urlsafe(16)
            self.codes[code] = {"challenge": q["code_challenge"], "redirect": q["redirect_uri"]}
            self.seen.append("authorize")
            back = urlencode({"code": code, "state": q["state"]})
            return RedirectResponse(f"{q['redirect_uri']}?{back}", status_code=302)

        @app.options("/oauth2/token")
        def preflight() -> Response:
            return Response(status_code=204, headers=self._cors())

        @app.post("/oauth2/token")
        async def token(request: Request) -> Response:
            form = {k: v[0] for k, v in parse_qs((await request.body()).decode()).items()}
            grant_type, client_id = form.get("grant_type"), form.get("client_id")
            code, redirect_uri = form.get("code", ""), form.get("redirect_uri")
            code_verifier = form.get("code_verifier", "")
            if grant_type == "refresh_token" and client_id == CLIENT_ID:
                if form.get("refresh_token") not in self.refresh_tokens:
                    self.seen.append("refused: refresh")
                    return JSONResponse({"error": "invalid_grant"}, 400, headers=self._cors())
                self.seen.append("refresh")  # Cognito sends no new refresh token
                return JSONResponse(self._issue(), headers=self._cors())
            issued = self.codes.pop(code, None)
            verified = _b64url(hashlib.sha256(code_verifier.encode()).digest())
            if (
                grant_type != "authorization_code"
                or client_id != CLIENT_ID
                or issued is None
                or issued["redirect"] != redirect_uri
                or verified != issued["challenge"]
            ):
                self.seen.append("refused: token")
                return JSONResponse({"error": "invalid_grant"}, 400, headers=self._cors())
            self.seen.append("token")
            refresh_token = secrets.token_urlsafe(24)
            self.refresh_tokens.add(refresh_token)
            answer = self._issue() | {"refresh_token": refresh_token}
            return JSONResponse(answer, headers=self._cors())

        @app.get("/logout")
        def logout(logout_uri: str) -> Response:
            self.seen.append("logout")
            return RedirectResponse(logout_uri, status_code=302)

        return app

    def _issue(self) -> dict[str, Any]:
        """A new ID token, as the token endpoint answers it."""
        header = _b64url(json.dumps({"alg": "none"}).encode())
        payload = _b64url(json.dumps({**PERSON, "aud": CLIENT_ID}).encode())
        id_token = f"{header}.{payload}.{secrets.token_urlsafe(16)}"
        self.tokens[id_token] = dict(PERSON)
        self.expires[id_token] = time.monotonic() + self.lifetime
        return {
            "id_token": id_token,
            "access_token": "a",
            "expires_in": self.lifetime,
            "token_type": "Bearer",
        }

    def _cors(self) -> dict[str, str]:
        return {
            "Access-Control-Allow-Origin": self.app_origin,
            "Access-Control-Allow-Headers": "Content-Type",
            "Access-Control-Allow-Methods": "POST",
        }


class Authorizer:
    """API Gateway's JWT authorizer in front of the function: a token the sign-in issued passes
    with its claims in the event (where Mangum would put the Lambda event); anything else gets
    API Gateway's own 401."""

    def __init__(self, app: ASGIApp, sign_in: SignIn) -> None:
        self.app, self.sign_in = app, sign_in

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or [])
        scheme, _, given = headers.get(b"authorization", b"").decode().partition(" ")
        claims = self.sign_in.tokens.get(given.strip()) if scheme.lower() == "bearer" else None
        if claims is not None and self.sign_in.expires.get(given.strip(), 0) < time.monotonic():
            self.sign_in.seen.append("refused: expired")
            claims = None
        if claims is None:
            await JSONResponse({"message": "Unauthorized"}, 401)(scope, receive, send)
            return
        event = {"requestContext": {"authorizer": {"jwt": {"claims": claims, "scopes": None}}}}
        await self.app({**scope, EVENT_SCOPE: event}, receive, send)


class Edge:
    """CloudFront: the data API's path to the gateway, the rest to the pages; every answer
    with the distribution's security headers."""

    def __init__(self, data: ASGIApp, pages: ASGIApp, csp: str) -> None:
        self.data, self.pages = data, pages
        self.headers = [
            (b"content-security-policy", csp.encode()),
            (b"x-frame-options", b"DENY"),
            (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"no-referrer"),
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        target = self.data if scope["path"].startswith(PREFIX + "/") else self.pages

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *self.headers]}
            await send(message)

        await target(scope, receive, with_headers)


@dataclass
class AwsLike:
    url: str
    sign_in: SignIn


def pages_app(config: dict[str, Any], web_dir: Path = WEB_DIST) -> FastAPI:
    """The bucket's objects as the edge routes them: `config.json`, and the app."""
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)

    @app.get("/ui/config.json")
    def config_json() -> Response:
        return JSONResponse(config, headers={"Cache-Control": "no-cache"})

    mount_static(app, web_dir)
    return app


@contextmanager
def aws_like(
    board: DashboardStack, *, live: dict[str, Any] | None, token_seconds: float = 3600.0
) -> Iterator[AwsLike]:
    """The app with sign-in; `live`: config.json's `live` (None: none, so the app tries the
    stream and the data API refuses it); `token_seconds`: an ID token's life."""
    sign_in = SignIn(lifetime=token_seconds)
    idp = HttpServer(sign_in.app(), "127.0.0.1", 0, limits=REST_LIMITS, error_body=_error)
    with serving_in_thread(idp, "test-hosted-sign-in"):
        config: dict[str, Any] = {
            "auth": {
                "kind": "cognito",
                "domain": idp.url,
                "clientId": CLIENT_ID,
                "scopes": "openid email profile",
                "callbackPath": CALLBACK_PATH,
                "signOutPath": SIGN_OUT_PATH,
            },
            "builder": False,
        }
        if live is not None:
            config["live"] = live
        context = board.stack.server.context
        data = Authorizer(lambda_app(context.pool, context.commands, PEOPLE), sign_in)
        edge = Edge(data, pages_app(config), content_security_policy(idp.url))
        server = HttpServer(edge, "127.0.0.1", 0, limits=REST_LIMITS, error_body=_error)
        with serving_in_thread(server, "test-aws-like-dashboard"):
            sign_in.app_origin = server.url
            yield AwsLike(server.url, sign_in)


def _error(status: int, code: str, message: str) -> bytes:
    return json.dumps({"error": {"code": code, "message": message}}).encode()
