"""Approval e-mail through a real SMTP server (aiosmtpd): one message per person with an
address, and failures recorded, never raised (the gate opens whatever the mail server does)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from aiosmtpd.controller import Controller

from switchyard.approvals import ApprovalSettings, LinkBook, LinkSigner, People
from switchyard.approvals.email import SmtpSender, email_notifier
from switchyard.gates import Gate
from tests.unit.approvals.support import Mailbox, free_port

PEOPLE = {"lead": [{"name": "dana", "email": "dana@example.com"}, "sam",
                   {"name": "lee", "email": "lee@example.com"}]}  # fmt: skip


def gate() -> Gate:
    return Gate(
        id="g1", run_id="r1", execution_arn="arn", workflow="refund", version=1,
        step_id="approve", kind="approval", tier=0, assignee="lead", channels=["email"],
        message="Refund 9?\r\nBcc: eve@example.com", show={"amount": 9}, allow_edit=False,
        request=None, token="task-token-secret", deadline=datetime(2026, 12, 2, tzinfo=UTC),
    )  # fmt: skip


def book() -> LinkBook:
    return LinkBook(
        ApprovalSettings(
            signer=LinkSigner({"k1": b"k" * 32}),
            public_url="https://approve.example.com",
            people=People.from_json(PEOPLE),
            email_from="Approvals <approvals@example.com>",
        )
    )


@pytest.fixture
def smtp() -> Iterator[tuple[Mailbox, int]]:
    mailbox, port = Mailbox(), free_port()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield mailbox, port
    finally:
        controller.stop()


def test_each_person_with_an_address_gets_one_message(smtp: tuple[Mailbox, int]) -> None:
    mailbox, port = smtp
    sent = email_notifier(book(), SmtpSender(f"smtp://127.0.0.1:{port}"))(gate())
    assert sent == {"messages": [{"person": "dana", "sent": True}, {"person": "lee", "sent": True}]}
    messages = mailbox.wait_for(2)
    assert sorted(str(m["To"]) for m in messages) == ["dana@example.com", "lee@example.com"]
    for message in messages:
        assert message["Bcc"] is None  # a message's text cannot add a header
        assert message.get_body(("plain",)) and message.get_body(("html",))
        assert "task-token-secret" not in message.as_string()
        assert "https://approve.example.com/approvals/k1." in message.as_string()


def test_a_mail_server_that_is_down_is_recorded_not_raised() -> None:
    sent = email_notifier(book(), SmtpSender(f"smtp://127.0.0.1:{free_port()}", timeout=2))(gate())
    assert [m["sent"] for m in sent["messages"]] == [False, False]
    assert sent["messages"][0]["reason"] == "ConnectionRefusedError"


def test_credentials_never_travel_in_clear(smtp: tuple[Mailbox, int]) -> None:
    mailbox, port = smtp  # this server offers no STARTTLS
    sent = email_notifier(book(), SmtpSender(f"smtp://user:pass@127.0.0.1:{port}"))(gate())
    assert {m["reason"] for m in sent["messages"]} == {"SmtpInsecureError"}
    assert mailbox.messages == []
