"""cdk-nag (AwsSolutions) and cfn-lint on the synthesized templates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk import aws_s3 as s3

from tests.infra.cfn_lint import cfn_lint
from tests.infra.synth import STACK, Synthesized


def acknowledgements(synthesized: Synthesized) -> list[dict[str, str]]:
    """Acknowledged findings, as cdk-nag writes them into each resource's Metadata (of every
    stack: the top-level one and each workflow's)."""
    found = []
    for template in synthesized.templates.values():
        for resource in template["Resources"].values():
            found += resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])
    # CDK's own CloudFormation checks acknowledge through the same channel; only ours count.
    return [a for a in found if "AwsSolutions" in a["id"]]


SYNTHESIZED = ["platform", "platform_agnostic", "corpus", "configured"]
"""Concrete us-east-1 (as `cdk deploy`), agnostic (as `cdk synth`), agnostic, eu-central-1."""


@pytest.mark.parametrize("which", SYNTHESIZED)
def test_each_app_passes_aws_solutions_checks(which: str, request: pytest.FixtureRequest) -> None:
    """The synth itself fails on any unacknowledged finding: the fixture got this far."""
    synthesized: Synthesized = request.getfixturevalue(which)
    report = json.loads((synthesized.root / "cdk.out" / "validation-report.json").read_text())
    assert all(r["conclusion"] == "success" for r in report["pluginReports"])


@pytest.mark.parametrize("which", SYNTHESIZED)
def test_every_acknowledgement_carries_a_reason(which: str, request: pytest.FixtureRequest) -> None:
    synthesized: Synthesized = request.getfixturevalue(which)
    found = acknowledgements(synthesized)
    assert found
    for acknowledgement in found:
        assert len(acknowledgement["reason"]) >= 60, acknowledgement
    rules = {a["id"].split("[")[0].split("::")[-1] for a in found}
    expected = {
        "AwsSolutions-IAM5",
        "AwsSolutions-S1",
        "AwsSolutions-SMG4",
        "AwsSolutions-SQS3",
        "AwsSolutions-APIG4",
        # the dashboard (infra/constructs/dashboard.py): geography and WAF left to the operator,
        # the *.cloudfront.net certificate's fixed policy, CDK's BucketDeployment runtime
        "AwsSolutions-CFR1",
        "AwsSolutions-CFR2",
        "AwsSolutions-CFR4",
        "AwsSolutions-L1",  # Python 3.13, not the newest runtime: docs/deploy.md, Cold starts
    }
    # Only the platform has a webhook (APIG4) and the default certificate (CFR4: the configured
    # app names its own); the others must not need other rules.
    assert rules == expected if which.startswith("platform") else rules <= expected


@pytest.mark.parametrize("where", ["top-level", "nested"])
def test_an_unacknowledged_finding_fails_the_synth(
    tmp_path: Path, platform: Synthesized, where: str
) -> None:
    """In the top-level stack, and in a workflow's nested stack: cdk-nag checks every stack."""
    from infra.app import build_app

    app = build_app(
        context={
            "switchyard:root": str(platform.root),
            "aws:cdk:bundling-stacks": [],
        },
        outdir=str(tmp_path / "cdk.out"),
    )
    stack = app.node.find_child(STACK)
    if where == "nested":
        stack = stack.node.find_child("Workflows").node.find_child("CustomerSupport")
    s3.Bucket(stack, "UnloggedBucket", enforce_ssl=True)  # AwsSolutions-S1, not acknowledged
    with pytest.raises(RuntimeError, match="AwsSolutions-S1"):
        app.synth()
    report = json.loads((tmp_path / "cdk.out" / "validation-report.json").read_text())
    violations = [v for r in report["pluginReports"] for v in r["violations"]]
    assert [v["ruleName"] for v in violations] == ["AwsSolutions-S1"]
    path = violations[0]["violatingConstructs"][0]["constructPath"]
    assert "UnloggedBucket" in path
    assert ("Workflows/CustomerSupport/" in path) == (where == "nested")


@pytest.mark.slow
@pytest.mark.parametrize("which", SYNTHESIZED)
def test_cfn_lint_passes(which: str, request: pytest.FixtureRequest) -> None:
    """On every template: the top-level stack's and each workflow's nested stack's."""
    synthesized: Synthesized = request.getfixturevalue(which)
    found = {stack: cfn_lint(template) for stack, template in synthesized.templates.items()}
    assert len(found) == 1 + len(synthesized.nested) > 1
    assert {stack: problems for stack, problems in found.items() if problems} == {}
