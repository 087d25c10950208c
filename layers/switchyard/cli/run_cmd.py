"""`switchyard run FILE`: run one workflow on the local engine and follow it to the end."""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from switchyard.cli.common import CommandError, money, read_json_argument, say
from switchyard.cli.exit_codes import ExitCode
from switchyard.cli.validate_cmd import exit_code as validation_exit_code
from switchyard.cli.validate_cmd import validate_paths
from switchyard.constants import API_KEY_ENV, LLM_SCRIPT_ENV
from switchyard.contract import PRIORITY_KEY
from switchyard.engine.store import EngineStore
from switchyard.gates import Decision, GateDecisionError, GateStore, decide
from switchyard.gates.model import Gate
from switchyard.local.database import open_database
from switchyard.local.engine_client import EngineClient, connect, start_background_engine
from switchyard.local.model_access import has_model_credentials, needs_model
from switchyard.local.report import RunView, run_view
from switchyard.local.workflows import WorkflowFileError, install
from switchyard.model import PRIORITIES
from switchyard.platform.run_start import InvalidRunInputError, check_inputs
from switchyard.runtime.providers import load_script
from switchyard.stores.tool_calls import PostgresDecisionStore

FINAL = {
    "succeeded": ExitCode.OK,
    "failed": ExitCode.FAILED,
    "cancelled": ExitCode.FAILED,
    "timed_out": ExitCode.FAILED,
}
SYMBOL = {"completed": "✓", "skipped": "-", "failed": "✗", "running": "…", "waiting": "⏸"}


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "run",
        help="run a workflow on the local engine and follow it to the end",
        description="Run one workflow on the local engine (embedded PostgreSQL unless "
        "DATABASE_URL is set), showing steps, attempts, cost and tokens as they happen.",
    )
    parser.add_argument("file", metavar="FILE")
    parser.add_argument("--input", metavar="JSON|@FILE", help="the run's input")
    parser.add_argument(
        "--llm-script", metavar="FILE", help="answer agent and router steps from a script"
    )
    parser.add_argument(
        "--approve",
        action="append",
        default=[],
        metavar="STEP[=NOTE]",
        help="approve this gate when it opens",
    )
    parser.add_argument(
        "--reject",
        action="append",
        default=[],
        metavar="STEP[=NOTE]",
        help="reject this gate when it opens",
    )
    parser.add_argument(
        "--priority",
        choices=PRIORITIES,
        help="the run's priority, over its workflow's (docs/operations.md)",
    )
    parser.add_argument("--detach", action="store_true", help="start the run and return at once")
    parser.add_argument("--json", action="store_true", help="print the run as JSON at the end")
    parser.add_argument(
        "--reviewer",
        default=os.environ.get("USER", "cli"),
        help="who decides gates (default $USER)",
    )
    parser.set_defaults(handler=run)


def _decisions(values: list[str], action: str) -> dict[str, Decision]:
    found: dict[str, Decision] = {}
    for value in values:
        step, _, note = value.partition("=")
        found[step] = Decision(action=action, reviewer="", note=note or None)  # type: ignore[arg-type]
    return found


def run(args: argparse.Namespace) -> int:
    path = Path(args.file)
    results = validate_paths([path])
    for diagnostic in results[0].diagnostics:
        print(diagnostic.format(), file=sys.stderr)
    code = validation_exit_code(results)
    if code != ExitCode.OK:
        return code
    workflow = results[0].workflow
    assert workflow is not None
    data = read_json_argument(args.input, "the input") or {}
    try:
        data = check_inputs(workflow.inputs, data)
    except InvalidRunInputError as exc:
        raise CommandError("invalid run input: " + "; ".join(exc.problems)) from None
    if args.priority:
        data = {**data, PRIORITY_KEY: args.priority}
    script_path = args.llm_script or os.environ.get(LLM_SCRIPT_ENV)
    script: dict[str, Any] | None = None
    if script_path:
        try:
            script = load_script(script_path)
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot read the model script {script_path}: {exc}") from None
    elif needs_model([workflow]) and not has_model_credentials():
        raise CommandError(
            f"{path} has agent or LLM router steps, and no model credentials are set: set "
            f"{API_KEY_ENV} (or AWS credentials for provider bedrock), or answer from a script "
            "with --llm-script FILE (format: docs/cli.md)"
        )
    database = open_database()
    with psycopg.connect(database.conninfo, autocommit=True) as conn:
        from switchyard.engine.arns import Arns
        from switchyard.engine.store import EngineStore

        try:
            installed = install(EngineStore(conn), Arns(), path)
        except WorkflowFileError as exc:
            raise CommandError(str(exc), ExitCode.FAILED) from None
    run_id = f"run-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"
    client = connect(database.conninfo)
    options = {"llm_script": script} if script else {}
    say(f"▶ {workflow.name} v{workflow.version} · run {run_id} · {database.description}")
    if script:
        say(f"  model answers: scripted ({script_path}); no model is called")
    started = time.monotonic()
    try:
        arn = client.start_execution(installed.version_arn, run_id, data, options)
        view, stopped_early = _follow(database.conninfo, client, arn, args)
    finally:
        in_process = client.in_process
        client.close()
    if stopped_early and in_process:
        start_background_engine(database.conninfo)
        say("  a background engine goes on with the run (switchyard engine status)")
    elif in_process:  # closing counted what map items still running when the run ended spent
        view = _view(database.conninfo, arn)
    return _finish(view, args, time.monotonic() - started, run_id)


def _view(conninfo: str, arn: str) -> RunView:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = EngineStore(conn).execution_row(arn=arn)
        assert row is not None
        return run_view(conn, row.id)


def _follow(
    conninfo: str, client: EngineClient, arn: str, args: argparse.Namespace
) -> tuple[RunView, bool]:
    approvals = _decisions(args.approve, "approve") | _decisions(args.reject, "reject")
    shown: dict[str, tuple[str, int]] = {}
    handled: set[str] = set()
    with ConnectionPool(conninfo, min_size=1, max_size=2, kwargs={"autocommit": True}) as pool:
        gates = GateStore(pool)
        decisions = PostgresDecisionStore(pool)
        while True:
            with pool.connection() as conn:
                row = EngineStore(conn).execution_row(arn=arn)
                assert row is not None
                view = run_view(conn, row.id)
            _show_steps(view, shown)
            if view.status in FINAL:
                return view, False
            if args.detach:
                return view, True
            for gate in view.gates:
                if gate.id in handled:
                    continue
                handled.add(gate.id)
                if not _answer(gate, approvals, args, gates, decisions, client):
                    _explain_waiting(view, gate)
                    return view, True
            time.sleep(0.05)


def _answer(
    gate: Gate,
    approvals: dict[str, Decision],
    args: argparse.Namespace,
    gates: GateStore,
    decisions: PostgresDecisionStore,
    client: EngineClient,
) -> bool:
    say(
        f"  ⏸ {gate.step_id:<16} {gate.kind} gate for {gate.assignee or 'an operator'}:"
        f" {gate.message or ''}"
    )
    for key, value in (gate.show or {}).items():
        say(f"      {key}: {_short(value)}")
    decision = approvals.get(gate.step_id) if gate.kind in ("approval", "human") else None
    if decision is None and sys.stdin.isatty() and gate.kind in ("approval", "human"):
        decision = _ask(gate)
    if decision is None:
        return False
    decision.reviewer = args.reviewer
    try:
        decide(gate, decision, store=gates, callbacks=client, decisions=decisions)
    except GateDecisionError as exc:
        say(f"  cannot decide {gate.step_id}: {exc}")
        return False
    done = {"approve": "approved", "reject": "rejected"}[decision.action]
    say(f"  → {done} by {decision.reviewer}" + (f": {decision.note}" if decision.note else ""))
    return True


def _ask(gate: Gate) -> Decision | None:
    while True:
        answer = (
            input(f"  {gate.step_id}: [a]pprove, [r]eject, or [l]eave it waiting? ").strip().lower()
        )
        if answer in ("a", "approve"):
            return Decision("approve", "")
        if answer in ("r", "reject"):
            note = input("  note for the reject (optional): ").strip()
            return Decision("reject", "", note=note or None)
        if answer in ("l", "leave", ""):
            return None


def _explain_waiting(view: RunView, gate: Gate) -> None:
    run_id = view.data["run_id"]
    if gate.kind in ("pause", "budget"):
        say(f"  the run is paused: switchyard resume {run_id} (or switchyard cancel {run_id})")
    else:
        say(f"  decide with: switchyard approve {run_id} {gate.step_id}  (or reject)")


def _show_steps(view: RunView, shown: dict[str, tuple[str, int]]) -> None:
    for step_id, step in view.data["steps"].items():
        key = (step["status"], step["attempts"])
        if shown.get(step_id) == key:
            continue
        shown[step_id] = key
        if step["status"] == "waiting":
            continue  # the gate line says more
        attempts = step["attempts"]
        tokens = step["tokens"]
        detail = f"{attempts} attempt{'s' if attempts != 1 else ''}" if attempts else ""
        if step["cost_usd"] or tokens["input"]:
            detail += (
                f"  {money(step['cost_usd'])}  {tokens['input']:,}→{tokens['output']:,} tokens"
            )
        if step.get("replayed_from"):
            detail += f"  replayed from {step['replayed_from']}"
        if step["status"] == "failed" and step.get("error"):
            error = step["error"]
            detail += f"  {error.get('type', 'error')}" if isinstance(error, dict) else ""
        symbol = SYMBOL.get(step["status"], "?")
        say(f"  {symbol} {step_id:<16} {step['status']:<10} {detail}".rstrip())


def _finish(view: RunView, args: argparse.Namespace, seconds: float, run_id: str) -> int:
    data = view.data
    if args.json:
        print(json.dumps(data, indent=2, default=str))
    status = data["status"]
    tokens = data["tokens"]
    summary = (
        f"{status} in {seconds:.1f}s · {money(data['cost_usd'])} · "
        f"{tokens['input']:,}→{tokens['output']:,} tokens"
    )
    if status in FINAL:
        say(("✓ " if status == "succeeded" else "✗ ") + summary)
        if data.get("error"):
            error = data["error"]
            say(
                f"  error: {error.get('type')} at {error.get('step')}:"
                f" {_short(error.get('message'), 300)}"
            )
        elif not args.json and data.get("output") is not None:
            say("  output: " + _short(data["output"], 400))
        return FINAL[status]
    say(f"⏸ {status}: the run goes on in the background engine · switchyard runs show {run_id}")
    if status == "running":
        return ExitCode.OK
    return ExitCode.WAITING


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
