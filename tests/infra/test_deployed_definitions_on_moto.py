"""What is deployed is what was tested: the synthesized definitions, substitutions applied, run
the scenario corpus on moto's Step Functions interpreter and meet the same expectations."""

from __future__ import annotations

import json

import pytest

from switchyard.compile import compile_workflow
from switchyard.contract import placeholders_in
from tests.infra.resolve import DEAD_LETTER_QUEUE_URL, FakeAws, machines_by_workflow, properties_of
from tests.infra.synth import Synthesized
from tests.scenarios.harness.moto_runner import function_arns, run_on_moto, substitute
from tests.scenarios.harness.outcome import check
from tests.scenarios.harness.scenario import Scenario

REPRESENTATIVE = [
    "gate-approved-with-edits",  # a gate, approved with edits
    "gate-escalated",  # a gate timing out to its second tier
    "map-of-sub-workflows",  # a map of pinned sub-workflows (startExecution.sync:2)
    "sub-workflow",  # one sub-workflow
    "sub-workflow-linear-retry",  # a child's live alias from its stack, retried in a wait loop
    "timeout-fails-the-run",  # a step's timeout failing the run as `timeout`
    "retry-exhausted-fallback",  # retries, then the fallback step
    "budget-pause-resume",  # a budget pause gate, resumed
    "llm-router",  # router_step
    "on-error-pause-resume",  # on_error: pause
    "merge-strategies",  # joins, a render Task and a child
    "human-required",  # a step that needs a person
]


def deployed_definitions(corpus: Synthesized, scenario: Scenario) -> dict[str, str]:
    fake = FakeAws(corpus)
    machines = machines_by_workflow(corpus)
    names = [w.name for w in (*scenario.children, scenario.workflow)]
    return {name: fake.definition(machines[name]) for name in names}


def test_every_corpus_workflow_is_deployed_with_every_placeholder_substituted(
    corpus: Synthesized, scenarios: dict[str, Scenario]
) -> None:
    fake = FakeAws(corpus)
    machines = machines_by_workflow(corpus)
    expected = {w.name for s in scenarios.values() for w in (*s.children, s.workflow)}
    assert set(machines) == expected
    for name, located in machines.items():
        machine = properties_of(corpus, located)
        assert set(placeholders_in(machine["DefinitionString"])) == set(
            machine["DefinitionSubstitutions"]
        ), name
        assert "${" not in fake.definition(located), name


@pytest.mark.parametrize("case", REPRESENTATIVE)
def test_the_deployed_definition_is_the_compiled_one(
    corpus: Synthesized, scenarios: dict[str, Scenario], case: str
) -> None:
    """Substituted the harness's way, the deployed text and the compiler's text are one machine."""
    scenario = scenarios[case]
    deployed = deployed_definitions(corpus, scenario)
    values = {**function_arns(), "${DeadLetterQueueUrl}": DEAD_LETTER_QUEUE_URL}
    for child in scenario.children:
        arn = f"arn:aws:states:us-east-1:123456789012:stateMachine:{child.name}"
        values[f"${{{''.join(p.capitalize() for p in child.name.split('-'))}StateMachineArn}}"] = (
            arn
        )
        values[
            f"${{{''.join(p.capitalize() for p in child.name.split('-'))}V{child.version}"
            "StateMachineArn}"
        ] = arn
    compiled = substitute(compile_workflow(scenario.workflow).text, values)
    assert json.loads(deployed[scenario.workflow.name]) == json.loads(compiled)


@pytest.mark.slow
@pytest.mark.parametrize("case", REPRESENTATIVE)
def test_the_deployed_definition_runs_the_scenario_on_moto(
    corpus: Synthesized, scenarios: dict[str, Scenario], case: str
) -> None:
    scenario = scenarios[case]
    outcome = run_on_moto(scenario, definitions=deployed_definitions(corpus, scenario))
    check(outcome, scenario.expect)
