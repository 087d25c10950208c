"""The local engine: executes compiled state machines durably on PostgreSQL.

One coordinator thread owns every transition. It takes a batch of commands (a task finished, a
timer fired, a callback, a start), lets the interpreter turn each into a transition, commits the
whole batch in one transaction (history events, frames, timers, tasks, tokens, run records), and
only then acts: dispatches tasks to the worker pool, arms timers, answers API calls. A crash
loses nothing committed; on start the engine re-dispatches the tasks that had not finished and
re-arms the timers, and loads executions from their frames when an event arrives for them.

A lost database connection is waited out (`outage.py`): the coordinator reconnects with capped,
jittered backoff, learns whether the batch it was committing made it (`fencing.py`), and goes on;
`healthy` is False meanwhile. Every transaction proves the engine still owns the database (the
fencing epoch), so an engine that lost its lock never commits after another took over.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import queue
import re
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, cast

import psycopg
from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool

from switchyard.engine import errors, fencing
from switchyard.engine.arns import Arns, machine_name, split_machine_arn
from switchyard.engine.asl import (
    Entropy,
    ExecutionContext,
    StateMachine,
    parse_definition,
)
from switchyard.engine.children import stopped_by, stopped_by_parent
from switchyard.engine.commands import (
    Callback,
    ChildFinished,
    Command,
    RedriveExecution,
    StartChild,
    StartExecution,
    StopExecution,
    TaskDone,
    TimerFired,
)
from switchyard.engine.dispatch import Dispatcher, FunctionRegistry, TaskOutcome
from switchyard.engine.dispatch.paths import RemainingPaths
from switchyard.engine.dispatch.ready import task_priority
from switchyard.engine.dispatch.workers import DATABASE_FAULT_PATIENCE, invoke
from switchyard.engine.hooks import (
    EndedInput,
    EngineHooks,
    NoHooks,
    PayloadInput,
    RecoverInput,
    RedriveInput,
    TaskResultInput,
    TransitionInput,
)
from switchyard.engine.interpreter import (
    Execution,
    ExecutionStatus,
    Frame,
    FrameStatus,
    InlineResult,
    Integration,
    Interpreter,
    ParentTask,
    TaskRequest,
    TimerRequest,
    Transition,
)
from switchyard.engine.outage import Backoff, Outage, is_connection_fault
from switchyard.engine.ownership import Ownership
from switchyard.engine.prefetch import IdPool, Prefetch
from switchyard.engine.store import EngineStore, ExecutionRow
from switchyard.engine.timers import TimerHeap
from switchyard.stores.migrate import apply_migrations

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]
_NAME = r"^[0-9A-Za-z_-]{1,80}$"
_MAX_CACHE = 2000
_MAX_ENDED = 10_000
_LOCK_CHECK_SECONDS = 1.0
_RUNNING_TASKS = frozenset({"lambda", "lambda_direct", "child"})
"""Tasks that end by themselves (not waiting for a callback or a timer)."""
_NOT_OWNER = (
    "this engine stopped: another engine took its database over; it takes over again when"
    " that one stops (switchyard engine status)"
)


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class _Batch:
    transitions: list[Transition] = field(default_factory=list)
    replies: list[tuple[Future[Any], Any, BaseException | None]] = field(default_factory=list)
    follow_ups: list[Command] = field(default_factory=list)
    late: set[tuple[int, int, int]] = field(default_factory=set)
    """Tasks whose late result (their frame was cancelled) this batch recorded."""

    def add(self, transition: Transition | None) -> None:
        if transition is not None:
            self.transitions.append(transition)

    def reply(
        self, command: Command, value: Any = None, error: BaseException | None = None
    ) -> None:
        if command.reply is not None:
            self.replies.append((command.reply, value, error))


@dataclass
class _Running:
    """What a started engine works with: the coordinator's connection and the store over it
    (both replaced after a database fault), and the pool that API threads read from."""

    conn: psycopg.Connection[Any]
    store: EngineStore
    pool: ConnectionPool


@dataclass
class _Unsure:
    """A batch whose connection died while it committed: whether it did is read back."""

    number: int
    commands: list[Command]
    batch: _Batch
    touched: set[int]


class Engine:
    def __init__(
        self,
        conninfo: str,
        *,
        registry: FunctionRegistry | None = None,
        arns: Arns | None = None,
        workers: int = 16,
        clock: Clock = utc_now,
        entropy: Entropy | None = None,
        batch_limit: int = 512,
        ownership: Ownership | None = None,
        on_owner_again: Callable[[], None] | None = None,
        hooks: EngineHooks | None = None,
    ) -> None:
        """`ownership`: the advisory lock this engine was started under, if any; it is watched
        and taken back after a database fault (without it, a fenced-off engine just stops).
        `on_owner_again`: called when a fenced-off engine has taken its database over again.
        `hooks`: what a program built on the engine adds to it (`switchyard.engine.hooks`)."""
        self.conninfo = conninfo
        self.registry = registry or FunctionRegistry()
        self.arns = arns or Arns()
        self._clock = clock
        self._hooks: EngineHooks = hooks or NoHooks()
        self._batch_limit = batch_limit
        self._interpreter = Interpreter(
            clock=clock, entropy=entropy or Entropy(), inline=self._inline
        )
        self._inbox: queue.SimpleQueue[Command] = queue.SimpleQueue()
        self._timers = TimerHeap()
        self._cache: OrderedDict[int, Execution] = OrderedDict()
        self._by_arn: dict[str, int] = {}
        self._machines: dict[str, StateMachine] = {}
        self._stop = threading.Event()
        self._applying = threading.Lock()
        """Held by the coordinator while it applies a batch, from its first read to the end of
        what follows its commit (dispatches, abandoned tasks, replies)."""
        self._done = threading.Condition()
        self._ended: OrderedDict[str, str] = OrderedDict()
        """Final statuses of the executions that ended lately, by ARN, for `wait` (bounded)."""
        self._thread: threading.Thread | None = None
        self._dispatcher = Dispatcher(self.registry, workers=workers, on_outcome=self._task_outcome)
        self._paths = RemainingPaths()
        """The longest remaining path of each task, read from its machine (for the queue)."""
        self._running: _Running | None = None
        """The connections of a started engine (None before `start`)."""
        self._current_execution_id: int | None = None
        self._ids = IdPool()
        self._prefetch = Prefetch()
        self._touched: set[int] = set()
        """Executions a batch has loaded or changed: forgotten if the batch does not commit."""
        self._inflight: dict[tuple[int, int, int], TaskRequest] = {}
        """Dispatched tasks by (execution, frame, attempt), so a result needs no query."""
        self._abandoned: OrderedDict[tuple[int, int, int], TaskRequest] = OrderedDict()
        """Tasks in flight when their frame was cancelled (a map item when the run failed): a
        late result is not a transition, but what it spent still counts (bounded)."""
        self._ownership = ownership
        self._on_owner_again = on_owner_again
        self._epoch = 0
        self._batch_number = 0
        self._healthy = False
        self._standby = False
        """FencedOffError off: another engine owns the database; commands are refused."""
        self._unsure: _Unsure | None = None
        self._retry: list[Command] = []
        """Commands of a batch lost to a database fault, applied again first."""
        self._outage = Outage(log, "the engine")
        self._backoff = Backoff()
        self._lock_checked = 0.0

    @property
    def healthy(self) -> bool:
        """Whether the engine can commit now: False while it waits out a database fault, and
        after another engine took the database over."""
        return self._healthy and not self._stop.is_set()

    # --- life cycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Migrate, recover, and run the coordinator (the caller holds the ownership lock)."""
        with psycopg.connect(self.conninfo) as conn:
            apply_migrations(conn)
        conn = self._new_connection()
        try:
            self._epoch = fencing.claim(conn)
        except BaseException:
            conn.close()
            raise
        pool = ConnectionPool(
            self.conninfo,
            min_size=1,
            max_size=4,
            open=True,
            kwargs={"autocommit": True, "connect_timeout": 10},
            check=ConnectionPool.check_connection,  # a connection the server dropped is not lent
        )
        self._running = _Running(conn, EngineStore(conn), pool)
        self._recover()
        self._healthy = True
        self._thread = threading.Thread(target=self._loop, name="switchyard-engine", daemon=True)
        self._thread.start()

    def _new_connection(self) -> psycopg.Connection[Any]:
        # autocommit: every transaction on it is explicit (`transaction()`, or the batch's own
        # BEGIN ... COMMIT in `_commit_pipelined`, which psycopg's implicit one would cost a
        # round trip)
        return psycopg.connect(self.conninfo, autocommit=True, connect_timeout=10)

    def _connect(self) -> None:
        """A new coordinator connection in place of the one a fault broke."""
        live = self._live
        with contextlib.suppress(psycopg.Error):  # a broken connection
            live.conn.close()
        live.conn = self._new_connection()
        live.store = EngineStore(live.conn)

    @property
    def _live(self) -> _Running:
        if self._running is None:
            raise RuntimeError("start the engine first")
        return self._running

    @property
    def _conn(self) -> psycopg.Connection[Any] | None:
        """The coordinator's connection, if started (what a fault is checked against)."""
        return self._running.conn if self._running is not None else None

    def close(self, *, settle_seconds: float = 10.0) -> None:
        """Stop. Tasks still running for frames that were cancelled (the items of a map whose
        run failed) are waited for first, up to `settle_seconds`, so that what they spend is
        counted on their run before a command that ran this engine exits."""
        deadline = time.monotonic() + settle_seconds
        with self._applying:  # a batch a caller already saw committed has finished its sequel,
            pass  # so the tasks it abandoned are known (else close could miss their spend)
        while self._abandoned_running() and time.monotonic() < deadline and self.healthy:
            time.sleep(0.02)
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._dispatcher.shutdown()
        if self._running is not None:
            self._running.pool.close()
            self._running.conn.close()

    def _abandoned_running(self) -> bool:
        return bool(self._abandoned) and self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> Engine:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- reads (their own connections; safe from any thread) ---------------------------------

    @contextmanager
    def read(self) -> Iterator[EngineStore]:
        """A store on a pooled connection, for queries from API threads."""
        with self._live.pool.connection() as conn:
            yield EngineStore(conn)

    # --- commands (through the coordinator) ---------------------------------------------------

    def submit(self, command: Command, *, timeout: float | None = 30.0) -> Any:
        """Apply a command; waits out a short database outage (up to `timeout`)."""
        if self._standby:
            raise errors.ServiceUnavailable(_NOT_OWNER)
        future: Future[Any] = Future()
        command.reply = future
        self._inbox.put(command)
        return future.result(timeout=timeout)

    def post(self, command: Command) -> None:
        self._inbox.put(command)

    def wait(self, arn: str, timeout: float | None = None) -> str:
        """Block until the execution ends; returns its status (RUNNING when `timeout` passed).

        An execution that ends while this engine runs is seen in memory the moment its end is
        committed; the database is read at first, and every second in case another engine
        ended it."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._done:
            ended = self._ended.get(arn)
        if ended is not None:
            return ended
        # In the coordinator's memory, it is running (an end would be in `_ended` first); a
        # membership test is safe from another thread. Otherwise the database says.
        status = "RUNNING" if arn in self._by_arn else self._status(arn)
        checked = time.monotonic()
        while status == "RUNNING":
            remaining = None if end is None else end - time.monotonic()
            if remaining is not None and remaining <= 0:
                break
            with self._done:
                ended = self._ended.get(arn)
                if ended is None:
                    self._done.wait(timeout=1.0 if remaining is None else min(1.0, remaining))
                    ended = self._ended.get(arn)
            if ended is not None:
                return ended
            if time.monotonic() - checked >= 1.0:
                status, checked = self._status(arn), time.monotonic()
        return status

    def _status(self, arn: str) -> str:
        with self.read() as store:
            row = store.execution_row(arn=arn)
        if row is None:
            raise errors.ExecutionDoesNotExist(f"Execution Does Not Exist: '{arn}'")
        return row.status

    # --- the coordinator ---------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                if self._standby:
                    self._take_over()
                    continue
                if not self._healthy:
                    with self._applying:
                        self._repair()
                    continue
                self._watch_lock()
                commands, self._retry = self._retry, []
                if not commands:
                    commands = self._take()
                due = self._timers.pop_due(self._clock())
                commands += [TimerFired(d.execution_id, d.frame, d.kind, d.attempt) for d in due]
                if commands:
                    with self._applying:
                        self._process(commands)
            except fencing.FencedOffError as fenced:
                self._step_down(fenced)
            except Exception as exc:
                if not is_connection_fault(exc, self._conn):
                    raise
                self._healthy = False
                self._outage.failed(exc)

    def _take(self) -> list[Command]:
        next_at = self._timers.next_at()
        wait = 0.05
        if next_at is not None:
            wait = max(0.0, min(wait, (next_at - self._clock()).total_seconds()))
        commands: list[Command] = []
        try:
            commands.append(self._inbox.get(timeout=wait) if wait > 0 else self._inbox.get_nowait())
        except queue.Empty:
            return commands
        while len(commands) < self._batch_limit:
            try:
                commands.append(self._inbox.get_nowait())
            except queue.Empty:
                break
        return commands

    def _process(self, commands: list[Command]) -> None:
        """Apply a batch in one transaction, pipelined; if anything goes wrong, apply it again
        command by command, each in a savepoint, so that a bad command loses only itself."""
        batch = _Batch()
        self._touched.clear()
        number = self._next_batch_number()
        try:
            self._commit_pipelined(commands, batch, number)
        except fencing.FencedOffError:
            self._retry = commands + self._retry  # refused by `_step_down`
            raise
        except Exception as exc:
            if fencing.is_fenced_off(exc):
                self._retry = commands + self._retry
                raise fencing.FencedOffError(self._epoch) from exc
            if is_connection_fault(exc, self._conn):
                self._unsure = _Unsure(number, commands, batch, set(self._touched))
                raise
            log.debug("a batch of %d commands is applied again one by one", len(commands))
            for execution_id in self._touched:
                self._evict(execution_id)
            self._process_one_by_one(commands)
            return
        finally:
            self._prefetch = Prefetch()
        self._after_commit(batch)

    def _commit_pipelined(self, commands: list[Command], batch: _Batch, number: int) -> None:
        """The batch's statements and its COMMIT in one pipeline: one round trip to the server
        (plus one for the reads of starts). BEGIN and COMMIT are sent as statements because
        psycopg's `transaction()` in a pipeline syncs after BEGIN and again before COMMIT. The
        COMMIT's result is read before this returns, so the batch is durable when it does; a
        failed statement (a stale fence among them) makes the server skip the COMMIT."""
        live = self._live
        conn = live.conn
        try:
            with conn.pipeline():
                conn.execute("BEGIN")
                fencing.hold(conn, self._epoch, number)  # fails the transaction if stale
                self._prefetch = Prefetch.read(
                    live.store, commands, self._ids, cached=self._cache.__contains__
                )
                for command in commands:
                    self._apply_unguarded(command, batch)
                live.store.write_transitions(batch.transitions)
                conn.execute("COMMIT")
        except BaseException:
            if not conn.broken and conn.info.transaction_status != TransactionStatus.IDLE:
                with contextlib.suppress(psycopg.Error):  # a fault is told by the first error
                    conn.rollback()
            raise

    def _process_one_by_one(self, commands: list[Command]) -> None:
        batch = _Batch()
        self._touched.clear()
        number = self._next_batch_number()
        try:
            with self._live.conn.transaction():
                fencing.Check(self._live.conn, self._epoch, number).verify()
                for command in commands:
                    self._apply_one(command, batch)
                self._live.store.write_transitions(batch.transitions)
        except fencing.FencedOffError:
            self._retry = commands + self._retry  # refused by `_step_down`
            raise
        except Exception as exc:
            if is_connection_fault(exc, self._conn):
                self._unsure = _Unsure(number, commands, batch, set(self._touched))
                raise
            log.exception("a batch of %d commands failed to commit", len(commands))
            self._after_failed_batch(commands, batch, exc)
            return
        self._after_commit(batch)

    def _apply_unguarded(self, command: Command, batch: _Batch) -> None:
        """Apply a command with no savepoint: an engine error (a bad request) is raised before
        the command writes or changes anything, any other exception abandons the batch."""
        try:
            value = self._apply(command, batch)
        except errors.EngineError as error:
            batch.reply(command, error=error)
            return
        finally:
            self._current_execution_id = None
        batch.reply(command, value)

    def _apply_one(self, command: Command, batch: _Batch) -> None:
        try:
            with self._live.conn.transaction():  # a savepoint: a failed command loses only itself
                value = self._apply(command, batch)
        except errors.EngineError as error:
            batch.reply(command, error=error)
            return
        except Exception as error:
            if is_connection_fault(error, self._conn):
                raise  # the whole batch waits for the database, not only this command
            log.exception("command %s failed", type(command).__name__)
            if self._current_execution_id is not None:
                self._evict(self._current_execution_id)
            batch.reply(command, error=error)
            return
        finally:
            self._current_execution_id = None
        batch.reply(command, value)

    def _apply(self, command: Command, batch: _Batch) -> Any:
        if isinstance(command, StartExecution):
            return self._start_execution(command, batch)
        if isinstance(command, TaskDone):
            return self._task_done(command, batch)
        if isinstance(command, Callback):
            return self._callback(command, batch)
        if isinstance(command, TimerFired):
            return self._timer_fired(command, batch)
        if isinstance(command, StopExecution):
            return self._stop_execution(command, batch)
        if isinstance(command, RedriveExecution):
            return self._redrive(command, batch)
        if isinstance(command, StartChild):
            return self._start_child(command, batch)
        if isinstance(command, ChildFinished):
            return self._child_finished(command, batch)
        raise TypeError(f"unknown command {command!r}")

    # --- executions ----------------------------------------------------------------------------

    def _machine_for(self, arn: str) -> tuple[str, str | None, str]:
        """(machine ARN, version ARN or None, definition hash) for a start."""
        base, qualifier = split_machine_arn(arn)
        if qualifier is None:
            known, digest = self._prefetch.machine_hash(base)
            if not known:
                machine = self._live.store.machine(base)
                digest = machine.definition_hash if machine else None
            if digest is None:
                raise errors.StateMachineDoesNotExist(f"State Machine Does Not Exist: '{arn}'")
            return base, None, digest
        if self._live.store.machine(base) is None:
            raise errors.StateMachineDoesNotExist(f"State Machine Does Not Exist: '{arn}'")
        if qualifier.isdigit():
            version = self._live.store.version(arn)
            if version is None:
                raise errors.StateMachineDoesNotExist(f"State Machine Does Not Exist: '{arn}'")
            return base, arn, version.definition_hash
        alias = self._live.store.alias(arn)
        if alias is None:
            raise errors.ResourceNotFound(f"Resource not found: '{arn}'")
        target = max(alias.routing, key=lambda r: r.get("weight", 0))["stateMachineVersionArn"]
        version = self._live.store.version(target)
        if version is None:
            raise errors.StateMachineDoesNotExist(f"State Machine Does Not Exist: '{target}'")
        return base, target, version.definition_hash

    def _parsed(self, digest: str) -> StateMachine:
        machine = self._machines.get(digest)
        if machine is None:
            machine = parse_definition(self._live.store.definition(digest))
            self._machines[digest] = machine
        return machine

    def _existing(
        self, machine_arn: str, name: str, arn: str
    ) -> tuple[str, Any, datetime | None] | None:
        """(status, input, start date) of the execution already under this name, if any."""
        cached = self._by_arn.get(arn)
        if cached is not None:
            execution = self._cache[cached]
            return execution.status.value, execution.input, execution.started_at
        known, row = self._prefetch.execution(machine_arn, name)
        if not known:
            row = self._live.store.execution_by_name(machine_arn, name)
        return None if row is None else (row.status, row.input, row.started_at)

    def _start_execution(self, command: StartExecution, batch: _Batch) -> dict[str, Any]:
        base, version_arn, digest = self._machine_for(command.machine_arn)
        name = command.name or str(uuid.uuid4())
        if not re.match(_NAME, name):
            raise errors.InvalidName(f"Invalid Name: '{name}'")
        arn = self.arns.execution(machine_name(base), name)
        existing = self._existing(base, name, arn)
        if existing is not None:
            status, data, started_at = existing
            if status == "RUNNING" and data == command.input:
                return {"executionArn": arn, "startDate": started_at}
            raise errors.ExecutionAlreadyExists(f"Execution Already Exists: '{arn}'")
        machine = self._parsed(digest)
        now = self._clock()
        execution = Execution(
            id=self._ids.take(self._live.store),
            arn=arn,
            name=name,
            machine=machine,
            machine_arn=base,
            input=command.input,
            context=self._context(arn, name, command.input, now, base, 0),
            started_at=now,
            parent=command.parent,
            options=command.options,
        )
        self._live.store.insert_execution(execution, version_arn=version_arn, digest=digest)
        self._current_execution_id = execution.id
        self._cache_put(execution)
        transition = self._interpreter.start(execution, role_arn=self.arns.role())
        self._hooks.on_transition(TransitionInput(self._live.conn, transition, started=True))
        batch.add(transition)
        return {"executionArn": arn, "startDate": now}

    def _context(
        self, arn: str, name: str, data: Any, started: datetime, machine: str, redrives: int
    ) -> ExecutionContext:
        return ExecutionContext(
            execution_id=arn,
            execution_name=name,
            execution_input=data,
            start_time=started,
            role_arn=self.arns.role(),
            state_machine_id=machine,
            state_machine_name=machine_name(machine),
            redrive_count=redrives,
        )

    def _load(self, *, execution_id: int | None = None, arn: str | None = None) -> Execution | None:
        """The execution in memory, loading it from its row and frames when needed."""
        if arn is not None and arn in self._by_arn:
            execution_id = self._by_arn[arn]
        if execution_id is not None and execution_id in self._cache:
            self._cache.move_to_end(execution_id)
            self._current_execution_id = execution_id
            self._touched.add(execution_id)
            return self._cache[execution_id]
        row = self._prefetch.rows.get(execution_id) if execution_id is not None else None
        if row is None:
            row = self._live.store.execution_row(arn=arn, execution_id=execution_id)
        if row is None:
            return None
        execution = self._from_row(row)
        self._current_execution_id = execution.id
        self._cache_put(execution)
        return execution

    def _from_row(self, row: ExecutionRow) -> Execution:
        machine = self._parsed(row.definition_hash)
        execution = Execution(
            id=row.id,
            arn=row.arn,
            name=row.name,
            machine=machine,
            machine_arn=row.machine_arn,
            input=row.input,
            context=self._context(
                row.arn, row.name, row.input, row.started_at, row.machine_arn, row.redrive_count
            ),
            status=ExecutionStatus(row.status),
            output=row.output,
            error=row.error,
            cause=row.cause,
            started_at=row.started_at,
            stopped_at=row.stopped_at,
            next_frame=row.next_frame,
            next_event=row.next_event,
            parent=row.parent_task,
            redrive_count=row.redrive_count,
            options=row.options,
            version=row.version,
        )
        self._live.store.load_frames(execution, self._prefetch.frames_of(row.id))
        return execution

    def _cache_put(self, execution: Execution) -> None:
        self._touched.add(execution.id)
        self._cache[execution.id] = execution
        self._by_arn[execution.arn] = execution.id
        while len(self._cache) > _MAX_CACHE:
            _, old = self._cache.popitem(last=False)
            self._by_arn.pop(old.arn, None)

    def _evict(self, execution_id: int) -> None:
        execution = self._cache.pop(execution_id, None)
        if execution is not None:
            self._by_arn.pop(execution.arn, None)

    # --- task results, callbacks, children ----------------------------------------------------

    def _task_outcome(self, outcome: TaskOutcome) -> None:
        self._inbox.put(TaskDone(outcome))

    def _task_done(self, command: TaskDone, batch: _Batch) -> None:
        execution_id, frame_id, attempt = command.outcome.key
        execution = self._load(execution_id=execution_id)
        if execution is None:
            return
        if execution.status.is_final:  # a late result: a gate it opened must not stay open
            self._hooks.on_ended_answered(EndedInput(self._live.conn, execution))
        frame = execution.frames.get(frame_id)
        task = frame.task if frame else None
        request = self._request(execution, frame_id, attempt)
        outcome = command.outcome
        if task is not None and task.kind == "callback":
            if outcome.ok:
                batch.add(
                    self._interpreter.task_submitted(execution, frame_id, attempt, outcome.value)
                )
                return
            transition = self._interpreter.task_failed(
                execution, frame_id, attempt, outcome.error, outcome.cause
            )
        elif outcome.ok:
            transition = self._interpreter.task_succeeded(
                execution, frame_id, attempt, outcome.value
            )
        else:
            transition = self._interpreter.task_failed(
                execution, frame_id, attempt, outcome.error, outcome.cause
            )
        if transition is not None:
            if request is not None:
                self._hooks.on_task_result(
                    TaskResultInput(
                        self._live.conn, execution, request, outcome.ok, outcome.value,
                        cause=outcome.cause,
                    )
                )  # fmt: skip
            self._hooks.on_transition(TransitionInput(self._live.conn, transition, started=False))
        elif (late := self._late_request(command.outcome.key, frame)) is not None:
            batch.late.add(command.outcome.key)
            self._hooks.on_task_result(  # the run has moved on; the money was spent anyway
                TaskResultInput(
                    self._live.conn, execution, late, outcome.ok, outcome.value,
                    cause=outcome.cause, late=True,
                )
            )  # fmt: skip
        batch.add(transition)

    def _late_request(self, key: tuple[int, int, int], frame: Frame | None) -> TaskRequest | None:
        """The request of a task whose frame was cancelled before its result came: known as
        abandoned, or still in flight when the cancellation is in this very batch."""
        abandoned = self._abandoned.get(key)
        if abandoned is not None:
            return abandoned
        if frame is not None and frame.status is FrameStatus.CANCELLED:
            return self._inflight.get(key)
        return None

    def _request(self, execution: Execution, frame_id: int, attempt: int) -> TaskRequest | None:
        dispatched = self._inflight.get((execution.id, frame_id, attempt))
        if dispatched is not None:
            return dispatched
        known, request = self._prefetch.task((execution.id, frame_id, attempt))
        if known:
            return request
        return self._live.store.task_request(execution.id, frame_id, attempt)

    def _callback(self, command: Callback, batch: _Batch) -> dict[str, Any]:
        known, found = self._prefetch.token(command.token)
        if not known:
            found = self._live.store.token(command.token)
        if found is None:
            raise errors.TaskDoesNotExist("Task Does Not Exist")
        if found.closed:
            raise errors.TaskTimedOut("Task Timed Out")
        execution = self._load(execution_id=found.execution_id)
        if execution is None:
            raise errors.TaskDoesNotExist("Task Does Not Exist")
        if execution.status.is_final:
            raise errors.TaskTimedOut("Task Timed Out")
        frame = execution.frames.get(found.frame_id)
        if frame is None or frame.task is None or frame.task.token != command.token:
            raise errors.TaskTimedOut("Task Timed Out")
        attempt = frame.attempt
        if command.kind == "heartbeat":
            batch.add(self._interpreter.heartbeat(execution, frame.id))
            return {}
        request = self._request(execution, frame.id, attempt)
        if command.kind == "success":
            transition = self._interpreter.task_succeeded(
                execution, frame.id, attempt, command.output
            )
        else:
            transition = self._interpreter.task_failed(
                execution, frame.id, attempt, command.error, command.cause
            )
        if transition is not None:
            if request is not None:
                self._hooks.on_task_result(
                    TaskResultInput(
                        self._live.conn,
                        execution,
                        request,
                        command.kind == "success",
                        command.output,
                        cause=command.cause,
                        error=command.error,
                        answered=True,
                    )
                )
            self._hooks.on_transition(TransitionInput(self._live.conn, transition, started=False))
        batch.add(transition)
        return {}

    def _timer_fired(self, command: TimerFired, batch: _Batch) -> None:
        """A wait ends, a retry is due, a task or the execution times out. Its transition is
        recorded like any other: a gate's tier that timed out closes its row, the next tier's
        task and the run's end show in the run records (the hooks see it)."""
        execution = self._load(execution_id=command.execution_id)
        if execution is None:
            return
        transition = self._interpreter.timer(
            execution, command.frame, command.kind, command.attempt
        )
        if transition is not None:
            self._hooks.on_transition(TransitionInput(self._live.conn, transition, started=False))
        batch.add(transition)

    def _stop_execution(self, command: StopExecution, batch: _Batch) -> dict[str, Any]:
        execution = self._load(arn=command.arn)
        if execution is None:
            raise errors.ExecutionDoesNotExist(f"Execution Does Not Exist: '{command.arn}'")
        if not execution.status.is_final:
            transition = self._interpreter.stop(execution, error=command.error, cause=command.cause)
            self._hooks.on_transition(TransitionInput(self._live.conn, transition, started=False))
            batch.add(transition)
        return {"stopDate": execution.stopped_at or self._clock()}

    def _redrive(self, command: RedriveExecution, batch: _Batch) -> dict[str, Any]:
        execution = self._load(arn=command.arn)
        if execution is None:
            raise errors.ExecutionDoesNotExist(f"Execution Does Not Exist: '{command.arn}'")
        if execution.status not in (
            ExecutionStatus.FAILED,
            ExecutionStatus.TIMED_OUT,
            ExecutionStatus.ABORTED,
        ):
            raise errors.ExecutionNotRedrivable(
                f"Execution is {execution.status.value}, not redrivable"
            )
        transition = self._interpreter.redrive(execution)
        with self._done:
            self._ended.pop(execution.arn, None)  # running again: `wait` must not see its end
        now = self._clock()
        self._live.store.mark_redriven(execution.id, now)
        self._hooks.on_redrive(RedriveInput(self._live.conn, execution))
        self._hooks.on_transition(TransitionInput(self._live.conn, transition, started=False))
        batch.add(transition)
        return {"redriveDate": now}

    def _start_child(self, command: StartChild, batch: _Batch) -> None:
        parent = self._load(execution_id=command.execution_id)
        if parent is None:
            return
        params = command.parameters if isinstance(command.parameters, dict) else {}
        tail = command.resource.rsplit("startExecution", 1)[-1].lstrip(".") or "none"
        integration = cast(Integration, tail)  # kind_of made it a startExecution resource
        data = params.get("Input", {})
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except ValueError:
                self._add_recorded(
                    batch,
                    self._interpreter.task_failed(
                        parent,
                        command.frame,
                        command.attempt,
                        "States.Runtime",
                        "Input is not JSON",
                    ),
                )
                return
        frame = parent.frames.get(command.frame)
        link = ParentTask(
            execution_id=parent.id,
            arn=parent.arn,
            frame=command.frame,
            attempt=command.attempt,
            integration=integration,
            step=frame.state if frame else None,
        )
        name = str(params.get("Name") or uuid.uuid4())
        try:
            base, _, _ = self._machine_for(str(params.get("StateMachineArn", "")))
            existing = self._live.store.execution_by_name(base, name)
            if existing is None:
                started = self._start_execution(
                    StartExecution(
                        str(params["StateMachineArn"]),
                        name,
                        data,
                        options=dict(parent.options),
                        # Fire-and-forget (continue-as-new): not a child, as on AWS; it
                        # outlives its starter and its spend is its own.
                        parent=link if integration != "none" else None,
                    ),
                    batch,
                )
                child_arn = started["executionArn"]
            else:  # a retry, a redrive or a recovery: the same child, not a second one
                child_arn = existing.arn
                if link.waits:
                    self._relink_child(existing.id, link)
                    if existing.status != "RUNNING":
                        self._post_after_commit(batch, ChildFinished(child_arn))
        except errors.EngineError as error:
            self._add_recorded(
                batch,
                self._interpreter.task_failed(
                    parent,
                    command.frame,
                    command.attempt,
                    f"StepFunctions.{error.code}Exception",
                    error.message,
                ),
            )
            return
        if frame is not None and frame.task is not None:
            frame.task = replace(frame.task, child_arn=child_arn)
            frame.touch()
        if integration == "none":
            row = self._live.store.execution_row(arn=child_arn)
            result = {
                "ExecutionArn": child_arn,
                "StartDate": _iso(row.started_at if row else self._clock()),
            }
            self._add_recorded(
                batch,
                self._interpreter.task_succeeded(parent, command.frame, command.attempt, result),
            )

    def _add_recorded(self, batch: _Batch, transition: Transition | None) -> None:
        """A transition of the starting execution, written to its run records as well (a
        fire-and-forget start goes straight on, as does a start that failed)."""
        if transition is not None:
            self._hooks.on_transition(TransitionInput(self._live.conn, transition, started=False))
        batch.add(transition)

    def _relink_child(self, execution_id: int, link: ParentTask) -> None:
        self._live.store.set_parent(execution_id, link)
        cached = self._load(execution_id=execution_id)
        if cached is not None:
            cached.parent = link

    def _child_finished(self, command: ChildFinished, batch: _Batch) -> None:
        row = self._live.store.execution_row(arn=command.child_arn)
        link = row.parent_task if row is not None else None
        if row is None or link is None or row.status == "RUNNING":
            return
        parent = self._load(execution_id=link.execution_id)
        if parent is None:
            return
        description = _child_description(row, sync2=link.integration == "sync:2")
        if row.status == "SUCCEEDED":
            transition = self._interpreter.task_succeeded(
                parent, link.frame, link.attempt, description
            )
        else:
            transition = self._interpreter.task_failed(
                parent,
                link.frame,
                link.attempt,
                "States.TaskFailed",
                json.dumps(description, default=str),
            )
        if transition is not None:
            self._hooks.on_transition(TransitionInput(self._live.conn, transition, started=False))
        batch.add(transition)

    def _post_after_commit(self, batch: _Batch, command: Command) -> None:
        batch.follow_ups.append(command)

    # --- inline tasks (inside the transition) --------------------------------------------------

    def _inline(self, request: TaskRequest) -> InlineResult | None:
        params = request.parameters if isinstance(request.parameters, dict) else {}
        if request.kind == "sqs":
            body = params.get("MessageBody", "")
            text = body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))
            execution_id = self._by_arn.get(request.execution_arn)
            self._live.store.dead_letter(str(params.get("QueueUrl", "")), text, execution_id)
            digest = hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()
            return InlineResult(True, {"MessageId": str(uuid.uuid4()), "MD5OfMessageBody": digest})
        if request.kind != "lambda":
            return None
        spec = self.registry.resolve(str(params.get("FunctionName", "")))
        if spec is None or not spec.inline:
            return None
        ok, result, error, cause = invoke(
            spec, params.get("Payload"), function_arn=self.arns.function(spec.name)
        )
        if ok:
            return InlineResult(True, _lambda_result(result))
        return InlineResult(False, error=error, cause=cause)

    # --- after commit --------------------------------------------------------------------------

    def _after_commit(self, batch: _Batch) -> None:
        finished = False
        ended = [t.execution for t in batch.transitions if t.finished]
        if ended:  # before they leave the cache, so that `wait` always finds them somewhere
            with self._done:
                for execution in ended:
                    self._ended[execution.arn] = execution.status.value
                while len(self._ended) > _MAX_ENDED:
                    self._ended.popitem(last=False)
        for transition in batch.transitions:
            execution = transition.execution
            for frame_id, attempt in transition.settled_tasks:
                key = (execution.id, frame_id, attempt)
                request = self._inflight.pop(key, None)
                frame = execution.frames.get(frame_id)
                if (
                    request is not None
                    and frame is not None
                    and frame.status is FrameStatus.CANCELLED
                ):
                    self._abandoned[key] = request
                    while len(self._abandoned) > _MAX_ENDED:
                        self._abandoned.popitem(last=False)
            for request in transition.tasks:
                self._dispatch(execution, request)
            for op in transition.timers:
                if isinstance(op, TimerRequest):
                    self._timers.set((execution.id, op.frame, op.kind), op.fire_at, op.attempt)
                else:
                    self._timers.cancel((execution.id, op[0], op[1]))
            for frame_id, attempt in transition.stopped_children:
                self._stop_children(execution, frame_id, attempt)
            if transition.finished:
                finished = True
                self._timers.cancel_execution(execution.id)
                if execution.parent is not None and execution.parent.waits:
                    self._inbox.put(ChildFinished(execution.arn))
                self._evict(execution.id)
            elif self._parked(execution):
                self._evict(execution.id)
        for key in batch.late:  # recorded: nothing more to wait for
            self._abandoned.pop(key, None)
            self._inflight.pop(key, None)
        for command in batch.follow_ups:
            self._inbox.put(command)
        for future, value, error in batch.replies:
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(value)
        if finished:
            with self._done:
                self._done.notify_all()

    def _parked(self, execution: Execution) -> bool:
        """Nothing will happen without a callback or a timer: keep it out of memory."""
        for frame in execution.frames.values():
            if frame.status is FrameStatus.RUNNING:
                return False
            if (
                frame.status is FrameStatus.TASK
                and frame.task
                and frame.task.kind in _RUNNING_TASKS
            ):
                return False
        return True

    def _dispatch(self, execution: Execution, request: TaskRequest) -> None:
        key = (execution.id, request.frame, request.attempt)
        if request.kind in ("lambda", "lambda_direct"):
            self._inflight[key] = request
        params = request.parameters if isinstance(request.parameters, dict) else {}
        if request.kind == "child":
            self._inbox.put(
                StartChild(
                    execution.id,
                    request.frame,
                    request.attempt,
                    request.resource,
                    request.parameters,
                )
            )
            return
        if request.kind == "unsupported":
            self._inbox.put(
                TaskDone(
                    TaskOutcome(
                        key,
                        False,
                        error="States.Runtime",
                        cause=f"The local engine cannot run {request.resource}",
                    )
                )
            )
            return
        reference = (
            request.resource
            if request.kind == "lambda_direct"
            else str(params.get("FunctionName", ""))
        )
        spec = self.registry.resolve(reference)
        if spec is None:
            cause = f"Function not found: {reference} (no handler in the functions directory)"
            self._inbox.put(
                TaskDone(
                    TaskOutcome(key, False, error="Lambda.ResourceNotFoundException", cause=cause)
                )
            )
            return
        payload = request.parameters if request.kind == "lambda_direct" else params.get("Payload")
        payload = self._hooks.task_payload(PayloadInput(execution, spec.name, payload))
        shaped = request.kind != "lambda_direct"
        arn = self.arns.function(spec.name)

        def job() -> TaskOutcome:
            ok, result, error, cause = invoke(
                spec,
                payload,
                function_arn=arn,
                timeout=request.timeout_seconds,
                patience=DATABASE_FAULT_PATIENCE,
                stop=self._stop,
            )
            if not ok:
                return TaskOutcome(key, False, error=error, cause=cause)
            return TaskOutcome(key, True, _lambda_result(result) if shaped else result)

        # Ready tasks wait by their run's priority, take turns across runs, and within a run go
        # longest remaining path first (dispatch/ready.py, dispatch/paths.py).
        frame = execution.frames.get(request.frame)
        remaining = (
            self._paths.remaining(execution.machine, frame.program, frame.state) if frame else 0
        )
        self._dispatcher.submit(
            spec, job, priority=task_priority(payload), run=execution.id, remaining=remaining
        )

    def _stop_children(self, execution: Execution, frame_id: int, attempt: int) -> None:
        backoff = Backoff()
        while True:  # after a commit: wait for the database rather than leave children running
            try:
                with self.read() as store:
                    arns = store.running_children(execution.id, frame_id, attempt)
                break
            except Exception as exc:
                if not is_connection_fault(exc) or self._stop.is_set():
                    raise
                self._outage.failed(exc)
                self._stop.wait(backoff.next())
        cause = stopped_by_parent(execution)
        for arn in arns:
            self._inbox.put(StopExecution(arn, error="States.Aborted", cause=cause))

    def _after_failed_batch(
        self, commands: list[Command], batch: _Batch, error: BaseException
    ) -> None:
        for transition in batch.transitions:
            self._evict(transition.execution.id)
        for command in commands:
            if isinstance(command, TaskDone | TimerFired | ChildFinished | StartChild):
                self._inbox.put(command)  # results must not be lost: apply them again
            elif command.reply is not None and not command.reply.done():
                command.reply.set_exception(error)

    # --- database faults -----------------------------------------------------------------------

    def _next_batch_number(self) -> int:
        self._batch_number += 1
        return self._batch_number

    def _watch_lock(self) -> None:
        """Once a second, check that the ownership lock's connection still holds it; if not,
        repair as after any fault (take the lock back unless another engine has it)."""
        if self._ownership is None:
            return
        now = time.monotonic()
        if now - self._lock_checked < _LOCK_CHECK_SECONDS:
            return
        self._lock_checked = now
        if not self._ownership.alive():
            self._healthy = False
            self._outage.failed(ConnectionError("the engine lock's connection was lost"))

    def _repair(self) -> None:
        """One attempt to get back to a working state after a fault; waits (capped, jittered
        backoff) before returning if the database is still out."""
        try:
            self._reconnect()
        except fencing.FencedOffError:
            raise
        except Exception as exc:
            if not is_connection_fault(exc, self._conn):
                raise
            self._outage.failed(exc)
            self._stop.wait(self._backoff.next())
            return
        self._backoff.reset()
        self._healthy = True
        self._outage.recovered(f"{len(self._retry)} commands to apply again")

    def _reconnect(self) -> None:
        self._connect()  # always a new one: a pipeline cut short can leave the old one unusable
        current = fencing.state(self._live.conn)
        if current.epoch != self._epoch:
            raise fencing.FencedOffError(self._epoch)
        if self._unsure is not None:
            self._settle_unsure(committed=current.batch == self._unsure.number)
        if self._ownership is not None and not self._ownership.alive():
            if not self._ownership.acquire(wait=False):
                raise fencing.FencedOffError(self._epoch)  # another engine holds the lock now
            epoch = fencing.reclaim(self._live.conn, self._epoch)
            if epoch is None:  # someone owned the database meanwhile: our memory is stale
                raise fencing.FencedOffError(self._epoch)
            self._epoch, self._batch_number = epoch, 0

    def _settle_unsure(self, *, committed: bool) -> None:
        """Finish the batch the fault interrupted: act on it if it committed, else apply its
        commands again (its executions are read back from the database)."""
        unsure, self._unsure = self._unsure, None
        assert unsure is not None
        if committed:
            self._after_commit(unsure.batch)
            return
        for execution_id in unsure.touched:
            self._evict(execution_id)
        for transition in unsure.batch.transitions:
            self._evict(transition.execution.id)
        self._retry = unsure.commands + self._retry

    def _step_down(self, fenced: fencing.FencedOffError) -> None:
        """Another engine owns the database: forget everything held in memory (the new owner
        recovers it from the database) and refuse commands until this one takes over again."""
        log.error("%s", fenced)
        self._healthy = False
        self._standby = True
        if self._unsure is not None:
            self._retry = self._unsure.commands + self._retry
        self._unsure = None
        for command in self._retry:
            if command.reply is not None and not command.reply.done():
                command.reply.set_exception(errors.ServiceUnavailable(_NOT_OWNER))
        self._retry = []
        self._cache.clear()
        self._by_arn.clear()
        self._timers = TimerHeap()
        self._inflight.clear()
        self._refuse_waiting_commands()

    def _refuse_waiting_commands(self) -> None:
        while True:
            try:
                command = self._inbox.get_nowait()
            except queue.Empty:
                return
            if command.reply is not None and not command.reply.done():
                command.reply.set_exception(errors.ServiceUnavailable(_NOT_OWNER))

    def _take_over(self) -> None:
        """A fenced-off engine under an ownership lock waits for it, as a second engine does,
        then claims a new epoch and recovers; without a lock it stays stopped."""
        self._refuse_waiting_commands()
        if self._ownership is None:
            self._stop.wait(0.25)
            return
        try:
            if not self._ownership.alive() and not self._ownership.acquire(wait=False):
                self._stop.wait(0.25)
                return
            self._connect()
            self._epoch, self._batch_number = fencing.claim(self._live.conn), 0
            self._recover()
        except Exception as exc:
            if not is_connection_fault(exc, self._conn):
                raise
            self._outage.failed(exc)
            self._stop.wait(self._backoff.next())
            return
        log.warning("this engine owns its database again (epoch %d)", self._epoch)
        self._standby = False
        self._healthy = True
        if self._on_owner_again is not None:
            try:
                self._on_owner_again()
            except Exception:  # an announcement, not a commit: the engine goes on
                log.warning("could not announce this engine as the owner", exc_info=True)

    # --- recovery ------------------------------------------------------------------------------

    def _recover(self) -> None:
        """Re-arm the timers and re-dispatch the tasks that had not finished (at-least-once).

        Calls that were in progress in the engine that died are let go first, so that their
        re-dispatched steps may call again instead of waiting out the Lambda deadline."""
        self._hooks.on_recover(RecoverInput(self._live.conn))
        for timer in self._live.store.timers():
            self._timers.set(
                (timer.execution_id, timer.frame_id, timer.kind), timer.fire_at, timer.attempt
            )
        pending = self._live.store.pending_tasks()
        orphans = {  # their parent ended before it stopped them
            orphan.arn: stopped_by(orphan.parent_name, ExecutionStatus(orphan.parent_status))
            for orphan in self._live.store.orphaned_children()
        }
        self._live.conn.commit()
        for arn, cause in orphans.items():
            self._inbox.put(StopExecution(arn, error="States.Aborted", cause=cause))
        for task in pending:
            if task.execution_arn in orphans:
                continue
            execution = self._load(execution_id=task.execution_id)
            self._live.conn.commit()
            if execution is not None:
                self._dispatch(execution, task.request())


def _lambda_result(payload: Any) -> dict[str, Any]:
    """What `arn:aws:states:::lambda:invoke` returns: the function's result under `Payload`."""
    return {
        "ExecutedVersion": "$LATEST",
        "Payload": payload,
        "SdkHttpMetadata": {"HttpHeaders": {}, "HttpStatusCode": 200},
        "SdkResponseMetadata": {"RequestId": str(uuid.uuid4())},
        "StatusCode": 200,
    }


def _iso(moment: datetime) -> str:
    return (
        moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    )


def _child_description(row: ExecutionRow, *, sync2: bool) -> dict[str, Any]:
    """DescribeExecution of a child, as `.sync` (JSON text) or `.sync:2` (JSON) returns it."""
    description: dict[str, Any] = {
        "ExecutionArn": row.arn,
        "StateMachineArn": row.machine_arn,
        "Name": row.name,
        "Status": row.status,
        "StartDate": _iso(row.started_at),
        "Input": row.input if sync2 else json.dumps(row.input),
        "InputDetails": {"Included": True},
    }
    if row.stopped_at is not None:
        description["StopDate"] = _iso(row.stopped_at)
    if row.status == "SUCCEEDED":
        description["Output"] = row.output if sync2 else json.dumps(row.output)
        description["OutputDetails"] = {"Included": True}
    else:
        description["Error"] = row.error
        description["Cause"] = row.cause
    return description
