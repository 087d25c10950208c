"""What an operation handler gets: the engine, and what the API itself remembers."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from switchyard.engine.engine import Engine

REDRIVE_TOKEN_SECONDS = 15 * 60
"""How long a RedriveExecution `clientToken` makes a repeated call a no-op, as on AWS."""


class RedriveTokens:
    """RedriveExecution's idempotency: the same `clientToken` within 15 minutes answers the first
    call's `redriveDate` instead of redriving again. Kept in memory: a restart forgets them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str], tuple[float, datetime]] = {}

    def get(self, arn: str, token: str) -> datetime | None:
        with self._lock:
            self._forget_old()
            seen = self._seen.get((arn, token))
        return seen[1] if seen else None

    def put(self, arn: str, token: str, redrive_date: datetime) -> None:
        with self._lock:
            self._seen[(arn, token)] = (time.monotonic(), redrive_date)

    def _forget_old(self) -> None:
        horizon = time.monotonic() - REDRIVE_TOKEN_SECONDS
        for key in [k for k, (at, _) in self._seen.items() if at < horizon]:
            del self._seen[key]


@dataclass
class ApiContext:
    engine: Engine
    redrives: RedriveTokens = field(default_factory=RedriveTokens)


Request = dict[str, Any]
Response = dict[str, Any]
Operation = Callable[[ApiContext, Request], Response]
