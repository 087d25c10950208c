"""`/healthz` reports the engine's health through the hook it is given, and the API's own
connection pool outlives connections the database dropped."""

from __future__ import annotations

import httpx
import psycopg

from switchyard.api import rest_api_in_thread
from switchyard.api.server import POOL_NAME
from tests.unit.api.support import Stack


def test_healthz_is_503_while_the_health_hook_says_the_engine_cannot_commit(
    stack: Stack,
) -> None:
    can_commit = [True]
    with rest_api_in_thread(stack.engine, health=lambda: can_commit[0]) as server:
        assert httpx.get(f"{server.url}/healthz").json() == {"ok": True}
        can_commit[0] = False
        down = httpx.get(f"{server.url}/healthz")
        can_commit[0] = True
        back = httpx.get(f"{server.url}/healthz")
    assert down.status_code == 503
    assert down.json()["ok"] is False and down.json()["error"]["code"] == "unavailable"
    assert back.status_code == 200


def test_the_pool_replaces_connections_the_database_terminated(
    stack: Stack, client: httpx.Client
) -> None:
    for _ in range(4):  # the pool holds some connections now
        assert client.get("/runs").status_code == 200
    with psycopg.connect(stack.engine.conninfo, autocommit=True) as admin:
        terminated = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND application_name = %s",
            (POOL_NAME,),
        ).fetchone()
    assert terminated is not None and terminated[0] >= 1

    answers = [client.get("/runs").status_code for _ in range(4)]

    assert answers == [200] * 4
    assert client.get("/healthz").status_code == 200
