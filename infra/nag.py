"""cdk-nag (AwsSolutions) acknowledgements: each one beside the code it excuses, with its reason.

cdk-nag 3 reports a finding per wildcard (`AwsSolutions-IAM5[Resource::<Bucket.Arn>/*]`), and an
acknowledgement must name the finding exactly, so a new wildcard is never silently covered by an
old acknowledgement. `token` spells a resource's attribute the way the finding does.
"""

from __future__ import annotations

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
