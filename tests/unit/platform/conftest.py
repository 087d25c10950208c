from tests.pg import pg_conninfo, pg_pool

__all__ = ["pg_conninfo", "pg_pool"]
