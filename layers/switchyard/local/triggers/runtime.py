"""Local triggers beside a running engine, as `switchyard dev` runs them:

    triggers = LocalTriggers(engine)                           # before the REST server
    server = serve_rest_api(..., routers=[triggers.router])    # /webhooks, /queues, /triggers
    triggers.start(catalog.entries(), base_url=server.url, events_port=8084)
    ...
    triggers.close()

`start` fills in the installed workflows' triggers, starts the scheduler and queue consumer
thread, and serves EventBridge PutEvents on `events_port` (127.0.0.1, uvicorn, a thread).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterable
from typing import Any

import uvicorn
from psycopg_pool import ConnectionPool

from switchyard.engine.engine import Engine
from switchyard.local.engine_client import EngineCommands
from switchyard.local.triggers.http import events_app, trigger_router
from switchyard.local.triggers.service import TriggerService, specs_of

POOL_NAME = "switchyard-triggers"


class _EventsServer:
    def __init__(self, service: TriggerService, host: str, port: int) -> None:
        if port == 0:
            with socket.socket() as sock:
                sock.bind((host, 0))
                port = int(sock.getsockname()[1])
        self.url = f"http://{host}:{port}"
        config = uvicorn.Config(events_app(service), host=host, port=port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, name="switchyard-events", daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise OSError(f"cannot serve PutEvents on {host}:{port}")
            time.sleep(0.02)

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


class LocalTriggers:
    def __init__(self, engine: Engine, *, poll_seconds: float = 1.0) -> None:
        self.pool = ConnectionPool(
            engine.conninfo,
            min_size=1,
            max_size=4,
            open=True,
            kwargs={"autocommit": True, "application_name": POOL_NAME},
            check=ConnectionPool.check_connection,
            name=POOL_NAME,
        )
        self.service = TriggerService(self.pool, EngineCommands(engine), poll_seconds=poll_seconds)
        self.router = trigger_router(self.service)
        self._events: _EventsServer | None = None

    @property
    def events_url(self) -> str | None:
        return self._events.url if self._events else None

    def start(
        self,
        entries: Iterable[Any],
        *,
        base_url: str,
        events_port: int | None = None,
        events_host: str = "127.0.0.1",
    ) -> None:
        """Serve the triggers of `entries` (the REST server's installed workflows)."""
        self.service.specs = specs_of(entries)
        self.service.base_url = base_url.rstrip("/")
        if events_port is not None:
            self._events = _EventsServer(self.service, events_host, events_port)
        self.service.start()

    def close(self) -> None:
        self.service.close()
        if self._events is not None:
            self._events.close()
        self.pool.close()
