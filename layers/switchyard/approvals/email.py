"""Approval e-mail: one message per person, a plain-text and an HTML part (values escaped), with
that person's link. Sent through SMTP locally (`SWITCHYARD_SMTP_URL`) and SES on AWS."""

from __future__ import annotations

import logging
import smtplib
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import make_msgid
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from jinja2 import Environment, select_autoescape

from switchyard.approvals.page import pretty
from switchyard.approvals.people import Person
from switchyard.approvals.service import LinkBook, choices
from switchyard.gates import Gate

log = logging.getLogger("switchyard.approvals")

_BUTTON = "color:#fff;padding:8px 18px;border-radius:6px;text-decoration:none"
_AUTOESCAPE = select_autoescape(default=True, default_for_string=True)
_HTML = Environment(autoescape=_AUTOESCAPE).from_string(
    """<!doctype html><html><body style="font-family:system-ui,sans-serif;color:#1d2430">
<p><b>{{ gate.workflow }}</b> · step <code>{{ gate.step_id }}</code> · tier {{ gate.tier + 1 }}
{% if gate.assignee %}({{ gate.assignee }}){% endif %}</p>
{% if gate.message %}<p style="border-left:4px solid #3b82f6;padding:4px 10px;
white-space:pre-wrap">{{ gate.message }}</p>{% endif %}
{% if show %}<pre style="background:#f4f6f8;padding:10px">{{ show }}</pre>{% endif %}
<p>Run {{ gate.run_id }} · deadline {{ deadline }}</p>
<p>{% for choice in choices %}<a href="{{ link }}" style="background:
{{- '#dc2626' if choice.danger else '#16a34a' }};{{ button }}">{{ choice.label }}</a>&nbsp;
{% endfor %}</p>
<p style="color:#5b6472;font-size:12px">Each opens the page, where you confirm
(and may add a note).
The link is yours ({{ person }}): do not forward it.</p>
</body></html>"""
)


class SmtpInsecureError(RuntimeError):
    """SMTP credentials would travel in clear."""


class MailSender(Protocol):
    def send(self, message: EmailMessage) -> None: ...


def compose(gate: Gate, person: Person, link: str, *, sender: str) -> EmailMessage:
    assert person.email is not None
    deadline = gate.deadline.isoformat(timespec="seconds") if gate.deadline else "none"
    show = pretty(gate.show) if gate.show else ""
    message = EmailMessage()
    offered = choices(gate)
    need = "Approval needed" if gate.kind in ("approval", "human") else "Run paused"
    message["Subject"] = _header(f"{need}: {gate.workflow} · {gate.step_id}")
    message["From"] = sender
    message["To"] = person.email
    message["Message-ID"] = make_msgid(domain="switchyard")
    text = [
        f"{gate.workflow} · step {gate.step_id} · tier {gate.tier + 1}",
        "",
        gate.message or "",
        "",
        *([show, ""] if show else []),
        f"Run {gate.run_id} · deadline {deadline}",
        "",
        f"{' or '.join(c.label for c in offered).capitalize()}: {link}",
        "",
        f"This link is yours ({person.name}): do not forward it.",
    ]
    message.set_content("\n".join(text))
    message.add_alternative(
        _HTML.render(
            gate=gate,
            show=show,
            deadline=deadline,
            link=link,
            person=person.name,
            button=_BUTTON,
            choices=offered,
        ),
        subtype="html",
    )
    return message


def _header(text: str) -> str:
    return " ".join(text.split())[:200]  # no CR/LF: nothing can inject a header


@dataclass(frozen=True)
class SmtpSender:
    """`smtp://host:port` (STARTTLS when the server offers it) or `smtps://user:pass@host:port`;
    credentials are sent over TLS only."""

    url: str
    timeout: float = 15.0

    def send(self, message: EmailMessage) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
            raise ValueError(
                "SWITCHYARD_SMTP_URL must be smtp://host:port or smtps://user:pass@host:port"
            )
        port = parts.port or (465 if parts.scheme == "smtps" else 25)
        context = ssl.create_default_context()
        client: smtplib.SMTP
        if parts.scheme == "smtps":
            client = smtplib.SMTP_SSL(parts.hostname, port, timeout=self.timeout, context=context)
        else:
            client = smtplib.SMTP(parts.hostname, port, timeout=self.timeout)
        with client:
            secure = parts.scheme == "smtps"
            if not secure:
                client.ehlo()
                if client.has_extn("starttls"):
                    client.starttls(context=context)
                    client.ehlo()
                    secure = True
            if parts.username and not secure:
                raise SmtpInsecureError(
                    "the SMTP server offers no STARTTLS: credentials are sent over TLS only "
                    "(use smtps://, or a server that offers STARTTLS)"
                )
            if parts.username:
                client.login(unquote(parts.username), unquote(parts.password or ""))
            client.send_message(message)


@dataclass(frozen=True)
class SesSender:
    """Through SES v2 from the configured identity (the only one the function may send as)."""

    client: Any

    def send(self, message: EmailMessage) -> None:
        self.client.send_email(
            FromEmailAddress=str(message["From"]),
            Destination={"ToAddresses": [str(message["To"])]},
            Content={"Raw": {"Data": message.as_bytes()}},
        )


def email_notifier(book: LinkBook, sender: MailSender) -> Callable[[Gate], dict[str, Any]]:
    """approval_notify's `email` channel: one message per person of the role with an address."""

    def notify(gate: Gate) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        for person in book.people_for(gate):
            if not person.email:
                continue
            link = book.link_for(gate, person.name)
            try:
                sender.send(compose(gate, person, link, sender=book.settings.email_from))
            except Exception as exc:  # a mail server down must not lose the gate
                log.warning(
                    "email: could not notify %s of gate %s: %s", person.name, gate.id,
                    type(exc).__name__,
                )  # fmt: skip
                reason = type(exc).__name__
                messages.append({"person": person.name, "sent": False, "reason": reason})
                continue
            messages.append({"person": person.name, "sent": True})
        return {"messages": messages}

    return notify
