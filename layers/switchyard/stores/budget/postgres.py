"""The budget ledger on PostgreSQL: one transaction per operation, conditional UPDATEs.

`UPDATE ... WHERE spent + reserved + amount <= limit` takes the scope row's lock; a concurrent
transaction waits, then re-checks its condition against the committed row, so two reservations
cannot both fit in the same headroom. Scopes are touched in key order, so there are no deadlocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from switchyard.stores.budget.ledger import (
    BudgetLedger,
    Reservation,
    Scope,
    ScopeLimit,
    ScopeTotals,
    exceeded,
    exceeded_steps,
    sorted_limits,
)


class _RefusedError(Exception):
    def __init__(self, error: Exception) -> None:
        self.error = error


class PostgresBudgetLedger(BudgetLedger):
    """Tables `budget_scopes`, `budget_reservations`, `budget_attempts`, `budget_averages`."""

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool

    def reserve(
        self,
        reservation_id: str,
        amount_micros: int,
        limits: Sequence[ScopeLimit],
        *,
        owner: str,
        model: str | None = None,
        step: str | None = None,
    ) -> Reservation:
        ordered = sorted_limits(limits)
        keys = [limit.scope.key for limit in ordered]
        try:
            with self._pool.connection() as conn, conn.transaction():
                inserted = conn.execute(
                    "INSERT INTO budget_reservations"
                    " (id, owner, scopes, amount_micros, model, step)"
                    " VALUES (%s, %s, %s, %s, %s, %s)"
                    " ON CONFLICT (id) DO NOTHING RETURNING id",
                    (reservation_id, owner, keys, amount_micros, model, step),
                ).fetchone()
                if inserted is None:
                    row = conn.execute(
                        "SELECT id, owner, scopes, amount_micros FROM budget_reservations"
                        " WHERE id = %s",
                        (reservation_id,),
                    ).fetchone()
                    assert row is not None
                    return Reservation(row[0], row[1], tuple(row[2]), int(row[3]))
                for limit in ordered:
                    self._take(conn, limit, amount_micros)
        except _RefusedError as refused:
            raise refused.error from None
        return Reservation(reservation_id, owner, tuple(keys), amount_micros)

    @staticmethod
    def _take(conn: psycopg.Connection[Any], limit: ScopeLimit, amount: int) -> None:
        key = limit.scope.key
        conn.execute(
            "INSERT INTO budget_scopes (scope, limit_micros) VALUES (%s, %s)"
            " ON CONFLICT (scope) DO NOTHING",
            (key, limit.max_micros),
        )
        row = conn.execute(
            "UPDATE budget_scopes SET reserved_micros = reserved_micros + %(amount)s"
            " WHERE scope = %(scope)s"
            " AND (limit_micros IS NULL"
            "      OR spent_micros + reserved_micros + %(amount)s <= limit_micros)"
            " AND (%(max_tokens)s::bigint IS NULL OR tokens < %(max_tokens)s::bigint)"
            " RETURNING scope",
            {"amount": amount, "scope": key, "max_tokens": limit.max_tokens},
        ).fetchone()
        if row is None:
            current = conn.execute(
                "SELECT limit_micros, spent_micros, reserved_micros, tokens"
                " FROM budget_scopes WHERE scope = %s",
                (key,),
            ).fetchone()
            assert current is not None
            raise _RefusedError(
                exceeded(
                    key,
                    amount=amount,
                    limit=current[0],
                    spent=current[1],
                    reserved=current[2],
                    tokens=current[3],
                    max_tokens=limit.max_tokens,
                )
            )

    def settle(self, reservation: Reservation, actual_micros: int, *, tokens: int = 0) -> None:
        with self._pool.connection() as conn, conn.transaction():
            row = conn.execute(
                "DELETE FROM budget_reservations WHERE id = %s"
                " RETURNING scopes, amount_micros, model, step",
                (reservation.id,),
            ).fetchone()
            if row is None:
                return
            scopes, amount, model, step = row
            for key in sorted(scopes):
                conn.execute(
                    "UPDATE budget_scopes SET reserved_micros = reserved_micros - %s,"
                    " spent_micros = spent_micros + %s, tokens = tokens + %s WHERE scope = %s",
                    (amount, actual_micros, tokens, key),
                )
            if model is not None and step is not None:
                conn.execute(
                    "INSERT INTO budget_averages (model, step, calls, total_micros)"
                    " VALUES (%s, %s, 1, %s) ON CONFLICT (model, step) DO UPDATE SET"
                    " calls = budget_averages.calls + 1,"
                    " total_micros = budget_averages.total_micros + EXCLUDED.total_micros",
                    (model, step, actual_micros),
                )

    def release(self, reservation: Reservation) -> None:
        with self._pool.connection() as conn, conn.transaction():
            self._release(conn, reservation.id)

    @staticmethod
    def _release(conn: psycopg.Connection[Any], reservation_id: str) -> bool:
        row = conn.execute(
            "DELETE FROM budget_reservations WHERE id = %s RETURNING scopes, amount_micros",
            (reservation_id,),
        ).fetchone()
        if row is None:
            return False
        scopes, amount = row
        for key in sorted(scopes):
            conn.execute(
                "UPDATE budget_scopes SET reserved_micros = reserved_micros - %s WHERE scope = %s",
                (amount, key),
            )
        return True

    def release_open(self, owner: str) -> int:
        with self._pool.connection() as conn:
            ids = [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM budget_reservations WHERE owner = %s",
                    (owner,),
                ).fetchall()
            ]
        released = 0
        for reservation_id in ids:
            with self._pool.connection() as conn, conn.transaction():
                released += self._release(conn, reservation_id)
        return released

    def count_step(self, scope: Scope, attempt_id: str, max_steps: int | None) -> int:
        key = scope.key
        try:
            with self._pool.connection() as conn, conn.transaction():
                conn.execute(
                    "INSERT INTO budget_steps (scope) VALUES (%s) ON CONFLICT (scope) DO NOTHING",
                    (key,),
                )
                new = conn.execute(
                    "INSERT INTO budget_attempts (scope, attempt_id) VALUES (%s, %s)"
                    " ON CONFLICT DO NOTHING RETURNING attempt_id",
                    (key, attempt_id),
                ).fetchone()
                if new is None:
                    row = conn.execute(
                        "SELECT steps FROM budget_steps WHERE scope = %s", (key,)
                    ).fetchone()
                    return int(row[0]) if row else 0
                counted = conn.execute(
                    "UPDATE budget_steps SET steps = steps + 1 WHERE scope = %s"
                    " AND (%s::bigint IS NULL OR steps < %s::bigint) RETURNING steps",
                    (key, max_steps, max_steps),
                ).fetchone()
                if counted is None:
                    raise _RefusedError(exceeded_steps(key, max_steps or 0))
                return int(counted[0])
        except _RefusedError as refused:
            raise refused.error from None

    def set_limit(self, scope: Scope, max_micros: int | None) -> None:
        with self._pool.connection() as conn:
            conn.execute(
                "INSERT INTO budget_scopes (scope, limit_micros) VALUES (%s, %s)"
                " ON CONFLICT (scope) DO UPDATE SET limit_micros = EXCLUDED.limit_micros",
                (scope.key, max_micros),
            )

    def totals(self, scope: Scope) -> ScopeTotals:
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT limit_micros, spent_micros, reserved_micros, tokens"
                " FROM budget_scopes WHERE scope = %s",
                (scope.key,),
            ).fetchone()
            steps = conn.execute(
                "SELECT steps FROM budget_steps WHERE scope = %s", (scope.key,)
            ).fetchone()
        step_count = int(steps[0]) if steps else 0
        if row is None:
            return ScopeTotals(None, 0, 0, 0, step_count)
        return ScopeTotals(row[0], int(row[1]), int(row[2]), int(row[3]), step_count)

    def open_reservations(self, owner: str) -> list[Reservation]:
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT id, owner, scopes, amount_micros FROM budget_reservations"
                " WHERE owner = %s ORDER BY id",
                (owner,),
            ).fetchall()
        return [Reservation(r[0], r[1], tuple(r[2]), int(r[3])) for r in rows]

    def average_cost(self, model: str, step: str) -> int | None:
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT calls, total_micros FROM budget_averages WHERE model = %s AND step = %s",
                (model, step),
            ).fetchone()
        if row is None or not row[0]:
            return None
        return -(-int(row[1]) // int(row[0]))  # rounded up
