"""What every handler gets: the engine (runs start and decisions reach runs through its
coordinator), a connection pool for reads, the installed workflows, the directory that
request-named model scripts are read from, the health check `/healthz` answers with, and what the
operators' routes act through (`operations`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from psycopg_pool import ConnectionPool

from switchyard.api.catalog import WorkflowCatalog
from switchyard.api.scripts import ScriptDirectory
from switchyard.engine.engine import Engine
from switchyard.local.engine_client import EngineCommands
from switchyard.local.reset_sources import EngineResetSource
from switchyard.local.run_actions import EngineRuns, RunOperations

Health = Callable[[], bool]
"""True while the engine can commit; `/healthz` answers 503 while it is False."""


@dataclass
class ApiContext:
    engine: Engine
    pool: ConnectionPool
    catalog: WorkflowCatalog = field(default_factory=WorkflowCatalog)
    scripts: ScriptDirectory | None = None
    """None: the server has no scripts directory, and X-Switchyard-LLM-Script is refused."""
    health: Health | None = None
    """None: `/healthz` checks that the API's pool reaches the database."""
    commands: EngineCommands = field(init=False)
    operations: RunOperations = field(init=False)

    def __post_init__(self) -> None:
        self.commands = EngineCommands(self.engine)
        resets = EngineResetSource(self.pool, lambda: self.commands)
        self.operations = RunOperations(
            self.pool, self.commands, EngineRuns(self.pool), resets=resets
        )

    def healthy(self) -> bool:
        if self.health is not None:
            return self.health()
        try:
            with self.pool.connection(timeout=2) as conn:
                conn.execute("SELECT 1")
        except Exception:  # any failure to reach the database is "not healthy"
            return False
        return True

    def close(self) -> None:
        self.pool.close()
