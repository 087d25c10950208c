"""A deployed run's records brought up to its history while someone watches it.

The recorder is woken by a run's status changes (its start, its end, a redrive), so between
them the run's step records in Aurora stand still. When the dashboard reads a run whose
execution is still RUNNING, `CatchUp` projects the history events the recorder has not
projected yet, through the recorder's own path (`Recorder.record`: from the row's
`next_event`, committed only if the row's version has not moved, so a page and the recorder,
or two pages, never count a step twice).

However many pages poll a run, Step Functions is read at most once per execution per
`interval` (0.5 s): `execution_reads` (this module's table) keeps when each execution was
last read, and a reader claims the next read with one conditional upsert, which only one of
several concurrent readers wins. The others serve the records as they are; the next poll
shows what the winner projected. A read first asks for the newest event alone (without its
data: a few hundred bytes); the whole history is read only when that event is one not
projected yet, so a run that waits (at a gate, on a long step) costs a probe per poll.

A failed read (throttled, Step Functions unreachable) is logged and leaves the stored records
to be served: a page is never refused because the catch-up failed.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from psycopg_pool import ConnectionPool

from switchyard.records.recorder import RECORDED_FROM, Recorder
from switchyard.records.store import RunStore

log = logging.getLogger(__name__)

INTERVAL_SECONDS = 0.5
"""At most one history read per execution in this long, whatever the number of readers."""
MAX_EVENTS = 5000
"""A run whose history is longer is not caught up (the recorder records it at its end): the
projection needs the whole history, five pages of 1,000 events each time a step ends."""

CLAIM_READ_SQL = """
INSERT INTO execution_reads AS last (execution_id, read_at) VALUES (%s, clock_timestamp())
ON CONFLICT (execution_id) DO UPDATE SET read_at = EXCLUDED.read_at
 WHERE last.read_at <= EXCLUDED.read_at - make_interval(secs => %s)
RETURNING execution_id
"""


@dataclass(frozen=True)
class CaughtUp:
    """What one catch-up of one execution did: `events` projected now; `skipped` when another
    reader read its history less than the interval ago; `read`, whether the whole history was
    read (the newest event was new); `too_long`, when the history is past `MAX_EVENTS` and was
    not read; `error`, Step Functions' error code (or the exception's type) when a read failed
    and the stored records were served."""

    execution_arn: str
    events: int = 0
    skipped: bool = False
    read: bool = False
    too_long: bool = False
    error: str | None = None


class CatchUp:
    """Catches the running deployed executions of a run up with their history (`recorder`
    reads and projects it), at most once per execution per `interval` seconds and while their
    history has at most `max_events`; `client` (a boto3 `stepfunctions` client, the
    recorder's) tells whether there is anything new."""

    def __init__(
        self,
        pool: ConnectionPool,
        recorder: Recorder,
        client: Any,
        *,
        interval: float = INTERVAL_SECONDS,
        max_events: int = MAX_EVENTS,
    ) -> None:
        self._pool = pool
        self._recorder = recorder
        self._client = client
        self._interval = interval
        self._max_events = max_events

    def run(self, run_id: str) -> list[CaughtUp]:
        """Catch up the run `run_id` names (its execution name, or its execution's ARN) if it
        is a deployed run still RUNNING; [] for any other run."""
        with self._pool.connection() as conn:
            running = RunStore(conn).running_recorded(run_id, json.dumps(RECORDED_FROM))
            claimed = {
                execution.id
                for execution in running
                if conn.execute(CLAIM_READ_SQL, (execution.id, self._interval)).fetchone()
            }
            conn.commit()
        return [
            self._read(execution.arn, execution.next_event)
            if execution.id in claimed
            else CaughtUp(execution.arn, skipped=True)
            for execution in running
        ]

    def _read(self, arn: str, next_event: int) -> CaughtUp:
        try:
            newest = self._newest_event(arn)
            if newest < next_event:
                return CaughtUp(arn)  # nothing happened since the last projection
            if newest > self._max_events:
                return CaughtUp(arn, too_long=True)
            recorded = self._recorder.record(arn)
        except Exception as exc:  # the page is served from the stored records regardless
            code = _error_code(exc) or type(exc).__name__
            log.warning("catch-up of a running execution failed: %s", code)
            return CaughtUp(arn, error=code)
        return CaughtUp(arn, events=recorded.events, read=True)

    def _newest_event(self, arn: str) -> int:
        """The id of the execution's newest history event (the highest of the page, which on
        Step Functions is that one event alone)."""
        page = self._client.get_execution_history(
            executionArn=arn, maxResults=1, reverseOrder=True, includeExecutionData=False
        )
        return max((int(event["id"]) for event in page.get("events", [])), default=0)


def _error_code(exc: Exception) -> str | None:
    """A botocore `ClientError`'s code (ThrottlingException, ...); None for anything else."""
    response = getattr(exc, "response", None)
    error = response.get("Error") if isinstance(response, dict) else None
    return str(error.get("Code")) if isinstance(error, dict) else None
