"""Slack: each person of the role gets a DM with Approve/Reject buttons (a local server stands in
for Slack's Web API); a click comes back signed (v0), decides as the clicking person, and every
message of the gate is updated to show the decision. Forged, stale, replayed and foreign clicks
change nothing."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.unit.approvals.support import SLACK_SIGNING_SECRET, Bed, approval_bed
from tests.unit.approvals.test_email_to_decision import run_to_gate

DANA, LEE, MAX = "U024BE7LH", "U0LEE0001", "U0MAX0001"


@pytest.fixture(scope="module")
def bed(pg_conninfo: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    with approval_bed(pg_conninfo, tmp_path_factory.mktemp("slack")) as running:
        yield running


def posted(bed: Bed, run_id: str, count: int = 2) -> dict[str, dict[str, Any]]:
    """This run's messages by the member id they went to (Slack is told after e-mail)."""
    deadline = time.monotonic() + 20
    while True:
        found = {
            body["channel"]: body
            for body in bed.slack.of("chat.postMessage")
            if run_id in json.dumps(body)
        }
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def button(message: dict[str, Any], action: str) -> dict[str, Any]:
    (actions,) = [b for b in message["blocks"] if b["type"] == "actions"]
    (found,) = [e for e in actions["elements"] if e["action_id"] == action]
    return dict(found)


def click(message: dict[str, Any], user: str, action: str, ts: str) -> bytes:
    payload = {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower()},
        "actions": [{"action_id": action, "value": button(message, action)["value"]}],
        "container": {"type": "message", "channel_id": "D" + message["channel"][1:],
                      "message_ts": ts},
    }  # fmt: skip
    return urlencode({"payload": json.dumps(payload)}).encode()


def signed(
    body: bytes, *, stamp: int | None = None, secret: str = SLACK_SIGNING_SECRET
) -> dict[str, str]:
    stamp = int(time.time()) if stamp is None else stamp
    base = b"v0:" + str(stamp).encode() + b":" + body
    digest = hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {
        "X-Slack-Request-Timestamp": str(stamp),
        "X-Slack-Signature": f"v0={digest}",
        "Content-Type": "application/x-www-form-urlencoded",
    }


def test_each_person_of_the_role_gets_a_dm_with_the_buttons(bed: Bed) -> None:
    arn, _ = run_to_gate(bed, "slack-dm", len(bed.mailbox.messages))
    run_id = arn.rsplit(":", 1)[-1]
    messages = posted(bed, run_id)
    assert set(messages) == {DANA, LEE}
    dana = messages[DANA]
    assert button(dana, "approve")["style"] == "primary"
    assert button(dana, "reject")["style"] == "danger"
    assert button(dana, "open")["url"].startswith(f"{bed.url}/approvals/")
    assert button(dana, "approve")["value"] != button(messages[LEE], "approve")["value"]
    with bed.pool.connection() as conn:
        row = conn.execute("SELECT token FROM gates WHERE run_id = %s", (run_id,)).fetchone()
    assert row is not None and row[0] not in json.dumps(messages)
    with bed.client() as http:
        assert (
            http.post(button(dana, "open")["url"], data={"decision": "reject"}).status_code == 200
        )


def test_a_click_decides_as_the_clicking_person_and_the_messages_show_it(bed: Bed) -> None:
    arn, _ = run_to_gate(bed, "slack-click", len(bed.mailbox.messages))
    run_id = arn.rsplit(":", 1)[-1]
    messages = posted(bed, run_id)
    updates_before = len(bed.slack.of("chat.update"))
    body = click(messages[LEE], LEE, "approve", "1700000000.000001")
    with bed.client() as http:
        stale = http.post("/slack/interactions", content=body,
                          headers=signed(body, stamp=int(time.time()) - 301))  # fmt: skip
        assert stale.status_code == 401
        forged = http.post("/slack/interactions", content=body,
                           headers=signed(body, secret="not-the-secret"))  # fmt: skip
        assert forged.status_code == 401
        unsigned = http.post("/slack/interactions", content=body)
        assert unsigned.status_code == 401
        altered = body.replace(b"approve", b"reject")
        assert http.post("/slack/interactions", content=altered,
                         headers=signed(body)).status_code == 401  # fmt: skip
        assert bed.gate_rows(run_id)[0]["status"] == "open"

        headers = signed(body)
        answer = http.post("/slack/interactions", content=body, headers=headers)
        assert answer.status_code == 200, answer.text
        assert bed.status(arn) == "SUCCEEDED"
        (row,) = bed.gate_rows(run_id)
        assert (row["decision"], row["reviewer"]) == ("approved", "lee")
        updates = bed.slack.of("chat.update")[updates_before:]
        assert {u["channel"] for u in updates} == {"D" + DANA[1:], "D" + LEE[1:]}
        assert all("approved" in json.dumps(u["blocks"]) and "lee" in json.dumps(u["blocks"])
                   for u in updates)  # fmt: skip
        assert all(not any(b["type"] == "actions" for b in u["blocks"]) for u in updates)

        replay = http.post("/slack/interactions", content=body, headers=headers)
        assert replay.status_code == 409 and "replay" in replay.text
        late = click(messages[DANA], DANA, "reject", "1700000000.000002")
        already = http.post("/slack/interactions", content=late, headers=signed(late))
        assert already.status_code == 409 and "lee" in already.text


def test_a_person_of_another_role_or_a_stranger_cannot_decide(bed: Bed) -> None:
    arn, _ = run_to_gate(bed, "slack-foreign", len(bed.mailbox.messages))
    run_id = arn.rsplit(":", 1)[-1]
    dana = posted(bed, run_id)[DANA]
    with bed.client() as http:
        for user in (MAX, "U0NOBODY01"):
            body = click(dana, user, "approve", "1700000000.000003")
            answer = http.post("/slack/interactions", content=body, headers=signed(body))
            assert answer.status_code == 403, answer.text
        junk = b"payload=%7Bnot%20json"
        assert http.post("/slack/interactions", content=junk,
                         headers=signed(junk)).status_code == 400  # fmt: skip
        forged_token = click(dana, DANA, "approve", "1").replace(b"approvals", b"x")
        body = forged_token.replace(button(dana, "approve")["value"][-6:].encode(), b"AAAAAA")
        assert http.post("/slack/interactions", content=body,
                         headers=signed(body)).status_code == 404  # fmt: skip
        assert bed.gate_rows(run_id)[0]["status"] == "open"
        body = click(dana, DANA, "reject", "1700000000.000004")
        assert http.post("/slack/interactions", content=body,
                         headers=signed(body)).status_code == 200  # fmt: skip
    assert bed.status(arn) == "FAILED"
