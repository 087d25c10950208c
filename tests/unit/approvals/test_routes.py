"""What the routes and the page keep out of logs and pages."""

from __future__ import annotations

import html
import logging

from switchyard.approvals import LinkPathFilter
from switchyard.approvals.page import gate_page
from switchyard.gates import Gate


def test_an_access_log_line_never_holds_an_approval_link() -> None:
    record = logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "POST", "/approvals/k1.eyJnIjoiZyJ9.c2lnbmF0dXJl?x=1", "1.1", 200),
        None,
    )  # fmt: skip
    assert LinkPathFilter().filter(record)
    line = record.getMessage()
    assert "eyJnIjoiZyJ9" not in line and "/approvals/…" in line
    plain = logging.LogRecord("x", logging.INFO, __file__, 1, "GET /approvals", None, None)
    assert LinkPathFilter().filter(plain) and plain.getMessage() == "GET /approvals"


def test_a_tool_calls_page_shows_the_exact_arguments_redacted_and_escaped() -> None:
    gate = Gate(
        id="g", run_id="r", execution_arn="arn", workflow="support", version=1,
        step_id="pay_back", kind="human", tier=0, assignee=None, channels=["console"],
        message="'pay_back' needs a decision", show=None, allow_edit=False,
        request={"error": "human_required", "detail": {
            "tool": "refund", "reason": "over <b>100</b>", "call_id": "c1",
            "args": {"order_id": "A-17", "amount": 250, "api_token": "***"}}},
        token="the-task-token",
    )  # fmt: skip
    page = gate_page(gate, "olga", max_note=4000)
    shown = html.unescape(page)
    assert '"amount": 250' in shown and '"api_token": "***"' in shown
    assert "over &lt;b&gt;100&lt;/b&gt;" in page and "<b>100" not in page
    assert "the-task-token" not in page and "c1" not in page
    assert 'name="edits"' not in page  # a tool call is approved as shown
