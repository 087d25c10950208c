"""A schedule and a queue served by the background engine, as a user drives them: `engine start
--workflows DIR`, `switchyard send`, `triggers list`, `runs show`. Shared by the embedded-database
and the DATABASE_URL tests."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.cli import switchyard

EVERY_MINUTE = """\
switchyard: 1
name: NAME
version: 1
inputs:
  body: {type: string}
triggers:
  - {type: schedule, cron: "* * * * *", input: {body: "tick {{ schedule.time }}"}}
  - {type: queue, queue: QUEUE, input: {body: "{{ message.body.text }}"}}
steps:
  look: {type: human_gate, message: "{{ inputs.body }}", assignee: lee}
"""
SLOT_WAIT = 150.0
"""The first slot comes within two minutes: a schedule counts from the round that first sees it."""


def run_id(prefix: str, key: str, delivery_id: str) -> str:
    """The run id a delivery gets (docs/triggers.md), computed here independently."""
    return f"{prefix}-" + hashlib.sha256(f"{key}:{delivery_id}".encode()).hexdigest()


def eventually(read: Any, what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def shown(env: dict[str, str], run: str) -> dict[str, Any] | None:
    done = switchyard(env, "runs", "show", run, "--json")
    return json.loads(done.stdout) if done.returncode in (0, 1, 3) and done.stdout else None


def listed(env: dict[str, str]) -> dict[str, Any]:
    done = switchyard(env, "triggers", "list", "--json")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


@dataclass
class Served:
    name: str
    schedule_key: str
    queue_key: str
    slot: str
    """The first slot the background engine fired."""


def serve_in_the_background(env: dict[str, str], directory: Path) -> Served:
    """Install a workflow with an every-minute schedule and a queue through `engine start
    --workflows`, send it a message, and see the background engine start both runs."""
    name = f"ticker-{uuid.uuid4().hex[:8]}"
    queue = f"inbox-{uuid.uuid4().hex[:8]}"
    (directory / f"{name}.yaml").write_text(
        EVERY_MINUTE.replace("NAME", name).replace("QUEUE", queue)
    )
    started = switchyard(env, "engine", "start", "--workflows", str(directory))
    assert started.returncode == 0, started.stderr
    assert f"installed 1 workflow(s) from {directory}: {name} v1" in started.stderr
    sent = switchyard(env, "send", queue, json.dumps({"text": "from the queue"}))
    assert sent.returncode == 0, sent.stderr
    message_id = json.loads(sent.stdout)["message_id"]
    queue_key, schedule_key = f"{name}-queue-1", f"{name}-schedule-0"

    consumed = eventually(lambda: shown(env, run_id("q", queue_key, message_id)), "the queue's run")
    assert consumed["workflow"] == name and consumed["status"] == "waiting"
    assert consumed["waiting_for"][0]["message"] == "from the queue"

    def fired() -> dict[str, Any] | None:
        triggers = {t["key"]: t for t in listed(env)["triggers"]}
        deliveries = triggers[schedule_key]["deliveries"]
        return deliveries[-1] if deliveries else None

    first = eventually(fired, "the schedule's first slot", timeout=SLOT_WAIT)
    assert first["status"] == "started"
    slot = first["delivery_id"]
    assert first["run_id"] == run_id("sc", schedule_key, slot)
    ticked = shown(env, first["run_id"])
    assert ticked is not None and ticked["waiting_for"][0]["message"] == f"tick {slot}"
    answer = listed(env)  # `triggers list` against the background engine's database
    assert answer["engine_running"] is True
    trigger = next(t for t in answer["triggers"] if t["key"] == schedule_key)
    assert trigger["last_fire"].replace("+00:00", "Z") >= slot
    assert trigger["next_fire"] > trigger["last_fire"]
    queued = next(t for t in answer["triggers"] if t["key"] == queue_key)
    assert queued["waiting"] == 0 and queued["deliveries"][0]["status"] == "started"
    log = (Path(env["SWITCHYARD_HOME"]) / "engine.log").read_text()
    assert "Traceback" not in log and "trigger round failed" not in log
    return Served(name, schedule_key, queue_key, slot)
