"""Scenarios that moto's interpreter cannot run, on the engine only. Each says why.

- sub-workflow-retried: moto times out a retried `startExecution.sync:2` Task at once (its retry
  waits on the first attempt's ended frame), so the parent fails with `States.Timeout` although
  the new child succeeds. On AWS and on the engine the retry starts a new child and waits for it.
- sub-workflow-parent-times-out: moto does not stop a `.sync` child when its parent times out;
  the child's thread runs on and calls its next step's function after the scenario has ended.
  On AWS and on the engine the child is stopped (ABORTED) with its parent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenarios.harness.outcome import check
from tests.scenarios.harness.scenario import load_scenario
from tests.scenarios.test_scenarios import _on_engine

CASES = sorted((Path(__file__).parent / "engine_only").glob("*.yaml"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_scenario_on_the_engine(path: Path, pg_conninfo: str) -> None:
    check(_on_engine(pg_conninfo, path), load_scenario(path).expect)
