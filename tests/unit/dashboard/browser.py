"""Headless Chromium (Debian's package) driven by Playwright, and the runs the pages show."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import yaml
from playwright.sync_api import Browser, sync_playwright

from tests.conftest import WORKFLOWS
from tests.unit.api.support import CUSTOMER_SUPPORT_INPUT, unique, wait_for
from tests.unit.dashboard.support import DashboardStack

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[3] / "docs" / "images"


@contextmanager
def chromium() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        raise RuntimeError(f"{CHROMIUM} is missing: `make setup` installs Debian's chromium")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


def usd(value: float) -> str:
    """As the pages write an amount (web/src/format.ts)."""
    if value == 0:
        return "$0"
    return f"${value:.4f}" if value < 0.01 else f"${value:.2f}"


def script(board: DashboardStack, name: str, changes: dict[str, Any]) -> str:
    """A copy of customer-support's model script with some answers replaced, in the server's
    scripts directory; its name (what `X-Switchyard-LLM-Script` names)."""
    data = yaml.safe_load((WORKFLOWS / "scripts" / "customer-support.yaml").read_text())
    data.update(changes)
    path = board.stack.scripts / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path.name


def start_support_run(
    board: DashboardStack, *, inputs: dict[str, Any] | None = None, script_path: str | None = None
) -> str:
    """A customer-support run, parked at its approval gate; its id."""
    with board.rest() as rest:
        headers = {"Idempotency-Key": unique("run")}
        if script_path:
            headers["X-Switchyard-LLM-Script"] = script_path
        else:
            headers.update(board.stack.script_header("customer-support"))
        answer = rest.post(
            "/workflows/customer-support/runs",
            json={**CUSTOMER_SUPPORT_INPUT, **(inputs or {})},
            headers=headers,
        )
        assert answer.status_code == 201, answer.text
        run_id: str = answer.json()["run_id"]
        wait_for(rest, run_id, {"waiting"})
        return run_id


def approve(rest: httpx.Client, run_id: str, step: str = "approve") -> httpx.Response:
    return rest.post(
        f"/runs/{run_id}/steps/{step}/approve", json={}, headers={"X-Switchyard-User": "ann"}
    )
