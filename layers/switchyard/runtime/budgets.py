"""Budgets as a step enforces them: duration, step attempts, and money around every model call.

At the start of an attempt: the run's `max_duration` (from `run.started_at`), the open
reservations a crashed earlier attempt of this step left (released), and the run's `max_steps`
(this attempt counted once). Before each model call: a reservation of the estimated cost on the
run, the step (if it has a budget), the budgets enclosing a sub-workflow run (its ancestors'
runs and the `sub_workflow` step's budget) and the tenant's day (if it has a limit), all or
nothing. Each
call is capped first (`cap`): its `max_tokens` is what those budgets can still pay for after its
input, and it reserves that request's worst case; a call that cannot pay for a useful answer is
refused before dispatch. (`estimate`, the step's remaining budget, else the historical average,
else $0.10, is what a reservation without a cap holds.) After the call: settled to the real cost
and tokens.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal

from switchyard.contract import StepInvocation, Usage
from switchyard.contract.step_errors import BudgetExceededError, StepError
from switchyard.model import StepBudget
from switchyard.runtime.clock import Clock, parse_iso
from switchyard.runtime.models_catalog import ModelCatalog, UnknownModelError, to_micros
from switchyard.runtime.settings import MODEL_PRICES_ENV
from switchyard.stores.budget import BudgetLedger, Reservation, Scope, ScopeLimit
from switchyard.stores.budget.ledger import EMPTY_TOTALS

DEFAULT_ESTIMATE_MICROS = 100_000
"""$0.10: the estimate of a call with no step budget and no history."""
MIN_USEFUL_OUTPUT_TOKENS = 16
"""A call whose budgets pay for fewer output tokens than this is refused instead of sent."""


@dataclass(frozen=True, slots=True)
class CallCap:
    """What one model call may ask for, and what it reserves."""

    max_tokens: int
    reserve_micros: int
    """The most the request can cost: its input, and `max_tokens` of output."""


@dataclass
class BudgetGuard:
    invocation: StepInvocation
    ledger: BudgetLedger | None
    catalog: ModelCatalog
    clock: Clock
    step_budget: StepBudget | None = None
    tenant_daily_limit: int | None = None

    @property
    def owner(self) -> str:
        return self.invocation.step_key

    @property
    def history_key(self) -> str:
        """A step's identity across runs, for the historical average."""
        return f"{self.invocation.workflow.name}:{self.invocation.step_id}"

    def _run_scope(self) -> Scope:
        return Scope("run", self.invocation.context.run.id)

    def _step_scope(self) -> Scope:
        return Scope("step", self.invocation.step_key)

    def check_duration(self) -> None:
        budget = self.invocation.workflow.budget
        if budget is None or budget.max_duration is None:
            return
        started = parse_iso(self.invocation.context.run.started_at)
        elapsed = self.clock.now() - started
        if elapsed > budget.max_duration:
            raise BudgetExceededError(
                f"run {self.invocation.context.run.id} has run {elapsed:.0f}s, past its "
                f"max_duration of {budget.max_duration}s",
                scope=self._run_scope().key,
            )

    def check_priced(self, models: Sequence[str]) -> None:
        """Every model the step may call has a price, before any is called: a call that could
        not be priced would be paid for and then fail the step, its spend counted nowhere."""
        for model in models:
            if model not in self.catalog:
                raise UnknownModelError(
                    f"step {self.invocation.step_id} calls model {model!r}, which has no price "
                    "in the model catalog, so its cost could not be counted; it was not called. "
                    f"Add its prices (USD per million tokens) to a file named by "
                    f"{MODEL_PRICES_ENV}, e.g. {model}: {{input: 3, output: 15}}. Known "
                    f"models: {', '.join(self.catalog.ids())}"
                )

    def start_attempt(self) -> None:
        """Checks and bookkeeping at the start of every attempt (see the module doc)."""
        self.check_duration()
        if self.ledger is None:
            return
        self.ledger.release_open(self.owner)
        budget = self.invocation.workflow.budget
        max_steps = budget.max_steps if budget is not None else None
        attempt_id = f"{self.invocation.step_key}:{self.invocation.attempt}"
        self.ledger.count_step(self._run_scope(), attempt_id, max_steps)

    def _limits(self) -> list[ScopeLimit]:
        run_budget = self.invocation.workflow.budget
        limits = [
            ScopeLimit(
                self._run_scope(),
                to_micros(str(run_budget.max_cost_usd))
                if run_budget is not None and run_budget.max_cost_usd is not None
                else None,
                run_budget.max_tokens if run_budget is not None else None,
            )
        ]
        for enclosing in self.invocation.context.run.enclosing_budgets:
            limits.append(
                ScopeLimit(
                    Scope(enclosing.kind, enclosing.id),
                    to_micros(str(enclosing.max_cost_usd))
                    if enclosing.max_cost_usd is not None
                    else None,
                    enclosing.max_tokens,
                )
            )
        if self.step_budget is not None:
            limits.append(
                ScopeLimit(
                    self._step_scope(),
                    to_micros(str(self.step_budget.max_cost_usd))
                    if self.step_budget.max_cost_usd is not None
                    else None,
                    self.step_budget.max_tokens,
                )
            )
        if self.tenant_daily_limit is not None:
            day = datetime.fromtimestamp(self.clock.now(), UTC).date().isoformat()
            tenant = self.invocation.workflow.tenant
            limits.append(
                ScopeLimit(Scope("tenant_day", f"{tenant}:{day}"), self.tenant_daily_limit)
            )
        return limits

    def estimate(self, model: str) -> int:
        """Micro-dollars to reserve for one call of `model` in this step."""
        assert self.ledger is not None
        if self.step_budget is not None and self.step_budget.max_cost_usd is not None:
            used = self.ledger.totals(self._step_scope())
            cap = (  # the scope's stored limit: an operator may have raised it
                used.limit_micros
                if used.limit_micros is not None
                else to_micros(str(self.step_budget.max_cost_usd))
            )
            left = cap - used.spent_micros - used.reserved_micros
            if left <= 0:
                raise BudgetExceededError(
                    f"step {self.invocation.step_id} has used its budget of ${cap / 1e6:.6f}",
                    scope=self._step_scope().key,
                    limit_micros=cap,
                )
            return left
        average = self.ledger.average_cost(model, self.history_key)
        return average if average is not None else DEFAULT_ESTIMATE_MICROS

    def cap(self, models: Sequence[str], input_tokens: int, wanted: int) -> CallCap:
        """What one call may ask for: `max_tokens` at most what every budget on it (step, run,
        enclosing runs and steps, tenant day) can still pay for at the dearest of `models`'
        output prices, once `input_tokens` are paid at the dearest input price; the worst case
        of that request is what it reserves. A call that could not be sent with at least
        `MIN_USEFUL_OUTPUT_TOKENS` is refused here, before dispatch."""
        self.check_duration()
        prices = [self.catalog.get(model) for model in models]
        input_price = max(price.input for price in prices)  # USD per million = micros per token
        output_price = max(price.output for price in prices)
        input_micros = math.ceil(input_price * input_tokens)
        allowed = wanted
        binding: tuple[ScopeLimit, int | None] | None = None
        for limit in self._limits():
            totals = self.ledger.totals(limit.scope) if self.ledger is not None else EMPTY_TOTALS
            money = totals.limit_micros if totals.limit_micros is not None else limit.max_micros
            if money is not None:
                left = money - totals.spent_micros - totals.reserved_micros - input_micros
                affordable = math.floor(left / output_price) if left > 0 else 0
                if affordable < allowed:
                    allowed, binding = affordable, (limit, money)
            if limit.max_tokens is not None:
                tokens_left = max(limit.max_tokens - totals.tokens - input_tokens, 0)
                if tokens_left < allowed:
                    allowed, binding = tokens_left, (limit, None)
        if allowed < MIN_USEFUL_OUTPUT_TOKENS and binding is not None:
            limit, money = binding
            what = f"${money / 1e6:.6f}" if money is not None else f"{limit.max_tokens} tokens"
            raise BudgetExceededError(
                f"step {self.invocation.step_id} cannot pay for a useful answer: what is left "
                f"of {limit.scope.key}'s {what} pays for {allowed} output tokens after "
                f"{input_tokens} input tokens at {prices[0].id}'s prices (at least "
                f"{MIN_USEFUL_OUTPUT_TOKENS} are needed); it was not called",
                scope=limit.scope.key,
                limit_micros=money,
            )
        worst = math.ceil(input_micros + output_price * allowed)
        return CallCap(max_tokens=allowed, reserve_micros=max(worst, 1))

    def reserve(self, model: str, turn: int, amount: int | None = None) -> Reservation | None:
        """Reserve one call's cost (`amount`, else the estimate); `BudgetExceededError` when it
        does not fit."""
        self.check_duration()
        if self.ledger is None:
            return None
        reservation_id = (
            f"{self.invocation.step_key}:{self.invocation.attempt}:{turn}:{uuid.uuid4().hex[:8]}"
        )
        return self.ledger.reserve(
            reservation_id,
            amount if amount is not None else self.estimate(model),
            self._limits(),
            owner=self.owner,
            model=model,
            step=self.history_key,
        )

    def settle(self, reservation: Reservation | None, usage: Usage) -> Decimal:
        """Settle to the call's real cost; returns that cost in USD. A call that cannot be
        priced releases its reservation (nothing is left open on the scopes) and fails."""
        try:
            cost = self.catalog.cost_usd(usage)
        except StepError:
            self.release(reservation)
            raise
        if self.ledger is not None and reservation is not None:
            tokens = usage.input_tokens + usage.output_tokens + usage.cache_read_tokens
            self.ledger.settle(reservation, to_micros(cost), tokens=tokens)
        return cost

    def release(self, reservation: Reservation | None) -> None:
        if self.ledger is not None and reservation is not None:
            self.ledger.release(reservation)
