"""Migrations apply once, in order, and record themselves."""

from __future__ import annotations

import psycopg

from switchyard.stores.migrate import apply_migrations, migrations
from tests.pg import fresh_database


def test_migrations_apply_once_and_are_recorded() -> None:
    with fresh_database(migrate=False) as conninfo, psycopg.connect(conninfo) as conn:
        versions = [m.version for m in migrations()]
        assert versions == sorted(versions) and versions[0] == 1
        assert apply_migrations(conn) == versions
        assert apply_migrations(conn) == []
        rows = conn.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()
        assert [r[0] for r in rows] == versions
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            ).fetchall()
        }
        assert {"idempotency_records", "budget_scopes", "tool_audit"} <= tables
