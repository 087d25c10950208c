"""Deciding a gate through a signed link or a Slack button, apart from HTTP.

Every gate has links: an approval or a tool call is approved or rejected; a paused run (an error
with `on_error: pause`, or a step the budget refused) is resumed, a refused budget raised first
if the person says by how much, or its run cancelled (`choices`).

Every answer is a typed outcome or an `ApprovalError` with the HTTP status the issue's contract
gives it (404 unknown or forged, 410 expired or escalated or ended, 409 already decided, 403 not a
person of the role, 400/413 bad input). The decision itself goes through
`switchyard.gates.decide`, the one decision path the CLI and the REST API use too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from psycopg_pool import ConnectionPool

from switchyard.api.models import MAX_RAISE_USD
from switchyard.approvals.links import LinkClaims, LinkExpiredError, LinkInvalidError
from switchyard.approvals.people import Person
from switchyard.approvals.settings import ApprovalSettings
from switchyard.gates import (
    Decision,
    Gate,
    GateClosedError,
    GateDecisionError,
    GateForbiddenError,
    GateStatus,
    GateStore,
    TaskCallbacks,
    decide,
)
from switchyard.local.budget_raise import BudgetRaise
from switchyard.local.run_actions import raise_gate_budget
from switchyard.stores.budget.ledger import BudgetLedger
from switchyard.stores.tool_calls import PostgresDecisionStore

MAX_NOTE = 4000
"""Characters of a note."""
MAX_EDITS = 64 * 1024
"""Bytes of the edits' JSON."""
MAX_EDITS_DEPTH = 32
TIMED_OUT = "timed_out"


class ApprovalError(Exception):
    status = 400
    title = "This decision cannot be taken"

    def __init__(self, message: str, gate: Gate | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.gate = gate


class LinkNotFoundError(ApprovalError):
    status = 404
    title = "This link is not valid"


class LinkGoneError(ApprovalError):
    status = 410
    title = "This link has expired"


class AlreadyDecidedError(ApprovalError):
    status = 409
    title = "Already decided"


class NotAllowedError(ApprovalError):
    status = 403
    title = "You may not decide this gate"


class TooLargeError(ApprovalError):
    status = 413
    title = "Too large"


Verb = Literal["approve", "reject", "resume", "cancel"]


@dataclass(frozen=True, slots=True)
class Choice:
    """A decision a link offers: its form value (the action of `switchyard.gates.decide`), its
    button's label, and whether it stops or fails the run."""

    decision: Verb
    label: str
    danger: bool = False


_APPROVE = (Choice("approve", "Approve"), Choice("reject", "Reject", danger=True))
_RESUME = (Choice("resume", "Resume"), Choice("cancel", "Cancel the run", danger=True))
CHOICES: dict[str, tuple[Choice, ...]] = {
    "approval": _APPROVE,
    "human": _APPROVE,
    "pause": _RESUME,
    "budget": _RESUME,
}


def choices(gate: Gate) -> tuple[Choice, ...]:
    """What a person may decide at `gate` (none for a kind this version does not know)."""
    return CHOICES.get(gate.kind, ())


@dataclass(frozen=True, slots=True)
class OpenLink:
    claims: LinkClaims
    gate: Gate


@dataclass(frozen=True, slots=True)
class LinkDecision:
    gate: Gate
    raised: BudgetRaise | None = None
    """A resume's budget raise: the scope raised, or why nothing was."""


@dataclass(frozen=True, slots=True)
class PersonLink:
    person: str
    url: str


SlackUpdate = Callable[[Gate], None]


class LinkBook:
    """Who gets a link to a gate, and their link."""

    def __init__(self, settings: ApprovalSettings) -> None:
        self.settings = settings

    def people_for(self, gate: Gate) -> tuple[Person, ...]:
        """The people of the deciding role; without a roles map, one link for the gate's
        assignee (or `operators`), which is recorded as the reviewer."""
        people = self.settings.people.deciders(gate.assignee)
        if people is None:
            return (Person(gate.assignee or "operators"),)
        return people

    def link_for(self, gate: Gate, person: str) -> str:
        expires = int(gate.deadline.timestamp()) if gate.deadline is not None else None
        token = self.settings.signer.sign(LinkClaims(gate.id, gate.tier, person, expires))
        return self.settings.link(token)

    def links(self, gate: Gate) -> list[PersonLink]:
        if not choices(gate):
            return []
        return [PersonLink(p.name, self.link_for(gate, p.name)) for p in self.people_for(gate)]


class ApprovalService:
    def __init__(
        self,
        settings: ApprovalSettings,
        pool: ConnectionPool,
        callbacks: TaskCallbacks,
        *,
        clock: Callable[[], datetime] | None = None,
        on_decided: SlackUpdate | None = None,
        ledger: BudgetLedger | None = None,
    ) -> None:
        """`ledger`: where a resume raises a budget (None: the local engine's PostgreSQL
        ledger in `pool`; the DynamoDB ledger on AWS)."""
        self.settings = settings
        self.book = LinkBook(settings)
        self.store = GateStore(pool)
        self._pool = pool
        self._callbacks = callbacks
        self._clock = clock or (lambda: datetime.now(UTC))
        self._on_decided = on_decided
        self._ledger = ledger

    def open_approvals(self, limit: int = 200) -> list[dict[str, Any]]:
        """`GET /approvals`: the open gates, with each person's link (none when the role has no
        people: operators see the gate all the same)."""
        listed = []
        for gate in self.store.open_gates(limit):
            if choices(gate):
                links = [{"person": k.person, "url": k.url} for k in self.book.links(gate)]
                listed.append({**gate.public(), "links": links})
        return listed

    # --- following a link ----------------------------------------------------------------------

    def open(self, token: str) -> OpenLink:
        """The gate a link decides, if it still may be decided through it."""
        try:
            claims = self.settings.signer.verify(token, self._clock())
        except LinkInvalidError:
            raise LinkNotFoundError("This link was not issued by this server.") from None
        except LinkExpiredError:
            raise LinkGoneError("The time to decide through this link is over.") from None
        gate = self.store.get(claims.gate_id)
        if gate is None or gate.tier != claims.tier or not choices(gate):
            raise LinkNotFoundError("This link was not issued by this server.")
        self._check_open(gate)
        return OpenLink(claims, gate)

    def decide(
        self,
        token: str,
        *,
        decision: str,
        note: str | None = None,
        edits: str | None = None,
        reviewer: str | None = None,
        raise_budget_usd: str | None = None,
    ) -> LinkDecision:
        """Decide through a link (`reviewer`: the person the link was sent to, unless a Slack
        click names who clicked). A resume of a refused budget raises it by `raise_budget_usd`
        first, once this decision has claimed the gate."""
        link = self.open(token)
        offered = choices(link.gate)
        choice = next((c for c in offered if c.decision == decision), None)
        if choice is None:
            labels = " or ".join(c.label for c in offered)
            raise ApprovalError(f"Choose {labels}.", link.gate)
        changes = self._edits(link.gate, edits) if decision == "approve" else {}
        usd = self._raise(link.gate, raise_budget_usd) if decision == "resume" else None
        person = reviewer or link.claims.person
        raised: list[BudgetRaise] = []

        def raise_first(claimed: Gate) -> None:
            if usd is not None:
                raised.append(raise_gate_budget(claimed, usd, pool=self._pool, ledger=self._ledger))

        try:
            decided = decide(
                link.gate,
                Decision(choice.decision, person, note=_note(note), edits=changes),
                store=self.store,
                callbacks=self._callbacks,
                roles=self.settings.people.access(),
                decisions=PostgresDecisionStore(self._pool),
                now=self._clock(),
                on_claimed=raise_first,
            )
        except GateForbiddenError:
            raise NotAllowedError(
                f"{person} is not one of the people who decide for this gate's role.", link.gate
            ) from None
        except GateClosedError as closed:
            gate = self.store.get(link.gate.id) or link.gate
            if gate.status is GateStatus.CLOSED:
                raise LinkGoneError(
                    "The run no longer waits for this decision (it ended, or the tier's time"
                    " ran out).",
                    gate,
                ) from None
            self._check_open(gate)
            raise AlreadyDecidedError(str(closed), gate) from None
        except GateDecisionError as exc:
            raise ApprovalError(str(exc), link.gate) from None
        if choice.decision == "cancel":  # the run's other open gates died with it
            cause = decided.note or f"cancelled by {person}"
            self.store.cancel_open(decided.execution_arn, reviewer=person, note=cause)
        if self._on_decided is not None:
            self._on_decided(decided)
        return LinkDecision(decided, raised[0] if raised else None)

    def _check_open(self, gate: Gate) -> None:
        if gate.status is GateStatus.OPEN:
            return
        if gate.status is GateStatus.SUPERSEDED:
            raise LinkGoneError("This tier's time ran out; the gate went to the next tier.", gate)
        if gate.status is GateStatus.CLOSED:
            raise LinkGoneError("The run ended before anyone decided.", gate)
        if gate.decision == TIMED_OUT:
            raise LinkGoneError("Nobody decided in time; the gate's on_timeout was applied.", gate)
        when = gate.decided_at.isoformat(timespec="seconds") if gate.decided_at else "earlier"
        raise AlreadyDecidedError(
            f"{gate.decision or 'decided'} by {gate.reviewer or 'someone'} at {when}.", gate
        )

    def _raise(self, gate: Gate, text: str | None) -> float | None:
        """The dollars to raise a refused budget by (none: resume as it is)."""
        if text is None or not text.strip():
            return None
        if gate.kind != "budget":
            raise ApprovalError("Only a run the budget paused can have its budget raised.", gate)
        try:
            usd = float(text.strip())
        except ValueError:
            raise ApprovalError(
                "Raise the budget by a number of dollars, e.g. 0.50.", gate
            ) from None
        if not math.isfinite(usd) or usd <= 0 or usd > MAX_RAISE_USD:
            raise ApprovalError(
                f"Raise the budget by more than $0 and at most ${MAX_RAISE_USD:,}.", gate
            )
        return usd

    def _edits(self, gate: Gate, text: str | None) -> dict[str, Any]:
        if text is None or not text.strip():
            return {}
        if len(text.encode()) > MAX_EDITS:
            raise TooLargeError(f"Edits are at most {MAX_EDITS // 1024} KiB of JSON.", gate)
        if gate.kind != "approval" or not gate.allow_edit:
            raise ApprovalError("This gate does not allow edits.", gate)
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            raise ApprovalError("Edits must be a JSON object of the shown fields.", gate) from None
        if not isinstance(value, dict):
            raise ApprovalError("Edits must be a JSON object of the shown fields.", gate)
        if _depth(value) > MAX_EDITS_DEPTH or "\x00" in text:
            raise ApprovalError("Edits are nested too deeply or hold a NUL character.", gate)
        shown = gate.show or {}
        return {k: v for k, v in value.items() if k not in shown or shown[k] != v}


def _note(note: str | None) -> str | None:
    if note is None or not note.strip():
        return None
    if len(note) > MAX_NOTE:
        raise TooLargeError(f"A note is at most {MAX_NOTE} characters.")
    if "\x00" in note:
        raise ApprovalError("A note cannot hold a NUL character.")
    return note.strip()


def _depth(value: Any, level: int = 0) -> int:
    if level > MAX_EDITS_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level
