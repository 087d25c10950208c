"""The worker pool: handlers run in threads, each function capped like Lambda reserved
concurrency, and their results go back to the engine as `TaskOutcome`s."""

from __future__ import annotations

import json
import logging
import threading
from collections import defaultdict, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from switchyard.engine.dispatch.lambda_context import LambdaContext
from switchyard.engine.dispatch.registry import FunctionRegistry, FunctionSpec

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TaskOutcome:
    key: tuple[int, int, int]
    """(execution id, frame, attempt)."""
    ok: bool
    value: Any = None
    error: str = ""
    cause: str = ""


def invoke(
    spec: FunctionSpec, payload: Any, *, function_arn: str, timeout: float | None = None
) -> tuple[bool, Any, str, str]:
    """Call a handler as Lambda would: (ok, result, error, cause)."""
    context = LambdaContext(
        function_name=spec.name,
        invoked_function_arn=function_arn,
        timeout_seconds=min(timeout or spec.timeout_seconds, spec.timeout_seconds),
    )
    try:
        result = spec.handler(payload, context)
        json.dumps(result)  # a Lambda result must be JSON
    except Exception as exc:  # the handler failed: report it the way Lambda does
        error = type(exc).__name__
        cause = json.dumps(
            {"errorMessage": str(exc), "errorType": error, "requestId": context.aws_request_id},
            separators=(",", ":"),
        )
        return False, None, error, cause
    return True, result, "", ""


class Dispatcher:
    def __init__(
        self, registry: FunctionRegistry, *, workers: int, on_outcome: Callable[[TaskOutcome], None]
    ) -> None:
        self._registry = registry
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="switchyard-task")
        self._on_outcome = on_outcome
        self._lock = threading.Lock()
        self._running: dict[str, int] = defaultdict(int)
        self._queued: dict[str, deque[tuple[FunctionSpec, Callable[[], TaskOutcome]]]] = (
            defaultdict(deque)
        )

    def submit(self, spec: FunctionSpec, job: Callable[[], TaskOutcome]) -> None:
        with self._lock:
            if self._running[spec.name] >= spec.concurrency:
                self._queued[spec.name].append((spec, job))
                return
            self._running[spec.name] += 1
        self._pool.submit(self._run, spec, job)

    def _run(self, spec: FunctionSpec, job: Callable[[], TaskOutcome]) -> None:
        try:
            outcome = job()
        except Exception:  # pragma: no cover - jobs catch handler errors themselves
            log.exception("a task job failed")
            return
        finally:
            following = None
            with self._lock:
                queue = self._queued[spec.name]
                if queue:
                    following = queue.popleft()
                else:
                    self._running[spec.name] -= 1
            if following is not None:
                self._pool.submit(self._run, *following)
        self._on_outcome(outcome)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
