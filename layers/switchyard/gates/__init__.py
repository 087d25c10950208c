"""Gates: where a run waits for a person, and how the person's decision reaches the run."""

from switchyard.gates.callbacks import TaskCallbacks
from switchyard.gates.decide import (
    Decision,
    GateClosedError,
    GateDecisionError,
    GateForbiddenError,
    decide,
)
from switchyard.gates.model import Gate, GateStatus
from switchyard.gates.notify import open_gate
from switchyard.gates.roles import Roles
from switchyard.gates.store import GateStore

__all__ = [
    "Decision",
    "Gate",
    "GateClosedError",
    "GateDecisionError",
    "GateForbiddenError",
    "GateStatus",
    "GateStore",
    "Roles",
    "TaskCallbacks",
    "decide",
    "open_gate",
]
