"""Which PostgreSQL the local engine uses: `DATABASE_URL`, or an embedded server (pgserver)
kept under the user's data directory, started on demand and stopped when its last user exits."""

from __future__ import annotations

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


def _embedded() -> Database:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR on servers
        import pgserver

        server = pgserver.get_server(  # type: ignore[attr-defined]
            data_dir() / "postgres", cleanup_mode="stop"
        )
    return Database(server.get_uri(), server)
