"""Resolve CloudFormation intrinsics of a synthesized template to fake values of the right shape.

What CloudFormation would put into a state machine's `DefinitionSubstitutions`, made up for
moto: function ARNs named after the function's folder (how the scenario harness routes Lambda
invocations), the harness's dead-letter queue URL, and the plain ARN of a child workflow's
machine in place of its alias (moto has no aliases; the harness creates each child under its
workflow name). A nested stack's parameter resolves to what its parent passes in, a nested
stack's output to its value there.
"""

from __future__ import annotations

import json
from typing import Any

from tests.infra.synth import STACK, Synthesized
from tests.scenarios.harness.moto_runner import ACCOUNT, FUNCTION_ARN, REGION

DEAD_LETTER_QUEUE_NAME = "switchyard-dead-letters"
DEAD_LETTER_QUEUE_URL = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{DEAD_LETTER_QUEUE_NAME}"
DEAD_LETTER_QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{DEAD_LETTER_QUEUE_NAME}"
PSEUDO = {
    "AWS::Partition": "aws",
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT,
    "AWS::URLSuffix": "amazonaws.com",
}


Located = tuple[str, str]
"""A resource: its stack (`STACK`, or a nested stack's logical id) and its logical id there."""


class FakeAws:
    def __init__(self, synthesized: Synthesized) -> None:
        self.templates = synthesized.templates

    def resources(self, stack: str) -> dict[str, dict[str, Any]]:
        resources: dict[str, dict[str, Any]] = self.templates[stack]["Resources"]
        return resources

    def resolve(self, value: Any, stack: str = STACK) -> Any:
        if isinstance(value, dict) and len(value) == 1:
            (function, argument), *_ = value.items()
            if function == "Ref":
                return self.attribute(stack, argument, "Ref")
            if function == "Fn::GetAtt":
                return self.attribute(stack, argument[0], argument[1])
            if function == "Fn::Join":
                separator, parts = argument
                return separator.join(str(self.resolve(p, stack)) for p in parts)
        if isinstance(value, dict):
            return {k: self.resolve(v, stack) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v, stack) for v in value]
        return value

    def attribute(self, stack: str, logical_id: str, attribute: str) -> str:
        if logical_id in PSEUDO:
            return PSEUDO[logical_id]
        if logical_id in self.templates[stack].get("Parameters", {}):
            # A nested stack's parameter: what its parent passes in.
            parent = self.resources(STACK)[stack]["Properties"]["Parameters"]
            return str(self.resolve(parent[logical_id], STACK))
        resource = self.resources(stack)[logical_id]
        kind, properties = resource["Type"], resource.get("Properties", {})
        if kind == "AWS::CloudFormation::Stack" and attribute.startswith("Outputs."):
            output = self.templates[logical_id]["Outputs"][attribute.removeprefix("Outputs.")]
            return str(self.resolve(output["Value"], logical_id))
        if kind == "AWS::Lambda::Function" and attribute in ("Ref", "Arn"):
            tags = {t["Key"]: t["Value"] for t in properties.get("Tags", [])}
            name = tags["switchyard:function"]
            return FUNCTION_ARN.format(name) if attribute == "Arn" else name
        if kind == "AWS::SQS::Queue" and attribute in ("Ref", "QueueUrl"):
            return DEAD_LETTER_QUEUE_URL
        if kind == "AWS::SQS::Queue" and attribute in ("Arn", "QueueName"):
            return DEAD_LETTER_QUEUE_ARN if attribute == "Arn" else DEAD_LETTER_QUEUE_NAME
        if kind == "AWS::StepFunctions::StateMachineAlias" and attribute in ("Ref", "Arn"):
            version = properties["RoutingConfiguration"][0]["StateMachineVersionArn"]
            return str(self.resolve(version, stack))
        if kind == "AWS::StepFunctions::StateMachineVersion" and attribute in ("Ref", "Arn"):
            return str(self.resolve(properties["StateMachineArn"], stack))
        if kind == "AWS::StepFunctions::StateMachine" and attribute in ("Ref", "Arn", "Name"):
            name = workflow_of(resource)
            if attribute == "Name":
                return name
            return f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{name}"
        raise KeyError(f"no fake value for {stack}/{logical_id}.{attribute} ({kind})")

    def definition(self, machine: Located) -> str:
        """The machine's definition with every substitution applied, as CloudFormation would."""
        stack, logical_id = machine
        properties = self.resources(stack)[logical_id]["Properties"]
        text = self.resolve(properties["DefinitionString"], stack)
        for key, value in properties.get("DefinitionSubstitutions", {}).items():
            text = text.replace("${" + key + "}", str(self.resolve(value, stack)))
        return str(text)


def workflow_of(machine: dict[str, Any]) -> str:
    """The workflow a machine resource deploys (its name without the stack's prefix)."""
    return str(machine["Properties"]["StateMachineName"]).removeprefix(f"{STACK}-")


def machines_by_workflow(synthesized: Synthesized, kind: str = "STANDARD") -> dict[str, Located]:
    """Every state machine of a type, in whichever stack it is, by its workflow (or trigger)."""
    return {
        workflow_of(resource): (stack, logical_id)
        for stack, template in synthesized.templates.items()
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::StepFunctions::StateMachine"
        and resource["Properties"].get("StateMachineType", "STANDARD") == kind
    }


def properties_of(synthesized: Synthesized, located: Located) -> dict[str, Any]:
    stack, logical_id = located
    found: dict[str, Any] = synthesized.templates[stack]["Resources"][logical_id]["Properties"]
    return found


def as_json(text: str) -> Any:
    return json.loads(text)
