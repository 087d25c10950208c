"""The recorder on AWS: Step Functions executions' run records in Aurora, from their history.

An execution status-change event (`switchyard.records.events`) names an execution; the recorder
reads the execution's history and projects every event it has not projected yet through the
same code as the local engine's run records (`switchyard.records.history`). So:

- **Idempotent per event.** The execution's row in `sfn_executions` (a summary the recorder keeps
  for each deployed run: ARN, definition, status; what the dashboard joins on) holds
  `next_event`, the first history event not yet projected. The same status event delivered twice
  finds nothing new the second time.
- **Ordered by the row's version.** A batch of events is committed only if the row's `version` is
  still the one read before the history was fetched (`UPDATE ... WHERE version = %s`, which also
  locks the row for the batch): two recorders handling two events of one execution at once
  never project an event twice, and one that lost the race reads again. An event that arrives
  after a newer one (EventBridge does not order them) finds the history already projected past
  it: an older state never overwrites a newer one.
- **Complete.** Whatever the event carries (EventBridge drops inputs and outputs past 248 KB),
  the records come from the history; a sub-workflow run's parent is recorded first, so the child's
  spend reaches the parent's totals.

The rows it keeps in `sfn_executions` carry `options = {"recorded_from": "aws"}`: the local engine
never resumes or stops them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any

import psycopg
from aws_lambda_powertools import Metrics
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool
from pydantic import ValidationError

from switchyard.constants import RECORDER_FUNCTIONS_ENV
from switchyard.records.events import TERMINAL, ExecutionStatusChange
from switchyard.records.history import ExecutionState, HistoryProjection, state_writes
from switchyard.records.jsonb import json_text
from switchyard.records.projection import RunRecords, RunRef, RunStart, workflow_of
from switchyard.runtime.instruments import count_version_conflicts

log = logging.getLogger(__name__)

RECORDED_FROM = {"recorded_from": "aws"}
PARENT_INPUT = "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID"
"""The key a `.sync` child's input carries its parent's execution ARN in (what compiled
sub-workflow steps pass, as AWS recommends)."""
SWITCHYARD_PARENT = "switchyard:parent"

MIRROR_SQL = """
SELECT id, arn, name, input, started_at, definition_hash, parent, version, next_event, status,
       output, error, cause, stopped_at, redrive_count
  FROM sfn_executions WHERE arn = %s
"""
DEFINITION_SQL = "SELECT definition FROM sfn_definitions WHERE hash = %s"
INSERT_DEFINITION_SQL = (
    "INSERT INTO sfn_definitions (hash, definition) VALUES (%s, %s) ON CONFLICT DO NOTHING"
)
INSERT_MIRROR_SQL = """
INSERT INTO sfn_executions (arn, machine_arn, version_arn, definition_hash, name, status, input,
                            started_at, parent, options)
VALUES (%s, %s, %s, %s, %s, 'RUNNING', %s::jsonb, %s, %s::jsonb, %s::jsonb)
ON CONFLICT (arn) DO NOTHING
"""
CLAIM_SQL = "UPDATE sfn_executions SET version = version + 1 WHERE id = %s AND version = %s"
ADVANCE_SQL = """
UPDATE sfn_executions SET next_event = %s, status = %s, output = %s::jsonb, error = %s,
       cause = %s, stopped_at = %s, redrive_count = %s
 WHERE id = %s
"""


NOT_OURS = frozenset({"AccessDeniedException", "ExecutionDoesNotExist"})
"""What Step Functions answers for an execution the recorder may not read (another stack's,
matched by the rule's machine-name prefix) or that is gone (90 days after it ended): recorded
by no one, and not worth delivering again."""


class RecorderError(Exception):
    """The recorder could not record an execution now; the event should be delivered again
    (Lambda retries an asynchronous invocation, then sends it to the dead-letter queue)."""


class HistoryBehindError(RecorderError):
    """The event says the execution ended, but its history does not show the end yet."""


@dataclass(frozen=True)
class Recorded:
    """What one call recorded: `events` projected now; the execution's status as recorded;
    `ignored` when the execution is not a switchyard workflow's; `conflicts`, how often another
    recorder changed the execution's row first (a version conflict: this one read again)."""

    execution_arn: str
    events: int = 0
    status: str | None = None
    redrive_count: int = 0
    ignored: bool = False
    workflow: str | None = None
    conflicts: int = 0


@dataclass(frozen=True)
class _Mirror:
    id: int
    arn: str
    name: str
    input: Any
    started_at: datetime
    definition_hash: str
    parent: dict[str, Any] | None
    version: int
    next_event: int
    status: str
    output: Any
    error: str | None
    cause: str | None
    stopped_at: datetime | None
    redrive_count: int


def definition_hash(text: str) -> str:
    """The same key the engine stores definitions under."""
    return hashlib.sha256(text.encode()).hexdigest()


class Recorder:
    """Records executions into the run records of `pool`'s database, reading them through
    `client` (a boto3 `stepfunctions` client). `functions` maps deployed function names to
    their folder names (`agent_step`, ...), as the step records need them."""

    def __init__(
        self,
        pool: ConnectionPool,
        client: Any,
        *,
        functions: Mapping[str, str] | None = None,
        attempts: int = 5,
        wait: Callable[[float], None] = time.sleep,
    ) -> None:
        self._pool = pool
        self._client = client
        self._functions = dict(functions or {})
        self._attempts = attempts
        self._wait = wait

    def handle(self, event: ExecutionStatusChange) -> Recorded:
        """Record the execution an event names. An execution already recorded to its end (and
        not redriven since, as the event's redrive count says) is not read again. An event
        saying the run ended before its history shows the end is read again (up to `attempts`
        times, a second apart), then refused (`HistoryBehindError`) so that it is delivered
        again."""
        detail = event.detail
        with self._pool.connection() as conn:
            known = _mirror(conn, detail.execution_arn)
        if (
            known is not None
            and known.status in TERMINAL
            and detail.redrive_count <= known.redrive_count
        ):  # recorded to its end already: a repeated or late event, nothing to read
            return Recorded(known.arn, status=known.status, redrive_count=known.redrive_count)
        for attempt in range(self._attempts):
            recorded = self.record(detail.execution_arn)
            behind = (
                event.terminal
                and not recorded.ignored
                and recorded.status not in TERMINAL
                and recorded.redrive_count <= detail.redrive_count
            )
            if not behind:
                return recorded
            if attempt + 1 < self._attempts:
                self._wait(1.0)
        raise HistoryBehindError(
            f"{detail.execution_arn} is {detail.status} but its history does not show the end "
            "yet; deliver the event again"
        )

    def record(self, execution_arn: str) -> Recorded:
        """Project the events of the execution's history not projected yet."""
        with self._pool.connection() as conn:
            mirror = _mirror(conn, execution_arn)
        if mirror is None:
            mirror = self._mirror_new(execution_arn)
            if mirror is None:
                return Recorded(execution_arn, ignored=True)
        for conflicts in range(self._attempts):
            events = self._history(execution_arn)
            with self._pool.connection() as conn:
                recorded = self._project(conn, mirror, events)
                if recorded is not None:
                    if conflicts and recorded.workflow is None:  # the metric names it
                        recorded = replace(recorded, workflow=_workflow(conn, mirror))
                    return replace(recorded, conflicts=conflicts)
                found = _mirror(conn, execution_arn)  # another recorder went first: read again
            assert found is not None
            mirror = found
        raise RecorderError(f"{execution_arn}: other recorders kept recording it first")

    # --- the execution's row ------------------------------------------------------------------

    def _mirror_new(self, execution_arn: str) -> _Mirror | None:
        """The execution's row, made now from DescribeExecution and the definition it runs; None
        when its machine is not a switchyard workflow's. A sub-workflow run's parent is
        recorded first."""
        try:
            described = self._client.describe_execution(executionArn=execution_arn)
            machine = self._client.describe_state_machine_for_execution(executionArn=execution_arn)
        except Exception as exc:
            if _error_code(exc) not in NOT_OURS:
                raise
            log.warning("not recorded: %s", _error_code(exc))
            return None
        text = str(machine["definition"])
        try:
            comment = json.loads(text).get("Comment")
        except (ValueError, AttributeError):
            comment = None
        if workflow_of(comment if isinstance(comment, str) else None) is None:
            log.info("not a switchyard workflow's execution; not recorded")
            return None
        data = _loads(described.get("input"))
        parent = self._parent_of(data)
        digest = definition_hash(text)
        version_arn = described.get("stateMachineAliasArn") or described.get(
            "stateMachineVersionArn"
        )
        with self._pool.connection() as conn, conn.transaction():
            conn.execute(INSERT_DEFINITION_SQL, (digest, text))
            conn.execute(
                INSERT_MIRROR_SQL,
                (execution_arn, described["stateMachineArn"], version_arn, digest,
                 described["name"], json_text(data) if data is not None else None,
                 described["startDate"], json_text(parent) if parent else None,
                 json_text(RECORDED_FROM)),
            )  # fmt: skip
            return _mirror(conn, execution_arn)

    def _parent_of(self, data: Any) -> dict[str, Any] | None:
        """A `.sync` child's link to its parent run ({execution_id, arn, step}), after recording
        the parent; None for a run no switchyard run started."""
        if not isinstance(data, dict) or not isinstance(data.get(PARENT_INPUT), str):
            return None
        parent_arn = data[PARENT_INPUT]
        if self.record(parent_arn).ignored:
            return None
        with self._pool.connection() as conn:
            parent = _mirror(conn, parent_arn)
        assert parent is not None
        link = data.get(SWITCHYARD_PARENT)
        step = link.get("step") if isinstance(link, dict) else None
        return {"execution_id": parent.id, "arn": parent_arn, "step": step}

    # --- projecting ---------------------------------------------------------------------------

    def _history(self, execution_arn: str) -> list[dict[str, Any]]:
        """The whole history, oldest first (a result's Task and a state's failure may be in
        events projected earlier)."""
        events: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            page = self._client.get_execution_history(
                executionArn=execution_arn,
                maxResults=1000,
                includeExecutionData=True,
                **({"nextToken": token} if token else {}),
            )
            events += page["events"]
            token = page.get("nextToken")
            if not token:
                return events

    def _project(
        self, conn: psycopg.Connection[Any], mirror: _Mirror, events: list[dict[str, Any]]
    ) -> Recorded | None:
        """Project the new events in one transaction, if the row is still at `mirror.version`;
        None when another recorder changed it first."""
        new = [event for event in events if int(event["id"]) >= mirror.next_event]
        if not new:
            return Recorded(mirror.arn, status=mirror.status, redrive_count=mirror.redrive_count)
        with conn.transaction():
            if conn.execute(CLAIM_SQL, (mirror.id, mirror.version)).rowcount != 1:
                return None
            row = conn.execute(DEFINITION_SQL, (mirror.definition_hash,)).fetchone()
            assert row is not None  # the row's foreign key
            definition = json.loads(str(row[0]))
            workflow = workflow_of(definition.get("Comment"))
            assert workflow is not None  # only a switchyard workflow's execution has a row
            parent = mirror.parent or {}
            start = RunStart(
                run_id=mirror.name,
                workflow=workflow[0],
                version=workflow[1],
                input=mirror.input,
                started_at=mirror.started_at,
                parent_id=parent.get("execution_id"),
                parent_step=parent.get("step"),
            )
            state = ExecutionState(
                status=mirror.status,
                output=mirror.output,
                error=mirror.error,
                cause=mirror.cause,
                stopped_at=mirror.stopped_at,
                redrive_count=mirror.redrive_count,
            )
            run = RunRef(mirror.id, mirror.arn, child=bool(mirror.parent))
            projection = HistoryProjection(
                RunRecords(conn), run, start, state_writes(definition), events,
                functions=self._functions, state=state,
            )  # fmt: skip
            next_event = projection.project(mirror.next_event)
            state = projection.state
            conn.execute(
                ADVANCE_SQL,
                (next_event, state.status,
                 json_text(state.output) if state.output is not None else None, state.error,
                 state.cause, state.stopped_at, state.redrive_count, mirror.id),
            )  # fmt: skip
        return Recorded(
            mirror.arn,
            events=len(new),
            status=state.status,
            redrive_count=state.redrive_count,
            workflow=workflow[0],
        )


def _workflow(conn: psycopg.Connection[Any], mirror: _Mirror) -> str | None:
    row = conn.execute(DEFINITION_SQL, (mirror.definition_hash,)).fetchone()
    workflow = workflow_of(json.loads(str(row[0])).get("Comment")) if row else None
    return workflow[0] if workflow else None


def _error_code(exc: Exception) -> str | None:
    """The error code of a botocore `ClientError` (None for any other exception)."""
    response = getattr(exc, "response", None)
    error = response.get("Error") if isinstance(response, dict) else None
    return str(error.get("Code")) if isinstance(error, dict) else None


def _loads(text: Any) -> Any:
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _mirror(conn: psycopg.Connection[Any], arn: str) -> _Mirror | None:
    row = conn.cursor(row_factory=dict_row).execute(MIRROR_SQL, (arn,)).fetchone()
    return _Mirror(**row) if row is not None else None


def function_names(environ: Mapping[str, str]) -> dict[str, str]:
    """Deployed function name -> folder name, from `SWITCHYARD_RECORDER_FUNCTIONS` (JSON
    `{"agent_step": "<deployed name>", ...}`, as the stack sets it); {} when unset (the
    functions are named after their folders)."""
    text = environ.get(RECORDER_FUNCTIONS_ENV)
    if not text:
        return {}
    names = json.loads(text)
    if not isinstance(names, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in names.items()
    ):
        raise ValueError(
            f"{RECORDER_FUNCTIONS_ENV} must be a JSON object of folder names to function names"
        )
    return {deployed: folder for folder, deployed in names.items()}


def handle_event(
    event: Any, recorder: Recorder, *, metrics: Metrics | None = None
) -> dict[str, Any]:
    """The recorder function's work: an EventBridge event in, what was recorded out. An event
    that is not a Step Functions execution status change is ignored (and said so), never
    retried. Version conflicts go to `metrics` (`VersionConflicts`) when given."""
    try:
        change = ExecutionStatusChange.model_validate(event)
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in error["loc"]) for error in exc.errors()})
        log.warning("ignored: not a Step Functions execution status change (%s)", fields)
        return {"ignored": True, "reason": f"not an execution status change: {fields}"}
    recorded = recorder.handle(change)
    if metrics is not None:
        count_version_conflicts(metrics, workflow=recorded.workflow, count=recorded.conflicts)
    log.info(
        "recorded",
        extra={
            "execution": recorded.execution_arn,
            "events": recorded.events,
            "status": recorded.status,
            "ignored": recorded.ignored,
        },
    )
    return asdict(recorded)
