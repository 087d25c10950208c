"""What a workflow's nested stack takes from the platform, and how it takes it.

The platform (the top-level stack) owns what every workflow shares: the functions, the data key,
the API, the event bus, the steps' dead-letter queue, the alarm topic. A workflow's nested stack
refers to them, and CloudFormation passes each such value in as a parameter of the nested stack
(for most of them CDK adds the parameter itself, when a construct of the nested stack uses a
platform token). `platform_value` makes the parameter by hand, with a name of our own, where a
name matters: the placeholders of a compiled definition become parameters of the same name
(`AgentStepFunctionArn`, `SummarizeDocumentV1StateMachineArn`), and a policy's acknowledgement
to cdk-nag can spell them (`<AgentStepFunctionArn>:*`).
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import CfnParameter, Fn, NestedStack, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.config import Settings
from infra.constructs.api import Api
from infra.constructs.functions import Functions
from infra.constructs.state_store import StateStore


@dataclass(frozen=True)
class Platform:
    """The platform's constructs that workflows use, in the top-level stack."""

    settings: Settings
    store: StateStore
    functions: Functions
    api: Api
    bus: events.IEventBus
    step_dead_letters: sqs.IQueue
    alarms: sns.ITopic


def platform_value(scope: Construct, name: str, value: str, description: str) -> str:
    """`value` (a token of the top-level stack, or of another workflow's nested stack) as the
    parameter `name` of the nested stack that holds `scope`: a `Ref` to it."""
    stack = Stack.of(scope)
    if not isinstance(stack, NestedStack):
        raise TypeError(f"{scope.node.path} is not in a nested stack")
    if stack.node.try_find_child(name) is None:
        CfnParameter(stack, name, type="String", description=description)
        stack.set_parameter(name, value)
    return Fn.ref(name)
