"""HTTP faces of local triggers, on FastAPI.

On the REST port (`trigger_router`, an `APIRouter` the REST app includes):

    POST /webhooks/{workflow}         the deployed webhook function's contract: 202 {"run_id"},
                                      200 duplicate delivery, 401 bad signature, 404 no webhook
    POST /queues/{queue}/messages     raw body, at most 256 KiB: 202 {"message_id", "queue"}
    GET  /triggers                    each trigger, its next fire or URL, its last deliveries
    GET  /triggers/dead-letters       deliveries whose run could not be started

On `--events-port` (`events_app`, its own app): EventBridge's `PutEvents` (JSON 1.1 protocol,
`X-Amz-Target: AWSEvents.PutEvents`), so `boto3.client("events", endpoint_url=...)` and
`aws events put-events --endpoint-url ...` start every workflow whose pattern matches.
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, Response

from switchyard.local.triggers.queue import MAX_BODY_BYTES
from switchyard.local.triggers.service import TriggerService
from switchyard.triggers.webhook import WebhookRequest

_QUEUE = re.compile(r"^[A-Za-z0-9_-]{1,80}$")
_AMZ_JSON = "application/x-amz-json-1.1"
MAX_ENTRIES = 10
SIGNED: dict[str, Any] = {"security": []}
"""OpenAPI extra of a route its request's signature authenticates: served without the REST API's
bearer token (`switchyard.api.routing.PUBLIC`; not imported, so these routes load on Lambda)."""
"""PutEvents takes at most ten entries per call."""
MAX_WEBHOOK_BYTES = 1024 * 1024


def trigger_router(service: TriggerService) -> APIRouter:
    router = APIRouter()

    @router.post("/webhooks/{workflow}", openapi_extra=SIGNED)
    async def webhook(workflow: str, request: Request) -> JSONResponse:
        body = await request.body()
        if len(body) > MAX_WEBHOOK_BYTES:
            return JSONResponse({"error": "the body is larger than 1 MiB"}, status_code=413)
        delivery = WebhookRequest(
            body=body,
            headers={k.lower(): v for k, v in request.headers.items()},
            query=dict(request.query_params),
        )
        answer = service.webhook(workflow, delivery)
        return JSONResponse(answer.body, status_code=answer.status)

    @router.post("/queues/{queue}/messages")
    async def send(queue: str, request: Request) -> JSONResponse:
        if not _QUEUE.match(queue):
            return JSONResponse(
                {"error": "a queue name is 1-80 letters, digits, - or _"}, status_code=400
            )
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            return JSONResponse({"error": "a message is at most 256 KiB"}, status_code=413)
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return JSONResponse({"error": "a message body is UTF-8 text"}, status_code=400)
        message_id = service.send(queue, text)
        return JSONResponse({"message_id": message_id, "queue": queue}, status_code=202)

    @router.get("/triggers")
    def triggers() -> dict[str, Any]:
        return {"triggers": service.describe()}

    @router.get("/triggers/dead-letters")
    def dead_letters() -> dict[str, Any]:
        return {"dead_letters": service.store.dead_letters()}

    return router


def _event(entry: dict[str, Any]) -> dict[str, Any]:
    """An EventBridge event from a PutEvents entry; ValueError says what is wrong with it."""
    missing = [k for k in ("Source", "DetailType", "Detail") if not entry.get(k)]
    if missing:
        raise ValueError(f"Parameter(s) {', '.join(missing)} must be specified.")
    try:
        detail = json.loads(str(entry["Detail"]))
    except ValueError:
        raise ValueError("Detail is malformed.") from None
    if not isinstance(detail, dict):
        raise ValueError("Detail is malformed.")
    when = entry.get("Time")
    time = (
        datetime.fromtimestamp(float(when), UTC)
        if isinstance(when, int | float)
        else datetime.now(UTC)
    )
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": str(entry["DetailType"]),
        "source": str(entry["Source"]),
        "account": "000000000000",
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": "us-east-1",
        "resources": [str(r) for r in entry.get("Resources") or []],
        "detail": detail,
    }


def _amz(body: dict[str, Any], status: int = 200) -> Response:
    return Response(json.dumps(body), status_code=status, media_type=_AMZ_JSON)


def _amz_error(kind: str, message: str, status: int = 400) -> Response:
    return _amz({"__type": kind, "message": message}, status)


def events_app(service: TriggerService) -> FastAPI:
    app = FastAPI(title="switchyard events (EventBridge PutEvents)", docs_url=None, redoc_url=None)

    @app.post("/")
    async def put_events(request: Request) -> Response:
        target = request.headers.get("x-amz-target", "")
        if target != "AWSEvents.PutEvents":
            return _amz_error(
                "UnknownOperationException", f"this endpoint serves PutEvents only, not {target!r}"
            )
        try:
            payload = json.loads(await request.body())
        except ValueError:
            return _amz_error("SerializationException", "the body is not JSON")
        entries = payload.get("Entries") if isinstance(payload, dict) else None
        if not isinstance(entries, list) or not 1 <= len(entries) <= MAX_ENTRIES:
            return _amz_error("ValidationException", "Entries must hold 1 to 10 entries")
        results: list[dict[str, Any]] = []
        for entry in entries:
            try:
                event = _event(entry if isinstance(entry, dict) else {})
            except ValueError as exc:
                results.append({"ErrorCode": "InvalidArgument", "ErrorMessage": str(exc)})
                continue
            service.event(event)
            results.append({"EventId": event["id"]})
        failed = sum(1 for r in results if "ErrorCode" in r)
        return _amz({"FailedEntryCount": failed, "Entries": results})

    return app
