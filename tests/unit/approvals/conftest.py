"""A database of this package's own: its engines take the engine lock of that database."""

from tests.pg import pg_conninfo, pg_pool

__all__ = ["pg_conninfo", "pg_pool"]
