"""`switchyard dev` as a user starts it: the REST API and the Step Functions API answer on the
ports it prints, the workflows directory is installed (a bad file reported, not fatal), and
SIGTERM stops it cleanly."""

from __future__ import annotations

import os
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
import pytest

from tests.cli import switchyard
from tests.pg import fresh_database

NOOP = """\
switchyard: 1
name: noop
version: 1
steps:
  touch: {type: tool, tool: http.request, args: {method: GET, url: "https://example.com"}}
"""


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with fresh_database() as conninfo:
        yield {
            **os.environ,
            "DATABASE_URL": conninfo,
            "SWITCHYARD_HOME": str(tmp_path_factory.mktemp("home")),
            "SWITCHYARD_API_TOKEN": "t0ken",
        }


def _lines(stream: object, into: queue.Queue[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        into.put(line)


def _wait_for(lines: queue.Queue[str], prefix: str, seen: list[str]) -> str:
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


def test_dev_serves_the_rest_api_and_the_step_functions_api(
    env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "noop.yaml").write_text(NOOP)
    (tmp_path / "broken.yaml").write_text("switchyard: 1\nname: broken\n")
    script = Path(sys.executable).parent / "switchyard"
    dev = subprocess.Popen(
        [
            str(script),
            "dev",
            "--port",
            "0",
            "--sfn-port",
            "0",
            "--events-port",
            "0",
            "--workflows",
            str(tmp_path),
        ],
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_lines, args=(dev.stderr, lines), daemon=True).start()
    seen: list[str] = []
    try:
        rest = _wait_for(lines, "REST API: ", seen)
        sfn = _wait_for(lines, "Step Functions API: ", seen)
        assert "1 workflow(s)" in rest and "bearer token required" in rest
        assert any("skipped" in line and "broken.yaml" in line for line in seen)
        url = rest.split()[2]
        assert url.startswith("http://127.0.0.1:")
        with httpx.Client(base_url=url, headers={"Authorization": "Bearer t0ken"}) as client:
            assert client.get("/healthz").json() == {"ok": True}
            assert [w["name"] for w in client.get("/workflows").json()["workflows"]] == ["noop"]
        assert httpx.get(f"{url}/runs").status_code == 401
        listed = httpx.post(
            sfn.split()[-1],
            content=b"{}",
            headers={
                "X-Amz-Target": "AWSStepFunctions.ListStateMachines",
                "Content-Type": "application/x-amz-json-1.0",
            },
        )
        assert listed.status_code == 200
        assert "noop" in listed.text
    finally:
        dev.send_signal(signal.SIGTERM)
        code = dev.wait(timeout=30)
    assert code == 0


def test_dev_refuses_a_workflows_directory_that_does_not_exist(
    env: dict[str, str], tmp_path: Path
) -> None:
    done = switchyard(env, "dev", "--workflows", str(tmp_path / "nope"))
    assert done.returncode == 2
    assert "no such directory" in done.stderr


GATE = """\
switchyard: 1
name: gated
version: 1
steps:
  approve: {type: human_gate, assignee: lead, message: "go?", timeout: 1h}
"""


def test_dev_prints_each_approval_link_under_its_public_url_without_smtp(
    env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "gated.yaml").write_text(GATE)
    script = Path(sys.executable).parent / "switchyard"
    people = '{"lead": [{"name": "dana", "email": "dana@example.com"}, "lee"]}'
    dev = subprocess.Popen(
        [str(script), "dev", "--port", "0", "--sfn-port", "0", "--workflows", str(tmp_path),
         "--public-url", "https://approve.example.com/"],
        env={**env, "SWITCHYARD_ROLES": people, "SWITCHYARD_SMTP_URL": ""},
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_lines, args=(dev.stderr, lines), daemon=True).start()
    seen: list[str] = []
    try:
        url = _wait_for(lines, "REST API: ", seen).split()[2]
        with httpx.Client(base_url=url, headers={"Authorization": "Bearer t0ken"}) as client:
            run_id = client.post("/workflows/gated/runs", json={}).json()["run_id"]
            printed = {
                _wait_for(lines, "approval: gated", seen).split()[-2].rstrip(":"): seen[-1]
                for _ in range(2)
            }
            assert set(printed) == {"dana", "lee"}  # each person of the role, their own link
            links = {person: line.split()[-1] for person, line in printed.items()}
            assert all(link.startswith("https://approve.example.com/approvals/")
                       for link in links.values())  # fmt: skip
            for _ in range(100):
                waiting = client.get(f"/runs/{run_id}").json()["waiting_for"]
                if waiting:
                    break
                time.sleep(0.05)
            assert waiting[0]["approve_url"] == links["dana"]
    finally:
        dev.send_signal(signal.SIGTERM)
        code = dev.wait(timeout=30)
    assert code == 0


ON_EVENT = """\
switchyard: 1
name: on-event
version: 1
inputs: {text: {type: string}}
triggers:
  - {type: event, pattern: {source: [shop.tickets]}, input: {text: "{{ event.detail.text }}"}}
steps:
  look: {type: human_gate, message: "{{ inputs.text }}", assignee: lee}
"""


def test_dev_starts_a_run_for_an_event_put_on_its_events_port(
    env: dict[str, str], tmp_path: Path
) -> None:
    import boto3
    import psycopg

    (tmp_path / "on-event.yaml").write_text(ON_EVENT)
    script = Path(sys.executable).parent / "switchyard"
    dev = subprocess.Popen(
        [
            str(script),
            "dev",
            "--port",
            "0",
            "--sfn-port",
            "0",
            "--events-port",
            "0",
            "--workflows",
            str(tmp_path),
        ],
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_lines, args=(dev.stderr, lines), daemon=True).start()
    try:
        events_url = _wait_for(lines, "EventBridge PutEvents: ", []).split()[-1]
        events = boto3.client(
            "events",
            endpoint_url=events_url,
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",
        )
        answer = events.put_events(
            Entries=[{"Source": "shop.tickets", "DetailType": "T", "Detail": '{"text": "hi"}'}]
        )
        assert answer["FailedEntryCount"] == 0
        with psycopg.connect(env["DATABASE_URL"]) as conn:
            row = conn.execute(
                "SELECT input FROM workflow_runs WHERE workflow = 'on-event'"
            ).fetchone()
        assert row is not None and row[0] == {"text": "hi"}
    finally:
        dev.send_signal(signal.SIGTERM)
        code = dev.wait(timeout=30)
    assert code == 0


ON_WEBHOOK = """\
switchyard: 1
name: on-hook
version: 1
inputs: {text: {type: string}}
triggers:
  - {type: webhook, secret: "env:HOOK_SECRET", input: {text: "{{ body.text }}"}}
steps:
  look: {type: human_gate, message: "{{ inputs.text }}", assignee: lee}
"""


def test_dev_serves_signed_webhooks_without_the_api_token_and_queues_with_it(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A webhook sender authenticates by its signature (it has no API token); posting to a queue
    and listing triggers are API calls like any other."""
    from switchyard.triggers.signing import sign_delivery

    (tmp_path / "on-hook.yaml").write_text(ON_WEBHOOK)
    script = Path(sys.executable).parent / "switchyard"
    dev = subprocess.Popen(
        [str(script), "dev", "--port", "0", "--sfn-port", "0", "--events-port", "0",
         "--workflows", str(tmp_path)],
        env={**env, "HOOK_SECRET": "s3cret"},
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_lines, args=(dev.stderr, lines), daemon=True).start()
    seen: list[str] = []

    def delivery(delivery_id: str, secret: bytes = b"s3cret") -> dict[str, Any]:
        body, stamp = b'{"text": "printer on fire"}', int(time.time())
        signature = sign_delivery(secret, timestamp=stamp, delivery_id=delivery_id, body=body)
        return {
            "content": body,
            "headers": {
                "X-Switchyard-Delivery": delivery_id,
                "X-Switchyard-Timestamp": str(stamp),
                "X-Switchyard-Signature": signature,
                "Content-Type": "application/json",
            },
        }

    try:
        url = _wait_for(lines, "REST API: ", seen).split()[2]
        hook = f"{url}/webhooks/on-hook"
        started = httpx.post(hook, **delivery("d-1"))
        assert started.status_code == 202, started.text
        again = httpx.post(hook, **delivery("d-1"))
        assert again.status_code == 200 and again.json()["status"] == "duplicate"
        assert again.json()["run_id"] == started.json()["run_id"]
        assert httpx.post(hook, **delivery("d-2", b"wrong")).status_code == 401
        assert httpx.post(f"{url}/queues/tickets/messages", content=b"x").status_code == 401
        assert httpx.get(f"{url}/triggers").status_code == 401
        with httpx.Client(base_url=url, headers={"Authorization": "Bearer t0ken"}) as client:
            assert client.post("/queues/tickets/messages", content=b"x").status_code == 202
            triggers = {t["key"]: t for t in client.get("/triggers").json()["triggers"]}
            trigger = triggers["on-hook-webhook-0"]
            assert trigger["url"] == hook
            assert trigger["deliveries"][0]["run_id"] == started.json()["run_id"]
            run = client.get(f"/runs/{started.json()['run_id']}").json()
            assert run["waiting_for"][0]["message"] == "printer on fire"
    finally:
        dev.send_signal(signal.SIGTERM)
        code = dev.wait(timeout=30)
    assert code == 0
