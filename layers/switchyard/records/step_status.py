"""A step's status from its rows when it has no record of its own: a map or loop whose record is
not written yet, or never was (a run that failed inside it, a loop handed on to a next segment).
The run's page (`switchyard.dashboard.detail`) and `runs show` (`switchyard.local.report`) read
it the same way."""

from __future__ import annotations

from collections.abc import Iterable

_RANK = {"failed": 3, "waiting": 2, "running": 1}


def items_status(statuses: Iterable[str]) -> str:
    """Failed if an item failed, else waiting or running if one is, else the latest item's
    status (`statuses` in the order the items started)."""
    found = "pending"
    for status in statuses:
        if _RANK.get(found, 0) < max(_RANK.get(status, 0), 1):
            found = status
    return found
