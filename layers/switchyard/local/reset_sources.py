"""Where a reset on the local engine finds what it needs (`switchyard.local.reset.ResetSource`):
the original run's input and start options in the engine's executions (of a run that continued
as new, its first segment's), its workflow and version
in its run record, version N as the alias `<machine>:v<N>` that installing version N made, and
the engine that starts the new run (asked for only once the reset is sure to be made, so a
refused reset starts no engine)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from psycopg_pool import ConnectionPool

from switchyard.engine.store import EngineStore
from switchyard.local.reset import OriginalRun, VersionTarget
from switchyard.local.run_actions import RunRef
from switchyard.records.segments import logical_run
from switchyard.records.store import RunStore


class Starter(Protocol):
    def start_execution(
        self, machine_arn: str, name: str, data: Any, options: dict[str, Any]
    ) -> str: ...


class EngineResetSource:
    def __init__(self, pool: ConnectionPool, starter: Callable[[], Starter]) -> None:
        self._pool = pool
        self._starter = starter

    def original(self, run: RunRef) -> OriginalRun:
        with self._pool.connection() as conn:
            logical = logical_run(conn, run.run_id)
            if logical is not None and len(logical.segments) > 1:
                first = logical.segments[0]
                run = RunRef(
                    first.execution_id, first.execution_arn, first.run_id, run.workflow, run.status
                )
            row = EngineStore(conn).execution_row(execution_id=run.execution_id)
            record = RunStore(conn).run(run.execution_id) if run.execution_id else None
        assert row is not None  # the run was found through its execution
        given = row.input if isinstance(row.input, dict) else {}
        version = record.workflow_version if record is not None else None
        number = int(version) if version is not None else 1
        return OriginalRun(run, run.workflow, number, dict(given), dict(row.options or {}))

    def target(self, original: OriginalRun, version: int) -> VersionTarget | None:
        with self._pool.connection() as conn:
            store = EngineStore(conn)
            execution = store.execution_row(execution_id=original.ref.execution_id)
            assert execution is not None
            alias = store.alias(f"{execution.machine_arn}:v{version}")
            routing = alias.routing if alias is not None else []
            if not routing:
                return None
            version_arn = str(routing[0]["stateMachineVersionArn"])
            published = store.version(version_arn)
        if published is None:
            return None
        return VersionTarget(version, version_arn, published.definition)

    def start(
        self, target: VersionTarget, name: str, data: dict[str, Any], options: dict[str, Any]
    ) -> str:
        return self._starter().start_execution(target.start_arn, name, data, options)
