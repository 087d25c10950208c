"""Physical names carry the stack's name and fit AWS's limits; environments fit Lambda's 4 KB."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from infra.environment_limit import LIMIT_BYTES, TOKEN_BYTES, environment_problem
from infra.names import (
    LOG_GROUP,
    QUEUE,
    STATE_MACHINE,
    NameLimitError,
    check,
    fit,
)
from switchyard.constants import TENANT_DAILY_LIMITS_ENV
from tests.infra.conftest import SHOWCASE
from tests.infra.synth import US_EAST_1, Synthesized, make_repository, synthesize

LONG_NAME = "trigger-showcase-" + "y" * (63 - len("trigger-showcase-"))
"""The longest workflow name the format allows: 63 characters."""
NAMED = {
    "AWS::StepFunctions::StateMachine": "StateMachineName",
    "AWS::Logs::LogGroup": "LogGroupName",
    "AWS::SQS::Queue": "QueueName",
    "AWS::Events::EventBus": "Name",
    "AWS::RDS::DBCluster": "DBClusterIdentifier",
    "AWS::CloudWatch::Dashboard": "DashboardName",
    "AWS::ApiGatewayV2::Api": "Name",
}
"""Every resource type the stack names itself, and the property that holds the name."""


def physical_names(synthesized: Synthesized) -> dict[str, str]:
    """`<type> <logical id>` -> the name, with CloudFormation's parts as `<...>`."""
    from infra.nag import _flatten

    names = {}
    for kind, key in NAMED.items():
        for logical_id, resource in synthesized.resources(kind).items():
            value = resource["Properties"].get(key)
            if value is not None:
                names[f"{kind} {logical_id}"] = _flatten(value)
    return names


def _repository(tmp_path: Path, text: str) -> Path:
    from switchyard.compile import compile_workflow
    from switchyard.validate import validate_text

    workflow = validate_text(text).workflow
    assert workflow is not None
    root, _ = make_repository(
        tmp_path, {workflow.name: compile_workflow(workflow).text}, {SHOWCASE.name: text}
    )
    return root


# --- the rules ---------------------------------------------------------------------------------


def test_a_name_within_the_limit_is_kept() -> None:
    assert fit("Switchyard-customer-support", STATE_MACHINE) == "Switchyard-customer-support"


def test_a_name_over_the_limit_is_cut_and_ends_in_a_hash_of_all_of_it() -> None:
    key = f"{LONG_NAME}-schedule-0"
    name = fit(f"Switchyard-{key}", STATE_MACHINE)
    assert len(f"Switchyard-{key}") == 85
    assert len(name) <= 80
    assert name == fit(f"Switchyard-{key}", STATE_MACHINE)  # the same from synth to synth
    assert name.startswith("Switchyard-trigger-showcase-yyy")
    assert re.fullmatch(r".+-[0-9a-f]{8}", name)
    other = fit(f"Switchyard-{LONG_NAME}-schedule-1", STATE_MACHINE)
    assert other != name  # names that differ only past the cut still differ


def test_a_name_a_person_chose_is_refused_saying_what_to_shorten() -> None:
    with pytest.raises(NameLimitError, match=r"SQS queue name .* has 91 characters; AWS allows 80"):
        check("x" * 91, QUEUE, "shorten the trigger's queue")
    with pytest.raises(NameLimitError, match="characters AWS does not allow"):
        check("/aws/vendedlogs/states/a b", LOG_GROUP, "rename it")


def test_an_environment_over_4_kb_names_its_largest_setting() -> None:
    variables: dict[str, Any] = {
        "SWITCHYARD_BUDGET_TABLE": {"Ref": "BudgetTable"},
        TENANT_DAILY_LIMITS_ENV: json.dumps({f"tenant-{i}": 10 for i in range(300)}),
    }
    problem = environment_problem("agent_step", variables)
    assert problem is not None
    assert "function agent_step" in problem
    assert f"Lambda allows {LIMIT_BYTES}" in problem
    assert f"the largest is {TENANT_DAILY_LIMITS_ENV}" in problem
    assert "switchyard:tenantDailyLimits" in problem
    small = {"SWITCHYARD_BUDGET_TABLE": {"Ref": "BudgetTable"}}
    assert environment_problem("agent_step", small) is None
    # A CloudFormation value counts as the longest it resolves to.
    tokens = {f"V{i:03}": {"Ref": "X"} for i in range(LIMIT_BYTES // (TOKEN_BYTES + 4) + 1)}
    assert environment_problem("agent_step", tokens) is not None


# --- the synthesized stacks --------------------------------------------------------------------


def test_every_name_carries_the_stacks_name_and_fits(platform: Synthesized) -> None:
    names = physical_names(platform)
    assert {n.split()[0] for n in names} == set(NAMED)
    for where, name in names.items():
        assert "Switchyard" in name or "switchyard" in name, where
    for where, name in names.items():
        if where.startswith("AWS::StepFunctions::StateMachine"):
            assert len(name) <= 80, where


def test_kept_log_groups_do_not_block_a_redeploy(platform: Synthesized) -> None:
    """A log group the stack names ends in a part of its stack's id, which a stack created
    after `cdk destroy` does not share: the kept groups' names are free of the new ones'."""
    named = {
        where: resource["Properties"]["LogGroupName"]
        for where, resource in platform.resources("AWS::Logs::LogGroup").items()
        if "LogGroupName" in resource["Properties"]
    }
    assert len(named) > 5  # machines, starters, the database's
    for where, name in named.items():
        assert '{"Ref": "AWS::StackId"}' in json.dumps(name), where


@pytest.mark.slow
def test_a_63_character_workflow_with_a_schedule_synthesizes(tmp_path: Path) -> None:
    text = SHOWCASE.read_text().replace("name: trigger-showcase", f"name: {LONG_NAME}")
    synthesized = synthesize(_repository(tmp_path, text), environ=US_EAST_1)
    machines = [n for w, n in physical_names(synthesized).items() if "StateMachine " in w]
    assert len(machines) == 4  # the workflow, the starters of its schedule, event and queue
    assert all(len(name) <= 80 for name in machines)
    assert f"Switchyard-{LONG_NAME}" in machines
    assert len(set(machines)) == len(machines)


@pytest.mark.slow
def test_two_stacks_in_one_account_share_no_name(tmp_path: Path) -> None:
    first = synthesize(_repository(tmp_path / "a", SHOWCASE.read_text()))
    second = synthesize(
        _repository(tmp_path / "b", SHOWCASE.read_text()),
        **{"switchyard:stackName": "Staging"},
    )
    first_names, second_names = physical_names(first), physical_names(second)
    assert len(first_names) == len(second_names) > 10
    assert set(first_names.values()).isdisjoint(second_names.values())
    for where, name in second_names.items():
        assert "Staging" in name or "staging" in name, where


@pytest.mark.slow
def test_a_function_environment_over_4_kb_fails_the_synth_naming_the_setting(
    tmp_path: Path,
) -> None:
    limits = {f"tenant-number-{i}": 10 for i in range(200)}
    with pytest.raises(
        RuntimeError,
        match=r"function agent_step: its environment variables take \d+ bytes, Lambda allows "
        r"4096; the largest is SWITCHYARD_TENANT_DAILY_LIMITS \(\d+ bytes\), from "
        r"switchyard:tenantDailyLimits",
    ):
        synthesize(
            _repository(tmp_path, SHOWCASE.read_text()),
            **{"switchyard:tenantDailyLimits": limits},
        )
