"""The engine's PostgreSQL store: definitions, machines, executions, history, frames, timers."""

from switchyard.engine.store.repository import EngineStore
from switchyard.engine.store.rows import (
    AliasRow,
    ExecutionRow,
    HistoryRow,
    MachineRow,
    TaskRow,
    TokenRow,
    VersionRef,
    VersionRow,
)

__all__ = [
    "AliasRow",
    "EngineStore",
    "ExecutionRow",
    "HistoryRow",
    "MachineRow",
    "TaskRow",
    "TokenRow",
    "VersionRef",
    "VersionRow",
]
