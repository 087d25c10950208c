"""Schema migrations: numbered SQL files applied in order, one transaction each.

`stores/migrations/NNNN_name.sql` files are append-only: a released file is never edited, a change
is a new file. `apply_migrations` records each applied file in `schema_migrations`, so running it
again (or from two processes at once: an advisory lock serialises them) applies only what is new.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

import psycopg

_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_LOCK_ID = 0x5357_5944  # "SWYD": one advisory lock for all switchyard migrations


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def migrations() -> list[Migration]:
    """Every migration shipped with the library, in version order."""
    found: list[Migration] = []
    folder = resources.files("switchyard.stores") / "migrations"
    for entry in folder.iterdir():
        match = _FILE.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2), entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"two migrations share a version number: {versions}")
    return found


def apply_migrations(conn: psycopg.Connection[object]) -> list[int]:
    """Apply the migrations not yet applied; returns the versions applied now."""
    conn.autocommit = False
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_ID,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
    applied_now: list[int] = []
    for migration in migrations():
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_ID,))
            row = conn.execute(
                "SELECT 1 FROM schema_migrations WHERE version = %s", (migration.version,)
            ).fetchone()
            if row is not None:
                continue
            conn.execute(migration.sql.encode())
            conn.execute(
                "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                (migration.version, migration.name),
            )
            applied_now.append(migration.version)
    return applied_now
