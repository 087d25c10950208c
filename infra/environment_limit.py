"""Lambda's 4 KB limit on a function's environment, checked at synth.

Lambda refuses a function whose environment variables (names and values together) pass 4 KB,
and says so only when CloudFormation creates it, midway through a deploy. The settings that
grow with the configuration (tenant limits, allowed hosts, SQL connections, a webhook's input
template) become variables here, so the check runs when the synth validates the tree, after every
construct has added its variables, and names the variable to move and the setting it comes from.

A value that CloudFormation fills in (a table's name, a secret's ARN) counts as `TOKEN_BYTES`:
longer than any of them resolves to (an ARN of a generated name is about 100 characters).
"""

from __future__ import annotations

from typing import Any

import jsii
from aws_cdk import Stack
from aws_cdk import aws_lambda as lambda_
from constructs import IValidation

from switchyard.constants import (
    EMAIL_FROM_ENV,
    HTTP_ALLOWED_HOSTS_ENV,
    SQL_CONNECTION_ENV_PREFIX,
    TENANT_DAILY_LIMITS_ENV,
    TENANT_QUOTAS_ENV,
    WEBHOOK_INPUT_ENV,
)

LIMIT_BYTES = 4096
TOKEN_BYTES = 160

SOURCES = {
    TENANT_DAILY_LIMITS_ENV: "switchyard:tenantDailyLimits (fewer tenants, or a `default`)",
    TENANT_QUOTAS_ENV: "switchyard:tenantQuotas (fewer tenants, or `*` for every model)",
    HTTP_ALLOWED_HOSTS_ENV: "switchyard:httpAllowedHosts (patterns such as *.example.com)",
    EMAIL_FROM_ENV: "switchyard:emailFrom",
    WEBHOOK_INPUT_ENV: "the webhook trigger's `input` in the workflow file (a shorter template)",
}
"""Where a variable comes from, and how to make it smaller."""


def source_of(variable: str) -> str:
    if variable.startswith(SQL_CONNECTION_ENV_PREFIX):
        return "switchyard:sqlConnections (fewer connections, or shorter secret names)"
    return SOURCES.get(variable, "the stack itself")


def environment_bytes(variables: dict[str, Any]) -> dict[str, int]:
    """Bytes of each variable, name and value; a CloudFormation value as `TOKEN_BYTES`."""
    sizes = {}
    for name, value in variables.items():
        size = len(value.encode()) if isinstance(value, str) else TOKEN_BYTES
        sizes[name] = len(name.encode()) + size
    return sizes


def environment_problem(function: str, variables: dict[str, Any]) -> str | None:
    sizes = environment_bytes(variables)
    total = sum(sizes.values())
    if total <= LIMIT_BYTES:
        return None
    largest = max(sizes, key=lambda name: sizes[name])
    return (
        f"function {function}: its environment variables take {total} bytes, Lambda allows "
        f"{LIMIT_BYTES}; the largest is {largest} ({sizes[largest]} bytes), from "
        f"{source_of(largest)}: shorten that setting, or move it out of the environment "
        "(a file in a layer, as switchyard:modelPrices is, or a Secrets Manager secret)"
    )


@jsii.implements(IValidation)
class EnvironmentLimit:
    """A validation of one function's environment (added to its node)."""

    def __init__(self, function: lambda_.Function, name: str) -> None:
        self._function = function
        self._name = name

    def validate(self) -> list[str]:
        resource = self._function.node.default_child
        assert isinstance(resource, lambda_.CfnFunction)
        # `cfnProperties` (protected, for subclasses of a resource): the variables as they will
        # be rendered, whoever added them; the public `environment` comes back empty through jsii.
        properties = Stack.of(self._function).resolve(resource._cfn_properties)
        variables = (properties.get("environment") or {}).get("variables") or {}
        problem = environment_problem(self._name, variables)
        return [] if problem is None else [problem]
