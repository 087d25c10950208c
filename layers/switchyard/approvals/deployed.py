"""The approval API as approval_api serves it on AWS, behind the HTTP API:

- the approval routes (`switchyard.approvals.routes`): the link page and decision and Slack's
  clicks, public at the gateway (their signatures authenticate them), and `GET /approvals`;
- the operators' routes (`switchyard.api.operators`, the REST API's own definitions): decide a
  gate, resume, cancel, over the gates in Aurora and Step Functions (`StepFunctionsRuns`), with
  budgets raised in the DynamoDB ledger.

Every route but the link and Slack routes is IAM-authorized at the gateway (infra/constructs/
approvals.py); each operator request is logged with the IAM principal that signed it.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from fastapi import Depends, FastAPI, Request
from psycopg_pool import ConnectionPool

from switchyard.api import operators
from switchyard.api.answers import with_api_errors
from switchyard.approvals.executions import StepFunctionsRuns
from switchyard.approvals.resets import StepFunctionsResetSource
from switchyard.approvals.routes import LinkPathFilter, build_approvals_router
from switchyard.gates.callbacks import Boto3Callbacks
from switchyard.local.run_actions import RunOperations
from switchyard.stores.budget.ledger import BudgetLedger


class AuditLog(Protocol):
    """Where operator requests are logged: a `logging.Logger`, or Powertools' `Logger`."""

    def info(self, msg: object, *args: object, extra: dict[str, Any] | None = ...) -> None: ...


def deployed_app(
    pool: ConnectionPool,
    stepfunctions: Any,
    ledger: BudgetLedger,
    *,
    audit: AuditLog | None = None,
) -> FastAPI:
    """The app over the run database, a boto3 `stepfunctions` client and the budget ledger;
    `audit` logs each operator request (its route, never its body or headers, and its caller)."""
    callbacks = Boto3Callbacks(stepfunctions)
    audit_log: AuditLog = audit or logging.getLogger("switchyard.approvals")

    def log_operator(request: Request) -> None:
        route = request.scope.get("route")
        audit_log.info(
            "operator request",
            extra={
                "route": f"{request.method} {getattr(route, 'path', '?')}",
                "caller": iam_caller(request),
            },
        )

    app = FastAPI(
        title="switchyard approvals",
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        redirect_slashes=False,
    )
    app.include_router(build_approvals_router(pool, callbacks, ledger=ledger))
    runs = StepFunctionsRuns(pool, stepfunctions)
    resets = StepFunctionsResetSource(stepfunctions)
    operators.serve(app, RunOperations(pool, callbacks, runs, ledger, resets=resets))
    app.include_router(operators.router, dependencies=[Depends(log_operator)])
    with_api_errors(app)
    logging.getLogger("switchyard.api").addFilter(LinkPathFilter())  # its log names paths
    return app


def iam_caller(request: Request) -> str | None:
    """The IAM principal that signed the request, as API Gateway's IAM authorizer passed it."""
    event = request.scope.get("aws.event") or {}
    iam = ((event.get("requestContext") or {}).get("authorizer") or {}).get("iam") or {}
    caller = iam.get("userArn")
    return str(caller) if caller else None
