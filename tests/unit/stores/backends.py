"""Fixtures that give each conformance suite every backend of a store."""

from __future__ import annotations

import threading
from typing import Any

import boto3
from moto.core.models import botocore_stubber


def serialised_dynamodb_client() -> Any:
    """A DynamoDB client on moto whose requests are handled one at a time.

    Real DynamoDB applies each conditional write and each transaction atomically; moto's
    in-process backend does not lock (a cancelled transaction even restores a stale copy of the
    table). Handling one request at a time makes moto as atomic per request as the real service,
    while our threads still race each other between requests.
    """
    client = boto3.client("dynamodb", region_name="us-east-1")
    lock = threading.Lock()

    def handle(event_name: str, request: Any, **kwargs: Any) -> Any:
        with lock:
            return botocore_stubber(event_name, request, **kwargs)

    # botocore calls every before-send handler: take moto's place rather than going before it.
    client.meta.events.unregister("before-send", botocore_stubber)
    client.meta.events.register("before-send", handle)
    return client
