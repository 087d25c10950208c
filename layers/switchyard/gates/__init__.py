"""Gates: where a run waits for a person, and how the person's decision reaches the run."""

from switchyard.gates.callbacks import TaskCallbacks
from switchyard.gates.decide import Decision, GateDecisionError, decide
from switchyard.gates.model import Gate, GateStatus
from switchyard.gates.notify import open_gate
from switchyard.gates.roles import Roles
from switchyard.gates.store import GateStore

__all__ = [
    "Decision",
    "Gate",
    "GateDecisionError",
    "GateStatus",
    "GateStore",
    "Roles",
    "TaskCallbacks",
    "decide",
    "open_gate",
]
