"""Powertools idempotency records in PostgreSQL: the local twin of `DynamoDBPersistenceLayer`.

Powertools owns the algorithm (save in progress, run, save the result or delete the record on
error, replay a stored result, validate the payload hash); a backend implements four methods. This
one keeps DynamoDB's semantics exactly: a put succeeds when no record exists, the record has
expired, or it is in progress and its in-progress expiry (the crashed attempt's Lambda deadline)
has passed; otherwise the existing record comes back with `IdempotencyItemAlreadyExistsError`.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import psycopg
from aws_lambda_powertools.utilities.idempotency import BasePersistenceLayer
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyItemAlreadyExistsError,
    IdempotencyItemNotFoundError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord
from psycopg_pool import ConnectionPool

_COLUMNS = (
    "key, status, expiry_timestamp, in_progress_expiry_timestamp, response_data, payload_hash"
)


EXPIRE_IN_PROGRESS_SQL = """
UPDATE idempotency_records
   SET in_progress_expiry_timestamp = (extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1
 WHERE status = 'INPROGRESS'
"""


def expire_calls_in_progress(conn: psycopg.Connection[Any]) -> int:
    """Let every idempotent call in progress be tried again: when an engine takes over a
    database, the calls ran inside the engine that died and none is still running. (A crashed
    Lambda's record waits for its deadline instead, which may be 15 minutes.)"""
    return int(conn.execute(EXPIRE_IN_PROGRESS_SQL).rowcount)


def _record(row: tuple[Any, ...]) -> DataRecord:
    return DataRecord(
        idempotency_key=row[0],
        status=row[1],
        expiry_timestamp=int(row[2]),
        in_progress_expiry_timestamp=int(row[3]) if row[3] is not None else None,
        response_data=row[4] or "",
        payload_hash=row[5] or "",
    )


class PostgresPersistenceLayer(BasePersistenceLayer):
    """Table `idempotency_records` (migration 0001)."""

    def __init__(self, pool: ConnectionPool) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self._pool = pool

    def _get_record(self, idempotency_key: str) -> DataRecord:
        with self._pool.connection() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM idempotency_records WHERE key = %s", (idempotency_key,)
            ).fetchone()
        if row is None:
            raise IdempotencyItemNotFoundError
        return _record(row)

    def _put_record(self, data_record: DataRecord) -> None:
        now = dt.datetime.now().timestamp()
        payload_hash = data_record.payload_hash if self.payload_validation_enabled else None
        with self._pool.connection() as conn:
            inserted = conn.execute(
                "INSERT INTO idempotency_records AS r"
                " (key, status, expiry_timestamp, in_progress_expiry_timestamp, response_data,"
                "  payload_hash)"
                " VALUES (%(key)s, %(status)s, %(expiry)s, %(in_progress)s, NULL, %(hash)s)"
                " ON CONFLICT (key) DO UPDATE SET status = EXCLUDED.status,"
                "  expiry_timestamp = EXCLUDED.expiry_timestamp,"
                "  in_progress_expiry_timestamp = EXCLUDED.in_progress_expiry_timestamp,"
                "  response_data = NULL, payload_hash = EXCLUDED.payload_hash"
                " WHERE r.expiry_timestamp < %(now)s"
                "  OR (r.status = 'INPROGRESS' AND r.in_progress_expiry_timestamp IS NOT NULL"
                "      AND r.in_progress_expiry_timestamp < %(now_ms)s)"
                " RETURNING key",
                {
                    "key": data_record.idempotency_key,
                    "status": data_record.status,
                    "expiry": data_record.expiry_timestamp,
                    "in_progress": data_record.in_progress_expiry_timestamp,
                    "hash": payload_hash,
                    "now": int(now),
                    "now_ms": int(now * 1000),
                },
            ).fetchone()
            if inserted is not None:
                return
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM idempotency_records WHERE key = %s",
                (data_record.idempotency_key,),
            ).fetchone()
        if row is None:  # deleted in between: let Powertools try again
            raise IdempotencyItemAlreadyExistsError()
        old = _record(row)
        self._validate_payload(data_payload=data_record, stored_data_record=old)
        self._save_to_cache(data_record=old)
        raise IdempotencyItemAlreadyExistsError(old_data_record=old)

    def _update_record(self, data_record: DataRecord) -> None:
        with self._pool.connection() as conn:
            conn.execute(
                "UPDATE idempotency_records SET response_data = %s, expiry_timestamp = %s,"
                " status = %s, payload_hash = COALESCE(%s, payload_hash) WHERE key = %s",
                (
                    data_record.response_data,
                    data_record.expiry_timestamp,
                    data_record.status,
                    data_record.payload_hash if self.payload_validation_enabled else None,
                    data_record.idempotency_key,
                ),
            )

    def _delete_record(self, data_record: DataRecord) -> None:
        with self._pool.connection() as conn:
            conn.execute(
                "DELETE FROM idempotency_records WHERE key = %s", (data_record.idempotency_key,)
            )
