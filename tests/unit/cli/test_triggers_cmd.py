"""`switchyard triggers list`, `switchyard send`, and dead letters in `switchyard runs list`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg_pool import ConnectionPool

from switchyard.local.triggers.store import Delivery, TriggerStore
from tests.cli import cli_environment, switchyard
from tests.unit.local.triggers.conftest import WORKFLOW


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with cli_environment(tmp_path_factory.mktemp("home")) as environment:
        yield environment


@pytest.fixture
def flows(tmp_path: Path) -> Path:
    (tmp_path / "intake.yaml").write_text(WORKFLOW.replace("{name}", "intake"))
    return tmp_path


def test_send_queues_a_message_that_triggers_list_counts(env: dict[str, str], flows: Path) -> None:
    sent = switchyard(env, "send", "tickets", '{"text": "hi"}')
    assert sent.returncode == 0, sent.stderr
    assert json.loads(sent.stdout)["queue"] == "tickets"
    listed = switchyard(env, "triggers", "list", "--workflows", str(flows), "--json")
    assert listed.returncode == 0, listed.stderr
    triggers = {t["key"]: t for t in json.loads(listed.stdout)["triggers"]}
    assert triggers["intake-queue-3"]["waiting"] == 1
    assert triggers["intake-schedule-0"]["next_fire"].endswith("08:00:00+00:00")
    text = switchyard(env, "triggers", "list", "--workflows", str(flows)).stdout
    assert "intake-webhook-2" in text and "/webhooks/intake" in text
    assert "intake-schedule-0" in text and "next " in text


def test_runs_list_shows_a_triggers_dead_letters(env: dict[str, str]) -> None:
    with ConnectionPool(env["DATABASE_URL"], min_size=1, max_size=1, open=True) as pool:
        TriggerStore(pool).record(
            Delivery(
                "intake-queue-3", "intake", "queue", "m-1", "q-abc", "dead_letter",
                {"type": "invalid_input", "message": "invalid run input: body is required"},
            )
        )  # fmt: skip
    shown = switchyard(env, "runs", "list")
    assert shown.returncode == 0, shown.stderr
    assert "dead letter  intake-queue-3 delivery m-1" in shown.stdout
    assert "body is required" in shown.stdout


def test_triggers_list_without_a_workflow_folder_is_a_usage_error(
    env: dict[str, str], tmp_path: Path
) -> None:
    answer = switchyard(env, "triggers", "list", "--workflows", str(tmp_path / "none"))
    assert answer.returncode == 2 and "--workflows DIR" in answer.stderr
