"""Custom resource: apply the library's schema migrations to Aurora on deploy.

CloudFormation calls this function on Create and Update (the resource's properties carry a hash of
the migration files, so a deploy that adds a migration updates it); Delete does nothing, the data
outlives the stack's resource. The connection comes from the cluster's Secrets Manager secret; a
refused login re-reads it once (the secret is rotated right after the cluster is created, which can
race the first deploy's migration).
Migrations are idempotent (`switchyard.stores.migrate` records each file it applied), so a retry
of a failed deploy applies only what is missing.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from aws_lambda_powertools import Logger

from switchyard.constants import DATABASE_SECRET_ARN_ENV
from switchyard.runtime.database import DatabaseLogin
from switchyard.stores.migrate import apply_migrations

logger = Logger()
CONNECT_TIMEOUT_SECONDS = 60
"""A paused Aurora Serverless v2 cluster (0 ACU) takes about 15 s to resume on connect."""


def migrate() -> list[int]:
    login = DatabaseLogin.from_environment()
    if login is None:
        raise RuntimeError(f"migrate needs {DATABASE_SECRET_ARN_ENV} (the cluster's secret)")
    with login.connect(connect_timeout=CONNECT_TIMEOUT_SECONDS) as conn:
        return apply_migrations(conn)


def respond(
    event: dict[str, Any], context: Any, status: str, data: dict[str, Any], reason: str
) -> None:
    """Send the custom resource's outcome to CloudFormation's pre-signed URL."""
    body = json.dumps(
        {
            "Status": status,
            "Reason": reason[:1000],
            "PhysicalResourceId": event.get("PhysicalResourceId") or "switchyard-schema",
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "Data": data,
        }
    ).encode()
    request = urllib.request.Request(
        event["ResponseURL"],
        data=body,
        method="PUT",
        headers={"content-type": "", "content-length": str(len(body))},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


@logger.inject_lambda_context(log_event=False)
def handler(event: dict[str, Any], context: Any) -> None:
    request_type = event.get("RequestType")
    try:
        applied = [] if request_type == "Delete" else migrate()
    except Exception as exc:
        logger.exception("migrations failed")
        respond(event, context, "FAILED", {}, f"migrations failed: {exc}")
        return
    logger.info("migrations applied", extra={"applied": applied, "request_type": request_type})
    respond(event, context, "SUCCESS", {"Applied": ",".join(map(str, applied))}, "ok")
