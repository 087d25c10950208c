"""The same app on AWS: API Gateway (REST or HTTP API) and Lambda function URLs call a Lambda
handler, which Mangum turns into ASGI calls of the FastAPI app, so one route definition serves
both places.

    handler = lambda_handler(create_app(context, token=...))

The deployment's wiring (the function, its context on Aurora) is the CDK stack's (infra/)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from mangum import Mangum


def lambda_handler(app: FastAPI) -> Any:
    """A Lambda handler `(event, context) -> response` serving `app`."""
    return Mangum(app, lifespan="off")
