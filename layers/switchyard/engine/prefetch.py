"""What a batch of commands needs from the database, read in a few queries for the whole batch.

A batch is applied in PostgreSQL's pipeline mode: writes are queued and sent together, and only a
read makes the coordinator wait for the server. So the reads are done up front, once per batch:

- starts need their state machine's definition hash, whether the name is taken, and a new id (ids
  come from the table's sequence, a block at a time, so an insert needs no `RETURNING`);
- callbacks need their token's task;
- results, timers and callbacks for executions that are not in memory (a run parked at a gate, a
  long wait) need the execution's row, frames and unfinished tasks.

Whatever the prefetch did not cover (a child started inside the batch, a version or alias ARN)
falls back to single-row queries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from switchyard.engine.arns import split_machine_arn
from switchyard.engine.commands import Callback, Command, StartExecution, TaskDone, TimerFired
from switchyard.engine.interpreter import TaskRequest
from switchyard.engine.store import EngineStore, ExecutionRow, TaskRow, TokenRow
from switchyard.engine.store.rows import FrameRow

_ID_BLOCK = 64

TaskKey = tuple[int, int, int]
"""(execution id, frame id, attempt)"""


@dataclass
class IdPool:
    """Execution ids drawn from `sfn_executions_id_seq` a block at a time."""

    free: list[int] = field(default_factory=list)

    def reserve_later(self, store: EngineStore, count: int) -> Callable[[], None]:
        """Ask for ids when fewer than `count` are left; the returned function takes them in."""
        if count <= len(self.free):
            return lambda: None
        drawn = store.next_execution_ids_later(max(_ID_BLOCK, count - len(self.free)))
        return lambda: self.free.extend(drawn())

    def take(self, store: EngineStore) -> int:
        self.reserve_later(store, 1)()
        return self.free.pop(0)


@dataclass
class Prefetch:
    machine_hashes: dict[str, str] = field(default_factory=dict)
    """Unqualified machine ARN -> its current definition hash (absent: the machine is gone)."""
    machines_read: set[str] = field(default_factory=set)
    existing: dict[tuple[str, str], ExecutionRow] = field(default_factory=dict)
    names_read: set[tuple[str, str]] = field(default_factory=set)
    tokens: dict[str, TokenRow] = field(default_factory=dict)
    tokens_read: set[str] = field(default_factory=set)
    rows: dict[int, ExecutionRow] = field(default_factory=dict)
    frames: dict[int, list[FrameRow]] = field(default_factory=dict)
    tasks: dict[TaskKey, TaskRequest] = field(default_factory=dict)
    tasks_read: set[int] = field(default_factory=set)

    @classmethod
    def read(
        cls,
        store: EngineStore,
        commands: Iterable[Command],
        ids: IdPool,
        cached: Callable[[int], bool],
    ) -> Prefetch:
        found = cls()
        commands = list(commands)
        starts = [c for c in commands if isinstance(c, StartExecution)]
        if starts:
            found._read_starts(store, starts, ids)
        tokens = [c.token for c in commands if isinstance(c, Callback)]
        if tokens:
            found.tokens = store.tokens(tokens)
            found.tokens_read = set(tokens)
        wanted = {c.execution_id for c in commands if isinstance(c, TimerFired)}
        wanted |= {c.outcome.key[0] for c in commands if isinstance(c, TaskDone)}
        waiting = {row.execution_id for row in found.tokens.values() if not row.closed}
        load = {i for i in wanted | waiting if not cached(i)}
        rows = store.execution_rows_later(load) if load else None
        frames = store.frames_of_later(load) if load else None
        tasks = store.tasks_of_later(load | waiting) if load | waiting else None
        if rows is not None and frames is not None:
            found.rows, found.frames = rows(), frames()
        if tasks is not None:
            found._read_tasks(tasks(), load | waiting)
        return found

    def _read_starts(self, store: EngineStore, starts: list[StartExecution], ids: IdPool) -> None:
        machines = {split_machine_arn(c.machine_arn)[0] for c in starts}
        names = {(split_machine_arn(c.machine_arn)[0], c.name) for c in starts if c.name}
        hashes = store.machine_hashes_later(sorted(machines))
        named = store.executions_named_later(names) if names else None
        reserved = ids.reserve_later(store, len(starts))
        self.machine_hashes = hashes()
        self.machines_read = machines
        if named is not None:
            self.existing = {(row.machine_arn, row.name): row for row in named()}
            self.names_read = names
        reserved()

    def _read_tasks(self, rows: list[TaskRow], executions: set[int]) -> None:
        for row in rows:
            self.tasks[row.key] = row.request()
        self.tasks_read = executions

    def machine_hash(self, arn: str) -> tuple[bool, str | None]:
        """(known, hash): whether the prefetch read this machine, and its hash if it exists."""
        if arn not in self.machines_read:
            return False, None
        return True, self.machine_hashes.get(arn)

    def execution(self, machine_arn: str, name: str) -> tuple[bool, ExecutionRow | None]:
        """(known, row): whether the prefetch looked this name up, and the execution if taken."""
        if (machine_arn, name) not in self.names_read:
            return False, None
        return True, self.existing.get((machine_arn, name))

    def frames_of(self, execution_id: int) -> list[FrameRow] | None:
        """The frames read for an execution whose row was read, else None."""
        if execution_id not in self.rows:
            return None
        return self.frames.get(execution_id, [])

    def token(self, token: str) -> tuple[bool, TokenRow | None]:
        if token not in self.tokens_read:
            return False, None
        return True, self.tokens.get(token)

    def task(self, key: TaskKey) -> tuple[bool, TaskRequest | None]:
        if key[0] not in self.tasks_read:
            return False, None
        return True, self.tasks.get(key)
