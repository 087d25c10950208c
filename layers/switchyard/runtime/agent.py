"""An agent step: prompt a model, let it call its tools, return its answer.

- `system` and `prompt` are templates over the step's context.
- With `output_schema`, the model is told to answer with JSON matching it; the answer is parsed
  and validated (`invalid_output` when it is not JSON or does not match). Without it the output is
  `{text}`.
- With `tools`, the model ↔ tool loop runs for at most `max_turns` model calls; every tool call
  goes through the tool gateway (allow-list, schema, policy, loop detection, approval, audit,
  idempotency). A tool's own permanent failure goes back to the model as an error result, so it
  can correct itself; refusals, approvals, rate limits and outages end the attempt.
- With `continue_as_new`, a call takes at most `after` turns and then returns the model's summary
  of its work, which the next segment of the run starts from (`runtime/agent_segments.py`).
- Turns that asked for tools are journaled, so a step that runs again (after an approval, a
  crash, a retry) replays them rather than asking the model afresh.
- Every call reserves its estimated cost first and settles the real one after; usage and cost are
  summed over all calls. It also takes its share of the tenant's per-minute quota for the model
  (`runtime/quotas.py`): a call that does not fit is not made, and the step fails `throttled`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from switchyard.contract import StepInvocation, StepResult, Usage
from switchyard.contract.step_errors import InvalidOutputError, PermanentError, Spend, StepError
from switchyard.model import AgentBody
from switchyard.runtime.agent_segments import (
    SUMMARY_REQUEST,
    continued_output,
    first_message,
    segment_of,
)
from switchyard.runtime.budgets import BudgetGuard
from switchyard.runtime.clock import Deadline
from switchyard.runtime.providers import (
    CallKey,
    ContentBlock,
    ModelRequest,
    ModelResponse,
    ToolSpec,
    call_model,
)
from switchyard.runtime.providers.base import input_tokens
from switchyard.runtime.rendering import render_text
from switchyard.runtime.services import StepServices
from switchyard.runtime.step_io import (
    budgeted,
    check_output,
    context_for,
    deadline_for,
    finish,
    run_script,
    step_fields,
    tool_definitions,
)
from switchyard.runtime.tools import CallScope, ToolGateway, ToolRegistry, ToolRequest

DEFAULT_MAX_TOKENS = 4096
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


@dataclass
class UsageTotal:
    """Tokens and USD summed over the calls of one step."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: Decimal = Decimal(0)
    models: list[str] = field(default_factory=list)
    provider: str | None = None

    def add(self, usage: Usage, cost: Decimal) -> None:
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cache_read_tokens += usage.cache_read_tokens
        self.cache_write_tokens += int((usage.model_extra or {}).get("cache_write_tokens", 0) or 0)
        self.cost += cost
        if usage.model is not None:
            self.models.append(usage.model)
        self.provider = usage.provider or self.provider

    def spend(self) -> Spend | None:
        """What the calls cost, as a failed attempt reports it; None when none was paid for."""
        if not self.models:
            return None
        return Spend(cost_usd=float(self.cost), usage=self.usage())

    def usage(self) -> Usage:
        return Usage(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cache_read_tokens=self.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens,
            model=self.models[-1] if self.models else None,
            provider=self.provider,
        )


def json_instruction(schema: dict[str, Any]) -> str:
    return (
        "Answer with a single JSON value that matches this JSON Schema, and nothing else "
        "(no prose, no code fences):\n" + json.dumps(schema, ensure_ascii=False)
    )


def parse_json_answer(text: str) -> Any:
    """The JSON in a model's answer (code fences and surrounding prose tolerated)."""
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1)
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        pass
    for opener, closer in (("{", "}"), ("[", "]")):
        start, end = stripped.find(opener), stripped.rfind(closer)
        if 0 <= start < end:
            try:
                return json.loads(stripped[start : end + 1])
            except json.JSONDecodeError:
                continue
    raise InvalidOutputError(f"the model's answer is not JSON: {text[:200]!r}")


def _api_name(name: str) -> str:
    """Tool names the Messages API accepts (`^[a-zA-Z0-9_-]{1,64}$`)."""
    return name.replace(".", "__")


class AgentRun:
    """One attempt of one agent step."""

    def __init__(
        self,
        invocation: StepInvocation,
        services: StepServices,
        deadline: Deadline | None,
        lambda_context: Any,
    ) -> None:
        fields = step_fields(invocation)
        self.step = AgentBody.model_validate(
            {k: v for k, v in fields.items() if k in AgentBody.model_fields}
        )
        if self.step.model is None:
            raise PermanentError(
                f"agent step {invocation.step_id} has no model (set defaults.model)"
            )
        self.model: str = self.step.model
        self.invocation = invocation
        self.services = services
        self.deadline = deadline_for(invocation, services, deadline, lambda_context)
        self.provider = services.provider_for(self.step.provider, script=run_script(invocation))
        self.guard = BudgetGuard(
            budgeted(invocation),
            services.ledger,
            services.catalog,
            services.clock,
            step_budget=self.step.budget,
            tenant_daily_limit=services.tenant_daily_limits.get(invocation.workflow.tenant),
        )
        self.quota = services.quota_guard(invocation)
        self.registry = ToolRegistry(tool_definitions(invocation))
        self.gateway = ToolGateway(
            self.registry, stores=services.tools, env=services.tool_env, rate_limits=services.gate
        )
        self.scope = CallScope(
            run=invocation.context.run,
            step_id=invocation.step_id,
            idempotency_key=invocation.idempotency_key,
            inputs=invocation.context.inputs,
            allowed=frozenset(self.step.tools),
            deadline=self.deadline,
            lambda_context=lambda_context,
        )
        self.total = UsageTotal()
        """What this attempt counts: its own calls, and journaled turns no attempt reported."""
        self.journaled: list[int] = []
        """Journaled turns whose cost is in `total`."""
        self.names = {_api_name(name): name for name in self.step.tools}

    def key(self, turn: int) -> CallKey:
        scope = self.invocation.context.scope or {}
        # An agent in segments numbers its turns across them; its segment is no loop iteration.
        segmented = self.step.continue_as_new is not None
        return CallKey(
            run_id=self.invocation.context.run.id,
            step_id=self.invocation.step_id,
            index=scope.get("index"),
            iteration=None if segmented else scope.get("iteration"),
            attempt=self.invocation.attempt,
            turn=turn,
        )

    def tool_specs(self) -> tuple[ToolSpec, ...]:
        specs = []
        for name in self.step.tools:
            tool = self.registry.get(name)
            specs.append(ToolSpec(_api_name(name), tool.description, tool.input_schema))
        return tuple(specs)

    def ask(self, messages: list[dict[str, Any]], system: str | None, turn: int) -> ModelResponse:
        """One model call, inside a budget reservation; a call that fails releases it."""
        request = ModelRequest(
            model=self.model,
            messages=messages,
            max_tokens=self.step.max_tokens or DEFAULT_MAX_TOKENS,
            system=system,
            tools=self.tool_specs(),
            temperature=self.step.temperature,
            key=self.key(turn),
        )
        cap = self.guard.cap(
            [self.model, *self.step.fallback_models], input_tokens(request), request.max_tokens
        )
        request = replace(request, max_tokens=cap.max_tokens)
        reservation = self.guard.reserve(self.model, turn, cap.reserve_micros)
        try:
            response = call_model(
                self.provider,
                request,
                fallback_models=self.step.fallback_models,
                gate=self.services.gate,
                deadline=self.deadline,
                quota=self.quota,
            )
        except BaseException:
            self.guard.release(reservation)
            raise
        cost = self.guard.settle(reservation, response.usage)
        self.total.add(response.usage, cost)
        return response

    def run(self) -> StepResult:
        """The attempt's result; a failure leaves with what the attempt spent (`spent`)."""
        try:
            return self._run()
        except StepError as error:
            error.spent = self.total.spend()
            if error.spent is not None and self.journaled:
                # Their cost leaves with this error: the attempt that replays them must not
                # count them again.
                self.services.journal.mark_reported(self.invocation.idempotency_key, self.journaled)
            raise

    def _run(self) -> StepResult:
        self.guard.check_priced([self.model, *self.step.fallback_models])
        self.guard.start_attempt()
        context = context_for(self.invocation, self.services)
        prompt = render_text(self.step.prompt, context)
        system = render_text(self.step.system, context) if self.step.system else None
        if self.step.output_schema is not None:
            instruction = json_instruction(self.step.output_schema)
            system = f"{system}\n\n{instruction}" if system else instruction
        segment = segment_of(self.step, context.get("previous"))  # large parts resolved
        content = first_message(prompt, segment.carried)
        messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
        journal = self.services.journal
        step_key = self.invocation.idempotency_key
        recorded = journal.turns(step_key) if self.step.tools else {}
        for turn in range(segment.start, segment.stop):
            entry = recorded.get(turn)
            if entry is not None:
                response = ModelResponse.from_json(entry["response"])
                if not entry.get("reported"):  # paid by an attempt that could not report it
                    self.total.add(response.usage, self.services.catalog.cost_usd(response.usage))
                    self.journaled.append(turn)
            else:
                response = self.ask(messages, system, turn)
                if response.tool_uses:
                    journal.put_turn(step_key, turn, response.to_json())
                    self.journaled.append(turn)
                    entry = {"results": {}}
            if not response.tool_uses:
                return self.answer(response)
            messages.append(
                {"role": "assistant", "content": [block.to_api() for block in response.content]}
            )
            results = entry["results"] if entry is not None else {}
            messages.append(
                {"role": "user", "content": self.use_tools(response.tool_uses, turn, results)}
            )
        if segment.continues:
            return self.summarise(messages, system, segment.stop, context)
        raise PermanentError(
            f"agent step {self.invocation.step_id} still wanted tools after max_turns "
            f"({self.step.max_turns}) model calls"
        )

    def use_tools(
        self, uses: list[ContentBlock], turn: int, recorded: dict[str, Any]
    ) -> list[dict[str, Any]]:
        blocks = []
        for n, use in enumerate(uses):
            if use.id in recorded:
                result = recorded[use.id]
            else:
                result = self.one_tool(use, turn, n)
                self.services.journal.put_result(
                    self.invocation.idempotency_key, turn, use.id, result
                )
            blocks.append({"type": "tool_result", "tool_use_id": use.id, **result})
        return blocks

    def one_tool(self, use: ContentBlock, turn: int, n: int) -> dict[str, Any]:
        name = self.names.get(use.name, use.name)
        try:
            output = self.gateway.call(
                ToolRequest(name, dict(use.input), f"{turn}.{n}"), self.scope
            )
        except PermanentError as error:
            if type(error) is not PermanentError:
                raise
            return {"content": f"error: {error.message}", "is_error": True}
        return {"content": json.dumps(output, ensure_ascii=False, default=str)}

    def summarise(
        self,
        messages: list[dict[str, Any]],
        system: str | None,
        turn: int,
        context: dict[str, Any],
    ) -> StepResult:
        """The segment's last turn: the model summarises its work for the next segment. The
        request goes with the last tool results (one user message, as the API wants turns to
        alternate) and with the tools (which the API wants beside tool blocks)."""
        rule = self.step.continue_as_new
        assert rule is not None
        request = render_text(rule.summary, context) if rule.summary else SUMMARY_REQUEST
        messages[-1]["content"].append({"type": "text", "text": request})
        response = self.ask(messages, system, turn)
        summary = response.text.strip()
        if not summary:
            raise PermanentError(
                f"agent step {self.invocation.step_id} was asked to summarise its work after "
                f"{turn} model calls, to go on in a new segment, and gave no text"
            )
        return finish(
            self.invocation,
            self.services,
            continued_output(summary, turn + 1),
            cost=self.total.cost,
            usage=self.total.usage(),
            continued=True,
        )

    def answer(self, response: ModelResponse) -> StepResult:
        schema = self.step.output_schema
        if response.structured is not None:
            output = response.structured
        elif schema is not None:
            output = parse_json_answer(response.text)
        else:
            output = {"text": response.text}
        check_output(output, schema)
        return finish(
            self.invocation,
            self.services,
            output,
            cost=self.total.cost,
            usage=self.total.usage(),
        )


def run_agent_step(
    invocation: StepInvocation,
    services: StepServices,
    *,
    deadline: Deadline | None = None,
    lambda_context: Any = None,
) -> StepResult:
    """Run one attempt of an agent step; raises a `StepError` on failure."""
    return AgentRun(invocation, services, deadline, lambda_context).run()
