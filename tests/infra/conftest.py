"""One synthesized app per session for each set of machines (a synth takes a few seconds)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from switchyard.compile import compile_workflow
from switchyard.validate import validate_file
from tests.infra.synth import REPO, Synthesized, make_repository, synthesize
from tests.scenarios.harness.scenario import Scenario, load_scenario

FIXTURES = Path(__file__).parent / "fixtures"
SHOWCASE = FIXTURES / "trigger-showcase.yaml"
CASES = sorted((REPO / "tests" / "scenarios" / "cases").glob("*.yaml"))


@pytest.fixture(scope="session")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """The repository's workflows plus one with every kind of trigger."""
    machines = {
        p.name.removesuffix(".asl.json"): p.read_text()
        for p in (REPO / "statemachines").glob("*.asl.json")
    }
    workflows = {p.name: p.read_text() for p in (REPO / "workflows").glob("*.yaml")}
    showcase = validate_file(SHOWCASE).workflow
    assert showcase is not None
    machines[showcase.name] = compile_workflow(showcase).text
    workflows[SHOWCASE.name] = SHOWCASE.read_text()
    root, _ = make_repository(tmp_path_factory.mktemp("platform"), machines, workflows)
    return synthesize(root)


@pytest.fixture(scope="session")
def scenarios() -> dict[str, Scenario]:
    return {p.stem: load_scenario(p) for p in CASES}


@pytest.fixture(scope="session")
def corpus(
    tmp_path_factory: pytest.TempPathFactory, scenarios: dict[str, Scenario]
) -> Iterator[Synthesized]:
    """The scenario corpus (each workflow and its children) compiled into `statemachines/`."""
    machines: dict[str, str] = {}
    for scenario in scenarios.values():
        for workflow in (*scenario.children, scenario.workflow):
            machines[workflow.name] = compile_workflow(workflow).text
    root, _ = make_repository(tmp_path_factory.mktemp("corpus"), machines, {})
    yield synthesize(root)
