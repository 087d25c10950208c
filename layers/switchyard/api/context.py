"""What every handler gets: the engine (runs start and decisions reach runs through its
coordinator), a connection pool for reads, and the installed workflows."""

from __future__ import annotations

from dataclasses import dataclass, field

from psycopg_pool import ConnectionPool

from switchyard.api.workflows import WorkflowCatalog
from switchyard.engine.engine import Engine
from switchyard.local.engine_client import EngineCommands


@dataclass
class ApiContext:
    engine: Engine
    pool: ConnectionPool
    catalog: WorkflowCatalog = field(default_factory=WorkflowCatalog)
    commands: EngineCommands = field(init=False)

    def __post_init__(self) -> None:
        self.commands = EngineCommands(self.engine)

    def close(self) -> None:
        self.pool.close()
