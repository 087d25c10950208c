"""`switchyard triggers list`, `switchyard send`, dead letters in `switchyard runs list`, and the
background engine's schedules and queues on DATABASE_URL, beside `switchyard dev`."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg_pool import ConnectionPool

from switchyard.local.triggers.store import Delivery, TriggerStore
from tests.cli import cli_environment, switchyard
from tests.unit.cli.background_triggers import Served, serve_in_the_background
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
    nothing = switchyard(env, "triggers", "list")  # nothing installed, no engine
    assert nothing.returncode == 0, nothing.stderr
    assert "no triggers installed: switchyard engine start --workflows DIR" in nothing.stdout
    assert "no engine runs: schedules fire and queues are read once one does" in nothing.stdout
    sent = switchyard(env, "send", "tickets", '{"text": "hi"}')
    assert sent.returncode == 0, sent.stderr
    assert json.loads(sent.stdout)["queue"] == "tickets"
    listed = switchyard(env, "triggers", "list", "--workflows", str(flows), "--json")
    assert listed.returncode == 0, listed.stderr
    triggers = {t["key"]: t for t in json.loads(listed.stdout)["triggers"]}
    assert triggers["intake-queue-3"]["waiting"] == 1
    assert triggers["intake-schedule-0"]["next_fire"].endswith("08:00:00+00:00")
    assert triggers["intake-schedule-0"]["installed"] is False  # a file, not installed
    text = switchyard(env, "triggers", "list", "--workflows", str(flows)).stdout
    assert "intake-webhook-2" in text and "/webhooks/intake" in text
    assert "intake-schedule-0" in text and "next " in text and "(not installed)" in text


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


@pytest.mark.slow  # waits for the first every-minute slot: up to two minutes
def test_the_background_engine_fires_schedules_and_reads_queues(
    env: dict[str, str], tmp_path: Path
) -> None:
    served = serve_in_the_background(env, tmp_path)
    _one_engine_fires_while_dev_and_a_background_engine_exist(env, tmp_path, served)


def _lines(stream: Any, into: queue.Queue[str]) -> None:
    for line in stream:
        into.put(line)


def _next_line(lines: queue.Queue[str], prefix: str, seen: list[str]) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            continue
        seen.append(line)
        if line.startswith(prefix):
            return line
    raise AssertionError(f"no line starting {prefix!r} in: {''.join(seen)}")


def _engines(env: dict[str, str]) -> list[str]:
    return switchyard(env, "engine", "status").stdout.splitlines()


def _one_engine_fires_while_dev_and_a_background_engine_exist(
    env: dict[str, str], tmp_path: Path, served: Served
) -> None:
    """`switchyard dev` waits for the engine lock while the background engine holds it, then
    takes over without firing a slot again; `engine start` beside dev starts no second engine."""
    [background] = _engines(env)
    cwd = tmp_path / "elsewhere"  # no ./workflows: dev installs nothing of its own
    cwd.mkdir()
    script = Path(sys.executable).parent / "switchyard"
    dev = subprocess.Popen(
        [str(script), "dev", "--port", "0", "--sfn-port", "0", "--events-port", "0"],
        env=env,
        cwd=cwd,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_lines, args=(dev.stderr, lines), daemon=True).start()
    seen: list[str] = []
    try:
        _next_line(lines, "waiting for the engine lock", seen)
        time.sleep(2)  # a subprocess has no clock to inject: dev is given time to (not) start
        assert lines.empty(), "dev served while the background engine owned the database"
        assert _engines(env) == [background]
        stopped = switchyard(env, "engine", "stop")
        assert stopped.returncode == 0, stopped.stderr
        rest_url = _next_line(lines, "REST API: ", seen).split()[2]
        _next_line(lines, "engine running", seen)
        again = switchyard(env, "engine", "start")  # beside dev: refused, nothing started
        assert again.returncode == 0 and "an engine already runs" in again.stderr
        [owner] = _engines(env)
        assert owner != background and f"pid {dev.pid} " in owner
        time.sleep(3)  # three rounds of dev's trigger loop
        triggers = {t["key"]: t for t in httpx.get(f"{rest_url}/triggers").json()["triggers"]}
        deliveries = triggers[served.schedule_key]["deliveries"]  # dev serves the same triggers
        slots = [d["delivery_id"] for d in deliveries]
        assert served.slot in slots and len(slots) == len(set(slots))  # no slot twice
        assert {d["status"] for d in deliveries} == {"started"}  # never even a duplicate
        with psycopg.connect(env["DATABASE_URL"]) as conn:
            runs = conn.execute(
                "SELECT count(*) FROM workflow_runs WHERE workflow = %s AND run_id LIKE 'sc-%%'",
                (served.name,),
            ).fetchone()
        assert runs is not None and runs[0] == len(slots)
    finally:
        dev.send_signal(signal.SIGTERM)
        code = dev.wait(timeout=30)
    assert code == 0, "".join(seen)
