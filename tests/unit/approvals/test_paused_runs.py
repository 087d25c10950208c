"""A paused run notifies the operators as a gate does, end to end on the local engine: a step
the budget refused, or a step that failed with `on_error: pause`, sends each operator an e-mail
(aiosmtpd) and a Slack DM (a stand-in for Slack's Web API) with their own link; the page offers
Resume (raising a refused budget first) and Cancel the run; the decision reaches the run."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from email.message import EmailMessage
from typing import Any

import pytest

from tests.unit.approvals.support import PEOPLE, Bed, approval_bed
from tests.unit.approvals.test_email_to_decision import link_in, parse

OLGA = {"name": "olga", "email": "olga@example.com", "slack": "U0OLGA001"}
BUDGET_PAUSE = """\
switchyard: 1
name: budget-pause
version: 1
budget: {max_cost_usd: 0.00005}
defaults: {model: claude-haiku-4-5}
steps:
  pricey: {type: agent, prompt: pricey}
"""
"""$0.00005 pays for no answer: the step is refused before it calls the model."""
PAUSE = """\
switchyard: 1
name: pause
version: 1
on_error: pause
defaults: {model: claude-haiku-4-5}
steps:
  shaky: {type: agent, prompt: shaky, retry: {max_attempts: 1}}
"""
SHAKY = {"shaky": [{"error": "permanent", "message": "the <b>API</b> is down"}]}


@pytest.fixture(scope="module")
def bed(pg_conninfo: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    people = {**PEOPLE, "operators": [OLGA, "sam"]}
    root = tmp_path_factory.mktemp("paused")
    with approval_bed(pg_conninfo, root, people=people) as running:
        (running.workflows / "budget-pause.yaml").write_text(BUDGET_PAUSE)
        (running.workflows / "pause.yaml").write_text(PAUSE)
        yield running


def _mail_to_olga(bed: Bed, before: int) -> EmailMessage:
    messages = bed.mailbox.wait_for(before + 1)[before:]
    (mail,) = [m for m in messages if m["To"] == "olga@example.com"]
    return mail


def _dm_to_olga(bed: Bed, before: int, timeout: float = 20.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        posted = bed.slack.of("chat.postMessage")[before:]
        found = [m for m in posted if m["channel"] == OLGA["slack"]]
        if found:
            return found[0]
        time.sleep(0.02)
    raise AssertionError("no Slack DM to olga")


def _budget_limit(bed: Bed, run_id: str) -> int | None:
    with bed.pool.connection() as conn:
        row = conn.execute(
            "SELECT limit_micros FROM budget_scopes WHERE scope = %s", (f"run:{run_id}",)
        ).fetchone()
    return None if row is None else int(row[0])


def test_a_refused_budget_is_raised_and_resumed_from_the_operators_link(bed: Bed) -> None:
    before, posted = len(bed.mailbox.messages), len(bed.slack.of("chat.postMessage"))
    arn = bed.start("budget-pause", {}, "link-budget", script={"pricey": [{"text": "worth it"}]})
    mail = _mail_to_olga(bed, before)
    assert mail["Subject"] == "Run paused: budget-pause · pricey"
    link = link_in(mail)
    text = mail.get_body(("plain",))
    assert text is not None and f"Resume or cancel the run: {link}" in text.get_content()
    dm = _dm_to_olga(bed, posted)
    actions = next(b for b in dm["blocks"] if b["type"] == "actions")["elements"]
    assert [a["action_id"] for a in actions] == ["resume", "open"]  # no click stops a run
    (row,) = bed.gate_rows("link-budget")
    assert row["status"] == "open"

    with bed.client() as http:
        page = http.get(link)
        assert page.status_code == 200
        form = parse(page.text)
        assert form.buttons == [("decision", "resume"), ("decision", "cancel")]
        assert 'name="raise_budget_usd"' in page.text
        for bad in ("-1", "abc", "1e400", "2000000"):
            refused = http.post(link, data={"decision": "resume", "raise_budget_usd": bad})
            assert refused.status_code == 400, bad
        wrong = http.post(link, data={"decision": "approve"})
        assert wrong.status_code == 400 and "Resume or Cancel the run" in wrong.text
        assert bed.gate_rows("link-budget")[0]["status"] == "open"  # nothing changed
        assert _budget_limit(bed, "link-budget") in (None, 50)

        decided = http.post(link, data={"decision": "resume", "raise_budget_usd": "1.5"})
        assert decided.status_code == 200, decided.text
        assert "resumed" in decided.text and "run:link-budget was raised" in decided.text
        assert bed.status(arn) == "SUCCEEDED"
        again = http.post(link, data={"decision": "resume", "raise_budget_usd": "1.5"})
        assert again.status_code == 409
    assert _budget_limit(bed, "link-budget") == 1_500_050  # $0.00005 + $1.50, raised once
    (row,) = bed.gate_rows("link-budget")
    assert (row["status"], row["decision"], row["reviewer"]) == ("decided", "resume", "olga")


def test_a_paused_run_is_resumed_then_cancelled_from_the_operators_links(bed: Bed) -> None:
    before = len(bed.mailbox.messages)
    arn = bed.start("pause", {}, "link-pause", script=SHAKY)
    mail = _mail_to_olga(bed, before)
    html_part = mail.get_body(("html",))
    assert html_part is not None
    buttons = html_part.get_content()
    assert "Resume</a>" in buttons and "Cancel the run</a>" in buttons
    with bed.client() as http:
        page = http.get(link_in(mail))
        assert "What went wrong" in page.text and "&lt;b&gt;API&lt;/b&gt;" in page.text
        assert "raise_budget_usd" not in page.text  # only a refused budget is raised
        raise_here = http.post(link_in(mail), data={"decision": "resume", "raise_budget_usd": "1"})
        assert raise_here.status_code == 400
        resumed = http.post(link_in(mail), data={"decision": "resume", "note": "try again"})
        assert resumed.status_code == 200, resumed.text
        # As a resumed step is attempt 1 again, its script fails it again: a new gate, a new
        # e-mail, a new link.
        second = _mail_to_olga(bed, before + 1)  # sam, the other operator, has no address
        assert link_in(second) != link_in(mail)
        cancelled = http.post(link_in(second), data={"decision": "cancel", "note": "give up"})
        assert cancelled.status_code == 200, cancelled.text
        assert "cancelled" in cancelled.text and "the run is stopped" in cancelled.text
    assert bed.status(arn) == "ABORTED"
    rows = bed.gate_rows("link-pause")
    assert [(r["decision"], r["reviewer"]) for r in rows] == [
        ("resume", "olga"), ("cancel", "olga")
    ]  # fmt: skip


def test_a_person_of_another_role_cannot_resume_through_a_forwarded_link(bed: Bed) -> None:
    before = len(bed.mailbox.messages)
    bed.start("pause", {}, "link-forward", script=SHAKY)
    link = link_in(_mail_to_olga(bed, before))
    service_people = bed.settings.people.deciders(None)
    assert service_people is not None and {p.name for p in service_people} == {"olga", "sam"}
    with bed.client() as http:
        bogus = http.post(link[:-3] + "abc", data={"decision": "cancel"})
        assert bogus.status_code == 404
        assert http.post(link, data={"decision": "cancel"}).status_code == 200


def test_two_raises_at_once_raise_the_budget_once(bed: Bed) -> None:
    """The raise runs only for the decision that claims the gate: of two at once, one."""
    before = len(bed.mailbox.messages)
    script = {"pricey": [{"text": "worth it"}]}
    arn = bed.start("budget-pause", {}, "link-budget-twice", script=script)
    link = link_in(_mail_to_olga(bed, before))
    barrier = threading.Barrier(2)
    statuses: list[int] = []

    def post() -> None:
        with bed.client() as http:
            barrier.wait()
            form = {"decision": "resume", "raise_budget_usd": "1.5"}
            statuses.append(http.post(link, data=form).status_code)

    threads = [threading.Thread(target=post) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200, 409]
    assert bed.status(arn) == "SUCCEEDED"
    assert _budget_limit(bed, "link-budget-twice") == 1_500_050
