"""cfn-lint on a synthesized template, offline, with the checks we ignore and why."""

from __future__ import annotations

import json
from typing import Any

from infra.constructs.workflow_machine import PARTITION

CFN_LINT_IGNORED = {
    # CDK adds DependsOn from a resource to its role's DefaultPolicy even when a GetAtt of the
    # role already orders them: harmless, and not ours to remove.
    "W3005",
}


def cfn_lint(template: dict[str, Any]) -> list[str]:
    """cfn-lint's findings on a template, one `<rule> <message>` each."""
    from cfnlint.api import ManualArgs, lint

    config = ManualArgs(regions=["us-east-1"], ignore_checks=sorted(CFN_LINT_IGNORED))
    text = json.dumps(in_the_aws_partition(template))
    return [f"{m.rule.id} {m.message}" for m in lint(text, config=config)]


def in_the_aws_partition(template: dict[str, Any]) -> dict[str, Any]:
    """The template with each definition's `${AwsPartition}` as CloudFormation substitutes it in
    the `aws` partition: cfn-lint's schema of a Task's `Resource` knows only `arn:aws:`, so it
    checks the definitions as they are deployed there."""
    copied: dict[str, Any] = json.loads(json.dumps(template))
    for resource in copied.get("Resources", {}).values():
        properties = resource.get("Properties", {})
        if resource["Type"] != "AWS::StepFunctions::StateMachine":
            continue
        if properties.get("DefinitionSubstitutions", {}).pop(PARTITION, None) is None:
            continue
        definition = properties["DefinitionString"]
        assert isinstance(definition, str), "a definition is a string with ${placeholders}"
        properties["DefinitionString"] = definition.replace("${" + PARTITION + "}", "aws")
        if not properties["DefinitionSubstitutions"]:
            del properties["DefinitionSubstitutions"]
    return copied
