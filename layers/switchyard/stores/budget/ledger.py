"""The budget ledger: atomic reserve / settle / release of money on run, step, tenant scopes.

Before a model call the runtime reserves its estimated cost on every scope that limits it (the run,
the step, the tenant's day). A reservation fits only if, on every scope, what is spent plus what is
reserved plus the new amount stays within the limit; otherwise nothing is reserved anywhere and
`BudgetExceededError` is raised. Parallel branches therefore cannot overspend together. After the
call the reservation is settled to the real cost (which may exceed the estimate: the truth is
recorded, and the next reservation is refused), or released if the call never happened.

Money is integer micro-dollars. Every operation is idempotent by its id, because a Lambda may be
invoked twice for one attempt. A scope's money limit is fixed by the first reservation made on it
and changed only by `set_limit` (an operator raising a paused run's budget).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from switchyard.contract.step_errors import BudgetExceededError

ScopeKind = Literal["run", "step", "tenant_day"]


@dataclass(frozen=True, slots=True)
class Scope:
    kind: ScopeKind
    id: str

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.id}"


@dataclass(frozen=True, slots=True)
class ScopeLimit:
    """A scope and the limits a reservation must respect on it."""

    scope: Scope
    max_micros: int | None = None
    """Money limit used when the scope is new; None: no money limit."""
    max_tokens: int | None = None
    """Refuse once the scope's settled tokens reach this."""


@dataclass(frozen=True, slots=True)
class ScopeTotals:
    limit_micros: int | None
    spent_micros: int
    reserved_micros: int
    tokens: int
    steps: int


EMPTY_TOTALS = ScopeTotals(None, 0, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class Reservation:
    """An open reservation."""

    id: str
    owner: str
    scopes: tuple[str, ...]
    amount_micros: int


def exceeded(
    scope: str,
    *,
    amount: int,
    limit: int | None,
    spent: int,
    reserved: int,
    tokens: int | None = None,
    max_tokens: int | None = None,
) -> BudgetExceededError:
    """The error for a refused reservation, with the numbers an operator needs."""
    if max_tokens is not None and tokens is not None and tokens >= max_tokens:
        return BudgetExceededError(
            f"token budget of {scope} exhausted: {tokens} of {max_tokens} tokens used",
            scope=scope,
        )
    return BudgetExceededError(
        f"budget of {scope} exceeded: ${spent / 1e6:.6f} spent and ${reserved / 1e6:.6f} reserved "
        f"of ${(limit or 0) / 1e6:.6f}; ${amount / 1e6:.6f} more does not fit",
        scope=scope,
        limit_micros=limit or 0,
    )


def exceeded_steps(scope: str, max_steps: int) -> BudgetExceededError:
    return BudgetExceededError(
        f"step budget of {scope} exhausted: {max_steps} step attempts allowed", scope=scope
    )


class BudgetLedger(ABC):
    """Atomic money, token and step accounting; backends: DynamoDB and PostgreSQL."""

    @abstractmethod
    def reserve(
        self,
        reservation_id: str,
        amount_micros: int,
        limits: Sequence[ScopeLimit],
        *,
        owner: str,
        model: str | None = None,
        step: str | None = None,
    ) -> Reservation:
        """Reserve `amount_micros` on every scope, or on none (raises `BudgetExceededError`).

        `owner` is the step key whose attempts make the reservation (see `release_open`);
        `model` and `step` feed the historical average when the reservation is settled.
        Reserving an open id again returns the open reservation.
        """

    @abstractmethod
    def settle(self, reservation: Reservation, actual_micros: int, *, tokens: int = 0) -> None:
        """Replace the reservation by the real cost and tokens; no-op unless it is open."""

    @abstractmethod
    def release(self, reservation: Reservation) -> None:
        """Drop a reservation whose call did not happen; no-op unless it is open."""

    @abstractmethod
    def release_open(self, owner: str) -> int:
        """Release what crashed attempts of `owner` left reserved; returns how many."""

    @abstractmethod
    def count_step(self, scope: Scope, attempt_id: str, max_steps: int | None) -> int:
        """Count one step attempt on `scope` (idempotent by `attempt_id`); the new count.

        Raises `BudgetExceededError` when the count would pass `max_steps`.
        """

    @abstractmethod
    def set_limit(self, scope: Scope, max_micros: int | None) -> None:
        """Change a scope's money limit (None removes it)."""

    @abstractmethod
    def totals(self, scope: Scope) -> ScopeTotals: ...

    @abstractmethod
    def open_reservations(self, owner: str) -> list[Reservation]:
        """The open reservations of `owner`, by id."""

    @abstractmethod
    def average_cost(self, model: str, step: str) -> int | None:
        """Mean settled cost of calls of `model` in `step`, in micro-dollars, if any were made."""


def sorted_limits(limits: Sequence[ScopeLimit]) -> list[ScopeLimit]:
    """Limits in one global order (so two transactions lock scopes in the same order)."""
    seen: dict[str, ScopeLimit] = {}
    for limit in limits:
        seen.setdefault(limit.scope.key, limit)
    return [seen[key] for key in sorted(seen)]
