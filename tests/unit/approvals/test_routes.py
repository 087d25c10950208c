"""What the routes keep out of logs."""

from __future__ import annotations

import logging

from switchyard.approvals import LinkPathFilter


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
