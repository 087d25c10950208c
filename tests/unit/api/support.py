"""The test bed: a real engine on PostgreSQL running the real step functions (`functions/`),
with model and tool answers from scripts, and the REST API served on a free port in front of it.

The workflows directory holds customer-support (with its script), the scenario corpus's
on-error-pause workflow, a run budget smaller than one call's estimate, a one-step `noop`, and a
file that does not validate."""

from __future__ import annotations

import shutil
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from switchyard.api import RestApiServer, rest_api_in_thread
from switchyard.constants import DATABASE_URL_ENV, LLM_SCRIPT_ENV
from switchyard.engine.dispatch import FunctionRegistry
from switchyard.engine.engine import Engine
from switchyard.engine.remote import CommandListener
from switchyard.local.stack import local_engine
from switchyard.runtime import wiring
from tests.conftest import REPO, WORKFLOWS

SCENARIOS = REPO / "tests" / "scenarios" / "cases"
CUSTOMER_SUPPORT_INPUT = yaml.safe_load(
    (WORKFLOWS / "inputs" / "customer-support.json").read_text()
)

NOOP = """\
switchyard: 1
name: noop
version: 1
inputs:
  n: {type: integer, default: 0}
steps:
  touch:
    type: tool
    tool: http.request
    args: {method: GET, url: "https://example.com/{{ inputs.n }}"}
"""
NOOP_SCRIPT = {"touch": [{"output": {"status": 200, "headers": {}, "body": None}}]}
BUDGET_PAUSE = """\
switchyard: 1
name: budget-pause
version: 1
budget: {max_cost_usd: 0.00005}
defaults: {model: claude-haiku-4-5}
steps:
  pricey: {type: agent, prompt: pricey}
"""
"""$0.00005 pays for no useful answer (10 haiku output tokens): the step is refused before it
calls the model, and the run pauses until its budget is raised."""
BUDGET_PAUSE_SCRIPT = {"pricey": [{"text": "worth it"}]}
INVALID = """\
switchyard: 1
name: broken
version: 1
steps:
  a: {type: agent, prompt: hi, after: [nowhere]}
"""
CONTINUED = """\
switchyard: 1
name: long-refine
version: 1
defaults: {model: claude-haiku-4-5}
steps:
  refine:
    type: loop
    max_iterations: 9
    until: output.score >= 0.8
    continue_as_new: {after: 2}
    step:
      type: agent
      prompt: "improve on {{ previous }}"
      output_schema: {type: object, properties: {score: {type: number}}, required: [score]}
"""
"""A loop that continues as new every 2 iterations: 5 iterations are 3 segments."""
CONTINUED_SCRIPT = {"refine": [{"output": {"score": s}} for s in (0.1, 0.2, 0.3, 0.4, 0.9)]}
FINAL = {"succeeded", "failed", "cancelled", "timed_out"}


@dataclass
class Stack:
    engine: Engine
    server: RestApiServer
    scripts: Path
    reports: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.server.url

    def client(self, **headers: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def script_header(self, workflow: str) -> dict[str, str]:
        return {"X-Switchyard-LLM-Script": f"{workflow}.yaml"}


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def start(
    client: httpx.Client,
    stack: Stack,
    workflow: str,
    data: Any,
    *,
    key: str | None = None,
    script: bool = True,
) -> httpx.Response:
    headers = stack.script_header(workflow) if script else {}
    if key is not None:
        headers["Idempotency-Key"] = key
    return client.post(f"/workflows/{workflow}/runs", json=data, headers=headers)


def wait_for(
    client: httpx.Client, run_id: str, statuses: set[str], timeout: float = 20.0
) -> dict[str, Any]:
    """GET /runs/{run_id} until its status is one of `statuses` (and, for waiting and paused,
    its gate is open)."""
    deadline = time.monotonic() + timeout
    while True:
        answer = client.get(f"/runs/{run_id}")
        assert answer.status_code == 200, answer.text
        run: dict[str, Any] = answer.json()
        # a run is waiting (or paused) a moment before approval_notify has opened its gate
        parked = run["status"] in ("waiting", "paused")
        if run["status"] in statuses and (run["waiting_for"] or not parked):
            return run
        if run["status"] in FINAL or time.monotonic() > deadline:
            raise AssertionError(f"run {run_id} is {run['status']}, not one of {statuses}: {run}")
        time.sleep(0.02)


def _scenario(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text())
    return data


def write_workflows(directory: Path, scripts: Path) -> None:
    shutil.copy(WORKFLOWS / "customer-support.yaml", directory / "customer-support.yaml")
    shutil.copy(WORKFLOWS / "scripts" / "customer-support.yaml", scripts / "customer-support.yaml")
    scenario = _scenario("on-error-pause-resume")
    (directory / "pause.yaml").write_text(yaml.safe_dump(scenario["workflow"]))
    (scripts / "pause.yaml").write_text(yaml.safe_dump(scenario["script"]))
    (directory / "budget-pause.yaml").write_text(BUDGET_PAUSE)
    (scripts / "budget-pause.yaml").write_text(yaml.safe_dump(BUDGET_PAUSE_SCRIPT))
    (directory / "noop.yaml").write_text(NOOP)
    (directory / "long-refine.yaml").write_text(CONTINUED)
    (scripts / "long-refine.yaml").write_text(yaml.safe_dump(CONTINUED_SCRIPT))
    (scripts / "noop.yaml").write_text(yaml.safe_dump(NOOP_SCRIPT))
    (directory / "broken.yaml").write_text(INVALID)


def _clear_handler_caches(*, close: bool = False) -> None:
    """The handlers build their services once per process (as on Lambda): build them anew;
    `close` closes this package's pool first (the engine has stopped calling the handlers)."""
    if close:
        pool = wiring.database_pool()
        if pool is not None:
            pool.close()
    wiring.step_services.cache_clear()
    wiring.database_pool.cache_clear()
    notify = sys.modules.get("switchyard_functions.approval_notify.handler")
    if notify is not None:
        notify._store.cache_clear()


@contextmanager
def handler_environment(conninfo: str) -> Iterator[None]:
    """What the in-process step functions read, as `switchyard dev` sets it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(DATABASE_URL_ENV, conninfo)
        patch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
        patch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
        patch.setenv("POWERTOOLS_LOG_LEVEL", "WARNING")
        patch.delenv(LLM_SCRIPT_ENV, raising=False)
        patch.delenv("ANTHROPIC_API_KEY", raising=False)
        _clear_handler_caches()
        try:
            yield
        finally:
            _clear_handler_caches(close=True)


@contextmanager
def start_stack(
    conninfo: str,
    root: Path,
    *,
    token: str | None = None,
    workflows: Mapping[str, str] | None = None,
) -> Iterator[Stack]:
    """The test bed; `workflows` (file name -> YAML) are installed beside the usual ones."""
    directory = root / "workflows"
    scripts = directory / "scripts"  # the server's scripts directory (its default place)
    directory.mkdir()
    scripts.mkdir()
    write_workflows(directory, scripts)
    for name, text in (workflows or {}).items():
        (directory / name).write_text(text)
    reports: list[str] = []
    with handler_environment(conninfo):
        engine = local_engine(conninfo, registry=FunctionRegistry(), workers=8)
        engine.start()
        listener = CommandListener(conninfo, engine.submit)  # as every engine process has
        listener.start()
        try:
            with rest_api_in_thread(
                engine, workflows_dir=directory, token=token, report=reports.append
            ) as server:
                yield Stack(engine, server, scripts, reports)
        finally:
            listener.close()
            engine.close()
