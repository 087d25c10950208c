"""`switchyard runs reset` on the local engine, with a real tool whose side effect is a line in a
file: the step before the reset's step replays its recorded result (no new line), the reset's
step runs afresh on the run's version or on a newer one, a reset of a reset still replays the
first run's record, the refusals exit as docs/cli.md says, and a run waiting at a gate is reset
only with --cancel. Every kind of step before the reset's step replays: a tool with no side
effect is not called, an agent's model is not asked (the reset run costs nothing), a loop's
iterations replay, and a gate's decision comes back without asking anyone."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli import cli_environment, switchyard

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = Path(__file__).parent / "workflows" / "reset"
FINAL = ("succeeded", "failed", "cancelled", "timed_out")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    # The workflows' tool is `tests.e2e.reset_tools:append`: the engine the CLI starts imports it
    # from the repository's root, which a console script does not put on sys.path by itself.
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    with cli_environment(tmp_path_factory.mktemp("home"), PYTHONPATH=path) as environment:
        yield environment


def shown(
    env: dict[str, str], run_id: str, timeout: float = 60.0, until: tuple[str, ...] = FINAL
) -> dict[str, Any]:
    """The run once its status is one of `until` (it has ended), as `runs show --json` prints
    it."""
    deadline = time.monotonic() + timeout
    while True:
        done = switchyard(env, "runs", "show", run_id, "--json")
        assert done.returncode == 0, done.stderr
        data: dict[str, Any] = json.loads(done.stdout)
        if data["status"] in until or time.monotonic() > deadline:
            return data
        time.sleep(0.2)


def reset(env: dict[str, str], run_id: str, *extra: str) -> dict[str, Any]:
    done = switchyard(env, "runs", "reset", run_id, "--json", *extra)
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def lines(ledger: Path) -> list[str]:
    return ledger.read_text(encoding="utf-8").splitlines()


def test_a_reset_replays_the_steps_before_its_step_and_runs_it_afresh(
    env: dict[str, str], tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.txt"
    given = json.dumps({"ledger": str(ledger)})
    first = switchyard(env, "run", str(WORKFLOWS / "reset-ledger-v1.yaml"), "--input", given,
                       "--json")  # fmt: skip
    assert first.returncode == 0, first.stderr
    original = json.loads(first.stdout)["run_id"]
    assert lines(ledger) == [
        f"charge {original}",
        f"notify v1 {original} after charge line 1",
    ]

    again = reset(env, original, "--to", "notify")
    assert again["reset_from"] == original and again["to"] == "notify"
    assert (again["reused"], again["fresh"], again["version"]) == (["charge"], ["notify"], 1)
    run = shown(env, again["run_id"])
    assert run["status"] == "succeeded", run
    assert lines(ledger)[2:] == [f"notify v1 {again['run_id']} after charge line 1"]  # no charge
    assert run["output"]["charged"] == f"charge {original}"  # the recorded result

    # A reset of the reset: charge still replays the first run's record.
    chained = reset(env, again["run_id"], "--to", "notify")
    assert shown(env, chained["run_id"])["status"] == "succeeded"
    assert [line.split()[0] for line in lines(ledger)] == ["charge", "notify", "notify", "notify"]

    # Onto version 2, once it is installed: notify runs as version 2 has it.
    assert switchyard(env, "engine", "stop").returncode == 0
    started = switchyard(env, "engine", "start", "--workflows", str(WORKFLOWS))
    assert started.returncode == 0, started.stderr
    newer = reset(env, original, "--to", "notify", "--version", "2")
    assert newer["version"] == 2
    assert shown(env, newer["run_id"])["status"] == "succeeded"
    assert lines(ledger)[-1] == f"notify v2 {newer['run_id']} after charge line 1"
    assert sum(line.startswith("charge") for line in lines(ledger)) == 1

    # The original is as it was, and linked both ways.
    assert shown(env, original)["status"] == "succeeded"
    linked = json.loads(switchyard(env, "runs", "show", original, "--json").stdout)
    assert [r["run_id"] for r in linked["resets"]] == [again["run_id"], newer["run_id"]]
    assert shown(env, again["run_id"])["reset_from"]["run_id"] == original


def test_a_reset_refuses_an_unknown_run_step_or_version(
    env: dict[str, str], tmp_path: Path
) -> None:
    given = json.dumps({"ledger": str(tmp_path / "ledger.txt")})
    first = switchyard(env, "run", str(WORKFLOWS / "reset-ledger-v1.yaml"), "--input", given,
                       "--json")  # fmt: skip
    original = json.loads(first.stdout)["run_id"]
    missing = switchyard(env, "runs", "reset", "no-such-run", "--to", "notify")
    assert missing.returncode == 1 and "no-such-run" in missing.stderr
    step = switchyard(env, "runs", "reset", original, "--to", "nope")
    assert step.returncode == 2
    assert "'nope' is not a step of this version (its steps: charge, notify)" in step.stderr
    version = switchyard(env, "runs", "reset", original, "--to", "notify", "--version", "9")
    assert version.returncode == 2 and "version 9 of reset-ledger is not installed" in (
        version.stderr
    )
    usage = switchyard(env, "runs", "reset", original)
    assert usage.returncode == 2 and "--to" in usage.stderr


def test_a_run_waiting_at_a_gate_is_reset_only_with_cancel(env: dict[str, str]) -> None:
    gated = Path(__file__).parents[1] / "fixtures" / "operations" / "gated.yaml"
    started = switchyard(env, "run", str(gated), "--detach", "--json")
    assert started.returncode == 3, started.stderr  # waiting for a person
    run_id = json.loads(started.stdout)["run_id"]
    refused = switchyard(env, "runs", "reset", run_id, "--to", "approve")
    assert refused.returncode == 1
    assert f"run {run_id} has not ended (it is waiting); cancel it first" in refused.stderr
    again = reset(env, run_id, "--to", "approve", "--cancel")
    assert again["cancelled_original"] is True and again["fresh"] == ["approve"]
    assert shown(env, run_id)["status"] == "cancelled"
    switchyard(env, "cancel", again["run_id"])  # the new run waits at the gate in its turn


def test_every_step_before_the_reset_step_replays_its_recorded_result(
    env: dict[str, str], tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.txt"
    given = json.dumps({"ledger": str(ledger)})
    script = str(WORKFLOWS / "reset-replay.script.yaml")
    first = switchyard(env, "run", str(WORKFLOWS / "reset-replay.yaml"), "--input", given,
                       "--llm-script", script, "--approve", "approve", "--json")  # fmt: skip
    assert first.returncode == 0, first.stderr
    original = json.loads(first.stdout)
    run_id = original["run_id"]
    assert original["cost_usd"] > 0 and original["output"]["triage"] == "urgent"
    calls = [f"look {run_id}", f"poll {run_id} 1", f"poll {run_id} 2", f"notify {run_id}: urgent"]
    assert lines(ledger) == calls

    again = reset(env, run_id, "--to", "notify")
    assert again["reused"] == ["look", "poll", "triage", "approve"]
    run = shown(env, again["run_id"], until=(*FINAL, "waiting"))
    assert run["status"] == "succeeded", run  # the gate did not wait for anyone
    assert lines(ledger)[4:] == [f"notify {again['run_id']}: urgent"]  # no look, no poll
    assert (run["cost_usd"], run["tokens"]) == (0, {"input": 0, "output": 0})  # no model call
    replayed = {step: data.get("replayed_from") for step, data in run["steps"].items()}
    assert replayed == {"look": run_id, "poll": run_id, "triage": run_id, "approve": run_id,
                        "notify": None}  # fmt: skip
    assert run["output"] == {"triage": "urgent", "decided_by": "cli", "polled": 2}
    assert run["steps"]["approve"]["output"]["replayed_from"] == run_id
    text = switchyard(env, "runs", "show", again["run_id"])
    assert f"replayed from {run_id}" in text.stdout

    # From triage: look and poll replay, triage asks the model again and the gate asks again.
    later = reset(env, run_id, "--to", "triage")
    waiting = shown(env, later["run_id"], until=(*FINAL, "waiting"))
    assert waiting["status"] == "waiting", waiting
    assert waiting["cost_usd"] > 0 and waiting["steps"]["triage"].get("replayed_from") is None
    assert [w["step"] for w in waiting["waiting_for"]] == ["approve"]
    assert len(lines(ledger)) == 5
    switchyard(env, "cancel", later["run_id"])


def test_a_sub_workflow_before_the_reset_step_starts_a_child_that_replays_the_first_child(
    env: dict[str, str], tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.txt"
    given = json.dumps({"ledger": str(ledger)})
    first = switchyard(env, "run", str(WORKFLOWS / "reset-parent.yaml"), "--input", given,
                       "--json")  # fmt: skip
    assert first.returncode == 0, first.stderr
    run_id = json.loads(first.stdout)["run_id"]
    child_line = lines(ledger)[0]
    assert child_line.startswith("child look ")

    again = reset(env, run_id, "--to", "notify")
    run = shown(env, again["run_id"])
    assert run["status"] == "succeeded", run
    assert run["output"] == {"found": child_line}  # the first child's answer
    assert lines(ledger)[2:] == [f"notify {again['run_id']}: {child_line}"]  # no second look
    children = run["steps"]["research"].get("children") or []
    listed = switchyard(env, "runs", "list", "--json")
    runs = json.loads(listed.stdout)
    runs = runs["runs"] if isinstance(runs, dict) else runs
    child_runs = [r for r in runs if r["workflow"] == "reset-child"]
    assert len(child_runs) == 2, (children, child_runs)  # the reset started a child of its own
    newest = shown(env, child_runs[0]["run_id"])
    original_child = child_line.removeprefix("child look ")
    assert newest["steps"]["look"]["replayed_from"] == original_child
    assert newest["cost_usd"] == 0
