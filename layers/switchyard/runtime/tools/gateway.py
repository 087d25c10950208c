"""The tool gateway: every tool call, from a tool step or from an agent, passes here.

Before a call runs, in this order:

1. allow-list: an agent may call only the tools its step lists (`policy` otherwise);
2. the tool exists, and the arguments match its `input_schema` (`policy` otherwise);
3. the call is registered for the run, once per call id, and `max_calls_per_run` is checked
   (`policy`); the same tool with the same arguments a third time in a run stops for a person
   (`human_required`, kind `loop`);
4. `require_approval_if`, evaluated over `{args, inputs, run}` with Step Functions semantics,
   stops the call for a person (`human_required`, kind `tool_approval`) unless a decision for
   this exact call is recorded: then it runs with exactly the approved arguments, or fails
   `rejected`. A request for a person carries the arguments redacted, as the audit log does:
   the real ones never leave the step (the step renders them again when it runs again, and a
   `***` kept in edited arguments stands for the real value);
5. side effects run once per idempotency key, never the attempt number: through Powertools,
   or, for a tool that records the key in its effect's own transaction (`sql.query`), there;
6. the call itself goes through circuit breakers (runtime/breakers.py): a declared tool's own
   (`tool:<workflow>/<tool>`), and the host's for HTTP (`host:<name>[:<port>]`); an open one fails
   the call `circuit_open` without making it. A call replayed from its idempotency record meets
   no circuit: it is not made again.

Every call is audited, refused ones too, with secrets redacted. A call id is a hash of the step's
idempotency key, the call's position (`tool`, or `<turn>.<n>` in an agent) and the tool and
arguments, so the call a person decided on is recognised when the step runs again.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema_rs
import psycopg

from switchyard.conditions import ConditionError
from switchyard.conditions.evaluate import evaluate
from switchyard.contract import HumanRequest, RunContext
from switchyard.contract.step_errors import (
    HumanRequiredError,
    PermanentError,
    PolicyViolationError,
    RejectedError,
    StepError,
)
from switchyard.model import SideEffect
from switchyard.runtime.breakers import CircuitBreakers, breaker_policy_from_env, tool_circuit
from switchyard.runtime.clock import Deadline
from switchyard.runtime.database import transient_database_error
from switchyard.runtime.rate_limits import RateLimitGate
from switchyard.runtime.tools.base import CallInfo, Tool, ToolEnvironment, canonical_json
from switchyard.runtime.tools.registry import ToolRegistry
from switchyard.stores.audit import AuditLog, AuditRecord, InMemoryAuditLog, redact, unredact
from switchyard.stores.breaker import BreakerStore, InMemoryBreakerStore
from switchyard.stores.idempotency import IdempotentCalls
from switchyard.stores.tool_calls import (
    DecisionStore,
    InMemoryDecisionStore,
    InMemoryToolCallLedger,
    ToolCallLedger,
    ToolDecision,
)

LOOP_LIMIT = 3
"""The same tool with the same arguments this many times in a run stops for a person."""
DEFAULT_CALL_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class ToolRequest:
    tool: str
    args: dict[str, Any]
    position: str = "tool"
    """`tool` for a tool step's one call; `<turn>.<n>` for an agent's calls."""


@dataclass(frozen=True, slots=True)
class CallScope:
    """Who is calling: the step, its run, and what it is allowed."""

    run: RunContext
    step_id: str
    idempotency_key: str
    inputs: Mapping[str, Any] = field(default_factory=dict)
    allowed: frozenset[str] | None = None
    """Tools an agent may call; None for a tool step (its one tool was checked by validation)."""
    side_effect: SideEffect | None = None
    """A tool step's `side_effect`, overriding the tool's default."""
    deadline: Deadline | None = None
    lambda_context: Any = None


@dataclass
class GatewayStores:
    audit: AuditLog = field(default_factory=InMemoryAuditLog)
    calls: ToolCallLedger = field(default_factory=InMemoryToolCallLedger)
    decisions: DecisionStore = field(default_factory=InMemoryDecisionStore)
    idempotency: IdempotentCalls | None = None
    """None only where side effects need no protection (tests of read-only tools)."""
    breakers: BreakerStore = field(
        default_factory=lambda: InMemoryBreakerStore(policy=breaker_policy_from_env())
    )
    """Circuit states: shared by every process on PostgreSQL and DynamoDB."""


def call_id_for(idempotency_key: str, request: ToolRequest) -> str:
    text = f"{idempotency_key}|{request.position}|{request.tool}|{canonical_json(request.args)}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _outcome(error: StepError) -> str:
    if isinstance(error, PolicyViolationError):
        return "refused"
    if isinstance(error, HumanRequiredError):
        return "human_required"
    if isinstance(error, RejectedError):
        return "rejected"
    return "error"


class ToolGateway:
    def __init__(
        self,
        registry: ToolRegistry,
        *,
        stores: GatewayStores | None = None,
        env: ToolEnvironment | None = None,
        rate_limits: RateLimitGate | None = None,
    ) -> None:
        self.registry = registry
        self.stores = stores or GatewayStores()
        self.env = env or ToolEnvironment()
        self.rate_limits = rate_limits
        """The Retry-After times endpoints sent (the step services' gate, shared with models)."""
        self.breakers = CircuitBreakers(self.stores.breakers)

    def call(self, request: ToolRequest, scope: CallScope) -> Any:
        """Check, run and audit one call; its output, or a `StepError`."""
        call_id = call_id_for(scope.idempotency_key, request)
        started = time.perf_counter()
        args = request.args
        try:
            result, args, note = self._checked_call(request, scope, call_id)
        except StepError as error:
            self._audit(scope, request, call_id, args, _outcome(error), started, error)
            raise
        except psycopg.OperationalError as exc:  # a store of the gateway's: try again later
            lost = transient_database_error(exc, where=request.tool)
            self._audit(scope, request, call_id, args, _outcome(lost), started, lost)
            raise lost from exc
        except Exception as exc:  # a bug in a tool must still be audited and leave as permanent
            failure = PermanentError(f"{request.tool}: {type(exc).__name__}: {exc}")
            self._audit(scope, request, call_id, args, "error", started, failure)
            raise failure from exc
        self._audit(scope, request, call_id, args, "ok", started, None, note)
        return result

    def _checked_call(
        self, request: ToolRequest, scope: CallScope, call_id: str
    ) -> tuple[Any, dict[str, Any], str | None]:
        name = request.tool
        if scope.allowed is not None and name not in scope.allowed:
            listed = ", ".join(sorted(scope.allowed)) or "none"
            raise PolicyViolationError(
                f"step {scope.step_id} may not call tool {name!r} (its tools: {listed})", tool=name
            )
        tool = self.registry.get(name)
        _validate_args(tool, request.args)
        decision = self.stores.decisions.get(scope.run.id, call_id)
        if decision is not None and not _same_call(decision, request.args):
            decision = None  # a person decided on other arguments: this call asks again
        if decision is not None and decision.decision == "rejected":
            raise RejectedError(
                f"a person rejected this call of {name}"
                + (f": {decision.note}" if decision.note else "")
            )
        self._check_policy(tool, request, scope, call_id, decision)
        args = request.args
        if decision is not None and decision.args is not None:
            # The person saw the arguments redacted: a `***` they kept is the real secret.
            args = unredact(dict(decision.args), request.args)
            _validate_args(tool, args)
        if decision is not None and decision.output is not None:
            return decision.output, args, "outcome confirmed by a person; not run again"
        return self._run(tool, args, request, scope, call_id, decision), args, None

    def _check_policy(
        self,
        tool: Tool,
        request: ToolRequest,
        scope: CallScope,
        call_id: str,
        decision: ToolDecision | None,
    ) -> None:
        definition = self.registry.definition(request.tool)
        counts = self.stores.calls.register(
            scope.run.id, call_id, request.tool, _hash(canonical_json(request.args))
        )
        policy = definition.policy if definition is not None else None
        limit = policy.max_calls_per_run if policy is not None else None
        if limit is not None and counts.tool_calls > limit:
            raise PolicyViolationError(
                f"tool {request.tool} may be called {limit} times per run; "
                f"this would be call {counts.tool_calls}",
                tool=request.tool,
            )
        approved = decision is not None and decision.decision == "approved"
        if counts.same_arguments >= LOOP_LIMIT and not approved:
            raise HumanRequiredError(
                HumanRequest(
                    kind="loop",
                    reason=f"tool {request.tool} was called {counts.same_arguments} times in this "
                    "run with the same arguments; approve to let it go on",
                    tool=request.tool,
                    args=redact(request.args),
                    call_id=call_id,
                )
            )
        if policy is not None and policy.require_approval_if and not approved:
            context = {"args": request.args, "inputs": dict(scope.inputs), "run": _run(scope)}
            try:
                needs_approval = evaluate(policy.require_approval_if, context)
            except ConditionError as exc:
                raise PermanentError(
                    f"tool {request.tool}: bad require_approval_if: {exc}"
                ) from None
            if needs_approval:
                raise HumanRequiredError(
                    HumanRequest(
                        kind="tool_approval",
                        reason=f"tool {request.tool} needs approval ({policy.require_approval_if})",
                        tool=request.tool,
                        args=redact(request.args),
                        call_id=call_id,
                    )
                )

    def _run(
        self,
        tool: Tool,
        args: dict[str, Any],
        request: ToolRequest,
        scope: CallScope,
        call_id: str,
        decision: ToolDecision | None,
    ) -> Any:
        key = scope.idempotency_key
        if request.position != "tool":
            key = f"{key}#{request.position}"
        timeout = DEFAULT_CALL_TIMEOUT
        if scope.deadline is not None:
            timeout = max(min(timeout, scope.deadline.remaining() - 1.0), 1.0)
        side_effect = scope.side_effect or tool.side_effect(args)
        info = CallInfo(
            scope.run.id,
            scope.step_id,
            key,
            timeout,
            side_effect,
            rate_limits=self.rate_limits,
            deadline=scope.deadline,
            breakers=self.breakers,
        )

        def invoke() -> Any:
            if self.registry.definition(request.tool) is None:  # a built-in: its host's circuit
                return tool.invoke(args, self.env, info)
            with self.breakers.guard(tool_circuit(scope.run.workflow, request.tool)):
                return tool.invoke(args, self.env, info)

        if side_effect is SideEffect.NONE or self.stores.idempotency is None:
            return invoke()
        if side_effect is SideEffect.IDEMPOTENT and getattr(tool, "records_own_effects", False):
            return invoke()  # key and effect commit together
        return self.stores.idempotency.run(
            key,
            {"tool": request.tool, "args": args},
            invoke,
            non_idempotent=side_effect is SideEffect.NON_IDEMPOTENT,
            rerun_approved=decision is not None and decision.decision == "approved",
            lambda_context=scope.lambda_context,
            describe=f"tool {request.tool}",
            call_id=call_id,
        )

    def _audit(
        self,
        scope: CallScope,
        request: ToolRequest,
        call_id: str,
        args: dict[str, Any],
        outcome: str,
        started: float,
        error: StepError | None,
        note: str | None = None,
    ) -> None:
        self.stores.audit.write(
            AuditRecord(
                run_id=scope.run.id,
                step_id=scope.step_id,
                tool=request.tool,
                call_id=call_id,
                arguments=redact(args),
                outcome=outcome,
                duration_ms=(time.perf_counter() - started) * 1000,
                error_type=str(error.name) if error is not None else None,
                message=error.message if error is not None else note,
            )
        )


def _same_call(decision: ToolDecision, args: dict[str, Any]) -> bool:
    """A decision binds to the exact arguments the person was shown (redacted as shown)."""
    if decision.shown_args is None:
        return True
    return canonical_json(redact(decision.shown_args)) == canonical_json(redact(args))


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _run(scope: CallScope) -> dict[str, Any]:
    return scope.run.model_dump(mode="json", exclude_none=True)


def _validate_args(tool: Tool, args: Mapping[str, Any]) -> None:
    validator = jsonschema_rs.validator_for(tool.input_schema)
    errors = [
        f"{'/'.join(map(str, e.instance_path)) or '(top)'}: {e.message}"
        for e in validator.iter_errors(dict(args))
    ]
    if errors:
        raise PolicyViolationError(
            f"arguments of tool {tool.name} do not match its input_schema: {'; '.join(errors[:5])}",
            tool=tool.name,
        )
