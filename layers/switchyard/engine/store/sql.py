"""The statements of the engine's store (`repository.py`), one named constant each, as SQL reads.

The engine owns the `sfn_*` tables (migration 0002): nothing else writes them."""

from __future__ import annotations

import functools
from dataclasses import dataclass

# --- definitions, machines, versions, aliases ------------------------------------------------

INSERT_DEFINITION = """
INSERT INTO sfn_definitions (hash, definition) VALUES (%s, %s) ON CONFLICT DO NOTHING
"""
DEFINITION = "SELECT definition FROM sfn_definitions WHERE hash = %s"

MACHINE_COLUMNS = """
m.arn, m.name, m.type, d.definition, m.definition_hash, m.role_arn, m.revision_id,
m.description, m.created_at, m.updated_at
"""
INSERT_MACHINE = """
INSERT INTO sfn_state_machines
       (arn, name, type, definition_hash, role_arn, revision_id, description)
VALUES (%s, %s, %s, %s, %s, %s, %s)
"""
UPDATE_MACHINE = """
UPDATE sfn_state_machines
   SET definition_hash = COALESCE(%s, definition_hash), role_arn = COALESCE(%s, role_arn),
       revision_id = %s, updated_at = now()
 WHERE arn = %s
"""
MACHINE = f"""
SELECT {MACHINE_COLUMNS}
  FROM sfn_state_machines m JOIN sfn_definitions d ON d.hash = m.definition_hash
 WHERE m.arn = %s
"""
MACHINE_BY_NAME = f"""
SELECT {MACHINE_COLUMNS}
  FROM sfn_state_machines m JOIN sfn_definitions d ON d.hash = m.definition_hash
 WHERE m.name = %s
"""
MACHINES = f"""
SELECT {MACHINE_COLUMNS}
  FROM sfn_state_machines m JOIN sfn_definitions d ON d.hash = m.definition_hash
 ORDER BY m.created_at, m.name
"""
DELETE_MACHINE = "DELETE FROM sfn_state_machines WHERE arn = %s"
MACHINE_HASHES = "SELECT arn, definition_hash FROM sfn_state_machines WHERE arn = ANY(%s)"

VERSION_OF_REVISION = """
SELECT arn, version, created_at FROM sfn_state_machine_versions
 WHERE machine_arn = %s AND revision_id = %s
"""
NEXT_VERSION = """
SELECT COALESCE(MAX(version), 0) + 1 FROM sfn_state_machine_versions WHERE machine_arn = %s
"""
INSERT_VERSION = """
INSERT INTO sfn_state_machine_versions
       (arn, machine_arn, version, definition_hash, revision_id, description)
VALUES (%s, %s, %s, %s, %s, %s)
RETURNING arn, version, created_at
"""
VERSION = """
SELECT v.arn, v.machine_arn, v.version, v.definition_hash, v.revision_id, v.description,
       v.created_at, d.definition
  FROM sfn_state_machine_versions v JOIN sfn_definitions d ON d.hash = v.definition_hash
 WHERE v.arn = %s
"""
VERSIONS = """
SELECT arn, version, created_at FROM sfn_state_machine_versions
 WHERE machine_arn = %s
 ORDER BY version DESC
"""
DELETE_VERSION = "DELETE FROM sfn_state_machine_versions WHERE arn = %s"

ALIAS_COLUMNS = "arn, machine_arn, name, routing, description, created_at, updated_at"
UPSERT_ALIAS = """
INSERT INTO sfn_aliases (arn, machine_arn, name, routing, description)
VALUES (%s, %s, %s, %s, %s)
    ON CONFLICT (arn) DO UPDATE
   SET routing = EXCLUDED.routing,
       description = COALESCE(EXCLUDED.description, sfn_aliases.description),
       updated_at = now()
"""
ALIAS = f"SELECT {ALIAS_COLUMNS} FROM sfn_aliases WHERE arn = %s"
ALIASES = f"""
SELECT {ALIAS_COLUMNS} FROM sfn_aliases WHERE machine_arn = %s ORDER BY created_at DESC, name
"""
DELETE_ALIAS = "DELETE FROM sfn_aliases WHERE arn = %s"

# --- executions ------------------------------------------------------------------------------

EXECUTION_COLUMNS = """
id, arn, machine_arn, version_arn, definition_hash, name, status, input, output, error, cause,
started_at, stopped_at, redrive_count, redrive_at, parent, options, next_event, next_frame,
version
"""
NEXT_EXECUTION_IDS = "SELECT nextval('sfn_executions_id_seq') FROM generate_series(1, %s)"
INSERT_EXECUTION = """
INSERT INTO sfn_executions
       (id, arn, machine_arn, version_arn, definition_hash, name, status, input, started_at,
        parent, options, next_event, next_frame)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s::jsonb, %s::jsonb, 1, 1)
"""
EXECUTION_BY_ARN = f"SELECT {EXECUTION_COLUMNS} FROM sfn_executions WHERE arn = %s"
EXECUTION_BY_ID = f"SELECT {EXECUTION_COLUMNS} FROM sfn_executions WHERE id = %s"
EXECUTIONS_BY_ID = f"SELECT {EXECUTION_COLUMNS} FROM sfn_executions WHERE id = ANY(%s)"
EXECUTION_BY_NAME = f"""
SELECT {EXECUTION_COLUMNS} FROM sfn_executions WHERE machine_arn = %s AND name = %s
"""
EXECUTIONS_NAMED = """
SELECT e.id, e.arn, e.machine_arn, e.version_arn, e.definition_hash, e.name, e.status, e.input,
       e.output, e.error, e.cause, e.started_at, e.stopped_at, e.redrive_count, e.redrive_at,
       e.parent, e.options, e.next_event, e.next_frame, e.version
  FROM sfn_executions e
  JOIN unnest(%s::text[], %s::text[]) AS n(machine_arn, name)
    ON e.machine_arn = n.machine_arn AND e.name = n.name
"""
EXECUTIONS_WHERE = f"""
SELECT {EXECUTION_COLUMNS} FROM sfn_executions WHERE {{where}} ORDER BY id DESC LIMIT %s
"""
"""ListExecutions and `executions`: the caller joins fixed conditions into `where`; the values
are parameters."""
OPEN_EXECUTION_IDS = """
SELECT id FROM sfn_executions
 WHERE status = 'RUNNING' AND NOT options ? 'recorded_from'
 ORDER BY id
"""
SET_PARENT = "UPDATE sfn_executions SET parent = %s::jsonb WHERE id = %s"
REDRIVEN = "UPDATE sfn_executions SET redrive_at = %s WHERE id = %s"
ORPHANS = """
SELECT c.arn, p.name AS parent_name, p.status AS parent_status
  FROM sfn_executions c
  JOIN sfn_executions p ON p.id = (c.parent->>'execution_id')::bigint
 WHERE c.status = 'RUNNING' AND p.status <> 'RUNNING' AND NOT c.options ? 'recorded_from'
"""
"""Running children whose parent has ended; executions the recorder mirrors from AWS are not
the engine's to stop."""
RUNNING_CHILDREN = """
SELECT arn FROM sfn_executions
 WHERE status = 'RUNNING' AND (parent->>'execution_id')::bigint = %s
   AND (parent->>'frame')::int = %s AND (parent->>'attempt')::int = %s
"""

# --- frames, history, tasks, tokens, timers, dead letters ------------------------------------

FRAMES = """
SELECT frame_id, data FROM sfn_frames WHERE execution_id = %s ORDER BY frame_id
"""
FRAMES_OF = """
SELECT execution_id, frame_id, data FROM sfn_frames
 WHERE execution_id = ANY(%s)
 ORDER BY execution_id, frame_id
"""
HISTORY_COLUMNS = "execution_id, event_id, previous_event_id, type, at, details"
HISTORY_AFTER = f"""
SELECT {HISTORY_COLUMNS} FROM sfn_history
 WHERE execution_id = %s AND event_id > %s
 ORDER BY event_id LIMIT %s
"""
HISTORY_BEFORE = f"""
SELECT {HISTORY_COLUMNS} FROM sfn_history
 WHERE execution_id = %s AND event_id < %s
 ORDER BY event_id DESC LIMIT %s
"""
TASK_COLUMNS = """
t.execution_id, e.arn AS execution_arn, t.frame_id, t.attempt, t.kind, t.resource,
t.parameters, t.token, t.timeout_seconds
"""
PENDING_TASKS = f"""
SELECT {TASK_COLUMNS}
  FROM sfn_tasks t JOIN sfn_executions e ON e.id = t.execution_id
 WHERE e.status = 'RUNNING'
 ORDER BY t.created_at
"""
TASKS_OF = f"""
SELECT {TASK_COLUMNS}
  FROM sfn_tasks t JOIN sfn_executions e ON e.id = t.execution_id
 WHERE t.execution_id = ANY(%s)
"""
TASK = f"""
SELECT {TASK_COLUMNS}
  FROM sfn_tasks t JOIN sfn_executions e ON e.id = t.execution_id
 WHERE t.execution_id = %s AND t.frame_id = %s AND t.attempt = %s
"""
TIMERS = """
SELECT t.execution_id, t.frame_id, t.kind, t.attempt, t.fire_at
  FROM sfn_timers t JOIN sfn_executions e ON e.id = t.execution_id
 WHERE e.status = 'RUNNING'
"""
TOKEN = """
SELECT execution_id, frame_id, closed_at IS NOT NULL AS closed FROM sfn_task_tokens
 WHERE token = %s
"""
TOKENS = """
SELECT token, execution_id, frame_id, closed_at IS NOT NULL AS closed FROM sfn_task_tokens
 WHERE token = ANY(%s)
"""
INSERT_DEAD_LETTER = """
INSERT INTO sfn_dead_letters (queue_url, body, execution_id) VALUES (%s, %s, %s)
"""
DEAD_LETTER_COLUMNS = "id, queue_url, body, execution_id, sent_at"
DEAD_LETTERS = f"SELECT {DEAD_LETTER_COLUMNS} FROM sfn_dead_letters ORDER BY id"
DEAD_LETTERS_OF = f"""
SELECT {DEAD_LETTER_COLUMNS} FROM sfn_dead_letters WHERE execution_id = %s ORDER BY id
"""

# --- the coordinator's batch write -----------------------------------------------------------
# One statement per table and batch (however many transitions), its rows a multi-row VALUES list.


@dataclass(frozen=True)
class RowsStatement:
    """A statement over many rows: `head`, then `row` once per row (a VALUES list), then
    `tail`. psycopg's `executemany` costs a protocol exchange per row, which a burst pays
    thousands of times; this is sent once per `chunk` rows instead."""

    head: str
    row: str
    tail: str = ""

    @property
    def chunk(self) -> int:
        """Rows per statement: psycopg caches the parsing of a statement's text, and its
        server-side preparation, for up to 50 parameters only (`_queries.py`)."""
        return max(1, _MAX_PARAMETERS // self.row.count("%s"))

    def text(self, count: int) -> str:
        """The statement's text for `count` rows (cached: psycopg then prepares it)."""
        return _rows_text(self, count)


_MAX_PARAMETERS = 50


@functools.lru_cache(maxsize=256)
def _rows_text(statement: RowsStatement, count: int) -> str:
    return statement.head + ", ".join([statement.row] * count) + statement.tail


INSERT_HISTORY = RowsStatement(
    """
INSERT INTO sfn_history (execution_id, event_id, previous_event_id, type, at, details)
VALUES """,
    "(%s, %s, %s, %s, %s, %s::jsonb)",
)
UPSERT_FRAMES = RowsStatement(
    """
INSERT INTO sfn_frames (execution_id, frame_id, status, data)
VALUES """,
    "(%s, %s, %s, %s::jsonb)",
    """
    ON CONFLICT (execution_id, frame_id) DO UPDATE
   SET status = EXCLUDED.status, data = EXCLUDED.data
""",
)
DELETE_TIMERS = RowsStatement(
    """
DELETE FROM sfn_timers
 WHERE (execution_id, frame_id, kind) IN (VALUES """,
    "(%s::bigint, %s::integer, %s::text)",
    ")",
)
UPSERT_TIMERS = RowsStatement(
    """
INSERT INTO sfn_timers (execution_id, frame_id, kind, attempt, fire_at)
VALUES """,
    "(%s, %s, %s, %s, %s)",
    """
    ON CONFLICT (execution_id, frame_id, kind) DO UPDATE
   SET attempt = EXCLUDED.attempt, fire_at = EXCLUDED.fire_at
""",
)
DELETE_TASKS = RowsStatement(
    """
DELETE FROM sfn_tasks
 WHERE (execution_id, frame_id, attempt) IN (VALUES """,
    "(%s::bigint, %s::integer, %s::integer)",
    ")",
)
INSERT_TASKS = RowsStatement(
    """
INSERT INTO sfn_tasks
       (execution_id, frame_id, attempt, kind, resource, parameters, token, timeout_seconds)
VALUES """,
    "(%s, %s, %s, %s, %s, %s::jsonb, %s, %s::integer)",
    """
    ON CONFLICT DO NOTHING
""",
)
CLOSE_TOKENS = "UPDATE sfn_task_tokens SET closed_at = now() WHERE token = ANY(%s::text[])"
INSERT_TOKENS = RowsStatement(
    """
INSERT INTO sfn_task_tokens (token, execution_id, frame_id)
VALUES """,
    "(%s, %s, %s)",
)
UPDATE_EXECUTIONS = RowsStatement(
    """
UPDATE sfn_executions AS e
   SET status = v.status, output = v.output, error = v.error, cause = v.cause,
       stopped_at = v.stopped_at, redrive_count = v.redrive_count, next_event = v.next_event,
       next_frame = v.next_frame, version = e.version + 1
  FROM (VALUES """,
    "(%s::bigint, %s::text, %s::jsonb, %s::text, %s::text, %s::timestamptz, %s::integer,"
    " %s::integer, %s::integer)",
    """) AS v (id, status, output, error, cause, stopped_at, redrive_count, next_event,
             next_frame)
 WHERE e.id = v.id
""",
)
END_EXECUTIONS = """
  WITH timers AS (DELETE FROM sfn_timers WHERE execution_id = ANY(%s::bigint[])),
       tasks AS (DELETE FROM sfn_tasks WHERE execution_id = ANY(%s::bigint[]))
UPDATE sfn_task_tokens SET closed_at = now()
 WHERE execution_id = ANY(%s::bigint[]) AND closed_at IS NULL
"""
"""An execution that finished: its timers, tasks and open tokens, in one statement."""
