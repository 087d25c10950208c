"""Every scenario runs on moto's Step Functions interpreter and meets its expectations."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenarios.harness.moto_runner import run_on_moto
from tests.scenarios.harness.outcome import check
from tests.scenarios.harness.scenario import load_scenario

CASES = sorted((Path(__file__).parent / "cases").glob("*.yaml"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_scenario_on_moto(path: Path) -> None:
    scenario = load_scenario(path)
    outcome = run_on_moto(scenario)
    check(outcome, scenario.expect)
