"""Slack: approval messages with Block Kit buttons, and the clicks that come back.

Out: `chat.postMessage` to each person's member id (a DM from the app), buttons `approve` and
`reject` (a paused run: `resume`) carrying that person's signed link token, and a button that
opens the page (where a run is cancelled or a budget raised: no click in Slack stops a run).
After a decision from any port, `chat.update` shows it on every message the gate sent.

In: `POST /slack/interactions`, verified with Slack's v0 signature (`X-Slack-Signature`,
`X-Slack-Request-Timestamp`, a 300-second window, a constant-time compare) and refused when
replayed (the signature's digest is kept for the window). The clicking user must be a person of
the tier's role; they are recorded as the reviewer.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs

import httpx
from psycopg_pool import ConnectionPool

from switchyard.approvals.page import pretty
from switchyard.approvals.service import (
    ApprovalError,
    ApprovalService,
    LinkBook,
    NotAllowedError,
    choices,
)
from switchyard.gates import Gate

log = logging.getLogger("switchyard.approvals")

CLICKABLE = frozenset({"approve", "reject", "resume"})
"""Decisions a Slack button takes; cancelling a run (and raising a budget) takes the page."""
WINDOW_SECONDS = 300
MAX_BODY = 64 * 1024
_REMEMBER_SQL = (
    "INSERT INTO approval_replays (digest) VALUES (%s) ON CONFLICT DO NOTHING RETURNING digest"
)
_FORGET_SQL = "DELETE FROM approval_replays WHERE seen_at < now() - interval '15 minutes'"


class SlackRefusedError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class SlackApiError(RuntimeError):
    """Slack's Web API answered `ok: false` (its error code only; never the token)."""


# --- messages ----------------------------------------------------------------------------------


def gate_blocks(gate: Gate, *, token: str, url: str) -> list[dict[str, Any]]:
    """The message a person gets: the gate's message and data, and the buttons."""
    header = f"*{_escape(gate.workflow)}* · step `{_escape(gate.step_id)}` · tier {gate.tier + 1}"
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": header}},
    ]
    if gate.message:
        text = {"type": "plain_text", "text": gate.message[:2900]}
        blocks.append({"type": "section", "text": text})
    if gate.show:
        blocks.append(
            {"type": "section", "text": {"type": "mrkdwn", "text": _code(pretty(gate.show))}}
        )
    deadline = gate.deadline.isoformat(timespec="seconds") if gate.deadline else "none"
    blocks.append(
        {
            "type": "context",
            "elements": [
                {"type": "mrkdwn", "text": f"run {_escape(gate.run_id)} · deadline {deadline}"}
            ],
        }
    )
    buttons: list[dict[str, Any]] = [
        {
            "type": "button",
            "action_id": choice.decision,
            "style": "danger" if choice.danger else "primary",
            "text": {"type": "plain_text", "text": choice.label},
            "value": token,
        }
        for choice in choices(gate)
        if choice.decision in CLICKABLE
    ]
    opens = "Open (note, edits)" if gate.kind == "approval" else "Open (note, more)"
    buttons.append(
        {
            "type": "button",
            "action_id": "open",
            "text": {"type": "plain_text", "text": opens},
            "url": url,
        }
    )
    blocks.append({"type": "actions", "block_id": "decision", "elements": buttons})
    return blocks


def decided_blocks(gate: Gate) -> list[dict[str, Any]]:
    when = gate.decided_at.isoformat(timespec="seconds") if gate.decided_at else ""
    text = (
        f"*{_escape(gate.workflow)}* · step `{_escape(gate.step_id)}`: "
        f"*{_escape(gate.decision or 'decided')}* by {_escape(gate.reviewer or 'someone')} {when}"
    )
    if gate.note:
        text += f"\n> {_escape(gate.note[:500])}"
    return [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]


def _escape(text: str) -> str:
    """Slack's mrkdwn control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _code(text: str) -> str:
    return "```" + _escape(text[:2800]).replace("```", "'''") + "```"


# --- the Web API -------------------------------------------------------------------------------


class SlackClient:
    def __init__(self, api_url: str, bot_token: str, *, http: httpx.Client | None = None) -> None:
        self._api_url = api_url.rstrip("/")
        self._token = bot_token
        self._http = http or httpx.Client(timeout=10)

    def post_message(self, channel: str, text: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
        return self._call("chat.postMessage", {"channel": channel, "text": text, "blocks": blocks})

    def update(self, channel: str, ts: str, text: str, blocks: list[dict[str, Any]]) -> None:
        self._call("chat.update", {"channel": channel, "ts": ts, "text": text, "blocks": blocks})

    def _call(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self._http.post(
            f"{self._api_url}/{method}",
            json=body,
            headers={"Authorization": f"Bearer {self._token}"},
        )
        try:
            answer = response.json()
        except ValueError:
            raise SlackApiError(f"{method}: HTTP {response.status_code}, not JSON") from None
        if not isinstance(answer, dict) or not answer.get("ok"):
            error = answer.get("error") if isinstance(answer, dict) else None
            raise SlackApiError(f"{method}: {error or f'HTTP {response.status_code}'}")
        return answer


def slack_notifier(
    book: LinkBook,
    client: SlackClient,
    *,
    earlier: Callable[[Gate], list[Gate]] | None = None,
) -> Callable[[Gate], dict[str, Any]]:
    """approval_notify's `slack` channel: one DM per person of the role with a Slack id. When a
    tier escalates, the earlier tiers' messages (`earlier`: the gates of the same execution)
    lose their buttons and say where the gate went."""

    def notify(gate: Gate) -> dict[str, Any]:
        if earlier is not None and gate.tier > 0:
            for old in earlier(gate):
                if old.step_id == gate.step_id and old.tier < gate.tier and old.id != gate.id:
                    _show_escalated(client, old, gate)
        messages: list[dict[str, Any]] = []
        for person in book.people_for(gate):
            if not person.slack:
                continue
            url = book.link_for(gate, person.name)
            token = url.rsplit("/", 1)[-1]
            try:
                answer = client.post_message(
                    person.slack,
                    f"{gate.workflow}: '{gate.step_id}' waits for your decision",
                    gate_blocks(gate, token=token, url=url),
                )
            except (SlackApiError, httpx.HTTPError) as exc:
                log.warning("slack: could not notify %s of gate %s: %s", person.name, gate.id, exc)
                messages.append({"person": person.name, "sent": False, "reason": str(exc)})
                continue
            messages.append(
                {"person": person.name, "channel": answer.get("channel"), "ts": answer.get("ts")}
            )
        return {"messages": messages}

    return notify


def show_decision(client: SlackClient, gate: Gate) -> None:
    """Update every Slack message the gate sent to show its decision (best effort)."""
    text = f"{gate.step_id}: {gate.decision} by {gate.reviewer}"
    _update_all(client, gate, text, decided_blocks(gate))


def _show_escalated(client: SlackClient, old: Gate, new: Gate) -> None:
    text = (
        f"*{_escape(old.workflow)}* · step `{_escape(old.step_id)}`: tier {old.tier + 1}'s time "
        f"ran out; the gate went to {_escape(new.assignee or 'the next tier')}"
    )
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]
    _update_all(client, old, f"{old.step_id}: escalated", blocks)


def _update_all(client: SlackClient, gate: Gate, text: str, blocks: list[dict[str, Any]]) -> None:
    for record in gate.notified:
        if record.get("channel") != "slack":
            continue
        for message in record.get("messages", []):
            if not message.get("ts"):
                continue
            try:
                client.update(str(message["channel"]), str(message["ts"]), text, blocks)
            except (SlackApiError, httpx.HTTPError) as exc:
                log.warning("slack: could not update a message of gate %s: %s", gate.id, exc)


# --- interactions ------------------------------------------------------------------------------


class ReplayGuard:
    """Signatures seen inside the window, in the database (every server and Lambda shares it)."""

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool

    def first_time(self, signature: str) -> bool:
        digest = hashlib.sha256(signature.encode()).hexdigest()
        with self._pool.connection() as conn:
            conn.execute(_FORGET_SQL)
            return conn.execute(_REMEMBER_SQL, (digest,)).fetchone() is not None


@dataclass(frozen=True, slots=True)
class Click:
    user: str
    action: str
    token: str
    channel: str | None
    ts: str | None


class SlackVerifier:
    def __init__(
        self,
        signing_secret: str,
        replays: ReplayGuard,
        *,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._secret = signing_secret.encode()
        self._replays = replays
        self._clock = clock or (lambda: datetime.now(UTC))

    def verify(self, headers: Mapping[str, str], body: bytes) -> None:
        """SlackRefusedError(401) unless Slack signed this body in the last 300 s; (409) when the
        same signed request came before."""
        stamp = headers.get("x-slack-request-timestamp") or ""
        signature = headers.get("x-slack-signature") or ""
        if not stamp.isdigit() or len(stamp) > 12 or not signature.startswith("v0="):
            raise SlackRefusedError(401, "missing or malformed Slack signature headers")
        if abs(self._clock().timestamp() - int(stamp)) > WINDOW_SECONDS:
            raise SlackRefusedError(401, "the request is older than 300 s (or from the future)")
        expected = (
            "v0="
            + hmac.new(
                self._secret, b"v0:" + stamp.encode() + b":" + body, hashlib.sha256
            ).hexdigest()
        )
        if not hmac.compare_digest(expected.encode(), signature.encode()):
            raise SlackRefusedError(401, "the Slack signature does not verify")
        if not self._replays.first_time(signature):
            raise SlackRefusedError(409, "this request was already received (a replay)")


def parse_click(body: bytes) -> Click:
    try:
        form = parse_qs(body.decode("utf-8"), strict_parsing=False, max_num_fields=10)
        payload = json.loads(form["payload"][0])
        action = payload["actions"][0]
        container = payload.get("container") or {}
        return Click(
            user=str(payload["user"]["id"]),
            action=str(action["action_id"]),
            token=str(action.get("value") or ""),
            channel=_optional(
                container.get("channel_id") or (payload.get("channel") or {}).get("id")
            ),
            ts=_optional(container.get("message_ts")),
        )
    except (UnicodeDecodeError, ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise SlackRefusedError(400, "not a Slack block_actions payload") from None


def _optional(value: Any) -> str | None:
    return str(value) if value else None


class SlackInteractions:
    """`POST /slack/interactions`: verify, find the person, decide, update the message."""

    def __init__(
        self, service: ApprovalService, verifier: SlackVerifier, client: SlackClient | None
    ) -> None:
        self._service = service
        self._verifier = verifier
        self._client = client

    def handle(self, headers: Mapping[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
        try:
            self._verifier.verify(headers, body)
            click = parse_click(body)
        except SlackRefusedError as refused:
            return refused.status, {"ok": False, "error": refused.message}
        if click.action == "open":
            return 200, {"ok": True}
        if click.action not in CLICKABLE:
            return 400, {"ok": False, "error": f"unknown action {click.action[:40]!r}"}
        person = self._service.settings.people.by_slack_id(click.user)
        try:
            if person is None:
                raise NotAllowedError("This Slack user is not a person of any role.")
            decided = self._service.decide(click.token, decision=click.action, reviewer=person.name)
            gate = decided.gate
        except ApprovalError as refused:
            if refused.gate is not None and refused.status == 409:
                self._update(click, refused.gate)
            return refused.status, {"ok": False, "error": refused.message}
        self._update(click, gate)
        return 200, {"ok": True, "decision": gate.decision, "reviewer": gate.reviewer}

    def _update(self, click: Click, gate: Gate) -> None:
        """The clicked message shows the decision (the others are updated by the service)."""
        if self._client is None or not click.channel or not click.ts:
            return
        if any(
            m.get("ts") == click.ts
            for r in gate.notified
            if r.get("channel") == "slack"
            for m in r.get("messages", [])
        ):
            return  # already updated with the others
        try:
            self._client.update(click.channel, click.ts, f"{gate.decision}", decided_blocks(gate))
        except (SlackApiError, httpx.HTTPError) as exc:
            log.warning("slack: could not update the clicked message: %s", exc)
