"""Python tools (`kind: python`) for runs that must stay in a state while a test looks at them:
`hold` does not return until the test releases its key (or a minute passes), `fail` always
fails, `fail_once` fails the first call of a key. Workflows name them as `tests.held:<name>`."""

from __future__ import annotations

import threading
from typing import Any

from switchyard.contract.step_errors import PermanentError, TransientError

HOLD_SECONDS = 60.0
"""The longest a held call waits: a test that forgets to release ends anyway."""

_LOCK = threading.Lock()
_HELD: dict[str, threading.Event] = {}
_CALLS: dict[str, int] = {}
_WAITING: set[str] = set()


def _event(key: str) -> threading.Event:
    with _LOCK:
        return _HELD.setdefault(key, threading.Event())


def hold(key: str) -> dict[str, Any]:
    """Returns `{"key": key}` once `release(key)` is called."""
    event = _event(key)
    with _LOCK:
        _WAITING.add(key)
    try:
        event.wait(HOLD_SECONDS)
    finally:
        with _LOCK:
            _WAITING.discard(key)
    return {"key": key}


def holding(key: str) -> bool:
    """Whether a call of `key` is being held now."""
    with _LOCK:
        return key in _WAITING


def release(key: str) -> None:
    _event(key).set()


def fail(transient: bool = True) -> None:
    if transient:
        raise TransientError("the downstream is down (tests.held:fail)")
    raise PermanentError("the downstream refused (tests.held:fail)")


def fail_once(key: str) -> dict[str, Any]:
    with _LOCK:
        _CALLS[key] = _CALLS.get(key, 0) + 1
        first = _CALLS[key] == 1
    if first:
        raise TransientError(f"the first call of {key} fails (tests.held:fail_once)")
    return {"key": key}
