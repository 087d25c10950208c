"""The engine's PostgreSQL store: definitions, machines, executions, history, frames, timers."""

from switchyard.engine.store.repository import EngineStore, ExecutionRow, MachineRow

__all__ = ["EngineStore", "ExecutionRow", "MachineRow"]
