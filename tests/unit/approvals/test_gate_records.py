"""Whichever port decides a gate, and when nobody does, the gate row says what happened: a
decision sent through the Step Functions port (SendTaskSuccess/SendTaskFailure), a tier that
runs out of time (its links die, the next tier's people are told), the last tier's `on_timeout`
(decided by the timeout, the step not left waiting)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config

from switchyard.engine.api.server import sfn_api_in_thread
from switchyard.local.run_actions import NoOpenGateError, locate_run, open_gate_for
from tests.unit.approvals.support import Bed, approval_bed
from tests.unit.approvals.test_email_to_decision import link_in, run_to_gate, step_record

ONE_TIER = 3600


@pytest.fixture(scope="module")
def bed(pg_conninfo: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    with approval_bed(pg_conninfo, tmp_path_factory.mktemp("records")) as running:
        yield running


@pytest.fixture(scope="module")
def sfn(bed: Bed) -> Iterator[Any]:
    with sfn_api_in_thread(bed.engine) as server:
        yield boto3.client(
            "stepfunctions",
            endpoint_url=server.endpoint_url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=Config(retries={"total_max_attempts": 1}),
        )


def open_token(bed: Bed, run_id: str) -> str:
    with bed.pool.connection() as conn:
        row = conn.execute(
            "SELECT token FROM gates WHERE run_id = %s AND status = 'open'", (run_id,)
        ).fetchone()
    assert row is not None
    return str(row[0])


def test_send_task_success_on_the_step_functions_port_decides_the_gate_row(
    bed: Bed, sfn: Any
) -> None:
    arn, links = run_to_gate(bed, "port-success", len(bed.mailbox.messages))
    run_id = arn.rsplit(":", 1)[-1]
    answer = {"decision": "approved", "reviewer": "ci-bot", "note": "by the API", "edits": {}}
    sfn.send_task_success(taskToken=open_token(bed, run_id), output=json.dumps(answer))
    assert bed.status(arn) == "SUCCEEDED"
    (row,) = bed.gate_rows(run_id)
    assert row == {
        "tier": 0,
        "status": "decided",
        "decision": "approved",
        "reviewer": "ci-bot",
        "note": "by the API",
    }
    with bed.client() as http:  # the links know it was decided, and by whom
        answer_page = http.get(links["dana"])
    assert answer_page.status_code == 409 and "ci-bot" in answer_page.text


def test_send_task_failure_on_the_step_functions_port_records_the_rejection(
    bed: Bed, sfn: Any
) -> None:
    arn, _ = run_to_gate(bed, "port-failure", len(bed.mailbox.messages))
    run_id = arn.rsplit(":", 1)[-1]
    cause = json.dumps({"reviewer": "ci-bot", "note": "no"})
    sfn.send_task_failure(taskToken=open_token(bed, run_id), error="rejected", cause=cause)
    assert bed.status(arn) == "FAILED"
    (row,) = bed.gate_rows(run_id)
    assert (row["status"], row["decision"], row["reviewer"]) == ("decided", "rejected", "ci-bot")


def test_a_tier_that_times_out_kills_its_links_and_the_next_tier_decides(bed: Bed) -> None:
    before = len(bed.mailbox.messages)
    arn, links = run_to_gate(bed, "escalate-once", before)
    run_id = arn.rsplit(":", 1)[-1]
    bed.clock.advance(ONE_TIER + 1)  # the engine's clock: tier 1's timeout fires
    (manager,) = bed.mailbox.wait_for(before + 3)[before + 2 :]
    assert manager["To"] == "max@example.com"
    rows = bed.wait_rows(run_id, lambda rows: len(rows) == 2)
    assert [(r["tier"], r["status"], r["decision"]) for r in rows] == [
        (0, "superseded", "timed_out"),
        (1, "open", None),
    ]
    updates = _wait_for_updates(bed, run_id, "time ran out")
    assert {u["channel"] for u in updates} == {"D024BE7LH", "D0LEE0001"}  # tier 1's messages
    assert all(not any(b["type"] == "actions" for b in u["blocks"]) for u in updates)
    assert "manager" in json.dumps(updates)
    with bed.client() as http:
        dead = http.post(links["dana"], data={"decision": "approve"})
        assert dead.status_code == 410 and "next tier" in dead.text
        assert http.post(link_in(manager), data={"decision": "approve"}).status_code == 200
    assert bed.status(arn) == "SUCCEEDED"
    assert bed.gate_rows(run_id)[1]["reviewer"] == "max"


def _wait_for_updates(bed: Bed, run_id: str, text: str) -> list[dict[str, Any]]:
    """Updates with `text` of the Slack messages tier 1 of the run sent (Slack is told after
    e-mail, and the escalation's updates come as tier 2 opens)."""
    with bed.pool.connection() as conn:
        row = conn.execute(
            "SELECT notified FROM gates WHERE run_id = %s AND tier = 0", (run_id,)
        ).fetchone()
    assert row is not None
    sent = {m["ts"] for n in row[0] if n["channel"] == "slack" for m in n["messages"]}
    assert len(sent) == 2
    deadline = time.monotonic() + 20
    while True:
        found = [u for u in bed.slack.of("chat.update") if u["ts"] in sent and text in str(u)]
        if len(found) >= 2 or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def test_after_the_last_tier_on_timeout_is_recorded_as_decided_by_the_timeout(bed: Bed) -> None:
    before = len(bed.mailbox.messages)
    arn, links = run_to_gate(bed, "escalate-all", before)
    run_id = arn.rsplit(":", 1)[-1]
    bed.clock.advance(ONE_TIER + 1)
    (manager,) = bed.mailbox.wait_for(before + 3)[before + 2 :]
    bed.clock.advance(ONE_TIER + 1)
    assert bed.status(arn) == "SUCCEEDED"  # on_timeout: approve
    rows = bed.gate_rows(run_id)
    assert [(r["tier"], r["status"], r["decision"], r["reviewer"]) for r in rows] == [
        (0, "superseded", "timed_out", "timeout"),
        (1, "decided", "timed_out", "timeout"),
    ]
    record = step_record(bed, arn)
    assert record["status"] == "completed" and record["output"]["decision"] == "approved"
    with bed.client() as http:
        assert http.get(link_in(manager)).status_code == 410
        assert http.get(links["lee"]).status_code == 410
    with bed.pool.connection() as conn:  # `switchyard approve` finds nothing to decide
        run = locate_run(conn, run_id)
    with pytest.raises(NoOpenGateError):
        open_gate_for(bed.pool, run, "approve")


def test_a_row_left_open_whose_task_no_longer_waits_answers_gone_and_closes(bed: Bed) -> None:
    """A row an older engine left open after its tier timed out: deciding it answers 410 (not a
    traceback) and closes it, so nobody is asked again."""
    before = len(bed.mailbox.messages)
    arn, links = run_to_gate(bed, "left-open", before)
    run_id = arn.rsplit(":", 1)[-1]
    bed.clock.advance(ONE_TIER + 1)
    bed.mailbox.wait_for(before + 3)
    bed.clock.advance(ONE_TIER + 1)
    assert bed.status(arn) == "SUCCEEDED"
    with bed.pool.connection() as conn:
        conn.execute(
            "UPDATE gates SET status = 'open', decision = NULL, reviewer = NULL"
            " WHERE run_id = %s AND tier = 0",
            (run_id,),
        )
    with bed.client() as http:
        gone = http.post(links["dana"], data={"decision": "approve"})
    assert gone.status_code == 410 and "no longer waits" in gone.text
    assert bed.gate_rows(run_id)[0]["status"] == "closed"
