"""The engine as a long-lived process: `switchyard dev` and the background engine
(`switchyard.local.background`, which adds the local triggers) run this.

    python -m switchyard.engine.serve --database-url URL [--sfn-port 8083] [--functions-dir DIR]

That is the engine alone; switchyard's own engine process (its run records and other hooks, the
embedded database) is `python -m switchyard.local.serve`. It waits for the database's ownership
lock (a second engine waits and takes over when the first dies), runs the engine and its command
listener, optionally serves the Step Functions API, and stops cleanly on SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from switchyard.constants import DATABASE_URL_ENV
from switchyard.engine.dispatch import FunctionRegistry
from switchyard.engine.engine import Engine
from switchyard.engine.hooks import EngineHooks
from switchyard.engine.ownership import Ownership
from switchyard.engine.remote import CommandListener

log = logging.getLogger("switchyard.engine")


def prepare_environment(conninfo: str) -> None:
    """What in-process handlers read, as Lambda functions read their configuration."""
    os.environ[DATABASE_URL_ENV] = conninfo
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")


class EngineProcess:
    """Ownership, engine, command listener and (optionally) API servers, started and stopped
    together. Each of `extra_servers` is called with the started engine and returns a bound
    server (`socketserver` style: `serve_forever`, `shutdown`, `server_close`), which is served
    from a thread of its own, like the Step Functions API, and closed by `close()`."""

    def __init__(
        self,
        conninfo: str,
        *,
        functions_dir: Path | None = None,
        sfn_port: int | None = None,
        workers: int = 16,
        extra_servers: list[Callable[[Engine], Any]] | None = None,
        hooks: EngineHooks | None = None,
    ) -> None:
        self.conninfo = conninfo
        self.ownership = Ownership(conninfo)
        self.engine = Engine(
            conninfo,
            registry=FunctionRegistry(functions_dir),
            workers=workers,
            ownership=self.ownership,
            on_owner_again=self._register,  # `engine status` shows it again
            hooks=hooks,
        )
        self.listener = CommandListener(conninfo, self.engine.submit)
        self._sfn_port = sfn_port
        self._servers: list[tuple[Any, threading.Thread | None]] = []
        self._extra = extra_servers or []
        self.sfn_url: str | None = None

    def start(self, *, wait: bool = True, stop: threading.Event | None = None) -> bool:
        prepare_environment(self.conninfo)
        if not self.ownership.acquire(wait=wait, stop=stop):
            return False
        self.engine.start()
        self.listener.start()
        if self._sfn_port is not None:
            from switchyard.engine.api import serve_sfn_api

            server = serve_sfn_api(self.engine, "127.0.0.1", self._sfn_port)
            self._serve(server, "switchyard-sfn-api")
            self.sfn_url = server.endpoint_url
        for factory in self._extra:
            self._serve(factory(self.engine), "switchyard-server")
        self._register()
        return True

    @property
    def servers(self) -> list[Any]:
        """The servers started with the engine, in order: the Step Functions API (if any), then
        those of `extra_servers`."""
        return [server for server, _ in self._servers]

    def _serve(self, server: Any, name: str) -> None:
        """A bound server (`socketserver` style) answers from a thread of its own until close."""
        thread = None
        if callable(getattr(server, "serve_forever", None)):
            thread = threading.Thread(
                target=server.serve_forever, kwargs={"poll_interval": 0.1}, name=name, daemon=True
            )
            thread.start()
        self._servers.append((server, thread))

    def close(self) -> None:
        for server, thread in reversed(self._servers):
            if thread is not None:
                server.shutdown()  # returns once serve_forever has stopped
                thread.join(timeout=5)
            close = getattr(server, "server_close", None)
            if callable(close):
                close()
        self._servers.clear()
        self._unregister()
        self.listener.close()
        self.engine.close()
        self.ownership.release()

    def _register(self) -> None:
        """This engine owns the database now: any other row is an engine that died (killed,
        or its machine gone) without removing its own, so it is removed here."""
        with psycopg.connect(self.conninfo, autocommit=True) as conn, conn.transaction():
            conn.execute(
                "DELETE FROM engine_instances WHERE NOT (pid = %s AND host = %s)",
                (os.getpid(), socket.gethostname()),
            )
            conn.execute(
                "INSERT INTO engine_instances (pid, host, sfn_url) VALUES (%s, %s, %s)"
                " ON CONFLICT (host, pid) DO UPDATE SET sfn_url = EXCLUDED.sfn_url,"
                " started_at = now()",
                (os.getpid(), socket.gethostname(), self.sfn_url),
            )

    def _unregister(self) -> None:
        try:
            with psycopg.connect(self.conninfo, autocommit=True) as conn:
                conn.execute(
                    "DELETE FROM engine_instances WHERE pid = %s AND host = %s",
                    (os.getpid(), socket.gethostname()),
                )
        except psycopg.Error:
            log.warning("could not remove this engine from engine_instances")


DatabaseFactory = Callable[[], str]
"""Opens the database to use when none is given, and returns its conninfo (keeping it open while
the process runs): the embedded server, for switchyard's local engine."""


def main(
    argv: list[str] | None = None,
    *,
    extra_servers: list[Callable[[Engine], Any]] | None = None,
    hooks: EngineHooks | None = None,
    database: DatabaseFactory | None = None,
    prog: str = "python -m switchyard.engine.serve",
) -> int:
    """Run the engine until SIGTERM or SIGINT; `extra_servers` and `hooks` as `EngineProcess`
    takes them. Without --database-url, DATABASE_URL, else `database()`."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument(
        "--database-url", help="PostgreSQL conninfo; default: DATABASE_URL, else the embedded one"
    )
    parser.add_argument("--sfn-port", type=int)
    parser.add_argument("--functions-dir", type=Path)
    parser.add_argument("--workers", type=int, default=16)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s"
    )
    logging.getLogger("pgserver").setLevel(logging.WARNING)  # its INFO is a line per step
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    conninfo = args.database_url
    if conninfo is None and database is not None:
        conninfo = database()
    conninfo = conninfo or os.environ.get(DATABASE_URL_ENV)
    if not conninfo:
        parser.error(f"give --database-url or set {DATABASE_URL_ENV}")
    process = EngineProcess(
        conninfo,
        functions_dir=args.functions_dir,
        sfn_port=args.sfn_port,
        workers=args.workers,
        extra_servers=extra_servers,
        hooks=hooks,
    )
    log.info("waiting for the database's engine lock")
    if not process.start(wait=True, stop=stop):
        return 0
    log.info("engine running (pid %d)", os.getpid())
    try:
        stop.wait()
    finally:
        process.close()
        log.info("engine stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
