"""Resolve CloudFormation intrinsics of a synthesized template to fake values of the right shape.

What CloudFormation would put into a state machine's `DefinitionSubstitutions`, made up for
moto: function ARNs named after the function's folder (how the scenario harness routes Lambda
invocations), the harness's dead-letter queue URL, and the plain ARN of a child workflow's
machine in place of its alias (moto has no aliases; the harness creates each child under its
workflow name).
"""

from __future__ import annotations

import json
from typing import Any

from tests.infra.synth import STACK
from tests.scenarios.harness.moto_runner import ACCOUNT, FUNCTION_ARN, REGION

DEAD_LETTER_QUEUE_URL = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/switchyard-dead-letters"
PSEUDO = {
    "AWS::Partition": "aws",
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT,
    "AWS::URLSuffix": "amazonaws.com",
}


class FakeAws:
    def __init__(self, template: dict[str, Any]) -> None:
        self.resources: dict[str, dict[str, Any]] = template["Resources"]

    def resolve(self, value: Any) -> Any:
        if isinstance(value, dict) and len(value) == 1:
            (function, argument), *_ = value.items()
            if function == "Ref":
                return self.attribute(argument, "Ref")
            if function == "Fn::GetAtt":
                return self.attribute(argument[0], argument[1])
            if function == "Fn::Join":
                separator, parts = argument
                return separator.join(str(self.resolve(p)) for p in parts)
        if isinstance(value, dict):
            return {k: self.resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        return value

    def attribute(self, logical_id: str, attribute: str) -> str:
        if logical_id in PSEUDO:
            return PSEUDO[logical_id]
        resource = self.resources[logical_id]
        kind, properties = resource["Type"], resource.get("Properties", {})
        if kind == "AWS::Lambda::Function" and attribute == "Arn":
            tags = {t["Key"]: t["Value"] for t in properties.get("Tags", [])}
            return FUNCTION_ARN.format(tags["switchyard:function"])
        if kind == "AWS::SQS::Queue" and attribute in ("Ref", "QueueUrl"):
            return DEAD_LETTER_QUEUE_URL
        if kind == "AWS::StepFunctions::StateMachineAlias" and attribute in ("Ref", "Arn"):
            version = properties["RoutingConfiguration"][0]["StateMachineVersionArn"]
            return self.resolve(version)
        if kind == "AWS::StepFunctions::StateMachineVersion" and attribute in ("Ref", "Arn"):
            return self.resolve(properties["StateMachineArn"])
        if kind == "AWS::StepFunctions::StateMachine" and attribute in ("Ref", "Arn", "Name"):
            name = workflow_of(resource)
            if attribute == "Name":
                return name
            return f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{name}"
        raise KeyError(f"no fake value for {logical_id}.{attribute} ({kind})")

    def definition(self, logical_id: str) -> str:
        """The machine's definition with every substitution applied, as CloudFormation would."""
        properties = self.resources[logical_id]["Properties"]
        text = self.resolve(properties["DefinitionString"])
        for key, value in properties.get("DefinitionSubstitutions", {}).items():
            text = text.replace("${" + key + "}", str(self.resolve(value)))
        return str(text)


def workflow_of(machine: dict[str, Any]) -> str:
    """The workflow a machine resource deploys (its name without the stack's prefix)."""
    return str(machine["Properties"]["StateMachineName"]).removeprefix(f"{STACK}-")


def machines_by_workflow(template: dict[str, Any], kind: str = "STANDARD") -> dict[str, str]:
    return {
        workflow_of(resource): logical_id
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::StepFunctions::StateMachine"
        and resource["Properties"].get("StateMachineType", "STANDARD") == kind
    }


def as_json(text: str) -> Any:
    return json.loads(text)
