"""The triggers an engine serves are those of the workflows installed in its database, whoever
installed them (`switchyard dev`, `engine start --workflows`, `run`, the builder), and its trigger
loop fires only while the engine can take commands (docs/triggers.md, "Which process serves
what")."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from switchyard.engine import machines
from switchyard.local.engine_client import EngineCommands
from switchyard.local.triggers import TriggerService
from switchyard.local.triggers.schedule import MAX_START_ATTEMPTS
from switchyard.local.workflows import install
from tests.unit.local.triggers.conftest import SECRET, WORKFLOW, Stack

QUIET = """\
switchyard: 1
name: {name}
version: 2
inputs:
  body: {type: string}
steps:
  look: {type: human_gate, message: "{{ inputs.body }}", assignee: lee}
"""


def installed_service(stack: Stack) -> TriggerService:
    """What an engine process builds: no list of triggers, the database's."""
    return TriggerService(
        stack.pool,
        EngineCommands(stack.engine),
        clock=stack.clock,
        environ={"TEST_WEBHOOK_SECRET": SECRET},
    )


def keys_of(service: TriggerService, workflow: str) -> set[str]:
    return {spec.key for spec in service.current() if spec.workflow == workflow}


def test_an_installed_workflows_triggers_are_served_without_its_file(stack: Stack) -> None:
    service = installed_service(stack)
    assert keys_of(service, stack.name) == {
        stack.key(kind) for kind in ("schedule", "event", "webhook", "queue")
    }
    schedule = next(s for s in service.current() if s.key == stack.key("schedule"))
    assert schedule.machine_arn == stack.installed.machine_arn
    assert schedule.inputs == {"body": {"type": "string"}} and schedule.version == 1
    service.tick()  # first seen at 06:00Z
    stack.clock.now = datetime(2026, 12, 1, 8, 0, 1, tzinfo=UTC)
    [fired] = [d for d in service.tick() if d.workflow == stack.name]
    assert stack.runs() == {fired.run_id: {"body": "2026-12-01T08:00:00Z"}}


def test_a_newer_version_without_triggers_turns_them_off(stack: Stack, tmp_path: Path) -> None:
    service = installed_service(stack)
    (tmp_path / "intake.yaml").write_text(QUIET.replace("{name}", stack.name))
    with stack.engine.read() as store:
        install(store, stack.engine.arns, tmp_path / "intake.yaml")
    assert keys_of(service, stack.name) == set()
    (tmp_path / "intake.yaml").write_text(
        WORKFLOW.replace("{name}", stack.name).replace("version: 1", "version: 3")
    )
    with stack.engine.read() as store:
        install(store, stack.engine.arns, tmp_path / "intake.yaml")
    assert len(keys_of(service, stack.name)) == 4
    assert {s.version for s in service.current() if s.workflow == stack.name} == {3}


def test_deleting_a_workflows_state_machine_takes_its_triggers(stack: Stack) -> None:
    service = installed_service(stack)
    assert keys_of(service, stack.name)
    with stack.engine.read() as store:
        machines.delete(store, stack.installed.machine_arn)
    assert keys_of(service, stack.name) == set()


def test_the_loop_fires_nothing_while_the_engine_cannot_take_commands(stack: Stack) -> None:
    refused, allowed = threading.Semaphore(0), threading.Semaphore(0)
    can = threading.Event()

    def ready() -> bool:
        answer = can.is_set()
        (allowed if answer else refused).release()
        return answer

    service = replace(installed_service(stack), poll_seconds=0.01, ready=ready)
    service.tick()  # first seen at 06:00Z
    stack.clock.now = datetime(2026, 12, 1, 8, 0, 1, tzinfo=UTC)
    service.start()
    try:
        for _ in range(5):  # five rounds refused
            assert refused.acquire(timeout=5)
        assert stack.runs() == {}  # the slot waits for an engine that can start it
        assert service.store.recent(stack.key("schedule")) == []
        can.set()
        for _ in range(2):  # the second allowed round comes after the first one's tick
            assert allowed.acquire(timeout=5)
    finally:
        service.close()
    [delivery] = service.store.recent(stack.key("schedule"))
    assert delivery.status == "started" and delivery.delivery_id == "2026-12-01T08:00:00Z"
    assert list(stack.runs()) == [delivery.run_id]


def test_a_slot_the_engine_fails_is_tried_again_then_dead_lettered(stack: Stack) -> None:
    service = stack.service()
    spec = next(s for s in service.specs or [] if s.kind == "schedule")
    gone = replace(spec, machine_arn=spec.machine_arn + "-deleted")
    assert service.scheduler.tick([gone], stack.clock.now) == []  # first seen at 06:00Z
    slot_passed = datetime(2026, 12, 1, 8, 0, 1, tzinfo=UTC)
    for _ in range(MAX_START_ATTEMPTS - 1):
        assert service.scheduler.tick([gone], slot_passed) == []  # tried again next round
        assert service.store.last_fire(spec.key) < slot_passed  # type: ignore[operator]
    [dead] = service.scheduler.tick([gone], slot_passed)
    assert dead.status == "dead_letter" and dead.delivery_id == "2026-12-01T08:00:00Z"
    assert dead.error is not None and "StateMachineDoesNotExist" in dead.error["type"]
    assert service.scheduler.tick([gone], slot_passed) == []  # the slot is done
    assert stack.runs() == {}
