"""A PostgreSQL server of a test's own (pgserver, in a temporary directory), for tests that must
restart or stop PostgreSQL: never the shared server of `tests/pg.py`.

    with private_server() as server:
        ... server.conninfo ... server.restart() ...
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from switchyard.stores.migrate import apply_migrations


class PrivateServer:
    def __init__(self, handle: Any) -> None:
        self._handle = handle
        self.conninfo: str = handle.get_uri()

    def pg_ctl(self, *args: str) -> None:
        from pgserver._commands import pg_ctl  # type: ignore[attr-defined]  # made at import

        pg_ctl(list(args), pgdata=self._handle.pgdata, user=self._handle.system_user, timeout=60)

    def restart(self) -> None:
        """A fast restart: every connection is terminated, the server is down for a moment."""
        self.pg_ctl("-w", "-m", "fast", "restart")

    def stop(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.pg_ctl("-w", "-m", "fast", "stop")


@contextmanager
def private_server(*, migrate: bool = True) -> Iterator[PrivateServer]:
    """In a directory of its own under the system's temporary directory: the server runs as
    another user when the tests run as root, who may not enter pytest's private `tmp_path`."""
    directory = Path(tempfile.mkdtemp(prefix="switchyard-pg-"))
    directory.chmod(0o755)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR
        import pgserver

        handle = pgserver.get_server(directory / "pgdata", cleanup_mode=None)  # type: ignore[attr-defined]
    server = PrivateServer(handle)
    try:
        if migrate:
            with psycopg.connect(server.conninfo) as conn:
                apply_migrations(conn)
        yield server
    finally:
        server.stop()  # here: a restarted server has another pid than the one pgserver knows
        handle.cleanup()
        shutil.rmtree(directory, ignore_errors=True)
