"""The app's settings, from CDK context (`cdk.json`, or `-c key=value` on the command line)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from constructs import Node

REPO_ROOT = Path(__file__).resolve().parent.parent

CONTEXT_PREFIX = "switchyard:"


@dataclass(frozen=True)
class Settings:
    root: Path
    """The repository: `functions/`, `layers/`, and the two folders below are relative to it."""
    statemachines: Path
    """Compiled machines, one `<workflow>.asl.json` each (context `switchyard:statemachines`)."""
    workflows: Path
    """Workflow files, read for their triggers (context `switchyard:workflows`)."""
    stack_name: str = "Switchyard"
    db_min_capacity: float = 0
    """Aurora Serverless v2 minimum ACUs: 0 pauses the cluster when idle (docs/deploy.md)."""
    db_max_capacity: float = 4
    db_auto_pause_minutes: int = 10
    reserve_concurrency: bool = True
    """False on accounts whose Lambda concurrency limit is too low to reserve any."""
    log_retention_days: int = 30
    retain_data: bool = True
    """False: `cdk destroy` deletes the database, tables and bucket too (development stacks)."""
    alarm_email: str | None = None
    nat_gateways: int = 1
    provider: str = "anthropic"
    """The model provider of steps that name none: `anthropic` (API key secret) or `bedrock`."""

    @classmethod
    def from_node(cls, node: Node) -> Settings:
        def get(key: str, default: Any = None) -> Any:
            value = node.try_get_context(CONTEXT_PREFIX + key)
            return default if value is None else value

        def flag(key: str, default: bool) -> bool:
            value = get(key, default)
            return value if isinstance(value, bool) else str(value).lower() == "true"

        root = Path(get("root", str(REPO_ROOT))).resolve()
        return cls(
            root=root,
            statemachines=(root / get("statemachines", "statemachines")).resolve(),
            workflows=(root / get("workflows", "workflows")).resolve(),
            stack_name=str(get("stackName", "Switchyard")),
            db_min_capacity=float(get("dbMinCapacity", 0)),
            db_max_capacity=float(get("dbMaxCapacity", 4)),
            db_auto_pause_minutes=int(get("dbAutoPauseMinutes", 10)),
            reserve_concurrency=flag("reserveConcurrency", True),
            log_retention_days=int(get("logRetentionDays", 30)),
            retain_data=flag("retainData", True),
            alarm_email=get("alarmEmail"),
            nat_gateways=int(get("natGateways", 1)),
            provider=str(get("provider", "anthropic")),
        )

    @property
    def functions(self) -> Path:
        return self.root / "functions"
