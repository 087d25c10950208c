"""Reset a run: start it again from before one of its steps, on its own version or another.

A reset starts a new run (a new run id) with the original run's input, on version N of its
workflow (default: the version it ran). Every step of version N that is not the reset's step or
downstream of it is "before" it: the new run gives those steps the original run's id as their
idempotency namespace (`ResetFrom.reuse`, read by `StepInvocation.idempotency_key`), so their
side effects find the results the original recorded and return them without running again. The
reset's step and everything downstream of it run afresh, under the new run's own id. The original
run is left as it is; `run_resets` links the two (`ResetLinks`), and the new run's input carries
the link (`RESET_KEY`) to every step it runs, on the local engine and on Step Functions alike.

`switchyard runs reset`, `POST /runs/{run_id}/reset` (the REST API and approval_api on AWS) call
`reset_run`; where the original run's input and version N's machine are found, and how the new
run is started, is a `ResetSource`: the local engine's records (`switchyard.local.reset_sources`)
or Step Functions (`switchyard.approvals.resets`). Nothing here needs the engine, so this module
loads on Lambda.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool
from pydantic import ValidationError

from switchyard.constants import OPERATORS_ROLE
from switchyard.contract import CONTINUE_KEY, PARENT_LINK_KEY, RESET_KEY, ResetFrom
from switchyard.gates import GateForbiddenError, Roles, TaskCallbacks
from switchyard.local.run_actions import FINAL_STATUSES, RunRef, cancel_run

_DROPPED_KEYS = (
    "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID",
    PARENT_LINK_KEY,
    CONTINUE_KEY,
    RESET_KEY,
)
"""Input keys a reset does not pass on: a sub-workflow's parent link (a reset child is a run of
its own), a continued segment's hand-over (the reset starts at the first segment), an earlier
reset (this one says what replays)."""
MAX_RUN_ID = 72
"""The longest new run id: a run of a workflow that continues as new names its segments
`<run id>-<segment>` within Step Functions' 80 characters (`run_start.MAX_CONTINUABLE_RUN_ID`)."""
KEPT_OPTIONS = ("llm_script",)
_RESCUED = ":rescued"
"""Start options of the original that the new run keeps: its stored model script."""


class ResetError(ValueError):
    """A reset that cannot be made; the message says why and what to do."""


class UnknownStepError(ResetError):
    """The step to reset to is not a step of the version the new run would run."""


class UnknownVersionError(ResetError):
    """The version to reset onto is not installed (or not deployed)."""


class RunNotEndedError(ResetError):
    """The run has not ended: a reset would run its steps twice at once."""


@dataclass(frozen=True)
class OriginalRun:
    """What a reset needs of the run it resets."""

    ref: RunRef
    workflow: str
    version: int
    input: dict[str, Any]
    """The execution's input as it was given (before run_start checked it)."""
    options: dict[str, Any]
    """The local engine's start options (its model script); empty on AWS."""


@dataclass(frozen=True)
class VersionTarget:
    """Version N of the workflow: what StartExecution names, and its definition."""

    version: int
    start_arn: str
    definition: str


class ResetSource(Protocol):
    """Where a reset finds the original run and version N, and starts the new run."""

    def original(self, run: RunRef) -> OriginalRun: ...

    def target(self, original: OriginalRun, version: int) -> VersionTarget | None:
        """Version `version` of the original's workflow; None when it is not installed."""
        ...

    def start(
        self, target: VersionTarget, name: str, data: dict[str, Any], options: dict[str, Any]
    ) -> str:
        """Start the new run as execution `name`; its execution ARN."""
        ...


@dataclass(frozen=True)
class ResetRequest:
    to: str
    """The step to start again from."""
    version: int | None = None
    """The workflow version the new run runs; None: the original's."""
    cancel: bool = False
    """Cancel the original first when it has not ended (else RunNotEndedError)."""
    reviewer: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class ResetPlan:
    to: str
    reuse: dict[str, str]
    """Step before `to` -> the run id whose idempotency records it replays."""
    fresh: tuple[str, ...]
    """`to` and the steps downstream of it, in the definition's order."""


@dataclass(frozen=True)
class ResetDone:
    run_id: str
    execution_arn: str
    reset_from: str
    reset_from_arn: str
    to: str
    workflow: str
    version: int
    reused: tuple[str, ...]
    fresh: tuple[str, ...]
    cancelled_original: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "execution_arn": self.execution_arn,
            "workflow": self.workflow,
            "version": self.version,
            "reset_from": self.reset_from,
            "to": self.to,
            "reused": list(self.reused),
            "fresh": list(self.fresh),
            "cancelled_original": self.cancelled_original,
        }


# --- the plan ------------------------------------------------------------------------------------


def step_graph(definition: str) -> dict[str, list[str]]:
    """Step id -> the steps it runs after, read from a compiled machine (as the dashboard draws
    it); a step's `fallback` counts as running after it (it stands in for the step)."""
    from switchyard.dashboard.graph import workflow_graph

    graph = {str(n["id"]): list(n["after"]) for n in workflow_graph(definition, [])["nodes"]}
    for step, fallback in _fallbacks(definition):
        if fallback in graph and step not in graph[fallback]:
            graph[fallback].append(step)
    return graph


def _fallbacks(definition: str) -> Iterator[tuple[str, str]]:
    """(step, its fallback): the compiler's `<step>:rescued` Pass, whose `fallback` names it."""
    try:
        machine = json.loads(definition)
    except ValueError:
        return
    pending: list[Any] = [machine]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            for name, state in (value.get("States") or {}).items():
                parameters = state.get("Parameters") if isinstance(state, dict) else None
                fallback = parameters.get("fallback") if isinstance(parameters, dict) else None
                if str(name).endswith(_RESCUED) and isinstance(fallback, str):
                    yield str(name)[: -len(_RESCUED)], fallback
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)


def downstream(graph: Mapping[str, Sequence[str]], step: str) -> set[str]:
    """`step` and every step that runs after it, directly or not."""
    dependents: dict[str, list[str]] = {s: [] for s in graph}
    for node, after in graph.items():
        for dep in after:
            dependents.setdefault(dep, []).append(node)
    found = {step}
    pending = [step]
    while pending:
        for child in dependents.get(pending.pop(), []):
            if child not in found:
                found.add(child)
                pending.append(child)
    return found


def plan_reset(
    definition: str, to: str, *, original_run: str, previous: ResetFrom | None = None
) -> ResetPlan:
    """Which steps of the machine replay which run's records, and which run afresh.

    A step that the original itself replayed (the original was a reset too) replays the run
    the original replayed, so a chain of resets never runs a side effect twice."""
    graph = step_graph(definition)
    if to not in graph:
        steps = ", ".join(graph) or "none"
        raise UnknownStepError(f"{to!r} is not a step of this version (its steps: {steps})")
    fresh = downstream(graph, to)
    earlier = previous.reuse if previous is not None else {}
    reuse = {s: earlier.get(s, original_run) for s in graph if s not in fresh}
    return ResetPlan(to, reuse, tuple(s for s in graph if s in fresh))


def reset_input(original: OriginalRun, plan: ResetPlan) -> dict[str, Any]:
    """The original's input, without what `_DROPPED_KEYS` names, with this reset."""
    kept = {k: v for k, v in original.input.items() if k not in _DROPPED_KEYS}
    link = ResetFrom(run=original.ref.run_id, to=plan.to, reuse=plan.reuse)
    return {**kept, RESET_KEY: link.model_dump(mode="json")}


def previous_reset(original: OriginalRun) -> ResetFrom | None:
    value = original.input.get(RESET_KEY)
    if not value:
        return None
    try:
        return ResetFrom.model_validate(value)
    except ValidationError:
        return None  # not one of ours: the original's steps replay the original


def new_run_id(original: str) -> str:
    """`<original>-reset-<time>-<random>`, the original's id cut to fit `MAX_RUN_ID`."""
    suffix = f"-reset-{datetime.now(UTC):%H%M%S}-{secrets.token_hex(3)}"
    return original[: MAX_RUN_ID - len(suffix)] + suffix


# --- the reset -----------------------------------------------------------------------------------


def reset_run(
    run: RunRef,
    request: ResetRequest,
    *,
    source: ResetSource,
    pool: ConnectionPool,
    callbacks: TaskCallbacks | None = None,
    roles: Roles | None = None,
) -> ResetDone:
    """Start `run` again from before `request.to` (see the module doc); a run that continued as
    new starts again from its first segment's input, under its id. Refused (a
    `ResetError`) when the step or version is unknown, or the run has not ended and
    `request.cancel` is not set; when SWITCHYARD_ROLES defines `operators`, only they may reset
    (GateForbiddenError)."""
    _check_operator(roles if roles is not None else Roles.from_env(), request.reviewer)
    original = source.original(run)
    version = request.version if request.version is not None else original.version
    target = source.target(original, version)
    if target is None:
        raise UnknownVersionError(
            f"version {version} of {original.workflow} is not installed; install it first"
            f" (run {run.run_id} ran version {original.version})"
        )
    first = original.ref  # of a run that continued as new: its first segment
    plan = plan_reset(
        target.definition,
        request.to,
        original_run=first.run_id,
        previous=previous_reset(original),
    )
    cancelled = False
    if run.status not in FINAL_STATUSES:
        if not request.cancel or callbacks is None:
            raise RunNotEndedError(
                f"run {run.run_id} has not ended (it is {run.status}); cancel it first, or"
                " reset with cancel (--cancel) to do both"
            )
        note = request.note or f"cancelled to reset it to {request.to}"
        cancel_run(run, pool=pool, callbacks=callbacks, note=note, reviewer=request.reviewer)
        cancelled = True
    name = new_run_id(first.run_id)
    options = {k: v for k, v in original.options.items() if k in KEPT_OPTIONS}
    arn = source.start(target, name, reset_input(original, plan), options)
    done = ResetDone(
        run_id=name,
        execution_arn=arn,
        reset_from=first.run_id,
        reset_from_arn=first.execution_arn,
        to=plan.to,
        workflow=original.workflow,
        version=target.version,
        reused=tuple(plan.reuse),
        fresh=plan.fresh,
        cancelled_original=cancelled,
    )
    ResetLinks(pool).record(done, reviewer=request.reviewer, note=request.note)
    return done


def _check_operator(roles: Roles, reviewer: str | None) -> None:
    if roles.deciding_role(None) is None:
        return
    if reviewer is None:
        raise GateForbiddenError(
            f"say who resets (the X-Switchyard-User header): only {OPERATORS_ROLE} may"
        )
    refusal = roles.refusal(None, reviewer)
    if refusal:
        raise GateForbiddenError(refusal)


# --- the links -----------------------------------------------------------------------------------

INSERT_RESET_SQL = """
INSERT INTO run_resets (run_id, execution_arn, reset_from, reset_from_arn, to_step, workflow,
                        version, reused, reviewer, note)
VALUES (%(run_id)s, %(arn)s, %(from)s, %(from_arn)s, %(to)s, %(workflow)s, %(version)s,
        %(reused)s, %(reviewer)s, %(note)s)
"""
RESETS_OF_SQL = """
SELECT run_id, reset_from, to_step, version, created_at FROM run_resets
WHERE reset_from = %(run)s OR run_id = %(run)s ORDER BY created_at, run_id
"""


@dataclass(frozen=True)
class ResetLink:
    run_id: str
    """The run the reset started."""
    reset_from: str
    to: str
    version: int
    created_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "reset_from": self.reset_from,
            "to": self.to,
            "version": self.version,
            "created_at": self.created_at.isoformat(),
        }


class ResetLinks:
    """Table `run_resets` (migration 0017): which run a reset started from which, to which step.
    The one writer of the table."""

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool

    def record(self, done: ResetDone, *, reviewer: str | None, note: str | None) -> None:
        with self._pool.connection() as conn:
            conn.execute(
                INSERT_RESET_SQL,
                {
                    "run_id": done.run_id,
                    "arn": done.execution_arn,
                    "from": done.reset_from,
                    "from_arn": done.reset_from_arn,
                    "to": done.to,
                    "workflow": done.workflow,
                    "version": done.version,
                    "reused": Jsonb(list(done.reused)),
                    "reviewer": reviewer,
                    "note": note,
                },
            )

    def of_run(self, run_id: str) -> tuple[ResetLink | None, list[ResetLink]]:
        """The reset that started `run_id` (None: none did), and the resets made of it."""
        with self._pool.connection() as conn:
            return resets_of(conn, run_id)


def resets_of(
    conn: psycopg.Connection[Any], run_id: str
) -> tuple[ResetLink | None, list[ResetLink]]:
    """The reset that started `run_id` (None: none did), and the resets made of it."""
    rows = conn.execute(RESETS_OF_SQL, {"run": run_id}).fetchall()
    links = [ResetLink(str(r[0]), str(r[1]), str(r[2]), int(r[3]), r[4]) for r in rows]
    started_by = next((link for link in links if link.run_id == run_id), None)
    return started_by, [link for link in links if link.reset_from == run_id]


def reset_fields(conn: psycopg.Connection[Any], run_id: str) -> dict[str, Any]:
    """What a run's view adds about resets, only when there are some: `reset_from` (the reset
    that started it) and `resets` (the resets made of it, oldest first)."""
    started_by, made = resets_of(conn, run_id)
    fields: dict[str, Any] = {}
    if started_by is not None:
        fields["reset_from"] = {
            "run_id": started_by.reset_from,
            "to": started_by.to,
            "links": {"run": f"/runs/{started_by.reset_from}"},
        }
    if made:
        fields["resets"] = [
            {**link.to_json(), "links": {"run": f"/runs/{link.run_id}"}} for link in made
        ]
    return fields
