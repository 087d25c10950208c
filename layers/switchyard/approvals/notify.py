"""The notifiers approval_notify hands to `open_gate`, built from the settings:

- `email`: SMTP when `SWITCHYARD_SMTP_URL` is set, else SES when `SWITCHYARD_SES_IDENTITY` is;
- `slack`: when a bot token is configured;
- `console`: `switchyard dev` registers a printer (`print_links_to`); without an e-mail transport
  each person's link is printed on its console, since nobody would otherwise receive it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from switchyard.approvals.email import SesSender, SmtpSender, email_notifier
from switchyard.approvals.service import LinkBook
from switchyard.approvals.slack import SlackClient, slack_notifier
from switchyard.gates import Gate, GateStore
from switchyard.gates.notify import Notifier

_printers: list[Callable[[str], None]] = []
_lock = threading.Lock()


def print_links_to(printer: Callable[[str], None] | None) -> None:
    """Where this process prints approval links (None: nowhere). `switchyard dev` sets it."""
    with _lock:
        _printers.clear()
        if printer is not None:
            _printers.append(printer)


def approval_notifiers(
    book: LinkBook, *, ses_client: Any = None, store: GateStore | None = None
) -> dict[str, Notifier]:
    """`store`: where Slack finds an escalating gate's earlier tiers, to update their messages."""
    settings = book.settings
    notifiers: dict[str, Notifier] = {}
    if settings.smtp_url:
        notifiers["email"] = email_notifier(book, SmtpSender(settings.smtp_url))
    elif settings.ses_identity:
        if ses_client is None:
            import boto3  # type: ignore[import-untyped]

            ses_client = boto3.client("sesv2")
        notifiers["email"] = email_notifier(book, SesSender(ses_client))
    if settings.slack_bot_token:
        client = SlackClient(settings.slack_api_url, settings.slack_bot_token)
        earlier = (lambda gate: store.by_execution(gate.execution_arn)) if store else None
        notifiers["slack"] = slack_notifier(book, client, earlier=earlier)
    if "email" not in notifiers:
        printed: set[str] = set()
        notifiers["console"] = _console(book, printed, sent=True)
        notifiers["email"] = _console(book, printed, sent=False)
    return notifiers


def _console(book: LinkBook, printed: set[str], *, sent: bool) -> Notifier:
    """Print each person's link once per gate (a gate may list both `console` and `email`)."""

    def notify(gate: Gate) -> dict[str, Any]:
        with _lock:
            printers = list(_printers)
            first = gate.id not in printed
            printed.add(gate.id)
            if len(printed) > 10_000:
                printed.clear()
        links = book.links(gate) if printers and first else []
        for printer in printers:
            for link in links:
                printer(f"approval: {gate.workflow} · {gate.step_id} · {link.person}: {link.url}")
        answer: dict[str, Any] = {"links_printed": len(links)}
        if not sent:
            answer.update(sent=False, reason="no SMTP configured")
        return answer

    return notify
