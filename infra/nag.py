"""cdk-nag (AwsSolutions) acknowledgements: each one beside the code it excuses, with its reason.

cdk-nag 3 reports a finding per wildcard (`AwsSolutions-IAM5[Resource::<Bucket.Arn>/*]`), and an
acknowledgement must name the finding exactly, so a new wildcard is never silently covered by an
old acknowledgement. `token` spells a resource's attribute the way the finding does.

A resource built by hand (`arn:${Partition}:states:${Region}:${Account}:execution:...`) is spelled
differently by an environment-agnostic synth (`<AWS::Region>`) and by the one `cdk deploy` runs
(`us-east-1`): `acknowledge_resource` computes the finding from the very value the policy holds,
so an acknowledgement matches in every environment.
"""

from __future__ import annotations

import json
from typing import Any

from aws_cdk import Acknowledgment, CfnResource, Stack, Validations
from constructs import IConstruct

PACK = "AwsSolutions"

LOG_STREAMS = (
    "log streams of this principal's own log group: Lambda names a stream per execution "
    "environment, so the streams cannot be listed in advance"
)
UNSCOPED_ACTIONS = (
    "only actions without resource-level permissions: X-Ray PutTraceSegments/"
    "PutTelemetryRecords/GetSampling*, CloudWatch Logs log-delivery management (Step Functions "
    "vended logs), and the EC2 network-interface actions Lambda needs for VPC functions; no data "
    "resource is covered"
)


def acknowledge(scope: IConstruct, finding: str, reason: str) -> None:
    """Acknowledge `finding` (e.g. `IAM5[Resource::*]`) for `scope` and everything under it."""
    Validations.of(scope).acknowledge(Acknowledgment(id=f"{PACK}-{finding}", reason=reason))


def token(construct: IConstruct, attribute: str = "Arn") -> str:
    """`<LogicalId.Attribute>`: how a finding names an attribute of a CloudFormation resource."""
    resource = construct if isinstance(construct, CfnResource) else construct.node.default_child
    assert isinstance(resource, CfnResource), f"{construct.node.path} is not a resource"
    stack = Stack.of(resource)
    logical_id = stack.resolve(stack.get_logical_id(resource))
    if attribute == "Ref":
        return f"<{logical_id}>"
    return f"<{logical_id}.{attribute}>"


def acknowledge_resource(scope: IConstruct, resource: str, reason: str) -> None:
    """Acknowledge the `IAM5` finding of `resource`, a wildcard resource of a policy in `scope`,
    spelled as cdk-nag will spell it in this stack's environment."""
    acknowledge(scope, f"IAM5[Resource::{finding_resource(scope, resource)}]", reason)


def finding_resource(scope: IConstruct, resource: str) -> str:
    """How cdk-nag names a policy's resource in a finding: the value resolved in `scope`'s stack
    and flattened (`Ref` as `<Name>`, `Fn::GetAtt` as `<Name.Attribute>`, joins concatenated),
    as cdk-nag's `flattenCfnReference` does."""
    return _flatten(Stack.of(scope).resolve(resource))


def _flatten(node: Any) -> str:
    if node is None:
        return ""
    if isinstance(node, str):
        return node.replace("${", "<").replace("}", ">")
    if isinstance(node, dict):
        if "Fn::Join" in node:
            delimiter, items = node["Fn::Join"]
            return str(delimiter).join(_flatten(item) for item in items)
        if "Fn::Sub" in node:
            return _flatten(node["Fn::Sub"])
        if "Fn::GetAtt" in node:
            name, attribute = node["Fn::GetAtt"]
            return f"<{_flatten(name)}.{_flatten(attribute)}>"
        if "Fn::ImportValue" in node:
            return _flatten(node["Fn::ImportValue"])
        if "Ref" in node:
            return f"<{_flatten(node['Ref'])}>"
    return json.dumps(node, separators=(",", ":"))
