"""The worker pool: handlers run in threads, each function capped like Lambda reserved
concurrency, waiting tasks handed out by priority and across runs (`ready.py`), and their results
go back to the engine as `TaskOutcome`s."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from switchyard.engine.dispatch.lambda_context import LambdaContext
from switchyard.engine.dispatch.ready import NORMAL_RANK, ReadyQueue, Waiting
from switchyard.engine.dispatch.registry import FunctionRegistry, FunctionSpec
from switchyard.engine.outage import Backoff, is_connection_fault

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TaskOutcome:
    key: tuple[int, int, int]
    """(execution id, frame, attempt)."""
    ok: bool
    value: Any = None
    error: str = ""
    cause: str = ""


DATABASE_FAULT_PATIENCE = 60.0
"""Seconds for which a task that lost its database connection is called again (see `invoke`)."""


def invoke(
    spec: FunctionSpec,
    payload: Any,
    *,
    function_arn: str,
    timeout: float | None = None,
    patience: float = 0.0,
    stop: threading.Event | None = None,
) -> tuple[bool, Any, str, str]:
    """Call a handler as Lambda would: (ok, result, error, cause).

    With `patience`, a call that failed because a database connection was lost or refused (the
    engine's own database restarting, a terminated backend) is made again, with capped, jittered
    backoff, for up to that many seconds, before its failure is reported. A handler is called at
    least once anyway, and its side effects are made effectively-once by idempotency keys; what
    this spares is a step failing (or spending a retry) for an outage of the machine's database.
    """
    backoff = Backoff(base=0.2, cap=5.0)
    deadline = time.monotonic() + patience
    while True:
        ok, result, error, cause, failure = _call(spec, payload, function_arn, timeout)
        if ok or failure is None or not _lost_database(failure):
            return ok, result, error, cause
        if time.monotonic() >= deadline or (stop is not None and stop.is_set()):
            return ok, result, error, cause
        log.debug("%s lost its database connection; calling it again", spec.name)
        pause = min(backoff.next(), max(0.0, deadline - time.monotonic()))
        if stop is not None:
            stop.wait(pause)
        else:
            time.sleep(pause)


def _call(
    spec: FunctionSpec, payload: Any, function_arn: str, timeout: float | None
) -> tuple[bool, Any, str, str, BaseException | None]:
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
        return False, None, error, cause, exc
    return True, result, "", "", None


def _lost_database(error: BaseException) -> bool:
    """Whether a lost or refused database connection is behind the error (its causes and the
    exceptions it was raised while handling: step errors wrap the psycopg error)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if is_connection_fault(current):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


_Job = tuple[FunctionSpec, Callable[[], TaskOutcome]]


class Dispatcher:
    """Runs at most `workers` tasks at once, and each function's at most its `concurrency`;
    the rest wait in a `ReadyQueue`, which hands out the next by priority and across runs."""

    def __init__(
        self,
        registry: FunctionRegistry,
        *,
        workers: int,
        on_outcome: Callable[[TaskOutcome], None],
        fair: bool = True,
    ) -> None:
        self._registry = registry
        self._workers = workers
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="switchyard-task")
        self._on_outcome = on_outcome
        self._lock = threading.Lock()
        self._running: dict[str, int] = defaultdict(int)
        self._busy = 0
        self._ready: ReadyQueue[_Job] = ReadyQueue(fair=fair)

    def submit(
        self,
        spec: FunctionSpec,
        job: Callable[[], TaskOutcome],
        *,
        priority: int = NORMAL_RANK,
        run: Hashable = None,
        remaining: int = 0,
    ) -> None:
        """Queue `job`, then start what may run now. `priority` (a rank: lower first), `run`
        (whose turn it is in the rotation) and `remaining` (the longest path after the task in
        its run: longer first) order the queue."""
        with self._lock:
            self._ready.put(spec.name, (spec, job), priority=priority, run=run, remaining=remaining)
            starting = self._startable()
        self._start(starting)

    def _startable(self) -> list[_Job]:
        """Take from the queue every task a free worker and its function's cap allow (the
        caller holds the lock); each is counted as running."""
        starting = []
        while self._busy < self._workers:
            waiting = self._ready.take(self._can_run)
            if waiting is None:
                break
            self._running[waiting.function] += 1
            self._busy += 1
            starting.append(waiting.item)
        return starting

    def _can_run(self, waiting: Waiting[_Job]) -> bool:
        return self._running[waiting.function] < waiting.item[0].concurrency

    def _start(self, starting: list[_Job]) -> None:
        for spec, job in starting:
            self._pool.submit(self._run, spec, job)

    def _run(self, spec: FunctionSpec, job: Callable[[], TaskOutcome]) -> None:
        try:
            outcome = job()
        except Exception:  # pragma: no cover - jobs catch handler errors themselves
            log.exception("a task job failed")
            return
        finally:
            with self._lock:
                self._running[spec.name] -= 1
                self._busy -= 1
                starting = self._startable()
            self._start(starting)
        self._on_outcome(outcome)

    def shutdown(self) -> None:
        with self._lock:
            self._ready.clear()
        self._pool.shutdown(wait=False, cancel_futures=True)
