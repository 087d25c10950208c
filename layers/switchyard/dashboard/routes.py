"""The dashboard's data API (JSON under `/api/dashboard`) and its live stream, as a FastAPI
router over a connection pool and the task-token API that decisions go through. Handlers are
thin: parse, call one read of `runs`, `detail` or `stats`, answer.

    GET  /api/dashboard/runs?status=&workflow=&since=&until=&q=&cursor=&limit=
    GET  /api/dashboard/runs/{run_id}
    GET  /api/dashboard/runs/{run_id}/values/{input|output}?step=
    GET  /api/dashboard/runs/{run_id}/blobs?key=     a large value a `$switchyard_ref` names
    POST /api/dashboard/runs/{run_id}/steps/{step}/approve    body {"note"?, "edits"?}
    POST /api/dashboard/runs/{run_id}/steps/{step}/reject     body {"note"?}
    GET  /api/dashboard/workflows?days=
    GET  /api/dashboard/workflows/{name}?days=
    GET  /api/dashboard/costs?days=
    GET  /api/dashboard/live?run=          text/event-stream (501 where there is no feed)

One definition serves both places: `switchyard dev` mounts `dashboard_router` (the REST API's
context, its token, the live feed); on AWS the `dashboard_api` function serves `data_router`
through Mangum (`switchyard.dashboard.aws`: Aurora, Step Functions' task-token API, the
signed-in person from the gateway's JWT authorizer, no feed: the page polls).

Decisions go through the approval links' path (`switchyard.local.run_actions.decide_gate`, which
checks the person's role); locally the person is the `X-Switchyard-User` header, on AWS the
signed-in person (`Reviewer`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import psycopg
from fastapi import APIRouter, Depends, Header, HTTPException, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from switchyard.api.auth import BearerToken
from switchyard.api.routing import PUBLIC
from switchyard.dashboard import detail, stats
from switchyard.dashboard.errors import (
    BadQueryError,
    ConflictError,
    DashboardError,
    ForbiddenError,
    NotFoundError,
)
from switchyard.dashboard.live import Event, LiveFeed
from switchyard.dashboard.runs import RunFilter, runs_page
from switchyard.gates import (
    Decision,
    GateClosedError,
    GateDecisionError,
    GateForbiddenError,
    TaskCallbacks,
)
from switchyard.local.report import AmbiguousRunError, RunNotFoundError
from switchyard.local.run_actions import NoOpenGateError, decide_gate, locate_run, open_gate_for
from switchyard.runtime.large_outputs import OutputStore, PostgresOutputStore

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

    from switchyard.api.context import ApiContext

log = logging.getLogger("switchyard.dashboard")

PREFIX = "/api/dashboard"
OPEN_STATUSES = ("running", "waiting", "paused")
TOKEN_COOKIE = "switchyard_token"
REVIEWER_HEADER = "X-Switchyard-User"
HEARTBEAT_SECONDS = 15.0
MAX_NOTE = 4000
MAX_BODY = 256 * 1024
T = TypeVar("T")

Reviewer = Callable[[Request], str | None]
"""Who decides a gate, from the request: None when it does not say."""
Guard = Callable[..., None]
"""A FastAPI dependency every data route runs first: raises to refuse the request."""
CatchUpRun = Callable[[str], object]
"""Brings a run's records up to date before it is read, given the run id; never raises."""
LIST_CATCH_UP = 20
"""The most open runs of a runs page caught up before it is served (the newest first)."""
CATCH_UP_THREADS = 8
"""How many of them are caught up at once: each is a probe of one execution's newest event."""


def caught_up(page: Callable[[], dict[str, Any]], catch_up: CatchUpRun) -> dict[str, Any]:
    """A runs page whose open runs (at most `LIST_CATCH_UP`) have been caught up, read again
    when there were any. On AWS the recorder hears only of runs' starts and ends: without this,
    a deployed run would show `running` and its first cost in the list until its page were
    opened. Each run's history is still read at most once per interval however many lists and
    pages poll (`switchyard.records.catch_up`)."""
    first = page()
    open_runs = [row["run_id"] for row in first["runs"] if row["status"] in OPEN_STATUSES]
    return page() if _catch_up_all(open_runs, catch_up) else first


def caught_up_run(
    run_id: str, read: Callable[[], dict[str, Any]], catch_up: CatchUpRun
) -> dict[str, Any]:
    """A run page caught up, and its open child runs (a `sub_workflow` step's) too, as the runs
    list is: their status badges on the parent's page are as fresh as their own pages."""
    catch_up(run_id)
    first = read()
    children = [
        child["run_id"]
        for step in first["steps"].values()
        for child in step.get("children") or []
        if child["status"] in OPEN_STATUSES
    ]
    return read() if _catch_up_all(children, catch_up) else first


def _catch_up_all(run_ids: list[str], catch_up: CatchUpRun) -> bool:
    """Catch up at most `LIST_CATCH_UP` runs, `CATCH_UP_THREADS` at a time; False: none."""
    if not run_ids:
        return False
    with ThreadPoolExecutor(max_workers=CATCH_UP_THREADS) as threads:
        list(threads.map(catch_up, run_ids[:LIST_CATCH_UP]))
    return True


def header_reviewer(request: Request) -> str | None:
    """Locally: the person the page names in `X-Switchyard-User`."""
    return request.headers.get(REVIEWER_HEADER)


LIVE_UNAVAILABLE = DashboardError(
    "this deployment has no live stream: read again to see changes (the web app polls every"
    " second)",
    code="live_unavailable",
)
LIVE_UNAVAILABLE.status = 501


def error_response(error: DashboardError) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": error.code, "message": error.message}},
        status_code=error.status,
        headers={"Cache-Control": "no-store"},
    )


UNREADABLE = BadQueryError(
    "the request has a value the database cannot hold (a NUL character?): check the run id,"
    " workflow or search text"
)


def _json(data: Any) -> JSONResponse:
    return JSONResponse(data, headers={"Cache-Control": "no-store"})


async def _answer(read: Callable[[], T], shape: Callable[[T], Response] = _json) -> Response:
    """Run a blocking read off the event loop; errors become JSON a person can act on."""
    try:
        return shape(await run_in_threadpool(read))
    except DashboardError as error:
        return error_response(error)
    except psycopg.DataError:  # a NUL character in a run id, say: no row could have it
        return error_response(UNREADABLE)
    except psycopg.OperationalError:
        log.warning("dashboard read: the database is unavailable")
        return error_response(
            DashboardError("the database is unavailable; the page retries", code="unavailable")
        )


def _time(value: str | None, name: str) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BadQueryError(f"{name} must be an ISO 8601 time, not {value!r}") from None


def _value_response(value: tuple[str, int]) -> Response:
    """A value as JSON text; its full size in `X-Switchyard-Bytes` (the text may be cut)."""
    text, size = value
    return Response(
        text,
        media_type="application/json",
        headers={"Cache-Control": "no-store", "X-Switchyard-Bytes": str(size),
                 "X-Content-Type-Options": "nosniff"},
    )  # fmt: skip


def dashboard_router(context: ApiContext, feed: LiveFeed, *, token: str | None = None) -> APIRouter:
    """The data API of `switchyard dev` over `context`; with `token`, every request carries it
    (Authorization: Bearer, or the `switchyard_token` cookie the page sets, which EventSource
    also sends)."""
    bearer = BearerToken(token)

    def authorized(request: Request, authorization: Annotated[str | None, Header()] = None) -> None:
        if not bearer.required:
            return
        cookie = request.cookies.get(TOKEN_COOKIE)
        if bearer.allows(authorization) or (cookie and bearer.allows(f"Bearer {cookie}")):
            return
        raise HTTPException(
            401,
            detail="this dashboard needs the server's SWITCHYARD_API_TOKEN: enter it on the page,"
            " or send Authorization: Bearer <token>",
            headers={"WWW-Authenticate": 'Bearer realm="switchyard"'},
        )

    return data_router(
        pool=context.pool, callbacks=context.commands, feed=feed, guard=authorized, stuck=True
    )


def data_router(
    *,
    pool: ConnectionPool,
    callbacks: TaskCallbacks,
    feed: LiveFeed | None,
    guard: Guard | None = None,
    reviewer: Reviewer = header_reviewer,
    stuck: bool = False,
    outputs: OutputStore | None = None,
    blob_limit: int = detail.MAX_VALUE_BYTES,
    catch_up: CatchUpRun | None = None,
) -> APIRouter:
    """The data API over `pool`: decisions reach runs through `callbacks`; `feed` pushes changes
    (None: `/live` answers 501 `live_unavailable`, and pages poll); `guard` runs before every
    route; `reviewer` names who decides. `stuck`: `pool` is a local engine's database, whose
    tasks and timers say which runs are stuck (on Aurora, Step Functions keeps those to itself,
    and the runs list says nothing of it). `outputs`: where steps stored their large values
    (None: the run database's `output_blobs`), of which `/blobs` reads at most `blob_limit`
    bytes. `catch_up`: called with a run id before the run is read (on AWS, it brings a
    running execution's records up to its history: `switchyard.records.catch_up`)."""
    blobs = outputs if outputs is not None else PostgresOutputStore(pool)
    # PUBLIC to the REST API's own token check (header only): `guard` checks the caller itself
    # (locally the token by header or by cookie, which is all an EventSource can send)
    router = APIRouter(
        prefix=PREFIX,
        dependencies=[Depends(guard)] if guard is not None else [],
        tags=["dashboard"],
        include_in_schema=False,
    )

    def read(fn: Callable[[psycopg.Connection[Any]], T]) -> Callable[[], T]:
        def run() -> T:
            with pool.connection() as conn:
                return fn(conn)

        return run

    @router.get("/runs", openapi_extra=PUBLIC)
    async def list_runs(
        status: str | None = None,
        workflow: str | None = None,
        since: str | None = None,
        until: str | None = None,
        q: Annotated[str | None, Query(max_length=200)] = None,
        cursor: Annotated[str | None, Query(max_length=200)] = None,
        limit: Annotated[int, Query(ge=1, le=200)] = 50,
    ) -> Response:
        def query() -> dict[str, Any]:
            filters = RunFilter(
                status=status or None,
                workflow=workflow or None,
                since=_time(since, "since"),
                until=_time(until, "until"),
                search=(q or "").strip() or None,
                cursor=cursor or None,
                limit=limit,
            )
            page = read(lambda conn: runs_page(conn, filters, stuck=stuck))
            return caught_up(page, catch_up) if catch_up is not None else page()

        return await _answer(query)

    @router.get("/runs/{run_id}", openapi_extra=PUBLIC)
    async def get_run(run_id: str) -> Response:
        def query() -> dict[str, Any]:
            page = read(lambda conn: detail.run_detail(conn, run_id))
            return caught_up_run(run_id, page, catch_up) if catch_up is not None else page()

        return await _answer(query)

    @router.get("/runs/{run_id}/values/{which}", openapi_extra=PUBLIC)
    async def get_value(run_id: str, which: str, step: str | None = None) -> Response:
        def query() -> tuple[str, int]:
            kind = detail.check_value(which)
            return read(lambda conn: detail.run_value(conn, run_id, kind, step))()

        return await _answer(query, _value_response)

    @router.get("/runs/{run_id}/blobs", openapi_extra=PUBLIC)
    async def get_blob(run_id: str, key: Annotated[str, Query(max_length=1000)]) -> Response:
        def query() -> tuple[str, int]:
            found = read(lambda conn: detail.blob_of_run(conn, run_id, key))()
            return detail.blob_text(blobs, found, blob_limit)

        return await _answer(query, _value_response)

    @router.post("/runs/{run_id}/steps/{step}/{action}", openapi_extra=PUBLIC)
    async def decide(run_id: str, step: str, action: str, request: Request) -> Response:
        try:
            body = _decision_body(request.headers.get("content-type"), await request.body())
        except DashboardError as error:
            return error_response(error)
        person = reviewer(request)
        return await _answer(lambda: _decide(pool, callbacks, run_id, step, action, person, body))

    @router.get("/workflows", openapi_extra=PUBLIC)
    async def list_workflows(days: int = 30) -> Response:
        return await _answer(
            read(lambda conn: {"workflows": stats.workflows(conn, stats.check_days(days))})
        )

    @router.get("/workflows/{name}", openapi_extra=PUBLIC)
    async def get_workflow(name: str, days: int = 30) -> Response:
        return await _answer(
            read(lambda conn: stats.workflow_detail(conn, name, stats.check_days(days)))
        )

    @router.get("/costs", openapi_extra=PUBLIC)
    async def get_costs(days: int = 30) -> Response:
        return await _answer(read(lambda conn: stats.costs(conn, stats.check_days(days))))

    @router.get("/live", openapi_extra=PUBLIC)
    async def live(request: Request, run: str | None = None) -> Response:
        if feed is None:
            return error_response(LIVE_UNAVAILABLE)
        source = feed
        if run is None:
            wants: Callable[[Event], bool] = lambda e: e.get("t") in ("run", "gate")  # noqa: E731
        else:
            try:
                executions = await run_in_threadpool(read(lambda c: _executions(c, run)))
            except DashboardError as error:
                return error_response(error)
            except psycopg.DataError:
                return error_response(UNREADABLE)
            wants = lambda e: e.get("e") in executions or e.get("r") == run  # noqa: E731
        subscription = source.subscribe(wants)

        async def stream() -> AsyncIterator[str]:
            try:
                yield "retry: 1000\n: listening\n\n"
                while True:
                    try:
                        event = await asyncio.wait_for(
                            subscription.queue.get(), timeout=HEARTBEAT_SECONDS
                        )
                    except TimeoutError:
                        if await request.is_disconnected():
                            return
                        yield ": ping\n\n"
                        continue
                    if event is None:  # the server is stopping
                        return
                    yield f"data: {json.dumps(event, separators=(',', ':'))}\n\n"
            finally:
                source.unsubscribe(subscription)

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    return router


def _decision_body(content_type: str | None, raw: bytes) -> dict[str, Any]:
    """Only JSON: a cross-site form (which cannot send it, nor the reviewer header) decides
    nothing."""
    if (content_type or "").split(";")[0].strip() != "application/json":
        raise BadQueryError("send the decision as application/json")
    if len(raw) > MAX_BODY:
        raise BadQueryError(f"a decision is at most {MAX_BODY} bytes")
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        raise BadQueryError('the body is not JSON: send {} or {"note": "..."}') from None
    if not isinstance(body, dict):
        raise BadQueryError("the body must be a JSON object")
    return body


def _executions(conn: psycopg.Connection[Any], run_id: str) -> set[int]:
    found = detail.executions_of(conn, run_id)
    if not found:
        raise NotFoundError(f"no run {run_id!r}", code="run_not_found")
    return set(found)


def _decide(
    pool: ConnectionPool,
    callbacks: TaskCallbacks,
    run_id: str,
    step: str,
    action: str,
    reviewer: str | None,
    body: dict[str, Any],
) -> dict[str, Any]:
    if action not in ("approve", "reject"):
        raise NotFoundError(f"a gate is approved or rejected, not {action!r}", code="not_found")
    user = (reviewer or "").strip()
    if not user:
        raise BadQueryError(
            f"say who decides: the {REVIEWER_HEADER} header", code="missing_reviewer"
        )
    note = body.get("note")
    if note is not None and (not isinstance(note, str) or len(note) > MAX_NOTE):
        raise BadQueryError(f"'note' must be text of at most {MAX_NOTE} characters")
    edits = body.get("edits") if action == "approve" else None
    if edits is not None and not isinstance(edits, dict):
        raise BadQueryError("'edits' must be an object of field -> new value")
    with pool.connection() as conn:
        try:
            run = locate_run(conn, run_id)
        except AmbiguousRunError as exc:
            raise ConflictError(str(exc), code="ambiguous_run_id") from None
        except RunNotFoundError:
            raise NotFoundError(f"no run {run_id!r}", code="run_not_found") from None
    try:
        gate = open_gate_for(pool, run, action, step)
    except NoOpenGateError as exc:
        raise ConflictError(str(exc), code="no_open_gate") from None
    decision = Decision(action, user, note=note or None, edits=edits or {})  # type: ignore[arg-type]
    try:
        decide_gate(gate, decision, pool=pool, callbacks=callbacks)
    except GateForbiddenError as exc:
        raise ForbiddenError(str(exc)) from None
    except GateClosedError as exc:
        raise ConflictError(str(exc), code="gate_closed") from None
    except GateDecisionError as exc:
        raise BadQueryError(str(exc), code="invalid_decision") from None
    return {
        "run_id": run.run_id,
        "step": gate.step_id,
        "decision": "approved" if action == "approve" else "rejected",
        "reviewer": user,
    }
