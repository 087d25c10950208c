"""The builder's page in headless Chromium (Debian's package, driven by Playwright): a tab with
the API token in the dashboard's cookie, and helpers that work the canvas and the forms as a
person does (drag from the palette, drag between handles, type into fields)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from playwright.sync_api import Browser, Locator, Page, expect

from tests.unit.builder.support import TOKEN, BuilderStack
from tests.unit.dashboard.browser import SCREENSHOTS

__all__ = ["SCREENSHOTS", "builder_tab", "connect", "drop", "set_field"]


@contextmanager
def builder_tab(browser: Browser, builder: BuilderStack) -> Iterator[Page]:
    context = browser.new_context(base_url=builder.url, viewport={"width": 1500, "height": 950})
    context.add_cookies([{"name": "switchyard_token", "value": TOKEN, "url": builder.url}])
    page = context.new_page()
    page.set_default_timeout(10_000)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield page
    finally:
        context.close()
    assert errors == [], errors


def drop(page: Page, step_type: str, x: int, y: int, variant: str | None = None) -> None:
    """Drag the palette's `step_type` onto the canvas at (x, y) of the canvas."""
    if variant is not None:
        page.locator(f'[data-palette-variant="{step_type}"]').select_option(variant)
    page.locator(f'[data-palette="{step_type}"]').drag_to(
        page.locator("[data-canvas] .react-flow__pane"), target_position={"x": x, "y": y}
    )


def connect(page: Page, source: str, target: str) -> None:
    """Drag from `source`'s output handle to `target`'s input handle."""
    start = page.locator(f'.react-flow__node[data-id="{source}"] .react-flow__handle.source')
    end = page.locator(f'.react-flow__node[data-id="{target}"] .react-flow__handle.target')
    start.drag_to(end)
    expect(page.locator(f'[data-edge="{source}->{target}"]')).to_have_count(1)


def field(page: Page, key: str) -> Locator:
    return page.locator(f'[data-panel="properties"] [data-field="{key}"]')


def set_field(page: Page, key: str, value: Any) -> None:
    """Type `value` into the property panel's field `key` (and leave it, which applies it)."""
    control = field(page, key)
    tag = control.evaluate("e => e.tagName + ':' + (e.type || '')")
    if tag == "SELECT:select-one":
        control.select_option(str(value))
    elif tag == "INPUT:checkbox":
        control.set_checked(bool(value))
    else:
        control.fill(str(value))
        control.blur()


def select_step(page: Page, step: str) -> None:
    page.locator(f'[data-node="{step}"]').click()
    expect(field(page, "id")).to_have_value(step)


def rename(page: Page, new_id: str) -> None:
    control = field(page, "id")
    control.fill(new_id)
    control.press("Enter")
    expect(page.locator(f'[data-node="{new_id}"]')).to_have_count(1)
    expect(field(page, "id")).to_have_value(new_id)
