"""Durable stores of the step runtime: idempotency, budgets, audit, policy state, migrations.

Each store is one interface with backends for AWS (DynamoDB, S3) and for one machine
(PostgreSQL), and one conformance suite that every backend passes (tests/unit/stores).
"""

from switchyard.stores.migrate import Migration, apply_migrations, migrations

__all__ = ["Migration", "apply_migrations", "migrations"]
