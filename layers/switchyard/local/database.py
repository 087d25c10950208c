"""Which PostgreSQL the local engine uses: `DATABASE_URL`, or an embedded server (pgserver)
kept under the user's data directory, started on demand and stopped when its last user exits."""

from __future__ import annotations

import atexit
import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from switchyard.constants import DATABASE_URL_ENV
from switchyard.stores.migrate import apply_migrations

HOME_ENV = "SWITCHYARD_HOME"


def data_dir() -> Path:
    """`$SWITCHYARD_HOME`, else the platform's user data directory for switchyard."""
    configured = os.environ.get(HOME_ENV)
    if configured:
        path = Path(configured)
    else:
        import platformdirs

        path = Path(platformdirs.user_data_dir("switchyard"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass
class Database:
    conninfo: str
    embedded: Any = None
    """The pgserver handle when the database is the embedded one (keep it while in use)."""

    @property
    def description(self) -> str:
        if self.embedded is not None:
            return f"embedded PostgreSQL in {self.embedded.pgdata}"
        return "DATABASE_URL"


def open_database(*, migrate: bool = True) -> Database:
    """The configured database, or the embedded one; migrated to the library's schema."""
    url = os.environ.get(DATABASE_URL_ENV)
    database = Database(url) if url else _embedded()
    if migrate:
        with psycopg.connect(database.conninfo) as conn:
            apply_migrations(conn)
    return database


_opened: dict[str, Database] = {}
"""The embedded servers this process uses, by conninfo."""


def is_embedded(conninfo: str) -> bool:
    """Whether `conninfo` is the embedded server this process opened (a background engine must
    then open it itself, to be one of its users)."""
    return conninfo in _opened


def _embedded() -> Database:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR on servers
        import pgserver

        pgdata = data_dir() / "postgres"
        _forget_dead_users(pgdata)
        server = pgserver.get_server(pgdata, cleanup_mode="stop")  # type: ignore[attr-defined]
    # Runs before pgserver's own exit handler (registered earlier; handlers run last first), so
    # that a user killed earlier does not keep the server up after this last live one exits.
    atexit.register(_forget_dead_users, server.pgdata)
    database = Database(server.get_uri(), server)
    _opened[database.conninfo] = database
    return database


def _forget_dead_users(pgdata: Path) -> None:
    """Drop the pids of users that no longer exist from pgserver's list of the server's users."""
    users = pgdata / ".handle_pids.json"
    if not users.exists():
        return
    import fasteners  # type: ignore[import-untyped]  # pgserver's dependency
    from pgserver.postgres_server import PostgresServer

    with fasteners.InterProcessLock(PostgresServer.lock_path):  # pgserver's own lock
        try:
            pids = [int(pid) for pid in json.loads(users.read_text())]
        except (OSError, ValueError, TypeError):
            return
        alive = [pid for pid in pids if _exists(pid)]
        if alive != pids:
            users.write_text(json.dumps(alive))


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
