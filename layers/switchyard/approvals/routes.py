"""The approval routes as a FastAPI router (the same routes locally under uvicorn and on AWS under
Mangum):

    GET  /approvals/{token}     the page (public: the token is the credential; never decides)
    POST /approvals/{token}     decide: form fields decision=approve|reject (a paused run:
                                resume|cancel), note, edits (JSON), raise_budget_usd
    POST /slack/interactions    Slack's button clicks (public: the v0 signature authenticates)
    GET  /approvals             operators: open gates with each person's link

`approvals_router(service, slack=..., operator=...)` builds it; `operator` is the dependency that
authenticates operators (the REST API's bearer token locally, IAM on AWS).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from psycopg_pool import ConnectionPool
from starlette.concurrency import run_in_threadpool

from switchyard.api.models import MAX_RAISE_USD
from switchyard.approvals.page import SECURITY_HEADERS, decided_page, gate_page, notice_page
from switchyard.approvals.service import MAX_NOTE, ApprovalError, ApprovalService, TooLargeError
from switchyard.approvals.settings import ApprovalSettings
from switchyard.approvals.slack import MAX_BODY as SLACK_MAX_BODY
from switchyard.approvals.slack import (
    ReplayGuard,
    SlackClient,
    SlackInteractions,
    SlackVerifier,
    show_decision,
)
from switchyard.gates import TaskCallbacks
from switchyard.stores.budget.ledger import BudgetLedger

log = logging.getLogger("switchyard.approvals")

MAX_FORM = 256 * 1024
SIGNED: dict[str, Any] = {"security": []}
"""OpenAPI extra of a route its request's signature authenticates: served without the REST API's
bearer token (`switchyard.api.routing.PUBLIC`; not imported, so these routes load on Lambda)."""
"""Bytes of a decision's form (a note of 4,000 characters and 64 KiB of edits fit)."""
_LINK_PATH = re.compile(r"/approvals/[^\s/?\"]+")


class _BodyTooLargeError(Exception):
    pass


class LinkPathFilter(logging.Filter):
    """Keeps approval links out of access logs: `/approvals/<token>` is logged as
    `/approvals/…`. Add it to uvicorn's access logger (`uvicorn.access`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args and isinstance(record.args, tuple):
            record.args = tuple(
                _LINK_PATH.sub("/approvals/…", a) if isinstance(a, str) else a for a in record.args
            )
        if isinstance(record.msg, str):
            record.msg = _LINK_PATH.sub("/approvals/…", record.msg)
        return True


def approvals_router(
    service: ApprovalService,
    *,
    slack: SlackInteractions | None = None,
    operator: Callable[..., Any] | None = None,
) -> APIRouter:
    router = APIRouter(tags=["approvals"])
    guard = [Depends(operator)] if operator is not None else []

    @router.get("/approvals", dependencies=guard)
    def open_approvals() -> dict[str, Any]:
        """Open gates a link decides, with each person's link (operators only)."""
        return {"approvals": service.open_approvals()}

    @router.get("/approvals/{token}", response_class=HTMLResponse, openapi_extra=SIGNED)
    def approval_page(token: str) -> Response:
        try:
            link = service.open(token)
        except ApprovalError as refused:
            return _refusal(refused)
        page = gate_page(link.gate, link.claims.person, max_note=MAX_NOTE, max_raise=MAX_RAISE_USD)
        return _html(200, page)

    @router.post("/approvals/{token}", response_class=HTMLResponse, openapi_extra=SIGNED)
    async def decide(token: str, request: Request) -> Response:
        try:
            form = _form(await _body(request, MAX_FORM), request.headers.get("content-type"))
            decided = await run_in_threadpool(
                service.decide,
                token,
                decision=form.get("decision", ""),
                note=form.get("note"),
                edits=form.get("edits"),
                raise_budget_usd=form.get("raise_budget_usd"),
            )
        except _BodyTooLargeError:
            return _refusal(TooLargeError(f"A decision is at most {MAX_FORM // 1024} KiB."))
        except ApprovalError as refused:
            return _refusal(refused)
        return _html(200, decided_page(decided.gate, decided.raised))

    @router.post("/slack/interactions", openapi_extra=SIGNED)
    async def slack_interactions(request: Request) -> Response:
        if slack is None:
            return JSONResponse({"ok": False, "error": "Slack is not configured"}, status_code=404)
        try:
            body = await _body(request, SLACK_MAX_BODY)
        except _BodyTooLargeError:
            return JSONResponse({"ok": False, "error": "body too large"}, status_code=413)
        headers = {k.lower(): v for k, v in request.headers.items()}
        status, answer = await run_in_threadpool(slack.handle, headers, body)
        return JSONResponse(answer, status_code=status)

    return router


async def _body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _BodyTooLargeError
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _BodyTooLargeError
        chunks.append(chunk)
    return b"".join(chunks)


def _form(body: bytes, content_type: str | None) -> dict[str, str]:
    if (content_type or "").split(";")[0].strip().lower() != "application/x-www-form-urlencoded":
        raise ApprovalError("Send the form as application/x-www-form-urlencoded.")
    try:
        fields = parse_qs(body.decode("utf-8"), max_num_fields=10, errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise ApprovalError("The form is not valid UTF-8 form data.") from None
    return {name: values[0] for name, values in fields.items()}


def _refusal(refused: ApprovalError) -> Response:
    return _html(refused.status, notice_page(refused.title, refused.message, refused.gate))


def _html(status: int, body: str) -> Response:
    return HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)


def build_approvals_router(
    pool: ConnectionPool,
    callbacks: TaskCallbacks,
    *,
    settings: ApprovalSettings | None = None,
    operator: Callable[..., Any] | None = None,
    clock: Callable[[], datetime] | None = None,
    ledger: BudgetLedger | None = None,
) -> APIRouter:
    """The router over a database pool and the engine's task callbacks (`EngineCommands` beside
    the local engine, `Boto3Callbacks` on AWS), configured from the environment unless
    `settings` are given; `ledger`: where a resume raises a budget (None: the local engine's
    PostgreSQL ledger)."""
    settings = settings or ApprovalSettings.from_env(pool)
    client = (
        SlackClient(settings.slack_api_url, settings.slack_bot_token)
        if settings.slack_bot_token
        else None
    )
    service = ApprovalService(
        settings,
        pool,
        callbacks,
        clock=clock,
        on_decided=(lambda gate: show_decision(client, gate)) if client is not None else None,
        ledger=ledger,
    )
    slack = None
    if settings.slack_signing_secret:
        verifier = SlackVerifier(settings.slack_signing_secret, ReplayGuard(pool), clock=clock)
        slack = SlackInteractions(service, verifier, client)
    return approvals_router(service, slack=slack, operator=operator)
