"""End to end on the local engine: a run reaches its gate, each person of the role gets an e-mail
(a real SMTP server), follows the link to the page (uvicorn), and the form's POST decides; the run
ends with that person as the reviewer, and the gate row records it."""

from __future__ import annotations

import html.parser
import threading
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import httpx
import pytest

from switchyard.approvals import LinkClaims
from switchyard.engine.commands import StopExecution
from tests.unit.approvals.support import LINK, Bed, approval_bed

CUSTOMER = '<script>alert("x")</script> & <b>Ann</b>'


@pytest.fixture(scope="module")
def bed(pg_conninfo: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    with approval_bed(pg_conninfo, tmp_path_factory.mktemp("approvals")) as running:
        yield running


class Form(html.parser.HTMLParser):
    """The page's form as a browser sees it."""

    def __init__(self) -> None:
        super().__init__()
        self.method: str | None = None
        self.action: str | None = None
        self.buttons: list[tuple[str, str]] = []
        self.fields: dict[str, str] = {}
        self.scripts = 0
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.method, self.action = found.get("method"), found.get("action")
        elif tag == "button":
            self.buttons.append((found["name"], found["value"]))
        elif tag == "textarea":
            self._textarea = found["name"]
            self.fields[found["name"]] = ""
        elif tag == "script":
            self.scripts += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "textarea":
            self._textarea = None

    def handle_data(self, data: str) -> None:
        if self._textarea:
            self.fields[self._textarea] += data


def parse(page: str) -> Form:
    form = Form()
    form.feed(page)
    return form


def link_in(message: EmailMessage) -> str:
    text = message.get_body(("plain",))
    assert text is not None
    (link,) = set(LINK.findall(str(text.get_content())))
    return str(link)


def run_to_gate(bed: Bed, name: str, mails_before: int) -> tuple[str, dict[str, str]]:
    arn = bed.start("refund", {"amount": 120, "customer": CUSTOMER}, name)
    messages = bed.mailbox.wait_for(mails_before + 2)[mails_before:]
    links = {str(m["To"]).split("@")[0]: link_in(m) for m in messages}
    return arn, links


def task_token(bed: Bed, run_id: str) -> str:
    with bed.pool.connection() as conn:
        row = conn.execute(
            "SELECT token FROM gates WHERE run_id = %s AND status = 'open'", (run_id,)
        ).fetchone()
    assert row is not None
    return str(row[0])


def step_record(bed: Bed, arn: str) -> dict[str, Any]:
    with bed.pool.connection() as conn:
        row = conn.execute(
            "SELECT t.status, t.output FROM task_runs t JOIN workflow_runs r"
            " ON r.execution_id = t.execution_id WHERE r.run_id = %s AND t.step_id = 'approve'",
            (arn.rsplit(":", 1)[-1],),
        ).fetchone()
    assert row is not None
    return {"status": row[0], "output": row[1]}


def test_a_person_approves_from_the_email_through_the_page(bed: Bed) -> None:
    before = len(bed.mailbox.messages)
    arn, links = run_to_gate(bed, "email-approve", before)
    run_id = arn.rsplit(":", 1)[-1]
    assert set(links) == {"dana", "lee"}  # every person of the role, each their own link
    assert links["dana"] != links["lee"]
    token = task_token(bed, run_id)
    mail = bed.mailbox.to("dana@example.com")[-1]
    html_part = mail.get_body(("html",))
    assert html_part is not None
    body = html_part.get_content()
    assert "&lt;script&gt;" in body and "<script>" not in body  # the message is escaped
    assert links["dana"] in body  # Approve and Reject open the page
    assert token not in mail.as_string()

    with bed.client() as http:
        for _ in range(2):  # a GET (a mail scanner's) never decides
            page = http.get(links["dana"])
            assert page.status_code == 200
        assert bed.gate_rows(run_id)[0]["status"] == "open"
        assert page.headers["referrer-policy"] == "no-referrer"
        assert "default-src 'none'" in page.headers["content-security-policy"]
        assert token not in page.text
        assert "<script>alert" not in page.text and "&lt;script&gt;" in page.text
        form = parse(page.text)
        assert form.method == "post" and form.scripts == 0
        assert ("decision", "approve") in form.buttons and ("decision", "reject") in form.buttons
        assert set(form.fields) == {"note", "edits"}  # allow_edit: the shown fields, editable
        assert '"amount": 120' in form.fields["edits"]
        edits = form.fields["edits"].replace('"amount": 120', '"amount": 100')
        decided = http.post(
            links["dana"], data={"decision": "approve", "note": "ok, less", "edits": edits}
        )
        assert decided.status_code == 200, decided.text
        assert "approved" in decided.text.lower()

        assert bed.status(arn) == "SUCCEEDED"
        (row,) = bed.gate_rows(run_id)
        assert row["status"] == "decided" and row["decision"] == "approved"
        assert row["reviewer"] == "dana" and row["note"] == "ok, less"
        output = step_record(bed, arn)["output"]
        assert output["reviewer"] == "dana" and output["edits"] == {"amount": 100}

        again = http.post(links["dana"], data={"decision": "reject"})
        assert again.status_code == 409 and "dana" in again.text
        other = http.get(links["lee"])  # the other person's link is spent too
        assert other.status_code == 409 and "approved by dana" in other.text


def test_a_rejection_from_the_page_fails_the_step_as_rejected(bed: Bed) -> None:
    before = len(bed.mailbox.messages)
    arn, links = run_to_gate(bed, "email-reject", before)
    with bed.client() as http:
        answer = http.post(links["lee"], data={"decision": "reject", "note": "no"})
    assert answer.status_code == 200, answer.text
    assert bed.status(arn) == "FAILED"
    (row,) = bed.gate_rows(arn.rsplit(":", 1)[-1])
    assert (row["decision"], row["reviewer"], row["note"]) == ("rejected", "lee", "no")


def test_two_posts_at_once_exactly_one_decides(bed: Bed) -> None:
    before = len(bed.mailbox.messages)
    arn, links = run_to_gate(bed, "email-race", before)
    statuses: list[int] = []
    start = threading.Barrier(2)

    def post(link: str) -> None:
        with httpx.Client(timeout=30) as http:
            start.wait()
            statuses.append(http.post(link, data={"decision": "approve"}).status_code)

    threads = [threading.Thread(target=post, args=(link,)) for link in links.values()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200, 409]
    assert bed.status(arn) == "SUCCEEDED"
    (row,) = bed.gate_rows(arn.rsplit(":", 1)[-1])
    assert row["status"] == "decided"


def test_bad_links_and_bad_forms_change_nothing(bed: Bed) -> None:
    before = len(bed.mailbox.messages)
    arn, links = run_to_gate(bed, "email-bad", before)
    run_id = arn.rsplit(":", 1)[-1]
    link = links["dana"]
    base, token = link.rsplit("/", 1)
    flipped = token[:-3] + ("A" if token[-3] != "A" else "B") + token[-2:]
    with bed.client() as http:
        unknown = http.get(f"{base}/nothing-like-a-token")
        assert unknown.status_code == 404
        for bad in (token[:-1], flipped, token[: len(token) // 2], "x" * 4000, token + "%00"):
            for method in ("GET", "POST"):
                answer = http.request(method, f"{base}/{bad}", data={"decision": "approve"})
                assert answer.status_code == 404, (bad, answer.text)
                assert answer.text == unknown.text  # the same page as an unknown link
        huge = http.post(link, data={"decision": "approve", "note": "n" * 5000})
        assert huge.status_code == 413
        too_big = http.post(link, data={"decision": "approve", "edits": "[" * 300_000})
        assert too_big.status_code == 413
        nested = http.post(link, data={"decision": "approve", "edits": "[" * 10_000})
        assert nested.status_code == 400
        assert http.post(link, data={"decision": "maybe"}).status_code == 400
        assert http.post(link, data={"decision": "approve", "note": "a\x00b"}).status_code == 400
        not_form = http.post(link, json={"decision": "approve"})
        assert not_form.status_code == 400
        unshown = http.post(link, data={"decision": "approve", "edits": '{"other": 1}'})
        assert unshown.status_code == 400 and "shown fields" in unshown.text
        assert bed.gate_rows(run_id)[0]["status"] == "open"
        assert http.post(link, data={"decision": "approve"}).status_code == 200
    assert bed.status(arn) == "SUCCEEDED"


def test_an_expired_link_answers_410(bed: Bed) -> None:
    before = len(bed.mailbox.messages)
    arn, links = run_to_gate(bed, "email-expired", before)
    bed.link_clock.advance(3598)  # the routes' clock only: the engine's timeout does not fire
    try:
        with bed.client() as http:
            assert http.get(links["dana"]).status_code == 200
            bed.link_clock.advance(2)
            expired = http.post(links["dana"], data={"decision": "approve"})
            assert expired.status_code == 410 and "time" in expired.text
            assert http.get(links["dana"]).status_code == 410
    finally:
        bed.link_clock.advance(-3600)
    with bed.client() as http:
        assert http.post(links["dana"], data={"decision": "approve"}).status_code == 200
    assert bed.status(arn) == "SUCCEEDED"


def test_operators_list_open_gates_with_each_persons_link(bed: Bed, tmp_path: Path) -> None:
    before = len(bed.mailbox.messages)
    arn, links = run_to_gate(bed, "email-list", before)
    run_id = arn.rsplit(":", 1)[-1]
    with bed.client() as http:
        listed = http.get("/approvals").json()["approvals"]
        (gate,) = [g for g in listed if g["run_id"] == run_id]
        assert {link["person"] for link in gate["links"]} == {"dana", "lee"}
        assert "token" not in gate and task_token(bed, run_id) not in str(listed)
        assert http.post(links["dana"], data={"decision": "approve"}).status_code == 200
    assert bed.status(arn) == "SUCCEEDED"


def test_a_link_made_out_to_a_person_of_another_role_decides_nothing(bed: Bed) -> None:
    before = len(bed.mailbox.messages)
    arn, links = run_to_gate(bed, "email-other-role", before)
    run_id = arn.rsplit(":", 1)[-1]
    with bed.pool.connection() as conn:
        row = conn.execute("SELECT id, deadline FROM gates WHERE run_id = %s", (run_id,)).fetchone()
    assert row is not None
    # A genuine signature (the server's own key) for `max`, a manager, on the lead's tier:
    token = bed.settings.signer.sign(LinkClaims(row[0], 0, "max", int(row[1].timestamp())))
    with bed.client() as http:
        refused = http.post(f"/approvals/{token}", data={"decision": "approve"})
        assert refused.status_code == 403 and "max" in refused.text
        assert bed.gate_rows(run_id)[0]["status"] == "open"
        assert http.post(links["lee"], data={"decision": "approve"}).status_code == 200
    assert bed.status(arn) == "SUCCEEDED"


def test_a_link_of_a_cancelled_run_answers_410(bed: Bed) -> None:
    before = len(bed.mailbox.messages)
    arn, links = run_to_gate(bed, "email-cancelled", before)
    bed.engine.submit(StopExecution(arn, "cancelled", "changed our minds"))
    assert bed.status(arn) == "ABORTED"
    with bed.client() as http:
        gone = http.post(links["dana"], data={"decision": "approve"})
    assert gone.status_code == 410 and "ended" in gone.text
    assert bed.gate_rows(arn.rsplit(":", 1)[-1])[0]["status"] == "closed"
