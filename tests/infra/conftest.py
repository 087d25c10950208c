"""One synthesized app per session for each set of machines (a synth takes a few seconds)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from switchyard.compile import compile_workflow
from switchyard.source import load_document
from switchyard.validate import validate_file
from tests.infra.synth import (
    AGNOSTIC,
    EU_CENTRAL_1,
    REPO,
    US_EAST_1,
    Synthesized,
    make_repository,
    synthesize,
)
from tests.scenarios.harness.scenario import Scenario, load_scenario

FIXTURES = Path(__file__).parent / "fixtures"
SHOWCASE = FIXTURES / "trigger-showcase.yaml"
TOOL_SHOWCASE = FIXTURES / "tool-showcase.yaml"
CONTINUE_SHOWCASE = FIXTURES / "continue-showcase.yaml"
CASES = sorted((REPO / "tests" / "scenarios" / "cases").glob("*.yaml"))
CORPUS_CONTEXT = {"switchyard:emailFrom": "Support <support@example.com>"}
"""A corpus workflow (gate-approved-with-edits) sends email without `from`: the stack needs a
default sender. The repository's examples name theirs, so the platform needs no context."""
CONFIGURED_CONTEXT: dict[str, Any] = {
    "switchyard:httpAllowedHosts": ["crm.example.com", "*.example.org"],
    "switchyard:sqlConnections": {"ledger": "prod/ledger", "unused": "prod/unused"},
    "switchyard:tenantDailyLimits": {"acme": 50, "default": 200},
    "switchyard:tenantQuotas": {"acme": {"claude-sonnet-4-5": {"tokens_per_minute": 400000}}},
    "switchyard:circuitBreakers": {"failure_rate": 0.25, "open_seconds": 10},
    "switchyard:modelPrices": {"claude-haiku-4-5": {"input": 1.1, "output": 5.5}},
    "switchyard:emailFrom": "noreply@example.com",
    "switchyard:toolResources": {
        "tool-showcase": {"file_report": {"s3.put": ["reports-*/reports/*"]}}
    },
    "switchyard:roles": {
        "lead": [{"name": "dana", "email": "dana@example.com", "slack": "U024BE7LH"}]
    },
    "switchyard:slack": True,
    "switchyard:dashboardDomain": {
        "name": "dash.example.com",
        "certificateArn": (
            "arn:aws:acm:us-east-1:210987654321:certificate/1b2c3d4e-0000-4000-8000-00000000abcd"
        ),
    },
}
"""Every runtime setting, for the tool showcase."""


def _platform_repository(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """The repository's workflows plus one with every kind of trigger and one whose loop
    continues as new (its machine starts itself)."""
    machines = {
        p.name.removesuffix(".asl.json"): p.read_text()
        for p in (REPO / "statemachines").glob("*.asl.json")
    }
    workflows = {p.name: p.read_text() for p in (REPO / "workflows").glob("*.yaml")}
    for path in (SHOWCASE, CONTINUE_SHOWCASE):
        showcase = validate_file(path).workflow
        assert showcase is not None
        machines[showcase.name] = compile_workflow(showcase).text
        workflows[path.name] = path.read_text()
    root, _ = make_repository(tmp_path_factory.mktemp(name), machines, workflows)
    return root


@pytest.fixture(scope="session")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """The repository's workflows plus one with every kind of trigger, synthesized with no
    context at all, as a newcomer's first `cdk deploy` does: with the account and region the
    CDK CLI takes from the credentials."""
    return synthesize(_platform_repository(tmp_path_factory, "platform"), environ=US_EAST_1)


@pytest.fixture(scope="session")
def platform_agnostic(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """The same, as `cdk synth` without credentials does: environment-agnostic."""
    return synthesize(_platform_repository(tmp_path_factory, "agnostic"), environ=AGNOSTIC)


@pytest.fixture(scope="session")
def configured(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """The tool showcase alone, with every runtime setting in context, in a second region and
    account (`eu-central-1`)."""
    workflow = validate_file(TOOL_SHOWCASE).workflow
    assert workflow is not None
    root, _ = make_repository(
        tmp_path_factory.mktemp("configured"),
        {workflow.name: compile_workflow(workflow).text},
        {TOOL_SHOWCASE.name: TOOL_SHOWCASE.read_text()},
    )
    return synthesize(root, environ=EU_CENTRAL_1, **CONFIGURED_CONTEXT)


@pytest.fixture(scope="session")
def scenarios() -> dict[str, Scenario]:
    return {p.stem: load_scenario(p) for p in CASES}


@pytest.fixture(scope="session")
def corpus(
    tmp_path_factory: pytest.TempPathFactory, scenarios: dict[str, Scenario]
) -> Iterator[Synthesized]:
    """The scenario corpus (each workflow and its children) compiled into `statemachines/`, their
    YAML in `workflows/` (a later scenario's workflow of the same name replaces an earlier one's,
    machine and file alike). Environment-agnostic."""
    machines: dict[str, str] = {}
    files: dict[str, str] = {}
    for path in CASES:
        scenario, data = scenarios[path.stem], load_document(path.read_text()).data
        documents = [*data.get("children", []), data["workflow"]]
        for workflow, document in zip(
            (*scenario.children, scenario.workflow), documents, strict=True
        ):
            machines[workflow.name] = compile_workflow(workflow).text
            files[f"{workflow.name}.yaml"] = yaml.safe_dump(document, sort_keys=False)
    root, _ = make_repository(tmp_path_factory.mktemp("corpus"), machines, files)
    yield synthesize(root, environ=AGNOSTIC, **CORPUS_CONTEXT)
