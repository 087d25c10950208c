"""The visual builder in headless Chromium over a real server, engine and database: examples
open and save byte for byte, one edit is one line, a workflow built by drag and drop and forms
equals the example, YAML errors open as text, cycles show on the edges, concurrent edits on disk
are refused, and undo, redo and keyboard deletion work."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import Browser, Page, expect

from tests.unit.builder.browser import (
    SCREENSHOTS,
    builder_tab,
    connect,
    drop,
    field,
    rename,
    select_step,
    set_field,
)
from tests.unit.builder.support import EXAMPLES, BuilderStack
from tests.unit.dashboard.browser import chromium

EXAMPLE_NAMES = sorted(p.stem for p in EXAMPLES.glob("*.yaml"))


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as running:
        yield running


@pytest.fixture
def page(browser: Browser, builder: BuilderStack) -> Iterator[Page]:
    with builder_tab(browser, builder) as tab:
        yield tab


def _shot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def _open(page: Page, name: str) -> None:
    page.goto(f"/ui/builder/{name}")
    expect(page.locator("[data-page=builder]")).to_be_visible()


def _steps(path: Path) -> list[str]:
    return list(yaml.safe_load(path.read_text())["steps"])


def _saved(page: Page) -> None:
    expect(page.locator("[data-status=ok]")).to_contain_text("Saved")


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_an_example_opens_and_saves_unchanged_byte_for_byte(
    page: Page, builder: BuilderStack, name: str
) -> None:
    path = builder.workflows / f"{name}.yaml"
    before = path.read_bytes()
    _open(page, name)
    for step in _steps(path):
        expect(page.locator(f'[data-node="{step}"]')).to_be_visible()
    expect(page.locator("[data-validation=ok]")).to_be_visible()
    page.locator("[data-action=save]").click()
    _saved(page)
    assert path.read_bytes() == before
    if name == "content-moderation":
        _shot(page, "builder-example")


@pytest.mark.parametrize("name", ["customer-support", "summarize-document"])
def test_changing_one_prompt_changes_that_line_only(
    page: Page, builder: BuilderStack, name: str
) -> None:
    path = builder.workflows / f"{name}.yaml"
    before = path.read_text()
    data = yaml.safe_load(before)
    agent = next(step for step, spec in data["steps"].items() if "prompt" in spec)
    old_prompt = data["steps"][agent]["prompt"]
    first_line = old_prompt.split("\n")[0]
    new_prompt = old_prompt.replace(first_line, first_line + " Be brief.", 1)
    _open(page, name)
    select_step(page, agent)
    set_field(page, "prompt", new_prompt)
    expect(page.locator("[data-saved=false]")).to_be_visible()
    page.locator("[data-action=save]").click()
    _saved(page)
    after = path.read_text()
    removed = [a for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b]
    added = [b for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b]
    assert len(removed) == len(added) == 1
    assert added[0] == removed[0].replace(first_line, first_line + " Be brief.")
    data["steps"][agent]["prompt"] = new_prompt
    assert yaml.safe_load(after) == data
    path.write_text(before)


def test_building_customer_support_from_an_empty_canvas_equals_the_example(
    page: Page, builder: BuilderStack
) -> None:
    path = builder.workflows / "customer-support.yaml"
    example = yaml.safe_load((EXAMPLES / "customer-support.yaml").read_text())
    aside = builder.workflows / "customer-support.yaml.aside"
    shutil.move(path, aside)  # the built file takes the example's name
    try:
        page.goto("/ui/builder")
        expect(page.locator("[data-page=builder]")).to_be_visible()
        expect(page.locator("[data-node]")).to_have_count(0)
        # the workflow's own fields (no step selected)
        set_field(page, "name", "customer-support")
        set_field(page, "version", "1")
        set_field(page, "description", example["description"])
        set_field(page, "inputs", yaml.safe_dump(example["inputs"], sort_keys=False))
        set_field(page, "budget", "{max_cost_usd: 2.00, max_duration: 8h, max_steps: 40}")
        set_field(page, "on_error", "fail")

        drop(page, "agent", 110, 100)
        rename(page, "classify")
        set_field(page, "model", "claude-haiku-4-5")
        set_field(page, "prompt", "Classify this ticket: ")
        page.locator('[data-complete="prompt"]').select_option("inputs.body")
        expect(field(page, "prompt")).to_have_value("Classify this ticket: {{ inputs.body }}")
        set_field(
            page, "output_schema", yaml.safe_dump(example["steps"]["classify"]["output_schema"])
        )
        set_field(page, "timeout", "30s")

        drop(page, "agent", 370, 40)
        rename(page, "research")
        connect(page, "classify", "research")
        select_step(page, "research")
        set_field(page, "when", 'steps.classify.output.label != "other"')
        set_field(page, "model", "claude-sonnet-4-5")
        set_field(page, "prompt", "Research the customer's problem: {{ inputs.body }}")
        set_field(page, "timeout", "120s")

        drop(page, "tool", 370, 240, variant="http.request")
        rename(page, "fetch_history")
        connect(page, "classify", "fetch_history")
        select_step(page, "fetch_history")
        set_field(page, "args", yaml.safe_dump(example["steps"]["fetch_history"]["args"]))

        drop(page, "agent", 640, 140)
        rename(page, "draft")
        connect(page, "research", "draft")
        connect(page, "fetch_history", "draft")
        select_step(page, "draft")
        set_field(page, "model", "claude-sonnet-4-5")
        set_field(page, "prompt", example["steps"]["draft"]["prompt"])
        set_field(page, "timeout", "60s")

        drop(page, "human_gate", 370, 430)
        rename(page, "approve")
        connect(page, "draft", "approve")
        select_step(page, "approve")
        gate = example["steps"]["approve"]
        set_field(page, "assignee", gate["assignee"])
        set_field(page, "message", gate["message"])
        set_field(page, "channels", "[email, slack]")
        set_field(page, "show", yaml.safe_dump(gate["show"]))
        set_field(page, "allow_edit", True)
        set_field(page, "timeout", "4h")
        set_field(page, "escalation", yaml.safe_dump(gate["escalation"]))
        set_field(page, "on_timeout", "reject")

        drop(page, "tool", 660, 430, variant="email.send")
        rename(page, "send")
        page.locator("[data-action=layout]").click()  # dagre spreads the steps out
        connect(page, "approve", "send")
        select_step(page, "send")
        set_field(page, "side_effect", "idempotent")
        set_field(page, "args", yaml.safe_dump(example["steps"]["send"]["args"], sort_keys=False))

        expect(page.locator("[data-validation=ok]")).to_be_visible()
        page.locator("[data-action=layout]").click()
        page.locator("[data-tab=compiled]").click()
        expect(page.locator("[data-asl]")).to_contain_text('"StartAt"')
        _shot(page, "builder-built")
        page.locator("[data-action=save]").click()
        expect(page).to_have_url(f"{builder.url}/ui/builder/customer-support")
        _saved(page)
        saved = yaml.safe_load(path.read_text())
        assert saved == example
        with builder.client() as client:
            checked = client.post("/validate", content=path.read_bytes()).json()
        assert checked["ok"] is True
        assert [d for d in checked["diagnostics"] if d["severity"] == "error"] == []
    finally:
        path.unlink(missing_ok=True)
        shutil.move(aside, path)


def test_a_source_with_yaml_errors_opens_as_text_with_the_diagnostics(
    page: Page, builder: BuilderStack
) -> None:
    path = builder.workflows / "bad-yaml.yaml"
    path.write_text("switchyard: 1\nname: bad-yaml\nsteps: [unclosed\n")
    _open(page, "bad-yaml")
    expect(page.locator("[data-page=builder]")).to_have_attribute("data-mode", "text")
    expect(page.locator("[data-source-text]")).to_have_value(path.read_text())
    expect(page.locator("[data-diagnostic=parse]").first).to_be_visible()
    _shot(page, "builder-yaml-error")
    fixed = "switchyard: 1\nname: bad-yaml\nversion: 1\nsteps:\n  only: {type: agent, prompt: hi}\n"
    page.locator("[data-source-text]").fill(fixed)
    page.locator("[data-action=to-canvas]").click()
    expect(page.locator('[data-node="only"]')).to_be_visible()
    page.locator("[data-action=save]").click()
    expect(page.locator("[data-status]")).to_contain_text("Saved bad-yaml")
    assert path.read_text() == fixed


def test_a_cycle_drawn_on_the_canvas_shows_the_validators_error_on_its_edges(
    page: Page, builder: BuilderStack
) -> None:
    _open(page, "customer-support")
    expect(page.locator("[data-validation=ok]")).to_be_visible()
    connect(page, "send", "classify")
    expect(page.locator("[data-validation=errors]")).to_be_visible()
    expect(page.locator('[data-edge="send->classify"]')).to_have_attribute(
        "data-edge-error", "cycle"
    )
    _shot(page, "builder-cycle")
    page.locator('[data-tab="problems"]').click()
    expect(page.locator("[data-diagnostic=cycle]").first).to_be_visible()


def test_a_save_is_refused_when_the_file_changed_on_disk(page: Page, builder: BuilderStack) -> None:
    path = builder.workflows / "customer-support.yaml"
    before = path.read_text()
    _open(page, "customer-support")
    expect(page.locator('[data-node="classify"]')).to_be_visible()
    path.write_text(before + "# edited by hand\n")
    try:
        select_step(page, "classify")
        set_field(page, "timeout", "31s")
        page.locator("[data-action=save]").click()
        expect(page.locator("[data-status=error]")).to_contain_text("changed on disk")
        assert path.read_text() == before + "# edited by hand\n"
    finally:
        path.write_text(before)


def test_undo_redo_and_keyboard_deletion(page: Page, builder: BuilderStack) -> None:
    _open(page, "customer-support")
    node = page.locator('[data-node="send"]')
    expect(node).to_be_visible()
    node.click()
    page.keyboard.press("Delete")
    expect(node).to_have_count(0)
    expect(page.locator('[data-edge="approve->send"]')).to_have_count(0)
    page.locator("[data-action=undo]").click()
    expect(node).to_be_visible()
    expect(page.locator('[data-edge="approve->send"]')).to_have_count(1)
    page.locator("[data-action=redo]").click()
    expect(node).to_have_count(0)
    page.locator(".react-flow__pane").click(position={"x": 5, "y": 5})
    page.keyboard.press("Control+z")
    expect(node).to_be_visible()
    page.locator("[data-action=fit]").click()
    page.locator("[data-action=layout]").click()
    expect(node).to_be_visible()


def test_the_install_button_installs_the_saved_version(page: Page, builder: BuilderStack) -> None:
    name = "install-from-page"
    source = (EXAMPLES / "summarize-document.yaml").read_text()
    data = yaml.safe_load(source)
    (builder.workflows / f"{name}.yaml").write_text(
        source.replace(f"name: {data['name']}", f"name: {name}")
    )
    _open(page, name)
    expect(page.locator("[data-validation=ok]")).to_be_visible()
    page.locator("[data-action=install]").click()
    expect(page.locator("[data-status=ok]")).to_contain_text(f"Installed {name} v{data['version']}")
    with builder.client() as client:
        assert client.get(f"/workflows/{name}").json()["version"] == data["version"]
    page.locator("[data-action=install]").click()
    expect(page.locator("[data-status=ok]")).to_contain_text("already installed")


def test_an_edge_from_a_router_is_a_route_and_an_after(page: Page, builder: BuilderStack) -> None:
    page.goto("/ui/builder")
    set_field(page, "name", "router-built")
    drop(page, "agent", 110, 200)
    rename(page, "classify")
    set_field(page, "prompt", "Classify: {{ inputs.text }}")
    drop(page, "router", 370, 200, variant="llm")
    rename(page, "route")
    drop(page, "agent", 640, 100)
    rename(page, "billing")
    set_field(page, "prompt", "Billing")
    connect(page, "classify", "route")
    connect(page, "route", "billing")
    page.locator("[data-action=save]").click()
    expect(page).to_have_url(f"{builder.url}/ui/builder/router-built")
    saved = yaml.safe_load((builder.workflows / "router-built.yaml").read_text())
    assert saved["steps"]["route"] == {
        "type": "router",
        "strategy": "llm",
        "routes": [{"to": "billing", "description": ""}],
        "after": ["classify"],
    }
    assert saved["steps"]["billing"]["after"] == ["route"]
    # removing the edge removes the route with it
    # a level edge has no height, which Playwright counts as hidden: click its centre anyway
    page.locator('[data-edge="route->billing"] path').first.click(force=True)
    expect(page.locator("[data-edge-selected]")).to_have_attribute(
        "data-edge-selected", "route->billing"
    )
    page.keyboard.press("Delete")
    expect(page.locator('[data-edge="route->billing"]')).to_have_count(0)
    page.locator("[data-action=save]").click()
    expect(page.locator("[data-status]")).to_contain_text("Saved router-built")
    saved = yaml.safe_load((builder.workflows / "router-built.yaml").read_text())
    assert saved["steps"]["route"]["routes"] == []
    assert "after" not in saved["steps"]["billing"]
