"""Every scenario runs on moto's Step Functions interpreter (independent of us) and on
switchyard's engine; both meet the scenario's expectations and agree with each other on the
status, the output, every step's status and the set of states entered."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from switchyard.local.stack import local_engine
from tests.scenarios.harness.engine_runner import run_on_engine, scripted_registry
from tests.scenarios.harness.moto_runner import run_on_moto
from tests.scenarios.harness.outcome import Outcome, check
from tests.scenarios.harness.scenario import load_scenario
from tests.scenarios.harness.scripted import ScriptedFunctions

CASES = sorted((Path(__file__).parent / "cases").glob("*.yaml"))


def _on_engine(conninfo: str, path: Path) -> Outcome:
    scenario = load_scenario(path)
    functions = ScriptedFunctions(scenario.script)
    engine = local_engine(conninfo, registry=scripted_registry(functions))
    engine.start()
    try:
        return run_on_engine(engine, scenario, functions, prefix=path.stem)
    finally:
        engine.close()


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_scenario_on_moto_and_on_the_engine(path: Path, pg_conninfo: str) -> None:
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    scenario = load_scenario(path)
    on_moto = run_on_moto(scenario)
    check(on_moto, scenario.expect)
    on_engine = _on_engine(pg_conninfo, path)
    check(on_engine, scenario.expect)
    assert on_engine.status == on_moto.status
    assert on_engine.output == on_moto.output
    # moto's DescribeExecution drops the error and cause of a stop and of a timeout
    if on_moto.status not in ("cancelled", "timed_out"):
        assert on_engine.error == on_moto.error
    elif on_moto.status == "timed_out":
        assert on_engine.error == "States.Timeout"
    assert on_engine.step_statuses() == on_moto.step_statuses()
    assert set(on_engine.states_entered) == set(on_moto.states_entered)
    assert on_engine.calls == on_moto.calls
