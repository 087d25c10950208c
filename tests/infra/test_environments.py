"""The app synthesizes in every environment: as `cdk deploy` runs it (a concrete account and
region, from the credentials), as `cdk synth` without credentials runs it (agnostic), in a second
region, and with every ARN in the stack's partition.

cdk-nag and cfn-lint run on each of these synths (tests/infra/test_nag_and_lint.py); here are the
hand-built ARNs and acknowledgements that used to hold in one mode only.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.infra.conftest import CONFIGURED_CONTEXT
from tests.infra.synth import EU_CENTRAL_1, US_EAST_1, Synthesized

GIVEN_ARNS = (CONFIGURED_CONTEXT["switchyard:dashboardDomain"]["certificateArn"],)
"""ARNs the operator's settings name: written as given, whatever their partition."""

SYNTHESIZED = ["platform", "platform_agnostic", "corpus", "configured"]


def _written(template: dict[str, Any]) -> str:
    """The template without its `Mappings`: CDK's tables keyed by partition (the rotation
    application's ARN in `aws`, `aws-cn`, ...) name every partition on purpose."""
    written = json.dumps({k: v for k, v in template.items() if k != "Mappings"})
    for arn in GIVEN_ARNS:
        written = written.replace(arn, "")
    return written


def _acknowledged(template: dict[str, Any]) -> list[str]:
    return [
        rule["id"]
        for resource in template["Resources"].values()
        for rule in resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])
    ]


@pytest.mark.slow
def test_cdk_deploy_account_and_region_come_from_the_process_environment(
    monkeypatch: pytest.MonkeyPatch, platform: Synthesized
) -> None:
    from infra.app import build_app

    for name, value in EU_CENTRAL_1.items():
        monkeypatch.setenv(name, value)
    app = build_app(context={"switchyard:root": str(platform.root)})
    stack = app.node.find_child("Switchyard")
    assert (stack.account, stack.region) == ("210987654321", "eu-central-1")


@pytest.mark.parametrize("which", ["platform", "platform_agnostic"])
def test_a_parents_acknowledgement_of_its_childs_executions_names_the_synths_region(
    which: str, request: pytest.FixtureRequest
) -> None:
    synthesized: Synthesized = request.getfixturevalue(which)
    where = (
        "us-east-1:123456789012"
        if synthesized.environ == US_EAST_1
        else "<AWS::Region>:<AWS::AccountId>"
    )
    acknowledged = _acknowledged(synthesized.workflow_stack("document-processing"))
    assert (
        "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:states:"
        f"{where}:execution:Switchyard-summarize-document:*]"
    ) in acknowledged


@pytest.mark.parametrize("which", SYNTHESIZED)
def test_no_arn_is_written_for_one_partition(which: str, request: pytest.FixtureRequest) -> None:
    """Not `arn:aws:`: in China (`aws-cn`) and GovCloud (`aws-us-gov`) the partition differs.
    Definitions' service integrations too: `arn:${AwsPartition}:states:::lambda:invoke`."""
    synthesized: Synthesized = request.getfixturevalue(which)
    for stack, template in synthesized.templates.items():
        assert "arn:aws:" not in _written(template), stack
    machines = synthesized.resources("AWS::StepFunctions::StateMachine")
    assert machines
    for machine in machines.values():
        properties = machine["Properties"]
        assert properties["DefinitionSubstitutions"]["AwsPartition"] == {"Ref": "AWS::Partition"}


@pytest.mark.parametrize("which", SYNTHESIZED)
def test_a_concrete_synth_names_only_its_own_region_and_account(
    which: str, request: pytest.FixtureRequest
) -> None:
    """What the stack builds is in the deploying region and account (an agnostic synth names
    none); a region or account in the configuration (the `configured` app sends to a queue in
    eu-west-1) is the user's."""
    synthesized: Synthesized = request.getfixturevalue(which)
    text = "".join(_written(t) for t in synthesized.templates.values())
    for users in ("sqs.eu-west-1.amazonaws.com/123456789012", "eu-west-1:123456789012"):
        text = text.replace(users, "")  # the configured app's queue (a tool's argument)
    regions = set(re.findall(r"\b[a-z]{2}-[a-z]+-\d\b", text))
    accounts = set(re.findall(r"(?<![\w.])\d{12}(?![\w.])", text))
    if synthesized.region is None:
        assert (regions, accounts) == (set(), set())
    else:
        assert regions == {synthesized.region}
        assert accounts == {synthesized.account}
