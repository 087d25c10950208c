"""Local triggers beside a running engine. Every engine process fires schedules and reads queues;
only a process that serves HTTP serves webhooks and events (docs/triggers.md, "Which process
serves what"). `switchyard dev`:

    triggers = LocalTriggers(engine)                           # before the REST server
    server = serve_rest_api(..., routers=[triggers.router])    # /webhooks, /queues, /triggers
    triggers.start(base_url=server.url, events_port=8084)
    ...
    triggers.close()

A background engine (`python -m switchyard.local.background`):

    EngineProcess(conninfo, extra_servers=[background_triggers])

`start` runs the scheduler and queue consumer thread over the triggers of the workflows installed
in the database, and serves EventBridge PutEvents on `events_port` (127.0.0.1, uvicorn, a thread).
The thread fires only while the engine owns the database (`Engine.healthy`), and the engine lock
lets one engine at a time own it: a slot fires, and a message is consumed, once across engines.
"""

from __future__ import annotations

import socket
import threading
import time

import uvicorn
from psycopg_pool import ConnectionPool

from switchyard.engine.engine import Engine
from switchyard.local.engine_client import EngineCommands
from switchyard.local.triggers.http import events_app, trigger_router
from switchyard.local.triggers.service import TriggerService

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
        self.service = TriggerService(
            self.pool,
            EngineCommands(engine),
            poll_seconds=poll_seconds,
            ready=lambda: engine.healthy,
        )
        self.router = trigger_router(self.service)
        self._events: _EventsServer | None = None

    @property
    def events_url(self) -> str | None:
        return self._events.url if self._events else None

    def start(
        self,
        *,
        base_url: str = "",
        events_port: int | None = None,
        events_host: str = "127.0.0.1",
    ) -> None:
        """Fire schedules and read queues; with `events_port`, serve PutEvents there too.
        `base_url`: the REST server's, for the webhook URLs `GET /triggers` shows."""
        self.service.base_url = base_url.rstrip("/")
        if events_port is not None:
            self._events = _EventsServer(self.service, events_host, events_port)
        self.service.start()

    def close(self) -> None:
        self.service.close()
        if self._events is not None:
            self._events.close()
        self.pool.close()

    server_close = close
    """`EngineProcess` closes what its `extra_servers` made with `server_close`, before the
    engine."""


def background_triggers(engine: Engine) -> LocalTriggers:
    """The triggers of an engine that serves no HTTP (an `EngineProcess` extra server): its
    schedules fire and its queues are read; webhooks and events need `switchyard dev`."""
    triggers = LocalTriggers(engine)
    triggers.start()
    return triggers
