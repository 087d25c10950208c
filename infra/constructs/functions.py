"""The library layer and the Lambda functions, from the table in `switchyard.constants`.

Each function gets its own role (least privilege, no AWS managed policies), its own encrypted log
group with retention, X-Ray active tracing, Powertools configuration, reserved concurrency per
step type, and a placement: in the VPC when it talks to the database, outside otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from aws_cdk import (
    AssetHashType,
    BundlingOptions,
    DockerImage,
    Duration,
    ILocalBundling,
    Stack,
    Tags,
    Token,
)
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.config import Settings
from infra.constructs.state_store import DATABASE_PORT, StateStore
from infra.environment_limit import EnvironmentLimit
from infra.layer_build import LocalLayerBundling, layer_hash
from infra.nag import LOG_STREAMS, UNSCOPED_ACTIONS, acknowledge, token
from switchyard.constants import (
    API_KEY_SECRET_ENV,
    BUDGET_TABLE_ENV,
    DATABASE_HOST_ENV,
    DATABASE_NAME,
    DATABASE_NAME_ENV,
    DATABASE_PORT_ENV,
    DATABASE_SECRET_ARN_ENV,
    DEFAULT_PROVIDER_ENV,
    EVENT_BUS_ENV,
    FUNCTION_SPECS,
    IDEMPOTENCY_TABLE_ENV,
    METRICS_NAMESPACE,
    MIGRATE_FUNCTION,
    OUTPUT_BUCKET_ENV,
    POWERTOOLS_LOG_LEVEL_ENV,
    POWERTOOLS_LOGGER_LOG_EVENT_ENV,
    POWERTOOLS_METRICS_NAMESPACE_ENV,
    POWERTOOLS_SERVICE_NAME_ENV,
    POWERTOOLS_TRACER_CAPTURE_RESPONSE_ENV,
    WEBHOOK_FUNCTION,
    FunctionSpec,
    Placement,
)

RUNTIME = lambda_.Runtime.PYTHON_3_13
"""The layer's byte-code is compiled for this version (`infra.layer_build.PYTHON_VERSION`)."""
NOT_THE_NEWEST_RUNTIME = (
    "Python 3.13 on purpose (supported until June 2029): the layer's byte-code is compiled by a "
    "Python of the runtime's version, and the machines that build the layer have a 3.13 and no "
    "3.14; on 3.14 the layer would ship sources (docs/deploy.md, Cold starts)"
)
ARCHITECTURE = lambda_.Architecture.ARM_64
MODEL_STEPS = ("agent_step", "router_step")
"""Functions that call the model provider."""
DATA_STEPS = ("agent_step", "tool_step", "router_step")
"""Functions that use the idempotency and budget tables and the output bucket."""
OUTPUT_READERS = ("render", "approval_notify")
"""Functions that read large outputs back (templates over a step's output) but write none."""
_ENI_ACTIONS = [
    "ec2:CreateNetworkInterface",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSubnets",
    "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
]


class MissingHandlerError(FileNotFoundError):
    pass


def powertools_environment(function: str) -> dict[str, str]:
    """Service name = the function's folder: the `service` dimension of its metrics."""
    return {
        POWERTOOLS_SERVICE_NAME_ENV: function,
        POWERTOOLS_LOG_LEVEL_ENV: "INFO",
        POWERTOOLS_METRICS_NAMESPACE_ENV: METRICS_NAMESPACE,
        POWERTOOLS_TRACER_CAPTURE_RESPONSE_ENV: "false",
        POWERTOOLS_LOGGER_LOG_EVENT_ENV: "false",
    }


class Functions(Construct):
    """The layer, the functions compiled machines call, and the migration function."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: Settings,
        store: StateStore,
        event_bus_name: str,
    ) -> None:
        super().__init__(scope, construct_id)
        self._settings = settings
        self._store = store
        self.layer = lambda_.LayerVersion(
            self,
            "Library",
            description="switchyard library and its runtime dependencies (Python 3.13, arm64)",
            code=lambda_.Code.from_asset(
                str(settings.root / "layers"),
                asset_hash_type=AssetHashType.CUSTOM,
                asset_hash=layer_hash(settings.root),
                bundling=BundlingOptions(
                    # Never used: local bundling always succeeds or fails the synth. CDK requires
                    # an image in BundlingOptions.
                    image=DockerImage.from_registry("switchyard-never-docker"),
                    local=cast(ILocalBundling, LocalLayerBundling(settings.root)),
                ),
            ),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
        )
        self.model_api_key = secretsmanager.Secret(
            self,
            "AnthropicApiKey",
            description="switchyard: the Anthropic API key (set it with put-secret-value)",
            encryption_key=store.key,
            removal_policy=store.removal,
        )
        acknowledge(
            self.model_api_key,
            "SMG4",
            "a third-party API key: only the Anthropic console can issue a new one, so no "
            "rotation function can rotate it; rotate it there and store it with put-secret-value",
        )
        self.by_name: dict[str, lambda_.Function] = {}
        for spec in FUNCTION_SPECS:
            environment = self._step_environment(spec, event_bus_name)
            self.by_name[spec.name] = self.function(spec, environment=environment)
        self._grant_step_permissions(event_bus_name)
        self.migrate = self.function(MIGRATE_FUNCTION, environment={})

    # --- building one function ---------------------------------------------------------------

    def handler_folder(self, name: str) -> Path:
        folder = self._settings.functions / name
        if not (folder / "handler.py").is_file():
            raise MissingHandlerError(
                f"{folder}/handler.py is missing: every function in switchyard.constants "
                "needs a handler(event, context) there"
            )
        return folder

    def function(
        self,
        spec: FunctionSpec,
        *,
        environment: dict[str, str],
        construct_id: str | None = None,
        scope: Construct | None = None,
    ) -> lambda_.Function:
        """One function with its role and log group, in `scope` (a workflow's nested stack, for
        a webhook's function), else here."""
        settings, store = self._settings, self._store
        construct_id = construct_id or _pascal(spec.name)
        scope = scope or self
        role = iam.Role(
            scope,
            f"{construct_id}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"switchyard function {spec.name}",
        )
        log_group = store.log_group(f"{construct_id}Logs", settings, scope=scope)
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[f"{log_group.log_group_arn}:*"],
            )
        )
        acknowledge(role, f"IAM5[Resource::{token(log_group)}:*]", LOG_STREAMS)
        acknowledge(role, "IAM5[Resource::*]", UNSCOPED_ACTIONS)
        env = {**powertools_environment(spec.name), **environment}
        network: dict[str, Any] = {}
        if spec.placement is Placement.VPC:
            network = {
                "vpc": store.vpc,
                "vpc_subnets": ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
                "security_groups": [store.function_security_group],
            }
            role.add_to_policy(iam.PolicyStatement(actions=_ENI_ACTIONS, resources=["*"]))
        if spec.uses_database:
            env.update(
                {
                    DATABASE_SECRET_ARN_ENV: store.database_secret.secret_arn,
                    DATABASE_HOST_ENV: store.cluster.cluster_endpoint.hostname,
                    DATABASE_PORT_ENV: str(DATABASE_PORT),
                    DATABASE_NAME_ENV: DATABASE_NAME,
                }
            )
            role.add_to_policy(
                iam.PolicyStatement(
                    actions=["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"],
                    resources=[store.database_secret.secret_arn],
                )
            )
            self.grant_key_decrypt(role)
        function = lambda_.Function(
            scope,
            construct_id,
            description=spec.purpose,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler="handler.handler",
            code=lambda_.Code.from_asset(
                str(self.handler_folder(spec.name)), exclude=["__pycache__", "*.pyc", "tests"]
            ),
            layers=[self.layer],
            memory_size=spec.memory_mb,
            timeout=Duration.seconds(spec.timeout_seconds),
            reserved_concurrent_executions=(
                spec.reserved_concurrency if settings.reserve_concurrency else None
            ),
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            role=role,
            environment=env,
            **network,
        )
        acknowledge(function, "L1", NOT_THE_NEWEST_RUNTIME)
        # The function's folder name, for readers of the console and for the tests' ARN mapping.
        Tags.of(function).add("switchyard:function", spec.name)
        # Checked when the synth validates, after every construct has added its variables.
        function.node.add_validation(EnvironmentLimit(function, spec.name))
        return function

    def webhook_function(
        self, scope: Construct, construct_id: str, environment: dict[str, str]
    ) -> lambda_.Function:
        return self.function(
            WEBHOOK_FUNCTION, environment=environment, construct_id=construct_id, scope=scope
        )

    # --- permissions ---------------------------------------------------------------------------

    def grant_key_decrypt(self, grantee: iam.IGrantable) -> None:
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(actions=["kms:Decrypt"], resources=[self._store.key.key_arn])
        )

    def grant_key_encrypt_decrypt(self, grantee: iam.IGrantable) -> None:
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"],
                resources=[self._store.key.key_arn],
            )
        )

    def _step_environment(self, spec: FunctionSpec, event_bus_name: str) -> dict[str, str]:
        store = self._store
        env: dict[str, str] = {}
        if spec.name in DATA_STEPS:
            env.update(
                {
                    IDEMPOTENCY_TABLE_ENV: store.idempotency_table.table_name,
                    BUDGET_TABLE_ENV: store.budget_table.table_name,
                    OUTPUT_BUCKET_ENV: store.output_bucket.bucket_name,
                    EVENT_BUS_ENV: event_bus_name,
                }
            )
        if spec.name in OUTPUT_READERS:
            env[OUTPUT_BUCKET_ENV] = store.output_bucket.bucket_name
        if spec.name in MODEL_STEPS:
            env.update(
                {
                    DEFAULT_PROVIDER_ENV: self._settings.provider,
                    API_KEY_SECRET_ENV: self.model_api_key.secret_arn,
                }
            )
        return env

    def _grant_step_permissions(self, event_bus_name: str) -> None:
        store, stack = self._store, Stack.of(self)
        table_actions = [
            "dynamodb:GetItem",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
            "dynamodb:ConditionCheckItem",
        ]
        for name in DATA_STEPS:
            function = self.by_name[name]
            function.add_to_role_policy(
                iam.PolicyStatement(
                    actions=table_actions,
                    resources=[store.idempotency_table.table_arn, store.budget_table.table_arn],
                )
            )
            function.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["s3:GetObject", "s3:PutObject"],
                    resources=[store.output_bucket.arn_for_objects("*")],
                )
            )
            acknowledge(
                function.role or function,
                f"IAM5[Resource::{token(store.output_bucket)}/*]",
                "objects of the platform's own output bucket, keyed by content hash (not known "
                "in advance); only GetObject and PutObject, no listing or deleting",
            )
            function.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["events:PutEvents"],
                    resources=[
                        f"arn:{stack.partition}:events:{stack.region}:{stack.account}"
                        f":event-bus/{event_bus_name}"
                    ],
                )
            )
            self.grant_key_encrypt_decrypt(function)
        for name in OUTPUT_READERS:
            function = self.by_name[name]
            # render also stores the parts of a run's outputs (a sub-workflow's result in its
            # parent's state) that do not fit the run's share of Step Functions' 256 KB.
            writes = name == "render"
            function.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["s3:GetObject", "s3:PutObject"] if writes else ["s3:GetObject"],
                    resources=[store.output_bucket.arn_for_objects("*")],
                )
            )
            acknowledge(
                function.role or function,
                f"IAM5[Resource::{token(store.output_bucket)}/*]",
                "reads large outputs back from the platform's own output bucket, keyed by content "
                + (
                    "hash (not known in advance), and stores a run's large outputs there; "
                    "GetObject and PutObject only"
                    if writes
                    else "hash (not known in advance); GetObject only"
                ),
            )
            if writes:
                self.grant_key_encrypt_decrypt(function)
            else:
                self.grant_key_decrypt(function)
        for name in MODEL_STEPS:
            function = self.by_name[name]
            function.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["secretsmanager:GetSecretValue"],
                    resources=[self.model_api_key.secret_arn],
                )
            )
            if self._settings.provider == "bedrock":
                self._grant_bedrock(function)

    def _grant_bedrock(self, function: lambda_.Function) -> None:
        """InvokeModel on the catalog's models as Bedrock serves them: the inference profile of
        each model for the stack's region (every geography's when the region is a token), and
        the foundation model behind it in every region (`bedrock:*::`), since a cross-region
        profile routes to other regions and a `global.` one to none in particular."""
        from switchyard.runtime.models_catalog import (
            BEDROCK_GEOGRAPHIES,
            ModelCatalog,
            region_geographies,
        )

        stack = Stack.of(self)
        catalog = ModelCatalog().with_overrides(self._settings.model_prices or {})
        region = stack.region
        geographies = (
            BEDROCK_GEOGRAPHIES if Token.is_unresolved(region) else region_geographies(region)
        )
        profiles: list[str] = []
        foundation_models: list[str] = []
        for model in catalog.models():
            grant = model.bedrock_grants(geographies)
            profiles += [p for p in grant.profiles if p not in profiles]
            foundation_models += [f for f in grant.foundation_models if f not in foundation_models]
        model_arns = [
            f"arn:{stack.partition}:bedrock:*::foundation-model/{f}" for f in foundation_models
        ]
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"],
                resources=[
                    f"arn:{stack.partition}:bedrock:{region}:{stack.account}:inference-profile/{p}"
                    for p in profiles
                ]
                + model_arns,
            )
        )
        for arn in model_arns:
            acknowledge(
                function.role or function,
                f"IAM5[Resource::{arn.replace(stack.partition, '<AWS::Partition>')}]",
                "a model of the catalog, in any region: Bedrock's cross-region inference "
                "profiles route a call to the foundation model in another region of their "
                "geography (global profiles: in none named), and the call needs both allowed",
            )


def _pascal(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))
