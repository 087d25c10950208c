"""`email.send` through an SMTP server (`SWITCHYARD_SMTP_URL`), the local stand-in for SES.

    smtp://host:port              plain, STARTTLS when the server offers it
    smtps://user:pass@host:port   TLS from the first byte, then AUTH

Failures map like HTTP ones: connection refused → `transient`, a connect timeout → `timeout`,
a 4xx reply → `transient`, a 5xx reply (a refused recipient, a rejected message) → `permanent`,
a dropped connection or timeout after the message was handed over → outcome unknown.

The Message-ID derives from the step's idempotency key, so a receiving system that deduplicates
by Message-ID sees a retried send once.
"""

from __future__ import annotations

import hashlib
import smtplib
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any
from urllib.parse import unquote, urlsplit

from switchyard.contract.step_errors import PermanentError, StepTimeoutError, TransientError
from switchyard.runtime.settings import SMTP_URL_ENV
from switchyard.stores.idempotency import OutcomeUnknownError, OutcomeUnknownTimeoutError

TOOL = "email.send"


@dataclass(frozen=True, slots=True)
class SmtpServer:
    scheme: str
    host: str
    port: int
    username: str | None
    password: str | None

    @classmethod
    def parse(cls, url: str) -> SmtpServer:
        parts = urlsplit(url)
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
            # The URL may hold a password: never repeat it in the message.
            raise PermanentError(
                f"{TOOL}: {SMTP_URL_ENV} must be smtp://host:port or smtps://user:pass@host:port"
            )
        try:
            port = parts.port or (465 if parts.scheme == "smtps" else 25)
        except ValueError:
            raise PermanentError(
                f"{TOOL}: {SMTP_URL_ENV} has a port that is not a number"
            ) from None
        return cls(
            scheme=parts.scheme,
            host=parts.hostname,
            port=port,
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
        )


def _addresses(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _one_line(text: str) -> str:
    return " ".join(str(text).split())  # no CR/LF: a subject cannot inject a header


def build_message(args: Mapping[str, Any], sender: str, idempotency_key: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = _one_line(sender)
    message["To"] = ", ".join(_one_line(a) for a in _addresses(args["to"]))
    if args.get("cc"):
        message["Cc"] = ", ".join(_one_line(a) for a in _addresses(args["cc"]))
    message["Subject"] = _one_line(args.get("subject", ""))
    digest = hashlib.sha256(idempotency_key.encode()).hexdigest()[:32]
    message["Message-ID"] = f"<{digest}@switchyard>"
    message.set_content(str(args["body"]))
    if args.get("html"):
        message.add_alternative(str(args["html"]), subtype="html")
    return message


def send_smtp(
    url: str, message: EmailMessage, *, timeout: float, tls: ssl.SSLContext | None = None
) -> str:
    """Hand `message` to the server at `url`; its Message-ID, or a mapped step error."""
    server = SmtpServer.parse(url)
    context = tls or ssl.create_default_context()
    client: smtplib.SMTP | None = None
    where = f"{server.host}:{server.port}"
    try:
        if server.scheme == "smtps":
            client = smtplib.SMTP_SSL(server.host, server.port, timeout=timeout, context=context)
        else:
            client = smtplib.SMTP(server.host, server.port, timeout=timeout)
    except TimeoutError as exc:
        raise StepTimeoutError(f"{TOOL}: timed out connecting to {where}: {exc}") from None
    except (OSError, smtplib.SMTPException) as exc:
        raise TransientError(f"{TOOL}: could not connect to {where}: {exc}") from None
    handed_over = False
    try:
        with client:
            client.ehlo()
            if server.scheme == "smtp" and client.has_extn("starttls"):
                client.starttls(context=context)
                client.ehlo()
            if server.username:
                client.login(server.username, server.password or "")
            handed_over = True  # from here a failure may come after the server took the message
            client.send_message(message)
    except smtplib.SMTPAuthenticationError as exc:
        raise PermanentError(f"{TOOL}: {where} refused the login: {exc.smtp_code}") from None
    except smtplib.SMTPRecipientsRefused as exc:
        codes = {code for code, _ in exc.recipients.values()}
        refused = ", ".join(sorted(exc.recipients))
        error = TransientError if all(400 <= c < 500 for c in codes) else PermanentError
        raise error(f"{TOOL}: {where} refused the recipients {refused}") from None
    except smtplib.SMTPResponseException as exc:
        text = exc.smtp_error.decode(errors="replace") if isinstance(exc.smtp_error, bytes) else ""
        error_type = TransientError if 400 <= exc.smtp_code < 500 else PermanentError
        raise error_type(f"{TOOL}: {where} answered {exc.smtp_code} {text}".strip()) from None
    except TimeoutError as exc:
        if handed_over:
            raise OutcomeUnknownTimeoutError(
                f"{TOOL}: {where} did not confirm the message: {exc}"
            ) from None
        raise StepTimeoutError(f"{TOOL}: {where} timed out: {exc}") from None
    except (OSError, smtplib.SMTPException) as exc:
        if handed_over:
            raise OutcomeUnknownError(f"{TOOL}: {where} dropped the connection: {exc}") from None
        raise TransientError(f"{TOOL}: {where} failed: {exc}") from None
    return str(message["Message-ID"])
