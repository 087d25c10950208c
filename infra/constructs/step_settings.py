"""The step runtime's settings and the tools' permissions, on the functions that read or use them.

From CDK context (docs/deploy.md): the HTTP tools' host allow-list, SQL connections (each a
Secrets Manager secret: the function gets `SWITCHYARD_SQL_<NAME>=secret:<secret>` and may read
that secret), the default email sender, tenant daily limits and quotas, the circuit breakers'
policy, model prices (a file in a
layer of its own, since the runtime reads prices from a file). From the workflows
(`infra/tool_access.py`): one policy per step function with what its tools need, and a cdk-nag
acknowledgement, with its reason, for each resource with a wildcard.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.config import Settings
from infra.constructs.functions import ARCHITECTURE, MODEL_STEPS, RUNTIME, Functions
from infra.nag import acknowledge_resource
from infra.tool_access import (
    ACCOUNT,
    PARTITION,
    REGION,
    USES_EMAIL,
    USES_HTTP,
    ToolAccess,
)
from switchyard.constants import (
    CIRCUIT_BREAKER_POLICY_ENV,
    EMAIL_FROM_ENV,
    HTTP_ALLOWED_HOSTS_ENV,
    MODEL_PRICES_ENV,
    SECRET_REFERENCE_PREFIX,
    SQL_CONNECTION_ENV_PREFIX,
    TENANT_DAILY_LIMITS_ENV,
    TENANT_QUOTAS_ENV,
)

GATEWAY_STEPS = ("agent_step", "tool_step")
"""Functions that call tools through the gateway, and so through its circuit breakers."""
MODEL_PRICES_FOLDER = "switchyard-config"
MODEL_PRICES_PATH = f"/opt/{MODEL_PRICES_FOLDER}/model-prices.json"
"""Where Lambda mounts the prices file of the `ModelPrices` layer."""


def named_env(prefix: str, name: str) -> str:
    """The variable the runtime reads for a named setting (`runtime/tools/base.py`):
    `named_env(SQL_CONNECTION_ENV_PREFIX, "ledger-db")` is `SWITCHYARD_SQL_LEDGER_DB`."""
    return prefix + "".join(c if c.isalnum() else "_" for c in name).upper()


class StepSettings(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: Settings,
        functions: Functions,
        access: ToolAccess,
    ) -> None:
        super().__init__(scope, construct_id)
        self.tool_policies: dict[str, iam.Policy] = {}
        for name, uses in sorted(access.uses.items()):
            function = functions.by_name[name]
            self._tool_policy(name, function, access)
            if USES_HTTP in uses and settings.http_allowed_hosts:
                function.add_environment(
                    HTTP_ALLOWED_HOSTS_ENV, ",".join(settings.http_allowed_hosts)
                )
            if USES_EMAIL in uses and settings.email_from:
                function.add_environment(EMAIL_FROM_ENV, settings.email_from)
            for connection in sorted(access.sql_connections.get(name, ())):
                function.add_environment(
                    named_env(SQL_CONNECTION_ENV_PREFIX, connection),
                    SECRET_REFERENCE_PREFIX + settings.sql_connections[connection],
                )
        model_steps = [functions.by_name[name] for name in MODEL_STEPS]
        if settings.tenant_daily_limits:
            limits = json.dumps(dict(settings.tenant_daily_limits), sort_keys=True)
            for function in model_steps:
                function.add_environment(TENANT_DAILY_LIMITS_ENV, limits)
        if settings.tenant_quotas:
            quotas = json.dumps(dict(settings.tenant_quotas), sort_keys=True, separators=(",", ":"))
            for function in model_steps:
                function.add_environment(TENANT_QUOTAS_ENV, quotas)
        if settings.circuit_breakers:
            policy = json.dumps(
                dict(settings.circuit_breakers), sort_keys=True, separators=(",", ":")
            )
            for name in GATEWAY_STEPS:
                functions.by_name[name].add_environment(CIRCUIT_BREAKER_POLICY_ENV, policy)
        self.model_prices: lambda_.LayerVersion | None = None
        if settings.model_prices is not None:
            self.model_prices = self._model_prices_layer(dict(settings.model_prices))
            for function in model_steps:
                function.add_layers(self.model_prices)
                function.add_environment(MODEL_PRICES_ENV, MODEL_PRICES_PATH)

    def _tool_policy(self, name: str, function: lambda_.Function, access: ToolAccess) -> None:
        statements = access.statements(name)
        if not statements or function.role is None:
            return
        stack = Stack.of(self)

        def arn(template: str) -> str:
            return (
                template.replace(PARTITION, stack.partition)
                .replace(REGION, stack.region)
                .replace(ACCOUNT, stack.account)
            )

        policy = iam.Policy(
            self,
            "".join(part.capitalize() for part in name.split("_")) + "Tools",
            statements=[
                iam.PolicyStatement(actions=list(actions), resources=[arn(r) for r in resources])
                for actions, resources in statements.items()
            ],
        )
        policy.attach_to_role(function.role)
        # The function must not run before its tools may work.
        function.node.add_dependency(policy)
        for resource, reason in access.wildcards(name).items():
            acknowledge_resource(policy, arn(resource), reason)
        self.tool_policies[name] = policy

    def _model_prices_layer(self, prices: dict[str, object]) -> lambda_.LayerVersion:
        # Written as JSON whatever the source: the runtime reads a `.json` path as JSON.
        folder = Path(tempfile.mkdtemp(prefix="switchyard-model-prices-"))
        (folder / MODEL_PRICES_FOLDER).mkdir()
        (folder / MODEL_PRICES_FOLDER / "model-prices.json").write_text(
            json.dumps(prices, sort_keys=True, indent=2) + "\n"
        )
        return lambda_.LayerVersion(
            self,
            "ModelPrices",
            description=f"switchyard model prices ({MODEL_PRICES_PATH}, SWITCHYARD_MODEL_PRICES)",
            code=lambda_.Code.from_asset(str(folder)),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
        )
