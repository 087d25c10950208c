from tests.pg import pg_conninfo  # noqa: F401  (a session fixture: a fresh database)
