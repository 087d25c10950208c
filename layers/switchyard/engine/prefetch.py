"""What a batch of starts needs from the database, read in two queries instead of three per start.

A batch of commands is applied in PostgreSQL's pipeline mode: writes are queued and sent together,
and only a read makes the coordinator wait for the server. Starting an execution needs its state
machine's definition hash, whether the name is taken, and a new id; `Prefetch.read` answers all
three for every start in the batch at once (ids come from the table's sequence, so an insert needs
no `RETURNING`). A start the prefetch did not cover (a child started inside the batch, a version or
alias ARN) falls back to the single-row queries.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from switchyard.engine.arns import split_machine_arn
from switchyard.engine.commands import Command, StartExecution
from switchyard.engine.store import EngineStore, ExecutionRow

_ID_BLOCK = 64


@dataclass
class IdPool:
    """Execution ids drawn from `sfn_executions_id_seq` a block at a time."""

    free: list[int] = field(default_factory=list)

    def reserve(self, store: EngineStore, count: int) -> None:
        if count > len(self.free):
            self.free += store.next_execution_ids(max(_ID_BLOCK, count - len(self.free)))

    def take(self, store: EngineStore) -> int:
        self.reserve(store, 1)
        return self.free.pop(0)


@dataclass
class Prefetch:
    machine_hashes: dict[str, str] = field(default_factory=dict)
    """Unqualified machine ARN -> its current definition hash (absent: the machine is gone)."""
    machines_read: set[str] = field(default_factory=set)
    existing: dict[tuple[str, str], ExecutionRow] = field(default_factory=dict)
    names_read: set[tuple[str, str]] = field(default_factory=set)

    @classmethod
    def read(cls, store: EngineStore, commands: Iterable[Command], ids: IdPool) -> Prefetch:
        starts = [c for c in commands if isinstance(c, StartExecution)]
        found = cls()
        if not starts:
            return found
        machines = {split_machine_arn(c.machine_arn)[0] for c in starts}
        names = {(split_machine_arn(c.machine_arn)[0], c.name) for c in starts if c.name}
        found.machine_hashes = store.machine_hashes(sorted(machines))
        found.machines_read = machines
        if names:
            found.existing = {
                (row.machine_arn, row.name): row for row in store.executions_named(names)
            }
            found.names_read = names
        ids.reserve(store, len(starts))
        return found

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
