"""The context object (`$$`): what a state can read about its execution, itself and its task.

`ExecutionContext` holds what is fixed for an execution; `ExecutionContext.for_state` builds the
JSON object a state sees, with the fields Step Functions fills for that state (`Task.Token` only
for `.waitForTaskToken` tasks, `Map.Item` only inside a Map iteration).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any


def format_timestamp(moment: datetime) -> str:
    """A timestamp as Step Functions writes it in the context object: UTC, milliseconds, `Z`."""
    if moment.tzinfo is None:
        raise ValueError("context object timestamps must be timezone-aware")
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


@dataclass(frozen=True, slots=True)
class MapItem:
    """The item a Map iteration processes: its index in the items array and its value."""

    index: int
    value: Any


@dataclass(frozen=True, slots=True)
class ExecutionContext:
    """The execution-wide part of the context object."""

    execution_id: str
    execution_name: str
    execution_input: Any
    start_time: datetime
    role_arn: str
    state_machine_id: str
    state_machine_name: str
    redrive_count: int = 0
    redrive_time: datetime | None = None

    def for_state(
        self,
        state_name: str,
        entered_time: datetime,
        *,
        retry_count: int = 0,
        task_token: str | None = None,
        map_item: MapItem | None = None,
    ) -> dict[str, Any]:
        """The context object a state sees (a fresh dict: callers may keep it)."""
        execution: dict[str, Any] = {
            "Id": self.execution_id,
            "Input": self.execution_input,
            "StartTime": format_timestamp(self.start_time),
            "Name": self.execution_name,
            "RoleArn": self.role_arn,
            "RedriveCount": self.redrive_count,
        }
        if self.redrive_time is not None:
            execution["RedriveTime"] = format_timestamp(self.redrive_time)
        context: dict[str, Any] = {
            "Execution": execution,
            "State": {
                "EnteredTime": format_timestamp(entered_time),
                "Name": state_name,
                "RetryCount": retry_count,
            },
            "StateMachine": {"Id": self.state_machine_id, "Name": self.state_machine_name},
        }
        if task_token is not None:
            context["Task"] = {"Token": task_token}
        if map_item is not None:
            context["Map"] = {"Item": {"Index": map_item.index, "Value": map_item.value}}
        return context
