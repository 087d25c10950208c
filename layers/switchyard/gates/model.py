"""A gate record: what the person sees and what they decided. Never exposes its task token."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


class GateStatus(StrEnum):
    OPEN = "open"
    DECIDED = "decided"
    SUPERSEDED = "superseded"
    """A later escalation tier (or a new opening) replaced it."""
    CLOSED = "closed"
    """The run ended (failed, cancelled, timed out) while the gate was open; no one decided."""


@dataclass
class Gate:
    id: str
    run_id: str
    execution_arn: str
    workflow: str
    version: int | None
    step_id: str
    kind: str
    tier: int
    assignee: str | None
    channels: list[str]
    message: str | None
    show: dict[str, Any] | None
    allow_edit: bool
    request: dict[str, Any] | None
    token: str = field(repr=False)
    status: GateStatus = GateStatus.OPEN
    deadline: datetime | None = None
    decision: str | None = None
    reviewer: str | None = None
    note: str | None = None
    edits: dict[str, Any] | None = None
    notified: list[dict[str, Any]] = field(default_factory=list)
    created_at: datetime | None = None
    decided_at: datetime | None = None

    def public(self) -> dict[str, Any]:
        """Everything a person or the API may see (no token)."""
        return {
            "id": self.id,
            "run_id": self.run_id,
            "workflow": self.workflow,
            "version": self.version,
            "step": self.step_id,
            "kind": self.kind,
            "tier": self.tier,
            "assignee": self.assignee,
            "channels": self.channels,
            "message": self.message,
            "show": self.show,
            "allow_edit": self.allow_edit,
            "request": self.request,
            "status": self.status.value,
            "deadline": self.deadline.isoformat() if self.deadline else None,
            "decision": self.decision,
            "reviewer": self.reviewer,
            "note": self.note,
            "edits": self.edits,
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "decided_at": self.decided_at.isoformat() if self.decided_at else None,
        }
