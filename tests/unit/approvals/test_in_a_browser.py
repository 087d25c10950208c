"""The approval page in a real browser (headless Chromium through Playwright): a person opens the
link from the e-mail, reads the gate, writes a note and clicks Approve; the run ends. The test
takes the screenshots docs/approvals.md shows (written to docs/images/ when
SWITCHYARD_DOCS_SCREENSHOTS=1, else to a temporary folder)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from tests.unit.approvals.support import Bed, approval_bed
from tests.unit.approvals.test_email_to_decision import run_to_gate

CHROMIUM = Path("/usr/bin/chromium")
DOCS_IMAGES = Path(__file__).resolve().parents[3] / "docs" / "images"


@pytest.fixture(scope="module")
def bed(pg_conninfo: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    with approval_bed(pg_conninfo, tmp_path_factory.mktemp("browser")) as running:
        yield running


def test_a_person_approves_in_the_browser(bed: Bed, tmp_path: Path) -> None:
    assert CHROMIUM.exists(), "Debian's chromium is needed at /usr/bin/chromium"
    before = len(bed.mailbox.messages)
    arn, links = run_to_gate(bed, "browser", before)
    mail = bed.mailbox.to("dana@example.com")[-1].get_body(("html",))
    assert mail is not None
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox"], headless=True
        )
        try:
            inbox = browser.new_page(viewport={"width": 820, "height": 300})
            inbox.set_content(str(mail.get_content()))
            inbox.screenshot(path=str(tmp_path / "approval-email.png"), full_page=True)
            page = browser.new_page(viewport={"width": 820, "height": 900})
            console: list[str] = []
            page.on("console", lambda message: console.append(message.text))
            page.goto(links["dana"])
            assert page.locator("h1").inner_text() == "Approve or reject"
            assert "Refund 120" in page.locator(".message").inner_text()
            page.fill("#note", "Checked the order: fine.")
            page.screenshot(path=str(tmp_path / "approval-page.png"), full_page=True)
            page.click("button.approve")
            page.wait_for_selector("h1")
            assert page.locator("h1").inner_text() == "Approved"
            page.screenshot(path=str(tmp_path / "approval-decided.png"), full_page=True)
            page.goto(links["lee"])
            assert page.locator("h1").inner_text() == "Already decided"
            page.screenshot(path=str(tmp_path / "approval-already-decided.png"), full_page=True)
            refused = [m for m in console if "Content Security Policy" in m or "Refused" in m]
            assert refused == []  # the page needs nothing its policy forbids
        finally:
            browser.close()
    assert bed.status(arn) == "SUCCEEDED"
    rows = bed.gate_rows(arn.rsplit(":", 1)[-1])
    assert (rows[0]["reviewer"], rows[0]["note"]) == ("dana", "Checked the order: fine.")
    if os.environ.get("SWITCHYARD_DOCS_SCREENSHOTS"):
        DOCS_IMAGES.mkdir(exist_ok=True)
        for shot in tmp_path.glob("*.png"):
            shutil.copy(shot, DOCS_IMAGES / shot.name)
